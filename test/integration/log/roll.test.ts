/**
 * Rolling the table tail into S3 segments (lib/log/roll.ts): only batches below the high
 * watermark roll; a crash at every step leaves every record readable exactly once, and the next
 * roll finishes the job; concurrent rollers make one segment per range.
 *
 * A private quiet stack (no stream poller, no controllers): each step is driven here.
 */
import { describe, expect, it } from 'vitest';
import { replicaStore } from '../../../lib/cluster/metadata.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { produce } from '../../../lib/log/produce.js';
import { PENDING_STALE_MS, rollPartition, type RollStep } from '../../../lib/log/roll.js';
import { topicPartitionKey } from '../../../lib/storage/model.js';
import { correctTailBytes } from '../../../lib/storage/replica/tail.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { readHead, tailStartOf } from '../../../lib/storage/replica/head.js';
import { type ReplicaStoreRef } from '../../../lib/storage/replica/store.js';
import { commitSegment, listSegments, registerPending, segmentObjectKey } from '../../../lib/storage/coordination/segments.js';
import { replicaLog, useQuietCluster } from '../../support/cluster.js';
import { readTieredLog } from '../../support/segments.js';

useQuietCluster();

let n = 0;

/** A topic of 1 partition, RF 3, with `records` acks=all records of ~200 bytes in batches of 5. */
async function setup(records: number, configs: Record<string, string> = {}) {
  const name = `roll-${process.pid}-${n++}`;
  const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: 3, configs: Object.entries({ 'segment.bytes': '4096', ...configs }).map(([name, value]) => ({ name, value })) });
  const p0 = partitions[0]!;
  const tp = topicPartitionKey(topic.topicId, 0);
  const stores = await Promise.all(p0.replicas.map((b) => replicaStore(b)));
  const leader = (await replicaStore(p0.leader))!;
  for (let i = 0; i < records; i += 5) {
    await produce(name, Array.from({ length: 5 }, (_, j) => ({ partition: 0, key: Buffer.from(`k${i + j}`), value: Buffer.alloc(200, (i + j) % 251), headers: [] })), { acks: 'all' });
  }
  return { name, topicId: topic.topicId, tp, leader, stores };
}

/**
 * What a reader of `store` sees: live segments below the replica's tail start, its table from
 * there on. Returns the offsets read (in order) and each offset's value.
 */
