/**
 * Reads don't care which tier (docs/architecture.md, "Tiers"): fetch and ListOffsets over a partition whose history is
 * in S3 segments and whose tail is in the replica tables give the same answers as over one table —
 * contiguous, byte-identical, bounded by max_bytes — also when a roll runs between the head read
 * and the table read; a damaged segment answers CORRUPT_MESSAGE and never wrong bytes; a missing
 * one is a counted KAFKA_STORAGE_ERROR, not a gap; a compaction's rewrite is found by a refresh.
 *
 * A private quiet stack: segments are rolled here step by step with the storage functions (the
 * roll's own steps: encode, PUT, register, commit, trim every replica).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { replicaStore } from '../../../lib/cluster/metadata.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { isKafkaError } from '../../../lib/errors.js';
import { type KafkaError } from '../../../lib/protocol/errors.js';
import { appendToLeader, type AppendTarget } from '../../../lib/log/append.js';
import { prepareBatches } from '../../../lib/log/batches.js';
import { batchBytes, fetchRecords, listOffset, type ReadTarget } from '../../../lib/log/read.js';
import { replicate } from '../../../lib/log/commit.js';
import { rollPartition } from '../../../lib/log/roll.js';
import { decodeFooter, encodeSegment, FOOTER_BYTES, type SegmentBatchInput } from '../../../lib/log/segment-format.js';
import { clearSegmentCaches, readSegment, TAIL_READ_BYTES } from '../../../lib/log/segment-reader.js';
import { decodeBatch } from '../../../lib/protocol/record-batch.js';
import type { BatchRecord } from '../../../lib/storage/model.js';
import { topicPartitionKey } from '../../../lib/storage/model.js';
import { deletePrefix, putObject, readObject } from '../../../lib/storage/objects.js';
import { advanceTailStart, raiseLogStart } from '../../../lib/storage/replica/tail.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { readHead, tailStartOf } from '../../../lib/storage/replica/head.js';
import { type ReplicaStoreRef } from '../../../lib/storage/replica/store.js';
import {
  commitSegment, listSegments, registerPending, replaceSegments, segmentObjectKey, tombstoneSegments, type SegmentRecord,
} from '../../../lib/storage/coordination/segments.js';
import { BATCH_OPTIONS } from '../../support/batches.js';
import { replicaLog, useQuietCluster } from '../../support/cluster.js';

const cluster = useQuietCluster();
/** The v3 fetch route, as a client sees it. */
const httpFetch = (p: { name: string }, offset: number) => cluster().call('GET', cluster().v3(`/topics/${p.name}/partitions/0/records?offset=${offset}`));

const T0 = 1_700_000_000_000;
const BIG = 1e12;
let n = 0;

interface Expected { offset: number; timestamp: number; key: string; value: Buffer }
interface Partition {
  readonly name: string;
  readonly topicId: string;
  readonly tp: string;
  readonly leader: ReplicaStoreRef;
  readonly stores: readonly ReplicaStoreRef[];
  readonly target: ReadTarget;
  /** Every record, in offset order, as produced. */
  readonly expected: Expected[];
  /** Every batch as the leader's table held it before any roll, and its bytes. */
  readonly batches: BatchRecord[];
  readonly bytes: Map<number, Buffer>;
}

/**
 * A partition (RF 3, every replica caught up) with `batchCount` batches of 1–5 records of 60–400
 * bytes, every 25th a large batch that goes to a `data/` object (> inline.max.bytes); timestamps
 * jump back and forth (non-monotonic), with repeats, unless `stamp` says otherwise.
 */
