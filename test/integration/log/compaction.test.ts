/**
 * Log compaction (lib/log/compaction.ts) against the real registry (DynamoDB Local) and objects
 * (s3rver): segments are built here as a roll would leave them (encodeSegment, PUT, pending →
 * live), the pass runs with an injected clock, and the log is then read back the way a consumer
 * reading from the start would: every live segment, in offset order, through the format's decoder.
 */
import { describe, expect, it } from 'vitest';
import { createTopic } from '../../../lib/cluster/topics.js';
import { isKafkaError } from '../../../lib/errors.js';
import { cleaningPlan, compactPartition } from '../../../lib/log/compaction.js';
import { produce } from '../../../lib/log/produce.js';
import { batchBytes } from '../../../lib/log/read.js';
import { rollPartition } from '../../../lib/log/roll.js';
import {
  batchesOf, decodeFooter, decodeIndex, encodeSegment, entryFor, indexRange, readPlan, verifyBatchRegion,
  type SegmentBatchInput, type SegmentIndex,
} from '../../../lib/log/segment-format.js';
import { decodeBatch, encodeBatch, type DecodedBatch } from '../../../lib/protocol/record-batch.js';
import { listKeys, putObject, readObject, readRange } from '../../../lib/storage/objects.js';
import {
  commitSegment, listSegments, registerPending, segmentObjectKey, tombstoneSegments, type SegmentRecord,
} from '../../../lib/storage/coordination/segments.js';
import { replicaStore } from '../../../lib/cluster/metadata.js';
import { topicPartitionKey } from '../../../lib/storage/model.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { readHead, tailStartOf } from '../../../lib/storage/replica/head.js';
import { useQuietCluster } from '../../support/cluster.js';

useQuietCluster();

const T0 = 1_700_000_000_000;
const DAY = 86_400_000;
let n = 0;

/** A record to write: key and value as strings (null value: a tombstone), timestamp offset from T0. */
interface W { k: string | null; v: string | null; t?: number }
interface BatchSpec { records: W[]; gzip?: boolean; producer?: { id: number; epoch: number; seq: number }; external?: boolean }

interface Partition {
  name: string; topicId: string;
  /** The next offset a rolled segment starts at. */
  next: number;
  /** Every record written, as a consumer of the uncompacted log would see it. */
  written: { offset: number; key: string | null; value: string | null }[];
  /** Batch ranges as written: base → last offset. */
  ranges: Map<number, number>;
}

async function compactedTopic(configs: Record<string, string>, policy = 'compact'): Promise<Partition> {
  const name = `compact-${process.pid}-${n++}`;
  const { topic } = await createTopic({
    name, partitions: 1, replicationFactor: 1,
    configs: Object.entries({ 'cleanup.policy': policy, 'segment.bytes': '4096', ...configs }).map(([k, v]) => ({ name: k, value: v })),
  });
  return { name, topicId: topic.topicId, next: 0, written: [], ranges: new Map() };
}

const buf = (s: string | null): Buffer | null => (s === null ? null : Buffer.from(s));