async function readerView(topicId: string, tp: string, store: ReplicaStoreRef) {
  const offsets: number[] = [];
  const values = new Map<number, string>();
  const head = await readTieredLog(topicId, tp, store, (offset, value) => {
    offsets.push(offset);
    values.set(offset, value?.toString('hex') ?? '');
  });
  return { offsets, values, head };
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

/**
 * Every replica of `s` reads offsets 0 to `records` - 1 with the values `before` read, and, where
 * `tailStart` is given, has its tail start there.
 */
async function expectEveryReplicaReads(s: Awaited<ReturnType<typeof setup>>, before: Awaited<ReturnType<typeof readerView>>, records: number, tailStart?: number) {
  for (const store of s.stores) {
    const view = await readerView(s.topicId, s.tp, store!);
    if (tailStart !== undefined) expect(view.head.tailStart).toBe(tailStart);
    expect(view.offsets).toEqual(range(0, records));
    expect(view.values).toEqual(before.values);
  }
}

describe('rolling the table tail into S3 segments', () => {
  it('rolls whole batches below the high watermark into segments every replica shares, and trims every table', async () => {
    const s = await setup(60);
    const before = await readerView(s.topicId, s.tp, s.leader);
    expect(before.offsets).toEqual(range(0, 60));

    const result = await rollPartition(s.name, 0, { force: true });
    expect(result.rolled).toBeGreaterThan(1);
    const segments = await listSegments(s.topicId, 0);
    expect(segments.length).toBe(result.rolled);
    // Contiguous from 0, ending at a batch boundary at or below the high watermark.
    segments.forEach((seg, i) => expect(seg.baseOffset).toBe(i === 0 ? 0 : segments[i - 1]!.endOffset));
    expect(segments[0]!.key).toBe(segmentObjectKey(s.topicId, 0, 0));
    const end = segments[segments.length - 1]!.endOffset;
    await expectEveryReplicaReads(s, before, 60, end);
    for (const store of s.stores) {
      // The table holds only the tail now.
      const items = await replicaLog(store!, s.tp);
      expect(items[0]?.baseOffset ?? end).toBeGreaterThanOrEqual(end);
    }
  });

  it('rolls nothing at or above the high watermark', async () => {
    const s = await setup(20);
    // acks=1 records after the acknowledged ones: no replication runs on this quiet stack, so the high watermark stays at 20.
    // (one request of 8 KiB and more: its batch goes to S3, and the roll adopts it as an external entry)
    await produce(s.name, range(0, 40).map((i) => ({ partition: 0, key: null, value: Buffer.alloc(200, i), headers: [] })), { acks: 1 });
    const head = (await readHead(s.leader, s.tp))!;
    expect(head.hw).toBe(20);
    await rollPartition(s.name, 0, { force: true });
    const segments = await listSegments(s.topicId, 0);
    expect(segments.length).toBeGreaterThan(0);
    expect(Math.max(...segments.map((g) => g.endOffset))).toBeLessThanOrEqual(20);
    expect((await readerView(s.topicId, s.tp, s.leader)).offsets).toEqual(range(0, 60));
  });

  it('adopts a large batch already in a data/ object by reference, without copying its bytes', async () => {
    const s = await setup(10);
    // One request of 40 × 300 bytes: over inline.max.bytes, so its batch is in S3 and the table holds a pointer.
    await produce(s.name, range(0, 40).map((i) => ({ partition: 0, key: null, value: Buffer.alloc(300, i), headers: [] })), { acks: 'all' });
    const pointer = (await queryBatches(s.leader, s.tp, { fromOffset: 10, toOffset: 49, maxBytes: Number.MAX_SAFE_INTEGER }))[0]!;
    expect(pointer.s3).toBeDefined();
    const before = await readerView(s.topicId, s.tp, s.leader);
    await rollPartition(s.name, 0, { force: true });
    const segments = await listSegments(s.topicId, 0);
    const adopting = segments.find((g) => g.baseOffset <= 10 && g.endOffset > 10)!;
    expect(adopting.externalKeys).toEqual([pointer.s3!.key]);
    expect(adopting.sizeBytes).toBeLessThan(pointer.sizeBytes);
    const after = await readerView(s.topicId, s.tp, s.leader);
    expect(after.head.tailStart).toBe(50);
    expect(after.offsets).toEqual(range(0, 50));
    expect(after.values).toEqual(before.values);
  });

  it('does nothing when the tail is neither over segment.bytes nor older than segment.ms', async () => {
    const s = await setup(10, { 'segment.bytes': '1048576' });
    expect(await rollPartition(s.name, 0)).toEqual({ rolled: 0, trimmed: 0 });
    // ...and rolls when segment.ms has passed.
    const later = Date.now() + 3_600_001;
    expect((await rollPartition(s.name, 0, { now: () => later })).rolled).toBe(1);
  });

  it('corrects a tailBytes that drifted above the real tail instead of rolling a small segment, and rolls once the tail is a segment\'s worth', async () => {
    const s = await setup(10);
    const head = (await readHead(s.leader, s.tp))!;
    // (a truncation or a full sync left the trigger overstated)
    await correctTailBytes(s.leader, s.tp, 1_000_000);
    expect(await rollPartition(s.name, 0)).toEqual({ rolled: 0, trimmed: 0 });
    expect(await listSegments(s.topicId, 0)).toEqual([]);
    expect((await readHead(s.leader, s.tp))!.tailBytes).toBe(head.tailBytes);
    // 40 more records (about 8 KiB of batches at 4 KiB segment.bytes): due for real, and rolled.
    for (let i = 0; i < 40; i += 5) await produce(s.name, range(i, i + 5).map((j) => ({ partition: 0, key: null, value: Buffer.alloc(200, j), headers: [] })), { acks: 'all' });
    expect((await rollPartition(s.name, 0)).rolled).toBeGreaterThan(0);
  });

  for (const step of ['registered', 'written', 'committed', 'trimmed-one'] as const satisfies readonly RollStep[]) {
    it(`a roller that crashes after "${step}" leaves every record readable exactly once, and the next roll finishes`, async () => {
      const s = await setup(40);
      const before = await readerView(s.topicId, s.tp, s.leader);
      class Crash extends Error {}
      await expect(rollPartition(s.name, 0, { force: true, hook: (at) => { if (at === step) throw new Crash(step); } })).rejects.toBeInstanceOf(Crash);
      await expectEveryReplicaReads(s, before, 40);
      // The next roller (a stale claim is taken over once old enough) finishes and rolls the rest.
      const later = Date.now() + PENDING_STALE_MS + 1;
      await rollPartition(s.name, 0, { force: true, now: () => later });
      const segments = await listSegments(s.topicId, 0, { states: ['pending', 'live'] });
      expect(segments.every((g) => g.state === 'live')).toBe(true);
      segments.forEach((seg, i) => expect(seg.baseOffset).toBe(i === 0 ? 0 : segments[i - 1]!.endOffset));
      const end = segments[segments.length - 1]!.endOffset;
      await expectEveryReplicaReads(s, before, 40, end);
    });
  }

  it('a follower that missed a trim (its store failed, say) is trimmed by the next roll pass', async () => {
    const s = await setup(40);
    const leaderId = s.leader.brokerId;
    class Crash extends Error {}
    // The leader's trim lands, then the roller dies before the followers'.
    let trims = 0;
    await expect(rollPartition(s.name, 0, { force: true, maxSegments: 1, hook: (at) => { if (at === 'trimmed-one' && ++trims === 1) throw new Crash(); } })).rejects.toBeInstanceOf(Crash);
    const leaderTail = (await readHead(s.leader, s.tp))!.tailStart!;
    const followers = s.stores.filter((st) => st!.brokerId !== leaderId);
    expect(s.stores[0]!.brokerId).toBe(leaderId);
    for (const f of followers) expect(tailStartOf((await readHead(f!, s.tp))!)).toBeLessThan(leaderTail);
    // The next pass (which also rolls what is due) brings the followers to the leader's tail start.
    await rollPartition(s.name, 0);
    const leaderNow = (await readHead(s.leader, s.tp))!.tailStart!;
    expect(leaderNow).toBeGreaterThanOrEqual(leaderTail);
    for (const f of followers) {
      expect((await readHead(f!, s.tp))!.tailStart).toBe(leaderNow);
      // ...and hold nothing below it (a later roll's trim deletes only what that roll rolled).
      const items = await replicaLog(f!, s.tp);
      expect(items[0]?.baseOffset ?? leaderNow).toBeGreaterThanOrEqual(leaderNow);
      expect((await readerView(s.topicId, s.tp, f!)).offsets).toEqual(range(0, 40));
    }
  });

  it('never trims a replica whose log differs from a live segment at its end (a segment of another leader epoch)', async () => {
    const s = await setup(20);
    const head = (await readHead(s.leader, s.tp))!;
    const tableBefore = await queryBatches(s.leader, s.tp, { fromOffset: 0, toOffset: 19, maxBytes: Number.MAX_SAFE_INTEGER });
    // A live segment over [0, 10) whose last batch was written under another leader epoch than the
    // one this log has there — what an unclean election leaves behind.
    const key = segmentObjectKey(s.topicId, 0, 0);
    expect(await registerPending({ topicId: s.topicId, partition: 0, baseOffset: 0, endOffset: 10, key, createdAt: Date.now() })).toBe(true);
    expect(await commitSegment({ topicId: s.topicId, partition: 0, baseOffset: 0, endOffset: 10, key }, {
      sizeBytes: 1, recordCount: 10, batchCount: 2, minTimestamp: 0, maxTimestamp: 0, lastLeaderEpoch: head.leaderEpoch + 7,
    })).toBe(true);
    await rollPartition(s.name, 0, { force: true });
    for (const store of s.stores) {
      const h = (await readHead(store!, s.tp))!;
      expect(tailStartOf(h)).toBe(0);
      expect((await queryBatches(store!, s.tp, { fromOffset: 0, toOffset: 19, maxBytes: Number.MAX_SAFE_INTEGER }))[0]!.baseOffset).toBe(0);
    }
    expect(await queryBatches(s.leader, s.tp, { fromOffset: 0, toOffset: 19, maxBytes: Number.MAX_SAFE_INTEGER })).toEqual(tableBefore);
  });

  it('a fresh pending claim of another roller is left alone; two rollers at once make one segment per range', async () => {
    const s = await setup(40);
    const head = (await readHead(s.leader, s.tp))!;
    // Another roller's claim, fresh: this one stops.
    expect(await registerPending({ topicId: s.topicId, partition: 0, baseOffset: 0, endOffset: 5, key: segmentObjectKey(s.topicId, 0, 0), createdAt: Date.now() })).toBe(true);
    expect(await registerPending({ topicId: s.topicId, partition: 0, baseOffset: 0, endOffset: 10, key: segmentObjectKey(s.topicId, 0, 0), createdAt: Date.now() })).toBe(false);
    expect(await rollPartition(s.name, 0, { force: true })).toEqual({ rolled: 0, trimmed: 0 });
    expect((await readHead(s.leader, s.tp))!.tailStart).toBe(head.tailStart);
    // Both rollers later, at once: the claim is finished once, then ranges are split between them.
    const later = Date.now() + PENDING_STALE_MS + 1;
    await Promise.all([rollPartition(s.name, 0, { force: true, now: () => later }), rollPartition(s.name, 0, { force: true, now: () => later })]);
    const segments = await listSegments(s.topicId, 0, { states: ['pending', 'live'] });
    expect(segments[0]!.endOffset).toBe(5);
    segments.forEach((seg, i) => expect(seg.baseOffset).toBe(i === 0 ? 0 : segments[i - 1]!.endOffset));
    for (const store of s.stores) expect((await readerView(s.topicId, s.tp, store!)).offsets).toEqual(range(0, 40));
  });
});