async function setup(batchCount: number, stamp = (i: number) => T0 + ((i * 7919) % 500) * 10, o: { tiny?: boolean; configs?: { name: string; value: string }[] } = {}): Promise<Partition> {
  const name = `tiered-${process.pid}-${n++}`;
  const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: 3, ...(o.configs ? { configs: o.configs } : {}) });
  const p0 = partitions[0]!;
  const tp = topicPartitionKey(topic.topicId, 0);
  const leader = (await replicaStore(p0.leader))!;
  const stores = await Promise.all(p0.replicas.map(async (b) => (await replicaStore(b))!));
  const target: AppendTarget = { leader, topicId: topic.topicId, partition: 0, tp, leaderEpoch: p0.leaderEpoch, inlineMaxBytes: 8192 };
  let record = 0;
  const prepared = Array.from({ length: batchCount }, (_, b) => {
    const large = !o.tiny && b % 25 === 12;
    const count = o.tiny ? 1 : large ? 12 : 1 + (b % 5);
    return prepareBatches(Array.from({ length: count }, () => {
      const i = record++;
      return {
        key: Buffer.from(`k${i}`),
        value: Buffer.alloc(o.tiny ? 8 : large ? 1024 : 60 + ((i * 37) % 340), i % 251),
        timestamp: stamp(i),
        headers: i % 3 === 0 ? [{ key: 'h', value: Buffer.from(`v${i}`) }] : [],
      };
    }), BATCH_OPTIONS);
  }).flat();
  for (let i = 0; i < prepared.length; i += 50) await appendToLeader(target, prepared.slice(i, i + 50));
  await replicate(name, topic.topicId, 0, { deadline: Date.now() + 30_000, shrinkOnFailure: false, lagTimeMaxMs: 60_000 });
  const batches = await queryBatches(leader, tp, { fromOffset: 0, toOffset: BIG, maxBytes: BIG });
  const bytes = new Map<number, Buffer>();
  const expected: Expected[] = [];
  for (const b of batches) {
    const data = await batchBytes(b);
    bytes.set(b.baseOffset, data);
    for (const r of decodeBatch(data).records) expected.push({ offset: r.offset, timestamp: r.timestamp, key: r.key!.toString(), value: r.value! });
  }
  expect(expected.map((r) => r.offset)).toEqual(expected.map((_, i) => i));
  expect(batches.some((b) => b.s3)).toBe(!o.tiny);
  expect((await readHead(leader, tp))!.hw).toBe(expected.length);
  return { name, topicId: topic.topicId, tp, leader, stores, target: { leader, tp, partition: 0 }, expected, batches, bytes };
}

const segmentInput = (b: BatchRecord): SegmentBatchInput => ({
  baseOffset: b.baseOffset, lastOffset: b.lastOffset, leaderEpoch: b.leaderEpoch, maxTimestamp: b.maxTimestamp,
  recordCount: b.recordCount, sizeBytes: b.sizeBytes, ...(b.data ? { bytes: b.data } : {}), ...(b.s3 ? { external: b.s3 } : {}),
});

/**
 * A roll of the table from the leader's tail start up to the last batch boundary at or below
 * `end`: encode, register pending, PUT, commit live, trim every replica.
 */
async function rollTo(p: Partition, end: number): Promise<SegmentRecord> {
  const base = tailStartOf((await readHead(p.leader, p.tp))!);
  const batches = await queryBatches(p.leader, p.tp, { fromOffset: base, toOffset: end - 1, maxBytes: BIG });
  expect(batches[0]?.baseOffset).toBe(base);
  const segEnd = batches[batches.length - 1]!.lastOffset + 1;
  const encoded = encodeSegment(batches.map(segmentInput));
  const range = { topicId: p.topicId, partition: 0, baseOffset: base, endOffset: segEnd, key: segmentObjectKey(p.topicId, 0, base) };
  expect(await registerPending({ ...range, createdAt: Date.now() })).toBe(true);
  await putObject(range.key, encoded.body);
  const f = encoded.footer;
  const external = [...new Set(batches.flatMap((b) => (b.s3 ? [b.s3.key] : [])))];
  expect(await commitSegment(range, {
    sizeBytes: encoded.body.length, recordCount: f.recordCount, batchCount: f.batchCount, minTimestamp: f.minTimestamp, maxTimestamp: f.maxTimestamp,
    ...(external.length > 0 ? { externalKeys: external } : {}),
  })).toBe(true);
  for (const s of p.stores) expect(await advanceTailStart(s, p.tp, segEnd)).toBe(true);
  return (await listSegments(p.topicId, 0)).find((s) => s.baseOffset === base)!;
}

const fetchAt = (p: Partition, offset: number, maxBytes = 10_000_000) => fetchRecords(p.target, { offset, maxBytes, maxWaitMs: 0 });
const view = (records: readonly { offset: number; timestamp: number; key: Buffer | null; value: Buffer | null }[]) =>
  records.map((r) => ({ offset: r.offset, timestamp: r.timestamp, key: r.key!.toString(), value: r.value! }));

