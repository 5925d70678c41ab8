/**
 * Compaction merging across a follower's table tail start, against the real stores on a private
 * quiet stack: a follower whose store failed while a roll trimmed the others keeps its tail start
 * at an older segment boundary; a compaction then merges that boundary away. Elected leader, the
 * follower must adopt the merged segment as the log there — not sit behind the merged-away
 * segment's tombstone, nor later roll a segment that overlaps the merged one.
 */
import { describe, expect, it } from 'vitest';
import { invalidateMetadata } from '../../../lib/cluster/metadata.js';
import { compactPartition } from '../../../lib/log/compaction.js';
import { rollPartition } from '../../../lib/log/roll.js';
import { listSegments } from '../../../lib/storage/coordination/segments.js';
import { readHead, setRole, tailStartOf } from '../../../lib/storage/replica/head.js';
import { useQuietCluster } from '../../support/cluster.js';
import { electLeader, rf3Partition } from '../../support/partition.js';
import { hookStoreClient } from '../../support/store-hooks.js';

useQuietCluster();

describe('Function: rollPartition, on a leader whose tail start a compaction merged away', () => {
  it('adopts the merged segment (tail start to its end on every replica) and never registers an overlapping one', async () => {
    const p = await rf3Partition('compact-tail', { configs: { 'cleanup.policy': 'compact', 'min.cleanable.dirty.ratio': '0.01', 'segment.bytes': '1048576' } });
    const [f] = p.followers as [number];
    const send = async (...kv: [string, string][]) => {
      const out = await p.send(kv.map(([, v]) => v), { keys: kv.map(([k]) => k) });
      expect(out.every((o) => o.ok)).toBe(true);
    };
    await send(['a', 'a0'], ['b', 'b0'], ['a', 'a1']);
    await rollPartition(p.name, 0, { force: true });
    expect(tailStartOf((await readHead(p.store(f), p.tp))!)).toBe(3);
    await send(['a', 'a2'], ['b', 'b1'], ['c', 'c0']);
    // The second roll's trim fails on f's store: its tail start stays at 3.
    const fs = p.store(f);
    let failing = true;
    hookStoreClient(fs.endpoint, 'initialize', (next, context) => async (args) => {
      const input = args.input as { TableName?: string; UpdateExpression?: string };
      if (failing && String(context.commandName).includes('Update') && input.TableName === fs.replicaTable && input.UpdateExpression?.includes('tailStart = :end')) {
        throw Object.assign(new Error('connect ECONNREFUSED (refused by the test hook)'), { code: 'ECONNREFUSED', $metadata: {} });
      }
      return next(args);
    });
    await rollPartition(p.name, 0, { force: true });
    failing = false;
    expect((await listSegments(p.topic.topicId, 0)).map((s) => [s.baseOffset, s.endOffset])).toEqual([[0, 3], [3, 6]]);
    expect(tailStartOf((await readHead(p.store(p.p0.leader), p.tp))!)).toBe(6);
    expect(tailStartOf((await readHead(fs, p.tp))!)).toBe(3);

    // The compaction merges [0,3) and [3,6): the boundary f's tail start is at is gone.
    const c = await compactPartition(p.name, 0, { now: Date.now() + 60_000 });
    expect(c.replacements).toBe(1);
    expect((await listSegments(p.topic.topicId, 0)).map((s) => [s.baseOffset, s.endOffset])).toEqual([[0, 6]]);

    // f leads (clean: it holds everything); its next roll adopts the merged segment.
    const next = await electLeader(p.name, 0, f);
    await setRole(fs, p.tp, 'leader', next.leaderEpoch, next.isr);
    for (const b of p.p0.replicas.filter((x) => x !== f)) await setRole(p.store(b), p.tp, 'follower', next.leaderEpoch);
    invalidateMetadata(p.name);
    await rollPartition(p.name, 0, { force: true });
    expect(tailStartOf((await readHead(fs, p.tp))!)).toBe(6);
    const live = await listSegments(p.topic.topicId, 0);
    for (let i = 1; i < live.length; i++) expect(live[i]!.baseOffset, 'live segments do not overlap').toBeGreaterThanOrEqual(live[i - 1]!.endOffset);
  });
});
