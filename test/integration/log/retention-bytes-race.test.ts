/**
 * retention.bytes with a roll committed between retention's two reads, against the real stores on
 * a private quiet stack: retention reads the leader's head (its table tail's bytes), then the
 * segment list; a roll in between makes the same bytes a segment too. Counted twice, the partition
 * looks larger than it is and a segment within retention.bytes is deleted.
 */
import { describe, expect, it } from 'vitest';
import { alterTopicConfigs } from '../../../lib/cluster/topics.js';
import { applyRetention } from '../../../lib/log/retention.js';
import { rollPartition } from '../../../lib/log/roll.js';
import { listSegments } from '../../../lib/storage/coordination/segments.js';
import { readHead } from '../../../lib/storage/replica/head.js';
import { useQuietCluster } from '../../support/cluster.js';
import { rf3Partition } from '../../support/partition.js';

useQuietCluster();

describe('Function: applyRetention, by retention.bytes', () => {
  it('where a roll commits between the head read and the segment list, counts the rolled bytes once and keeps what fits', async () => {
    const p = await rf3Partition('ret-race', { configs: { 'segment.bytes': '1048576' } });
    expect((await p.send(['a0', 'a1', 'a2'])).every((o) => o.ok)).toBe(true);
    await rollPartition(p.name, 0, { force: true });
    const [a] = await listSegments(p.topic.topicId, 0);
    // A larger table tail: more records than the first segment holds.
    expect((await p.send(['b0', 'b1', 'b2', 'b3', 'b4', 'b5'])).every((o) => o.ok)).toBe(true);
    const tail = (await readHead(p.store(p.p0.leader), p.tp))!.tailBytes ?? 0;
    expect(tail).toBeGreaterThan(0);
    // Exactly the partition's size: nothing is over it.
    await alterTopicConfigs(p.name, [{ name: 'retention.bytes', value: String((a!.sizeBytes ?? 0) + tail) }]);
    const r = await applyRetention(p.name, 0, {
      onStep: async (step) => {
        if (step === 'head-read') await rollPartition(p.name, 0, { force: true });
      },
    });
    expect(r.tombstoned).toEqual([]);
    expect((await listSegments(p.topic.topicId, 0)).map((s) => s.baseOffset)).toEqual([0, 3]);
  });
});