/** Reads the whole log in pages of `maxBytes`, checking each answer is contiguous and within the bound. */
async function readAll(p: Partition, from: number, maxBytes: number, batches = p.batches): Promise<Expected[]> {
  const out: Expected[] = [];
  const hw = p.expected.length;
  for (let offset = from; offset < hw;) {
    const r = await fetchAt(p, offset, maxBytes);
    expect(r.records[0]?.offset).toBeGreaterThanOrEqual(offset);
    const got = view(r.records);
    // The batches the answer came from fit in maxBytes, or it is one batch.
    const used = batches.filter((b) => b.lastOffset >= offset && b.baseOffset < r.nextOffset);
    if (used.length > 1) expect(used.reduce((x, b) => x + b.sizeBytes, 0)).toBeLessThanOrEqual(maxBytes);
    out.push(...got);
    offset = r.nextOffset;
  }
  return out;
}

/** Kafka's ListOffsets by timestamp as a linear scan: the first record whose timestamp is at or after it. */
const linear = (p: Partition, ts: number, from = 0) => {
  const r = p.expected.find((e) => e.offset >= from && e.timestamp >= ts);
  return r ? { offset: r.offset, timestamp: r.timestamp } : { offset: null, timestamp: null };
};

const kafkaErrorOf = async (promise: Promise<unknown>): Promise<KafkaError> => {
  try {
    await promise;
  } catch (err) {
    if (isKafkaError(err)) return err;
    throw err;
  }
  throw new Error('expected a KafkaError');
};

afterEach(() => {
  vi.restoreAllMocks();
  delete process.env.TRIBUTARY_METRICS;
});

describe('Function: fetchRecords over segments and the table', () => {
  let p: Partition;
  let segments: SegmentRecord[];

  it('reads every record from offset 0 in order, byte-identical, across three segments (with adopted data/ batches) and the table tail, in one answer', async () => {
    p = await setup(150);
    const total = p.expected.length;
    segments = [await rollTo(p, Math.floor(total * 0.25)), await rollTo(p, Math.floor(total * 0.5)), await rollTo(p, Math.floor(total * 0.75))];
    expect(segments.map((s) => s.endOffset)).toEqual([segments[1]!.baseOffset, segments[2]!.baseOffset, tailStartOf((await readHead(p.leader, p.tp))!)]);
    // The table holds only the tail now, on every replica.
    for (const s of p.stores) expect((await replicaLog(s, p.tp))[0]?.baseOffset).toBe(segments[2]!.endOffset);

    const all = await fetchAt(p, 0);
    expect(view(all.records)).toEqual(p.expected);
    expect(all.nextOffset).toBe(total);
    expect(all.highWatermark).toBe(total);

    // Segment bytes are the table's batch bytes, byte for byte (external ones rebased to their offsets).
    for (const seg of segments) {
      const got = (await readSegment(seg, seg.baseOffset, BIG)).batches;
      expect(got.map((b) => b.toString('hex'))).toEqual(p.batches.filter((b) => b.baseOffset >= seg.baseOffset && b.lastOffset < seg.endOffset).map((b) => p.bytes.get(b.baseOffset)!.toString('hex')));
    }
  });

  it('starts a fetch at the offset asked for: mid-batch, mid-segment, on a segment boundary, just below and at the table tail', async () => {
    const tail = segments[2]!.endOffset;
    const mid = p.batches.find((b) => b.recordCount > 2 && b.baseOffset > segments[0]!.baseOffset)!;
    for (const offset of [1, mid.baseOffset + 1, segments[0]!.endOffset + 3, segments[1]!.baseOffset, tail - 1, tail, p.expected.length - 1]) {
      const r = await fetchAt(p, offset);
      expect(view(r.records)).toEqual(p.expected.slice(offset));
    }
  });

  it('bounds every answer by max_bytes (or one batch), and pages through both tiers contiguously', async () => {
    for (const maxBytes of [1, 700, 4096, 20_000]) expect(await readAll(p, 0, maxBytes)).toEqual(p.expected);
  });

  it('answers OFFSET_OUT_OF_RANGE below the log start and above the log end, with the valid range', async () => {
    const err = await kafkaErrorOf(fetchAt(p, p.expected.length + 1));
    expect(err.kafkaName).toBe('OFFSET_OUT_OF_RANGE');
    expect(err.context).toMatchObject({ logStartOffset: 0, logEndOffset: p.expected.length });
  });

  it('finds by timestamp what a linear scan finds, for every timestamp and its neighbours (non-monotonic), through the time indexes and the table', async () => {
    const stamps = [...new Set(p.expected.map((e) => e.timestamp))].sort((a, b) => a - b);
    const targets = [stamps[0]! - 1, ...stamps.filter((_, i) => i % 2 === 0).flatMap((s) => [s - 1, s, s + 1]), stamps[stamps.length - 1]! + 1, 0];
    for (const ts of targets) expect(await listOffset(p.target, { timestamp: ts })).toEqual(linear(p, ts));
  });
});