/** Rolls one segment of these batches at the partition's next offset, as lib/log/roll.ts leaves it: object written, item live. */
async function roll(p: Partition, batches: BatchSpec[]): Promise<SegmentRecord> {
  const base = p.next;
  const inputs: SegmentBatchInput[] = [];
  for (const [i, b] of batches.entries()) {
    const records = b.records.map((r) => ({ timestamp: T0 + (r.t ?? 0), key: buf(r.k), value: buf(r.v) }));
    const producer = b.producer ? { producerId: b.producer.id, producerEpoch: b.producer.epoch, baseSequence: b.producer.seq } : {};
    const common = { baseOffset: p.next, lastOffset: p.next + records.length - 1, leaderEpoch: 3, maxTimestamp: Math.max(...records.map((r) => r.timestamp)), recordCount: records.length };
    if (b.external) {
      // A large produce request's data/ object: the batch at base offset 0, somewhere inside.
      const bytes = encodeBatch({ baseOffset: 0, records, ...producer });
      const key = `data/${p.topicId}/0/${base}-${i}.batch`;
      await putObject(key, Buffer.concat([Buffer.alloc(7), bytes]));
      inputs.push({ ...common, sizeBytes: bytes.length, external: { key, position: 7, length: bytes.length } });
    } else {
      const bytes = encodeBatch({ baseOffset: p.next, partitionLeaderEpoch: 3, records, compression: b.gzip ? 'gzip' : 'none', ...producer });
      inputs.push({ ...common, sizeBytes: bytes.length, bytes });
    }
    b.records.forEach((r, j) => p.written.push({ offset: p.next + j, key: r.k, value: r.v }));
    p.ranges.set(p.next, p.next + records.length - 1);
    p.next += records.length;
  }
  const { body, footer, index } = encodeSegment(inputs);
  const key = segmentObjectKey(p.topicId, 0, base);
  const seg = { topicId: p.topicId, partition: 0, baseOffset: base, endOffset: p.next, key };
  expect(await registerPending({ ...seg, createdAt: Date.now() })).toBe(true);
  await putObject(key, body);
  const externalKeys = [...new Set(index.flatMap((e) => (e.externalKey ? [e.externalKey] : [])))];
  expect(await commitSegment(seg, {
    sizeBytes: body.length, recordCount: footer.recordCount, batchCount: footer.batchCount,
    minTimestamp: footer.minTimestamp, maxTimestamp: footer.maxTimestamp, ...(externalKeys.length > 0 ? { externalKeys } : {}),
  })).toBe(true);
  return (await listSegments(p.topicId, 0, { fromOffset: base }))[0] as SegmentRecord;
}

/** `count` one-record batches of keys `<prefix><i mod keys>`, values tagged with `tag`. */
const singles = (count: number, keys: number, tag: string, t = 0, prefix = 'k'): BatchSpec[] =>
  Array.from({ length: count }, (_, i) => ({ records: [{ k: `${prefix}${i % keys}`, v: `${tag}-${i}`, t }] }));

interface SegmentRead { segment: SegmentRecord; index: SegmentIndex; batches: DecodedBatch[] }

/** A segment object read and checked whole through the format's decoder: footer, index, region CRC, every batch's CRC. */
async function readSegment(s: SegmentRecord): Promise<SegmentRead> {
  const body = await readObject(s.key);
  const footer = decodeFooter(body, body.length);
  const { position, length } = indexRange(footer);
  const index = decodeIndex(body.subarray(position, position + length), footer);
  verifyBatchRegion(body.subarray(0, footer.batchRegionBytes), footer);
  expect([footer.baseOffset, footer.endOffset]).toEqual([s.baseOffset, s.endOffset]);
  const batches: DecodedBatch[] = [];
  for (const range of readPlan(index, s.baseOffset, Infinity).ranges) {
    const data = range.key === undefined ? body.subarray(range.position, range.position + range.length) : await readRange(range.key, range.position, range.length);
    for (const bytes of batchesOf(index, range, data)) batches.push(decodeBatch(bytes, { verifyCrc: true }));
  }
  return { segment: s, index, batches };
}

/** The log as a consumer reading from the start sees it: live segments tile [first base, end) with no hole, records in offset order. */
async function consume(p: Partition) {
  const segments = await listSegments(p.topicId, 0);
  const reads = await Promise.all(segments.map(readSegment));
  segments.forEach((s, i) => { if (i > 0) expect(s.baseOffset).toBe(segments[i - 1]?.endOffset); });
  const records = reads.flatMap((r) => r.batches.flatMap((b) => b.records)).map((r) => ({ offset: r.offset, key: r.key?.toString() ?? null, value: r.value?.toString() ?? null }));
  records.forEach((r, i) => { if (i > 0) expect(r.offset).toBeGreaterThan(records[i - 1]?.offset as number); });
  return { segments, reads, records };
}

/** Each key's last record as written, in offset order (what a compacted log keeps, before tombstones expire). */
const latestPerKey = (p: Partition, dropTombstones = false) => {
  const last = new Map<string, Partition['written'][number]>();
  for (const r of p.written) if (r.key !== null) last.set(r.key, r);
  return [...last.values()].filter((r) => !dropTombstones || r.value !== null).sort((a, b) => a.offset - b.offset);
};

