/**
 * An unclean election over a tiered log, against the real stores on a private quiet stack: the new
 * leader lacks records that a live segment holds, and a follower whose table tail starts above the
 * point where the new leader's log leaves its own. spec/replication.qnt models it (docs/model.md).
 *
 *   epoch e   leader a: offsets 0-9, rolled into a segment; b holds 0-9 (tail start 10), c 0-4
 *   epoch e+1 c, elected uncleanly: its own offsets 5-7
 *   b must not truncate to 5 in its table while its tail start stays 10: a reader of b would get
 *   the old segment's offsets 5-9. It gets a full sync instead, and c's next roll supersedes the
 *   segment its log does not hold.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { appendToLeader } from '../../../lib/log/append.js';
import { copyStep } from '../../../lib/log/copy.js';
import { fullSync } from '../../../lib/log/full-sync.js';
import { rollPartition } from '../../../lib/log/roll.js';
import { listSegments } from '../../../lib/storage/coordination/segments.js';
import { advanceHighWatermark } from '../../../lib/storage/replica/batches.js';
import { readHead, setRole } from '../../../lib/storage/replica/head.js';
import type { ReplicaStoreRef } from '../../../lib/storage/replica/store.js';
import { batchOf } from '../../support/batches.js';
import { useQuietCluster } from '../../support/cluster.js';
import { electLeader, rf3Partition } from '../../support/partition.js';
import { readTieredLog } from '../../support/segments.js';

useQuietCluster();

async function uncleanOverSegment() {
  const p = await rf3Partition('unclean-tail');
  const [a, b, c] = [p.p0.leader, ...p.followers] as [number, number, number];
  const append = (leader: number, epoch: number, ...values: string[]) =>
    appendToLeader({ leader: p.store(leader), topicId: p.topic.topicId, partition: 0, tp: p.tp, leaderEpoch: epoch, inlineMaxBytes: 8192 }, batchOf(...values));
  const e = p.p0.leaderEpoch;
  for (let i = 0; i < 5; i++) await append(a, e, `old-${i}`);
  for (const f of [b, c]) expect((await copyStep(p.store(a), p.store(f), p.tp)).kind).toBe('caught-up');
  for (let i = 5; i < 10; i++) await append(a, e, `old-${i}`);
  expect((await copyStep(p.store(a), p.store(b), p.tp)).kind).toBe('caught-up');
  const lh = (await readHead(p.store(a), p.tp))!;
  expect(await advanceHighWatermark(p.store(a), p.tp, e, 10, {}, lh.isrVersion)).toBe(true);
  await rollPartition(p.name, 0, { force: true });
  expect((await listSegments(p.topic.topicId, 0, { states: ['live'] })).map((s) => [s.baseOffset, s.endOffset])).toEqual([[0, 10]]);
  expect((await readHead(p.store(b), p.tp))?.tailStart).toBe(10);
  expect((await readHead(p.store(c), p.tp))?.leo).toBe(5);

  // a and its ISR are gone; c, which lacks offsets 5-9, is elected uncleanly.
  const next = await electLeader(p.name, 0, c);
  await setRole(p.store(c), p.tp, 'leader', next.leaderEpoch, [c]);
  for (const f of [a, b]) await setRole(p.store(f), p.tp, 'follower', next.leaderEpoch);
  for (let i = 5; i < 8; i++) await append(c, next.leaderEpoch, `new-${i}`);
  return { ...p, a, b, c, next };
}

/** What a reader of `store` gets: its offsets, and a digest of offset and value in the order read. */
async function view(p: Awaited<ReturnType<typeof uncleanOverSegment>>, store: ReplicaStoreRef) {
  const offsets: number[] = [];
  const digest = createHash('sha256');
  await readTieredLog(p.topic.topicId, p.tp, store, (offset, value) => {
    offsets.push(offset);
    digest.update(`${offset}:`).update(value ?? Buffer.alloc(0));
  });
  return { offsets, digest: digest.digest('hex') };
}

describe('Function: copyStep after an unclean election over a tiered log', () => {
  it('where the follower would truncate below its table tail, it needs a full sync instead, and then reads the new leader\'s log', async () => {
    const p = await uncleanOverSegment();
    const before = (await readHead(p.store(p.b), p.tp))!;
    const out = await copyStep(p.store(p.c), p.store(p.b), p.tp);
    expect(out.kind).toBe('needs-snapshot');
    // The follower's log was left as it was.
    expect(await readHead(p.store(p.b), p.tp)).toEqual(before);
    expect(await fullSync(p.store(p.c), p.store(p.b), p.tp)).toBe(true);
    expect((await copyStep(p.store(p.c), p.store(p.b), p.tp)).kind).toBe('caught-up');
    const leader = await view(p, p.store(p.c));
    expect(leader.offsets).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(await view(p, p.store(p.b))).toEqual(leader);
  });
});

describe('Function: rollPartition after an unclean election', () => {
  it('supersedes a live segment above the leader\'s table tail that holds records its log does not, instead of never rolling again', async () => {
    const p = await uncleanOverSegment();
    await rollPartition(p.name, 0, { force: true });
    // The old segment is no longer the log's; the leader's reader view is its own log.
    expect(await listSegments(p.topic.topicId, 0, { states: ['live'] })).toEqual([]);
    expect((await listSegments(p.topic.topicId, 0, { states: ['deleted'] })).map((s) => [s.baseOffset, s.endOffset])).toEqual([[0, 10]]);
    expect((await view(p, p.store(p.c))).offsets).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
});