describe('Function: fetchRecords over what rollPartition rolled', () => {
  it('reads every record from offset 0 and finds every timestamp across rolled segments (segment.bytes 4 KiB) and the table tail', async () => {
    const p = await setup(80, undefined, { configs: [{ name: 'segment.bytes', value: '4096' }] });
    const result = await rollPartition(p.name, 0, { force: true, maxSegments: 4 });
    expect(result.rolled).toBe(4);
    const segments = await listSegments(p.topicId, 0);
    const tail = tailStartOf((await readHead(p.leader, p.tp))!);
    expect(segments[segments.length - 1]!.endOffset).toBe(tail);
    expect(tail).toBeLessThan(p.expected.length);
    expect(view((await fetchAt(p, 0)).records)).toEqual(p.expected);
    expect(await readAll(p, 0, 2500)).toEqual(p.expected);
    const stamps = [...new Set(p.expected.map((e) => e.timestamp))];
    for (const ts of stamps.filter((_, i) => i % 5 === 0)) expect(await listOffset(p.target, { timestamp: ts })).toEqual(linear(p, ts));
  });
});

describe('Function: fetchRecords over a segment with a large index', () => {
  it('reads a segment whose index does not come with the footer\'s tail read (a second ranged GET), by offset and by timestamp', async () => {
    const p = await setup(TAIL_READ_BYTES / 44 + 200, (i) => T0 + ((i * 7919) % 500) * 10, { tiny: true });
    const seg = await rollTo(p, p.expected.length - 10);
    expect(seg.batchCount! * 44).toBeGreaterThan(TAIL_READ_BYTES); // 44-byte index entries: the index starts before the tail read
    clearSegmentCaches();
    expect(view((await fetchAt(p, 0)).records)).toEqual(p.expected);
    const mid = Math.floor(p.expected.length / 2);
    const page = await fetchAt(p, mid, 3000);
    expect(page.records.length).toBeGreaterThan(10);
    expect(view(page.records)).toEqual(p.expected.slice(mid, mid + page.records.length));
    for (const ts of [T0, T0 + 2505, T0 + 4990, T0 + 5000]) expect(await listOffset(p.target, { timestamp: ts })).toEqual(linear(p, ts));
  });
});

describe('Function: fetchRecords and listOffset racing a roll', () => {
  it('where segments roll after the head was read, a fetch still returns the right records exactly once', async () => {
    const p = await setup(60);
    const total = p.expected.length;
    await rollTo(p, Math.floor(total * 0.3));
    await fetchAt(p, 0); // caches the segment list: stale after the next roll
    const tail = tailStartOf((await readHead(p.leader, p.tp))!);
    const from = tail + 2;
    // The head says the table starts at `tail`; by the time the table is read it starts far above `from`.
    const r = await fetchRecords(p.target, { offset: from, maxBytes: 10_000_000, maxWaitMs: 0 }, { afterHead: async () => { await rollTo(p, Math.floor(total * 0.8)); } });
    expect(view(r.records)).toEqual(p.expected.slice(from));
    expect(r.nextOffset).toBe(total);
  });

  it('where segments roll after the head was read, ListOffsets by timestamp still finds the first record at or after it', async () => {
    const p = await setup(60, (i) => T0 + i * 10);
    const total = p.expected.length;
    const from = Math.floor(total * 0.4);
    // A target whose first match lies in what is about to roll.
    const target = T0 + (from + 5) * 10 - 3;
    const want = linear(p, target);
    expect(want.offset).toBe(from + 5);
    await rollTo(p, from);
    const found = await listOffset(p.target, { timestamp: target }, { afterHead: async () => { await rollTo(p, Math.floor(total * 0.9)); } });
    expect(found).toEqual(want);
  });
});

