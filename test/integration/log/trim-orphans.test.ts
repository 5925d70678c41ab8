/**
 * A trim that stopped between its two steps (the head's tail start moved, the batch items below it
 * were not deleted), against the real stores on a private quiet stack: the items are orphans —
 * nothing reads them, but their data/ objects stay referenced. The next roll's trim removes them.
 */
import { describe, expect, it } from 'vitest';
import { rollPartition } from '../../../lib/log/roll.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { readHead, tailStartOf } from '../../../lib/storage/replica/head.js';
import { useQuietCluster } from '../../support/cluster.js';
import { rf3Partition } from '../../support/partition.js';
import { hookStoreClient } from '../../support/store-hooks.js';

useQuietCluster();

describe('Function: advanceTailStart, on the first roll of a partition', () => {
  it('deletes the rolled batch items on every replica, the first of them keyed 0 (nothing below it to look for)', async () => {
    const p = await rf3Partition('first-trim');
    for (const v of ['a0', 'a1', 'a2']) expect((await p.send([v])).every((o) => o.ok)).toBe(true);
    await rollPartition(p.name, 0, { force: true });
    for (const b of p.p0.replicas) {
      const store = p.store(b);
      expect(tailStartOf((await readHead(store, p.tp))!)).toBe(3);
      expect(await queryBatches(store, p.tp, { fromOffset: 0, toOffset: 1e9, maxBytes: Number.MAX_SAFE_INTEGER })).toEqual([]);
    }
  });
});

describe('Function: advanceTailStart, on a follower an earlier trim left items behind on', () => {
  it('deletes them with the next roll\'s trim', async () => {
    const p = await rf3Partition('orphans');
    const fs = p.store(p.followers[0]!);
    expect((await p.send(['a0', 'a1', 'a2'])).every((o) => o.ok)).toBe(true);
    // The first trim's deletes on the follower fail (its store went away after the head write).
    let failing = true;
    hookStoreClient(fs.endpoint, 'initialize', (next, context) => async (args) => {
      const input = args.input as { RequestItems?: Record<string, unknown> };
      if (failing && String(context.commandName).includes('BatchWrite') && input.RequestItems?.[fs.replicaTable] !== undefined) {
        throw Object.assign(new Error('connect ECONNREFUSED (refused by the test hook)'), { code: 'ECONNREFUSED', $metadata: {} });
      }
      return next(args);
    });
    await rollPartition(p.name, 0, { force: true }).catch(() => undefined);
    failing = false;
    expect(tailStartOf((await readHead(fs, p.tp))!)).toBe(3);
    const items = () => queryBatches(fs, p.tp, { fromOffset: 0, toOffset: 1e9, maxBytes: Number.MAX_SAFE_INTEGER });
    expect((await items()).map((b) => [b.baseOffset, b.lastOffset])).toEqual([[0, 2]]);

    expect((await p.send(['b0', 'b1'])).every((o) => o.ok)).toBe(true);
    await rollPartition(p.name, 0, { force: true });
    expect(tailStartOf((await readHead(fs, p.tp))!)).toBe(5);
    expect(await items()).toEqual([]);
  });
});