describe('Function: compactPartition', () => {
  it('keeps exactly the last value per key at its original offset, merges small segments, and writes valid segment objects', async () => {
    const p = await compactedTopic({});
    await roll(p, singles(30, 7, 'a'));
    await roll(p, [
      { records: [{ k: 'k1', v: 'b-0' }, { k: 'k2', v: 'b-1' }, { k: 'k1', v: 'b-2' }, { k: 'k9', v: 'b-3' }, { k: 'x', v: 'b-4' }], producer: { id: 42, epoch: 5, seq: 100 } },
      { records: [{ k: 'k3', v: 'b-5' }, { k: 'k3', v: 'b-6' }, { k: 'k4', v: 'b-7' }], gzip: true },
    ]);
    await roll(p, singles(30, 5, 'c', 0, 'm'));
    await roll(p, [{ records: [{ k: 'x', v: 'd-0' }] }]);
    const before = await listSegments(p.topicId, 0);

    const result = await compactPartition(p.name, 0, { now: T0 + 1 });

    expect(result).toMatchObject({ lostRace: false, segmentsRead: 4, segmentsReplaced: 4, recordsRemoved: p.written.length - latestPerKey(p).length, cleanedTo: p.next });
    const { segments, reads, records } = await consume(p);
    expect(records).toEqual(latestPerKey(p));
    // Merged (kept bytes fit in one segment.bytes), same range, a new object, marked clean.
    expect(segments).toHaveLength(1);
    expect(segments[0]).toMatchObject({ baseOffset: 0, endOffset: p.next, cleanedTo: p.next, state: 'live' });
    expect(segments[0]?.generation).toBeGreaterThan(0);
    expect(segments[0]?.key).toBe(segmentObjectKey(p.topicId, 0, 0, segments[0]?.generation));
    expect(before.map((s) => s.key)).not.toContain(segments[0]?.key);
    expect(segments[0]?.recordCount).toBe(records.length);
    // Every surviving batch keeps its range (lastOffsetDelta), leader epoch and producer fields.
    const batches = reads.flatMap((r) => r.batches);
    for (const b of batches) expect(p.ranges.get(b.baseOffset)).toBe(b.lastOffset);
    const idempotent = batches.find((b) => b.baseOffset === 30) as DecodedBatch;
    // Its first and last records have later values (k1 at 32, x at 68): the batch keeps [30, 34] with 31..33.
    expect(idempotent).toMatchObject({ lastOffset: 34, producerId: 42, producerEpoch: 5, baseSequence: 100, partitionLeaderEpoch: 3, recordCount: 3 });
    expect(idempotent.records.map((r) => r.offset)).toEqual([31, 32, 33]);
    expect(batches.find((b) => b.baseOffset === 35)).toMatchObject({ compression: 'gzip', lastOffset: 37 });
    // A fetch at an offset compacted away starts at the next surviving record.
    const index = reads[0]?.index as SegmentIndex;
    const at = index.entries[entryFor(index, 30)];
    expect(at?.baseOffset).toBe(30);
    expect(batches.find((b) => b.baseOffset === at?.baseOffset)?.records[0]?.offset).toBe(31);
    // Nothing left to do: the log is clean.
    expect(cleaningPlan({ 'cleanup.policy': 'compact' }, segments, T0 + 1).due).toBe(false);
  });

  it('keeps tombstones for delete.retention.ms and through a first cleaning, then drops them with every older value of their key', async () => {
    const p = await compactedTopic({ 'delete.retention.ms': String(DAY), 'min.cleanable.dirty.ratio': '0.01' });
    await roll(p, [...singles(10, 5, 'a'), { records: [{ k: 'k1', v: null, t: 10 }, { k: 'k2', v: null, t: 10 }] }]);

    // First cleaning, long after the tombstones' time: the older k1 and k2 values go, the tombstones stay.
    await compactPartition(p.name, 0, { now: T0 + 2 * DAY });
    expect((await consume(p)).records).toEqual(latestPerKey(p));

    // Later cleanings (new dirty data) before delete.retention.ms has passed: still kept.
    const q = await compactedTopic({ 'delete.retention.ms': String(DAY), 'min.cleanable.dirty.ratio': '0.01' });
    await roll(q, [...singles(10, 5, 'a'), { records: [{ k: 'k1', v: null, t: 10 }] }]);
    await compactPartition(q.name, 0, { now: T0 + 20 });
    await roll(q, singles(3, 3, 'b', 20, 'b'));
    await compactPartition(q.name, 0, { now: T0 + DAY });
    expect((await consume(q)).records).toEqual(latestPerKey(q));
    expect((await consume(q)).records.filter((r) => r.value === null)).toHaveLength(1);

    // Once timestamp + delete.retention.ms has passed: gone, and no older value of its key comes back.
    await roll(q, singles(3, 3, 'c', 30, 'c'));
    const r = await compactPartition(q.name, 0, { now: T0 + 10 + DAY });
    expect(r.tombstonesRemoved).toBe(1);
    const { records } = await consume(q);
    expect(records).toEqual(latestPerKey(q, true));
    expect(records.some((x) => x.key === 'k1')).toBe(false);

    // The same at once for p, whose tombstones were cleaned once already.
    await roll(p, singles(2, 2, 'z', 20, 'z'));
    expect((await compactPartition(p.name, 0, { now: T0 + 2 * DAY })).tombstonesRemoved).toBe(2);
    expect((await consume(p)).records).toEqual(latestPerKey(p, true));
  });

  it('keeps a segment whose records are all gone as its last batch\'s empty header over its range, so the log has no hole', async () => {
    // segment.bytes at its minimum: no two segments merge, so the emptied one is rewritten alone.
    const p = await compactedTopic({ 'delete.retention.ms': '1000', 'min.cleanable.dirty.ratio': '0.01', 'segment.bytes': '14' });
    await roll(p, [{ records: [{ k: 'a', v: '1' }, { k: 'b', v: '2' }] }, { records: [{ k: 'a', v: null }, { k: 'b', v: null }] }]);
    await compactPartition(p.name, 0, { now: T0 + 2000 });
    await roll(p, [{ records: [{ k: 'c', v: '3', t: 1 }] }]);
    const r = await compactPartition(p.name, 0, { now: T0 + 2000 });
    expect(r).toMatchObject({ tombstonesRemoved: 2, replacements: 2 });

    const { segments, reads, records } = await consume(p);
    expect(records).toEqual([{ offset: 4, key: 'c', value: '3' }]);
    expect(segments.map((s) => [s.baseOffset, s.endOffset, s.recordCount])).toEqual([[0, 4, 0], [4, 5, 1]]);
    const empty = reads[0]?.batches[0];
    expect(reads[0]?.batches).toHaveLength(1);
    expect(empty).toMatchObject({ baseOffset: 2, lastOffset: 3, recordCount: 0, partitionLeaderEpoch: 3, records: [] });
  });

  it('waits for min.cleanable.dirty.ratio: a small dirty part is left until enough accumulates', async () => {
    const p = await compactedTopic({ 'min.cleanable.dirty.ratio': '0.5', 'segment.bytes': '100000' });
    await roll(p, singles(40, 40, 'a'));
    await compactPartition(p.name, 0, { now: T0 + 1 });
    const clean = await listSegments(p.topicId, 0);

    await roll(p, singles(5, 5, 'b'));
    const small = await listSegments(p.topicId, 0);
    const plan = cleaningPlan({ 'cleanup.policy': 'compact', 'min.cleanable.dirty.ratio': '0.5' }, small, T0 + 1);
    expect(plan.dirtyRatio).toBeGreaterThan(0);
    expect(plan.dirtyRatio).toBeLessThan(0.5);
    expect(cleaningPlan({ 'cleanup.policy': 'compact', 'min.cleanable.dirty.ratio': '0.5' }, small, T0 + 1).due).toBe(false);
    expect((await compactPartition(p.name, 0, { now: T0 + 1 })).skipped).toBe('not-due');
    expect((await listSegments(p.topicId, 0)).map((s) => s.key)).toEqual([...clean.map((s) => s.key), small[1]?.key]);

    await roll(p, singles(60, 60, 'c'));
    expect(cleaningPlan({ 'cleanup.policy': 'compact', 'min.cleanable.dirty.ratio': '0.5' }, await listSegments(p.topicId, 0), T0 + 1).due).toBe(true);
    const r = await compactPartition(p.name, 0, { now: T0 + 1 });
    expect(r.segmentsReplaced).toBe(3);
    expect((await consume(p)).records).toEqual(latestPerKey(p));
  });

  it('cleans only segments older than min.compaction.lag.ms; a newer value in a younger segment does not remove the older one yet', async () => {
    const p = await compactedTopic({ 'min.compaction.lag.ms': '1000', 'min.cleanable.dirty.ratio': '0.01', 'segment.bytes': '14' });
    await roll(p, [{ records: [{ k: 'a', v: 'a0' }, { k: 'a', v: 'a1' }, { k: 'b', v: 'b0' }] }]);
    await roll(p, [{ records: [{ k: 'b', v: 'b1', t: 500 }, { k: 'b', v: 'b2', t: 500 }] }]);

    expect((await compactPartition(p.name, 0, { now: T0 + 999 })).skipped).toBe('not-due');
    const r = await compactPartition(p.name, 0, { now: T0 + 1000 });
    expect(r).toMatchObject({ segmentsRead: 1, segmentsReplaced: 1, recordsRemoved: 1, cleanedTo: 3 });
    const { segments, records } = await consume(p);
    expect(segments.map((s) => s.generation > 0)).toEqual([true, false]);
    expect(records.map((x) => x.value)).toEqual(['a1', 'b0', 'b1', 'b2']);

    const again = await compactPartition(p.name, 0, { now: T0 + 1500 });
    expect(again).toMatchObject({ segmentsRead: 2, cleanedTo: 5 });
    expect((await consume(p)).records.map((x) => x.value)).toEqual(['a1', 'b2']);
  });

  it('runs beside a roll: a segment rolled while the pass rewrites stays live and dirty, the swap still wins', async () => {
    const p = await compactedTopic({});
    await roll(p, singles(20, 3, 'a'));
    let rolled: SegmentRecord | undefined;
    const r = await compactPartition(p.name, 0, { now: T0 + 1, hook: async () => { rolled ??= await roll(p, singles(5, 5, 'b', 0, 'b')); } });
    expect(r).toMatchObject({ lostRace: false, replacements: 1, cleanedTo: 20 });
    const { segments, records } = await consume(p);
    expect(segments.map((s) => [s.baseOffset, s.endOffset, s.cleanedTo])).toEqual([[0, 20, 20], [20, 25, undefined]]);
    expect(segments[1]).toEqual(rolled);
    expect(records).toEqual(latestPerKey(p));
  });

  it('makes a small dirty part due once its oldest batch passed max.compaction.lag.ms, whatever the dirty ratio', () => {
    const seg = (baseOffset: number, endOffset: number, ts: number, cleanedTo?: number): SegmentRecord => ({
      topicId: 't', partition: 0, baseOffset, endOffset, key: `k${baseOffset}`, generation: 0, state: 'live', createdAt: 0,
      sizeBytes: (endOffset - baseOffset) * 100, minTimestamp: ts, maxTimestamp: ts, ...(cleanedTo === undefined ? {} : { cleanedTo }),
    });
    const segments = [seg(0, 90, T0, 90), seg(90, 100, T0 + 10)];
    const configs = { 'cleanup.policy': 'compact', 'max.compaction.lag.ms': '1000' };
    expect(cleaningPlan(configs, segments, T0 + 1010)).toMatchObject({ firstDirtyOffset: 90, dirtyRatio: 0.1, due: false });
    expect(cleaningPlan(configs, segments, T0 + 1011).due).toBe(true);
    // min.compaction.lag.ms still holds it back.
    expect(cleaningPlan({ ...configs, 'min.compaction.lag.ms': '5000' }, segments, T0 + 2000).due).toBe(false);
    expect(cleaningPlan({ 'cleanup.policy': 'delete', 'min.cleanable.dirty.ratio': '0' }, segments, T0 + 2000).due).toBe(false);
  });

  it('compacts cleanup.policy=compact,delete topics too, and leaves delete-only topics alone', async () => {
    const both = await compactedTopic({}, 'compact,delete');
    await roll(both, singles(20, 3, 'a'));
    expect((await compactPartition(both.name, 0, { now: T0 + 1 })).segmentsReplaced).toBe(1);
    expect((await consume(both)).records).toEqual(latestPerKey(both));

    const del = await compactedTopic({}, 'delete');
    const seg = await roll(del, singles(20, 3, 'a'));
    expect((await compactPartition(del.name, 0, { now: T0 + 1 })).skipped).toBe('not-compacted');
    expect(await listSegments(del.topicId, 0)).toEqual([seg]);
  });

  it('leaves adopted large batches in their data/ objects when they keep every record, and copies the survivors of the others', async () => {
    const p = await compactedTopic({});
    await roll(p, [
      { records: [{ k: 'a', v: 'x'.repeat(300) }, { k: 'b', v: 'y'.repeat(300) }], external: true },
      { records: [{ k: 'c', v: 'z'.repeat(300) }, { k: 'd', v: 'w' }], external: true },
      { records: [{ k: 'a', v: 'a1' }] },
    ]);
    await compactPartition(p.name, 0, { now: T0 + 1 });
    const { segments, reads, records } = await consume(p);
    expect(records).toEqual(latestPerKey(p));
    expect(reads[0]?.index.entries.map((e) => e.externalKey !== undefined)).toEqual([false, true, false]);
    expect(segments[0]?.externalKeys).toEqual([`data/${p.topicId}/0/0-1.batch`]);
  });

  it('where a retention tombstones a segment between the rewrite and the swap, the swap fails whole and the log is unchanged', async () => {
    const p = await compactedTopic({});
    await roll(p, singles(20, 3, 'a'));
    await roll(p, singles(20, 3, 'b'));
    const before = await consume(p);
    let written: string | undefined;
    const r = await compactPartition(p.name, 0, {
      now: T0 + 1,
      hook: async (e) => {
        written = e.replacement.key;
        await tombstoneSegments(e.group.slice(0, 1), T0);
      },
    });
    expect(r).toMatchObject({ lostRace: true, replacements: 0 });
    const after = await listSegments(p.topicId, 0);
    expect(after).toEqual(before.segments.slice(1)); // only retention's change
    expect((await consume(p)).records).toEqual(before.records.filter((x) => x.offset >= 20));
    // The rewrite's object is an orphan for the garbage pass: nothing refers to it.
    expect(await listKeys(written as string)).toEqual([written]);
    expect((await listSegments(p.topicId, 0, { states: ['live', 'pending', 'deleted'] })).map((s) => s.key)).not.toContain(written);
  });

  it('where two compactions race on the same segments, one swap wins, the other changes nothing, and their objects differ', async () => {
    const p = await compactedTopic({ 'delete.retention.ms': '0' });
    await roll(p, singles(20, 3, 'a'));
    let inner: Awaited<ReturnType<typeof compactPartition>> | undefined;
    let outerKey: string | undefined;
    const outer = await compactPartition(p.name, 0, {
      now: T0 + 1,
      hook: async (e) => {
        outerKey = e.replacement.key;
        if (!inner) inner = await compactPartition(p.name, 0, { now: T0 + 5 });
      },
    });
    expect(outer.lostRace).toBe(true);
    expect(inner).toMatchObject({ lostRace: false, replacements: 1 });
    const { segments, records } = await consume(p);
    expect(records).toEqual(latestPerKey(p));
    expect(segments[0]?.key).not.toBe(outerKey);
  });
});

