/**
 * Taking over a dead roller's claim, against the real stores on a private quiet stack: the claim
 * names a range cut under another head; the leader that finds it stale rolls it only once the
 * range is below its own high watermark — a segment holds committed records only.
 */
import { describe, expect, it } from 'vitest';
import { PENDING_STALE_MS, rollPartition } from '../../../lib/log/roll.js';
import { listSegments, registerPending, segmentObjectKey } from '../../../lib/storage/coordination/segments.js';
import { readHead } from '../../../lib/storage/replica/head.js';
import { useQuietCluster } from '../../support/cluster.js';
import { rf3Partition } from '../../support/partition.js';

useQuietCluster();

describe('Function: rollPartition, finding a stale claim', () => {
  it('leaves a range above its high watermark alone, and rolls it once it is committed', async () => {
    const p = await rf3Partition('takeover');
    expect((await p.send(['c0', 'c1', 'c2'])).every((o) => o.ok)).toBe(true);
    // Three more, acknowledged by the leader alone: above the high watermark.
    expect((await p.send(['u0', 'u1', 'u2'], { acks: 1 })).every((o) => o.ok)).toBe(true);
    const head = (await readHead(p.store(p.p0.leader), p.tp))!;
    expect([head.hw, head.leo]).toEqual([3, 6]);
    // A dead roller's claim over [0, 6), long stale.
    expect(await registerPending({ topicId: p.topic.topicId, partition: 0, baseOffset: 0, endOffset: 6, key: segmentObjectKey(p.topic.topicId, 0, 0), createdAt: Date.now() - PENDING_STALE_MS - 1000 })).toBe(true);
    await rollPartition(p.name, 0, { force: true });
    expect(await listSegments(p.topic.topicId, 0)).toEqual([]);
    // Committed now (the followers copy, the high watermark moves): the claim is finished.
    expect((await p.send(['c3'])).every((o) => o.ok)).toBe(true);
    await rollPartition(p.name, 0, { force: true });
    // (forced, the roll goes on past the claim to the high watermark)
    expect((await listSegments(p.topic.topicId, 0)).map((s) => [s.baseOffset, s.endOffset])).toEqual([[0, 6], [6, 7]]);
  });
});
