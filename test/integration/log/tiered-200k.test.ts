/**
 * The tiered log at size: 200,000 records with a small `segment.bytes` roll into
 * several segments; a reader from offset 0 gets every record in order, byte-identical to what was
 * produced, across the segments and the table tail; ListOffsets by timestamp finds what a linear
 * scan of the produced records finds.
 *
 * A private quiet stack: rolls are driven here (`rollPartition`, as the replicator and the sweep
 * drive them), nothing else moves the log.
 */
import { describe, expect, it } from 'vitest';
import { createTopic } from '../../../lib/cluster/topics.js';
import { produce } from '../../../lib/log/produce.js';
import { fetchRecords, listOffset, readFromLeader } from '../../../lib/log/read.js';
import { rollPartition } from '../../../lib/log/roll.js';
import { listSegments } from '../../../lib/storage/coordination/segments.js';
import { useQuietCluster } from '../../support/cluster.js';

useQuietCluster();

const RECORDS = 200_000;
const PER_REQUEST = 2_000;

/** A seeded PRNG (mulberry32): the same records every run. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('the tiered log with 200,000 records', () => {
  it('reads every record back in order, byte-identical, across several segments and the tail; ListOffsets by timestamp equals a linear scan', async () => {
    const name = `tiered-200k-${process.pid}`;
    const { topic } = await createTopic({
      name, partitions: 1, replicationFactor: 1,
      // Small segments; batches inline (up to DynamoDB's item size) so the bytes roll from the table.
      configs: [{ name: 'segment.bytes', value: String(1024 * 1024) }, { name: 'inline.max.bytes', value: '350000' }],
    });
    const random = prng(12);
    const t0 = Date.now() - 3_600_000;
    const produced: { key: Buffer; value: Buffer; timestamp: number; header: Buffer }[] = [];
    for (let i = 0; i < RECORDS; i++) {
      const value = Buffer.alloc(8 + Math.floor(random() * 40));
      for (let j = 0; j < value.length; j++) value[j] = Math.floor(random() * 256);
      // Timestamps rise with jitter that makes them non-monotonic (as producers' clocks do).
      produced.push({ key: Buffer.from(`k${i % 977}`), value, timestamp: t0 + i * 10 + Math.floor(random() * 400) - 200, header: Buffer.from([i % 256]) });
    }
    for (let i = 0; i < RECORDS; i += PER_REQUEST) {
      const outcomes = await produce(name, produced.slice(i, i + PER_REQUEST).map((r) => ({ partition: 0, key: r.key, value: r.value, timestamp: r.timestamp, headers: [{ key: 'h', value: r.header }] })), { acks: 'all' });
      expect(outcomes.every((o) => 'offset' in o)).toBe(true);
    }
    // Roll while there is a tail to roll (the replicator and the sweep do this as the log grows).
    for (let round = 0; round < 100 && (await rollPartition(name, 0, { force: true, maxSegments: 64 })).rolled > 0; round++) { /* until nothing is due */ }
    // One more request after the rolls: the tail holds records too.
    const tailRecords = produced.slice(RECORDS - PER_REQUEST);
    await produce(name, tailRecords.map((r) => ({ partition: 0, key: r.key, value: r.value, timestamp: r.timestamp, headers: [{ key: 'h', value: r.header }] })), { acks: 'all' });
    const all = [...produced, ...tailRecords];

    const segments = await listSegments(topic.topicId, 0);
    expect(segments.length).toBeGreaterThanOrEqual(5);
    const rolledEnd = segments[segments.length - 1]!.endOffset;
    expect(rolledEnd).toBeGreaterThan(RECORDS / 2);

    // A consumer from offset 0, 1 MiB per fetch.
    let next = 0;
    let fetches = 0;
    let crossedTiers = false;
    while (next < all.length) {
      const r = await readFromLeader(name, 0, (t) => fetchRecords(t, { offset: next, maxBytes: 1024 * 1024, maxWaitMs: 0 }));
      expect(r.records.length).toBeGreaterThan(0);
      if (next < rolledEnd && r.nextOffset > rolledEnd) crossedTiers = true;
      for (const rec of r.records) {
        expect(rec.offset).toBe(next);
        const want = all[next]!;
        if (!rec.key?.equals(want.key) || !rec.value?.equals(want.value) || rec.timestamp !== want.timestamp || !rec.headers[0]?.value?.equals(want.header)) {
          expect.fail(`record ${next} differs from what was produced`);
        }
        next++;
      }
      fetches++;
    }
    expect(next).toBe(all.length);
    expect(fetches).toBeGreaterThan(5);
    expect(crossedTiers).toBe(true);

    // ListOffsets by timestamp: the first offset whose timestamp is at or after the target.
    const linear = (ts: number) => {
      const i = all.findIndex((r) => r.timestamp >= ts);
      return i < 0 ? { offset: null, timestamp: null } : { offset: i, timestamp: all[i]!.timestamp };
    };
    const targets = [t0 - 1000, t0, ...Array.from({ length: 40 }, () => t0 + Math.floor(random() * (RECORDS + PER_REQUEST) * 10)), t0 + (RECORDS + PER_REQUEST) * 10 + 1000];
    for (const ts of targets) {
      expect(await readFromLeader(name, 0, (t) => listOffset(t, { timestamp: ts }))).toEqual(linear(ts));
    }
  });
});