describe('Function: compactPartition, bounded', () => {
  it('past its deadline, reads nothing more and replaces nothing: the log is as it was', async () => {
    const p = await compactedTopic({});
    await roll(p, singles(20, 3, 'a'));
    await roll(p, singles(20, 3, 'b'));
    const before = await listSegments(p.topicId, 0);
    const result = await compactPartition(p.name, 0, { now: T0 + 1, deadline: Date.now() - 1 });
    expect(result).toMatchObject({ skipped: 'deadline', replacements: 0, segmentsReplaced: 0 });
    expect(await listSegments(p.topicId, 0)).toEqual(before);
  });

  it('with a key map that fills after the first segment, cleans that segment alone and keeps every record a later one may still need', async () => {
    const p = await compactedTopic({});
    // 40 distinct keys in the first segment: ~40 × (2 + 64) bytes of map.
    await roll(p, singles(80, 40, 'a'));
    await roll(p, singles(20, 40, 'b'));
    const result = await compactPartition(p.name, 0, { now: T0 + 1, keyMapBytes: 1000 });
    expect(result).toMatchObject({ segmentsRead: 1, segmentsReplaced: 1 });
    const { records } = await consume(p);
    // The first segment keeps each key's last record of its own (the second's keys were not mapped); the second is whole.
    const firstKept = records.filter((r) => r.offset < 80);
    expect(firstKept.map((r) => r.value)).toEqual(Array.from({ length: 40 }, (_, i) => `a-${40 + i}`));
    expect(records.filter((r) => r.offset >= 80)).toHaveLength(20);
  });
});