describe('Corruption and missing segments', () => {
  it('answers CORRUPT_MESSAGE for a flipped byte in a batch, the index or the footer, and never returns wrong bytes', async () => {
    const p = await setup(40);
    const seg = await rollTo(p, Math.floor(p.expected.length / 2));
    const good = await readObject(seg.key);
    const footer = decodeFooter(good.subarray(good.length - FOOTER_BYTES));
    const places = { 'a batch': 100, 'the index': footer.indexPosition + 30, 'the time index': footer.timeIndexPosition + 3, 'the footer': good.length - 60 };
    for (const [what, at] of Object.entries(places)) {
      const bad = Buffer.from(good);
      bad[at] = bad[at]! ^ 0x10;
      await putObject(seg.key, bad);
      clearSegmentCaches();
      const err = await kafkaErrorOf(fetchAt(p, 0));
      expect([what, err.kafkaName]).toEqual([what, 'CORRUPT_MESSAGE']);
      expect(err.context).toMatchObject({ segment: seg.key });
    }
    // Over HTTP: Kafka's CORRUPT_MESSAGE (code 2), with where.
    const bad0 = Buffer.from(good);
    bad0[100] = bad0[100]! ^ 0x10;
    await putObject(seg.key, bad0);
    const res = await httpFetch(p, 0);
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe(40002);
    expect(res.body.message).toMatch(/^CORRUPT_MESSAGE: Segment corrupt: record batch at offset 0: CRC mismatch/);
    // The offset index was read while the object was good; the batch bytes are damaged after.
    await putObject(seg.key, good);
    clearSegmentCaches();
    expect(view((await fetchAt(p, 0)).records)).toEqual(p.expected);
    const bad = Buffer.from(good);
    bad[5] = bad[5]! ^ 0x01; // the first batch's baseOffset (outside its CRC): its header no longer matches the index
    await putObject(seg.key, bad);
    expect((await kafkaErrorOf(fetchAt(p, 0))).kafkaName).toBe('CORRUPT_MESSAGE');
    bad[5] = good[5]!;
    bad[13] = bad[13]! ^ 0x01; // partitionLeaderEpoch, outside the batch CRC
    await putObject(seg.key, bad);
    expect((await kafkaErrorOf(fetchAt(p, 0))).kafkaName).toBe('CORRUPT_MESSAGE');
    await putObject(seg.key, good);
    expect(view((await fetchAt(p, 0)).records)).toEqual(p.expected);
  });

  it('answers CORRUPT_MESSAGE for a damaged data/ object a segment adopted', async () => {
    const p = await setup(40);
    const seg = await rollTo(p, p.expected.length - 5);
    const adopted = p.batches.find((b) => b.s3 && b.lastOffset < seg.endOffset)!;
    const good = await readObject(adopted.s3!.key);
    const bad = Buffer.from(good);
    bad[bad.length - 10] = bad[bad.length - 10]! ^ 0x40;
    await putObject(adopted.s3!.key, bad);
    expect((await kafkaErrorOf(fetchAt(p, adopted.baseOffset))).kafkaName).toBe('CORRUPT_MESSAGE');
    await putObject(adopted.s3!.key, good);
    expect(view((await fetchAt(p, adopted.baseOffset)).records)).toEqual(p.expected.slice(adopted.baseOffset));
  });

  it('answers KAFKA_STORAGE_ERROR, counts SegmentMissing and logs the segment when a live segment\'s object is missing', async () => {
    const p = await setup(40);
    const seg = await rollTo(p, Math.floor(p.expected.length / 2));
    await deletePrefix(seg.key);
    clearSegmentCaches();
    process.env.TRIBUTARY_METRICS = 'emf';
    const lines: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    });
    const err = await kafkaErrorOf(fetchAt(p, 3));
    expect(err.kafkaName).toBe('KAFKA_STORAGE_ERROR');
    expect(err.context).toMatchObject({ segmentMissing: true, segment: seg.key });
    expect(lines.map((l) => JSON.parse(l)).filter((l) => l.SegmentMissing === 1)).toHaveLength(1);
    // Over HTTP: a 503 at once (no retry on another leader, no broker reported failed).
    const res = await httpFetch(p, 3);
    expect(res.status).toBe(503);
    expect(res.body.message).toMatch(/^KAFKA_STORAGE_ERROR: Offset 3 of partition 0 is in a live segment whose object segments\/.* is missing/);
    // The table tail is unaffected.
    expect(view((await fetchAt(p, seg.endOffset)).records)).toEqual(p.expected.slice(seg.endOffset));
  });

  it('answers KAFKA_STORAGE_ERROR for an offset below the table tail that no live segment holds, and OFFSET_OUT_OF_RANGE once retention moved the log start past it', async () => {
    const p = await setup(40);
    const total = p.expected.length;
    const first = await rollTo(p, Math.floor(total * 0.3));
    const second = await rollTo(p, Math.floor(total * 0.6));
    await fetchAt(p, 0); // caches both segments
    // The second segment is tombstoned with no log start change: a hole, not a gap to skip.
    expect(await tombstoneSegments([second])).toBe(1);
    await deletePrefix(second.key);
    const hole = await kafkaErrorOf(fetchAt(p, second.baseOffset + 1));
    expect(hole.kafkaName).toBe('KAFKA_STORAGE_ERROR');
    expect(hole.context).toMatchObject({ segmentMissing: true });
    // Retention: the log start moves past the first segment on every replica (after this fetch
    // read the head), then the segment is tombstoned and its object removed.
    const err = await kafkaErrorOf(fetchRecords(p.target, { offset: 2, maxBytes: 1_000_000, maxWaitMs: 0 }, {
      afterHead: async () => {
        for (const s of p.stores) await raiseLogStart(s, p.tp, first.endOffset);
        await tombstoneSegments([first]);
        await deletePrefix(first.key);
      },
    }));
    expect(err.kafkaName).toBe('OFFSET_OUT_OF_RANGE');
    expect(err.context).toMatchObject({ logStartOffset: first.endOffset });
  });

  it('picks up a compaction\'s rewrite (a new generation) after a refresh, once the old object is gone', async () => {
    const p = await setup(40);
    const seg = await rollTo(p, Math.floor(p.expected.length / 2));
    expect(view((await fetchAt(p, 0)).records)).toEqual(p.expected); // caches generation 0
    const inSegment = p.batches.filter((b) => b.lastOffset < seg.endOffset);
    const dropped = new Set([inSegment[2]!.baseOffset, inSegment[5]!.baseOffset]);
    const kept = inSegment.filter((b) => !dropped.has(b.baseOffset));
    const encoded = encodeSegment(kept.map(segmentInput), { allowGaps: true, baseOffset: seg.baseOffset, endOffset: seg.endOffset });
    const key = segmentObjectKey(p.topicId, 0, seg.baseOffset, 1);
    await putObject(key, encoded.body);
    const { itemSk: _sk, ...old } = seg;
    const f = encoded.footer;
    expect(await replaceSegments([seg], { ...old, key, generation: 1, sizeBytes: encoded.body.length, recordCount: f.recordCount, batchCount: f.batchCount, minTimestamp: f.minTimestamp, maxTimestamp: f.maxTimestamp })).toBe(true);
    await deletePrefix(seg.key);
    const droppedOffsets = new Set(inSegment.filter((b) => dropped.has(b.baseOffset)).flatMap((b) => Array.from({ length: b.recordCount }, (_, i) => b.baseOffset + i)));
    const compacted = p.expected.filter((e) => !droppedOffsets.has(e.offset));
    expect(view((await fetchAt(p, 0)).records)).toEqual(compacted);
    // From inside a dropped batch: the next kept record.
    const inDropped = inSegment[5]!.baseOffset;
    expect(view((await fetchAt(p, inDropped)).records)).toEqual(compacted.filter((e) => e.offset >= inDropped));
    expect(await readAll(p, 0, 900, p.batches.filter((b) => !dropped.has(b.baseOffset)))).toEqual(compacted);
  });
});
