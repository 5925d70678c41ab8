/**
 * A roll's trim against the real stores on a private quiet stack: the batch items below the new
 * tail start are rolled into a segment, so the trim writes the head alone and leaves them to expire
 * (DynamoDB's TTL, `expiresAt` set at the append and copied with the batch) — no write unit per
 * batch per replica. Items written before batches carried an expiry are deleted as before.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { dynamo } from '../../../lib/storage/clients.js';
import { BATCH_TTL_MS, rollPartition } from '../../../lib/log/roll.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { readHead, tailStartOf } from '../../../lib/storage/replica/head.js';
import { replicaLog, useQuietCluster } from '../../support/cluster.js';
import { rf3Partition } from '../../support/partition.js';
import { hookStoreClient } from '../../support/store-hooks.js';

useQuietCluster();

const allItems = (store: Parameters<typeof queryBatches>[0], tp: string) => queryBatches(store, tp, { fromOffset: 0, toOffset: 1e9, maxBytes: Number.MAX_SAFE_INTEGER });

describe('Function: advanceTailStart, after a roll', () => {
  it('moves every replica\'s tail start with one head write and deletes nothing: the rolled items carry their expiry, the same on every replica', async () => {
    const p = await rf3Partition('trim-expiry');
    const before = Date.now();
    for (const v of ['a0', 'a1', 'a2']) expect((await p.send([v])).every((o) => o.ok)).toBe(true);
    let deletes = 0;
    for (const b of p.p0.replicas) {
      hookStoreClient(p.store(b).endpoint, 'initialize', (next, context) => async (args) => {
        if (String(context.commandName).includes('BatchWrite') || String(context.commandName).includes('Delete')) deletes++;
        return next(args);
      });
    }
    await rollPartition(p.name, 0, { force: true });
    expect(deletes).toBe(0);
    const expiries = new Set<number>();
    for (const b of p.p0.replicas) {
      const store = p.store(b);
      const head = (await readHead(store, p.tp))!;
      expect(tailStartOf(head)).toBe(3);
      // Nothing above the tail start: the reader's view of the table is empty.
      expect(await replicaLog(store, p.tp)).toEqual([]);
      const items = await allItems(store, p.tp);
      expect(items.map((i) => i.lastOffset)).toEqual([0, 1, 2]);
      for (const i of items) {
        expect(i.expiresAt! * 1000).toBeGreaterThanOrEqual(before + BATCH_TTL_MS - 1000);
        expect(i.expiresAt! * 1000).toBeLessThanOrEqual(Date.now() + BATCH_TTL_MS + 1000);
        expiries.add(i.expiresAt!);
      }
    }
    // (a follower's copy is the leader's item: one expiry per batch, whichever replica)
    expect(expiries.size).toBeLessThanOrEqual(3);
  });

  it('deletes the rolled items that carry no expiry (written before batches had one), on every replica', async () => {
    const p = await rf3Partition('trim-legacy');
    for (const v of ['b0', 'b1']) expect((await p.send([v])).every((o) => o.ok)).toBe(true);
    for (const b of p.p0.replicas) {
      const store = p.store(b);
      for (const i of await allItems(store, p.tp)) {
        await dynamo(store.endpoint).send(new UpdateCommand({ TableName: store.replicaTable, Key: { tp: p.tp, off: i.lastOffset }, UpdateExpression: 'REMOVE expiresAt' }));
      }
    }
    await rollPartition(p.name, 0, { force: true });
    for (const b of p.p0.replicas) {
      expect(tailStartOf((await readHead(p.store(b), p.tp))!)).toBe(2);
      expect(await allItems(p.store(b), p.tp)).toEqual([]);
    }
  });
});