describe('Compaction of a produced and rolled log', () => {
  it('where records are produced, rolled by rollPartition and compacted, a consumer reading from offset 0 (segments, then the table tail) sees every key\'s latest value', async () => {
    const name = `compact-e2e-${process.pid}`;
    const { topic, partitions } = await createTopic({
      name, partitions: 1, replicationFactor: 3,
      configs: [{ name: 'cleanup.policy', value: 'compact' }, { name: 'segment.bytes', value: '4096' }, { name: 'min.cleanable.dirty.ratio', value: '0.01' }],
    });
    const expected = new Map<string, { offset: number; value: string | null }>();
    const produceRound = async (round: number) => {
      for (let i = 0; i < 60; i += 6) {
        const records = Array.from({ length: 6 }, (_, j) => ({ partition: 0, key: Buffer.from(`key-${(i + j) * 7 % 23}`), value: (i + j) % 17 === 5 ? null : Buffer.from(`r${round}-${i + j}-${'x'.repeat(50)}`), headers: [] }));
        const outcomes = await produce(name, records, { acks: 'all' });
        outcomes.forEach((o, j) => {
          if (!o.ok) throw o.error;
          expected.set((records[j] as { key: Buffer }).key.toString(), { offset: o.offset, value: records[j]?.value?.toString() ?? null });
        });
      }
    };
    await produceRound(0);
    expect((await rollPartition(name, 0, { force: true })).rolled).toBeGreaterThan(1);
    await compactPartition(name, 0);
    await produceRound(1);
    await rollPartition(name, 0, { force: true });
    await produceRound(2); // stays in the table tail
    const r = await compactPartition(name, 0);
    expect(r).toMatchObject({ lostRace: false });
    expect(r.recordsRemoved).toBeGreaterThan(0);

    const segments = await listSegments(topic.topicId, 0);
    const fromSegments = (await Promise.all(segments.map(readSegment))).flatMap((s) => s.batches.flatMap((b) => b.records));
    const leader = (await replicaStore(partitions[0]!.leader))!;
    const tp = topicPartitionKey(topic.topicId, 0);
    const head = (await readHead(leader, tp))!;
    expect(segments[segments.length - 1]?.endOffset).toBe(tailStartOf(head));
    const tail = await queryBatches(leader, tp, { fromOffset: tailStartOf(head), toOffset: head.hw - 1, maxBytes: Number.MAX_SAFE_INTEGER });
    const fromTail = (await Promise.all(tail.map(async (b) => decodeBatch(await batchBytes(b))))).flatMap((b) => b.records);
    const latest = new Map<string, { offset: number; value: string | null }>();
    for (const rec of [...fromSegments, ...fromTail]) latest.set(rec.key?.toString() as string, { offset: rec.offset, value: rec.value?.toString() ?? null });
    expect(latest).toEqual(expected);
    // The segments hold one record per key at most: the latest as of the pass.
    const keys = fromSegments.map((x) => x.key?.toString());
    expect(new Set(keys).size).toBe(keys.length);
  });
});

describe('Produce to a compacted topic', () => {
  it('rejects a record without a key with INVALID_RECORD, as Kafka does, and accepts keyed ones', async () => {
    const p = await compactedTopic({});
    const [keyless, keyed] = await produce(p.name, [
      { partition: 0, key: null, value: Buffer.from('v'), headers: [] },
      { partition: 0, key: Buffer.from('k'), value: Buffer.from('v'), headers: [] },
    ], { acks: 1 });
    expect(keyless?.ok).toBe(false);
    const error = keyless?.ok === false ? keyless.error : undefined;
    expect(isKafkaError(error) && error.kafkaName).toBe('INVALID_RECORD');
    expect(error?.message).toContain('Compacted topic cannot accept message without key');
    expect(keyed).toMatchObject({ ok: true, offset: 0 });
  });
});
