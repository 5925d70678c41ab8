/**
 * Reads rolled log from S3 segments (docs/architecture.md, "Tiers"): a segment's footer and index
 * once per instance (cached: segments are immutable), then only the batch bytes a fetch wants, with
 * ranged GETs.
 *
 *   footer + index   one suffix-range GET of the object's last TAIL_READ_BYTES; the footer says
 *                    where the index sections are, and a second ranged GET reads them only when
 *                    the tail did not already hold them (large segments)
 *   batches          readPlan's coalesced ranges: one GET per run of back-to-back batches, in this
 *                    object or in a `data/` object the segment adopted (rebased to its real offsets)
 *
 * Every batch handed out is verified (its RecordBatch CRC; its header against the index, which has
 * its own CRC): damaged bytes are CORRUPT_MESSAGE, never returned. A missing object is an
 * ObjectMissing from lib/storage; lib/log/read.ts decides whether that is a stale segment list
 * (compaction, retention) or a lost segment.
 */
import { BoundedCache } from '../bounded-cache.js';
import { mapLimit } from '../map-limit.js';
import { KafkaError } from '../protocol/errors.js';
import { logger } from '../logger.js';
import { emitMetric } from '../metrics.js';
import { PARTITION_LEADER_EPOCH_OFFSET, crcMismatch, decodeBatch } from '../protocol/record-batch.js';
import { readRange, readTail } from '../storage/objects.js';
import { listSegments, type SegmentRecord } from '../storage/coordination/segments.js';
import {
  FOOTER_BYTES, batchesOf, decodeFooter, decodeIndex, entryForTimestamp, indexRange, readPlan, SegmentCorrupt,
  type IndexEntry, type SegmentIndex,
} from './segment-format.js';

/** Bytes of decoded indexes kept per instance (a 16 MiB segment of 1 KiB batches has a ≈ 1.4 MB index in memory). */
export const INDEX_CACHE_BYTES = 32 * 1024 * 1024;
/** The suffix GET reads this much: the index of a segment of up to ≈ 1 400 batches comes with the footer. */
export const TAIL_READ_BYTES = 64 * 1024;
/** Partitions whose live segment list is kept per instance. */
const SEGMENT_LIST_CACHE_PARTITIONS = 4096;
/** Ranged GETs one read runs at once (a 4 MB fetch of adopted 8 KiB batches is hundreds of ranges). */
const RANGE_GETS_IN_FLIGHT = 16;
/** Rough in-memory cost of one decoded index entry (object, numbers, array slot). */
const ENTRY_COST = 200;

// (bounded by bytes; an index larger than the whole bound stays, alone)
const indexes = new BoundedCache<string, SegmentIndex>(Infinity, INDEX_CACHE_BYTES, () => 0, true);
const opening = new Map<string, Promise<SegmentIndex>>();
const segmentLists = new Map<string, readonly SegmentRecord[]>();

/** Forgets every cached index and segment list (tests, benchmarks). */
export function clearSegmentCaches(): void {
  indexes.clear();
  opening.clear();
  segmentLists.clear();
}

/** Key and generation name the object; the range guards against a key reused for another range. */
const cacheKey = (s: SegmentRecord) => `${s.key}@${s.generation}:${s.baseOffset}-${s.endOffset}`;

/**
 * The live segments of a partition in offset order, from this instance's cache unless `refresh`
 * (then one strongly consistent Query). Callers refresh when the cached list does not cover an
 * offset it should, or names an object that is gone (compacted or deleted meanwhile).
 */
export async function liveSegments(topicId: string, partition: number, o: { refresh?: boolean } = {}): Promise<readonly SegmentRecord[]> {
  const key = `${topicId}#${partition}`;
  const cached = o.refresh ? undefined : segmentLists.get(key);
  if (cached) return cached;
  const fresh = await listSegments(topicId, partition);
  segmentLists.delete(key);
  segmentLists.set(key, fresh);
  if (segmentLists.size > SEGMENT_LIST_CACHE_PARTITIONS) segmentLists.delete(segmentLists.keys().next().value as string);
  return fresh;
}

/** A SegmentCorrupt (or a batch codec's CORRUPT_MESSAGE) about this segment, logged and counted once. */
function corrupt(seg: SegmentRecord, err: unknown): KafkaError {
  const k = err instanceof KafkaError ? err : undefined;
  // A batch that cannot be rebased (INVALID_RECORD from withBaseOffset) is damage as well.
  const out = k?.kafkaName === 'CORRUPT_MESSAGE'
    ? new KafkaError('CORRUPT_MESSAGE', k.message, { ...k.context, segment: seg.key, baseOffset: seg.baseOffset })
    : new KafkaError('CORRUPT_MESSAGE', `Segment corrupt: ${(err as Error).message}`, { segment: seg.key, baseOffset: seg.baseOffset });
  logger.error({ event: 'segment-corrupt', segment: seg.key, topicId: seg.topicId, partition: seg.partition, baseOffset: seg.baseOffset, err: out.message }, 'segment object failed its checks');
  emitMetric('segmentCorrupt', 1);
  return out;
}

const isDamage = (err: unknown) => err instanceof SegmentCorrupt || (err instanceof KafkaError && (err.kafkaName === 'CORRUPT_MESSAGE' || err.kafkaName === 'INVALID_RECORD'));

async function load(seg: SegmentRecord): Promise<SegmentIndex> {
  const tail = await readTail(seg.key, TAIL_READ_BYTES);
  try {
    const footer = decodeFooter(tail.bytes, tail.objectBytes);
    if (footer.baseOffset !== seg.baseOffset || footer.endOffset !== seg.endOffset) {
      throw new SegmentCorrupt(`the object covers [${footer.baseOffset}, ${footer.endOffset}), the registry says [${seg.baseOffset}, ${seg.endOffset})`);
    }
    const range = indexRange(footer);
    const tailStart = tail.objectBytes - tail.bytes.length;
    const sections = range.position >= tailStart
      ? tail.bytes.subarray(range.position - tailStart, range.position - tailStart + range.length)
      : await readRange(seg.key, range.position, range.length);
    return decodeIndex(sections, footer);
  } catch (err) {
    if (isDamage(err)) throw corrupt(seg, err);
    throw err;
  }
}

/** A segment's decoded index: cached, or read (footer, then index sections) and verified. */
export async function openSegment(seg: SegmentRecord): Promise<SegmentIndex> {
  const key = cacheKey(seg);
  const hit = indexes.get(key);
  if (hit) return hit;
  let pending = opening.get(key);
  if (!pending) {
    pending = load(seg).then((index) => {
      indexes.set(key, index, FOOTER_BYTES + index.entries.length * ENTRY_COST + index.timeIndex.length * 32 + index.keys.reduce((n, k) => n + 2 * k.length + 64, 0));
      return index;
    }).finally(() => opening.delete(key));
    opening.set(key, pending);
  }
  return pending;
}

/** Checks what the batch's own CRC does not cover against the index (whose CRC does). */
function verify(bytes: Buffer, e: IndexEntry): void {
  const mismatch = crcMismatch(bytes);
  if (mismatch) throw new SegmentCorrupt(`record batch at offset ${e.baseOffset}: ${mismatch}`);
  const epoch = bytes.readInt32BE(PARTITION_LEADER_EPOCH_OFFSET);
  if (epoch !== e.leaderEpoch) {
    throw new SegmentCorrupt(`record batch at offset ${e.baseOffset}: leader epoch ${epoch}, the index says ${e.leaderEpoch}`);
  }
}

export interface SegmentRead {
  /** Verified RecordBatch v2 bytes with their real base offsets and leader epochs, in offset order. */
  readonly batches: Buffer[];
  /** Where reading on continues: after the last batch returned, or the segment's end once its last batch is read. */
  readonly nextOffset: number;
}

/**
 * The batches of one live segment from the one holding `fromOffset` (or the first after it, in a
 * compacted segment's gap) on, up to `maxBytes` of batch bytes: at least one batch unless
 * `minOneBatch` is false (a fetch continuing from an earlier segment), never past the segment.
 * Errors: CORRUPT_MESSAGE (a CRC, the footer, the index or a header fails its check; no bytes are
 * returned); ObjectMissing (the segment's object or an adopted `data/` object is gone).
 */
export async function readSegment(seg: SegmentRecord, fromOffset: number, maxBytes: number, o: { minOneBatch?: boolean } = {}): Promise<SegmentRead> {
  const index = await openSegment(seg);
  const plan = readPlan(index, fromOffset, maxBytes);
  const firstRange = plan.ranges[0];
  if (!firstRange) return { batches: [], nextOffset: plan.nextOffset };
  if (o.minOneBatch === false && (index.entries[firstRange.first] as IndexEntry).length > maxBytes) return { batches: [], nextOffset: fromOffset };
  const parts = await mapLimit(plan.ranges, RANGE_GETS_IN_FLIGHT, async (range) => {
    const data = await readRange(range.key ?? seg.key, range.position, range.length);
    try {
      const batches = batchesOf(index, range, data);
      batches.forEach((b, i) => verify(b, index.entries[range.first + i] as IndexEntry));
      return batches;
    } catch (err) {
      if (isDamage(err)) throw corrupt(seg, err);
      throw err;
    }
  });
  const last = plan.ranges[plan.ranges.length - 1] as NonNullable<typeof firstRange>;
  const nextOffset = last.first + last.count === index.entries.length ? index.footer.endOffset : plan.nextOffset;
  return { batches: parts.flat(), nextOffset };
}

/**
 * Kafka's ListOffsets by timestamp within one segment: the first record at or after `fromOffset`
 * (default: the segment's start) whose timestamp is ≥ `timestamp`, or undefined. The time index
 * finds the batch (from the segment's start), the in-memory offset index otherwise; one ranged
 * GET reads it. Errors as readSegment.
 */
export async function firstOffsetAtOrAfterTime(seg: SegmentRecord, timestamp: number, fromOffset = seg.baseOffset): Promise<{ offset: number; timestamp: number } | undefined> {
  const index = await openSegment(seg);
  const { entries } = index;
  const first = entries[0];
  if (!first || index.footer.maxTimestamp < timestamp) return undefined;
  let i = -1;
  if (fromOffset <= first.baseOffset) {
    // The first batch whose running maximum reaches the target is the first batch that does.
    i = entryForTimestamp(index, timestamp);
  }
  for (let j = i >= 0 ? i : entries.findIndex((e) => e.lastOffset >= fromOffset); j >= 0 && j < entries.length; j++) {
    const e = entries[j] as IndexEntry;
    if (e.maxTimestamp < timestamp || e.lastOffset < fromOffset) continue;
    const [bytes] = (await readSegment(seg, e.baseOffset, 1)).batches;
    if (!bytes) return undefined;
    let records;
    try {
      records = decodeBatch(bytes, { verifyCrc: false }).records;
    } catch (err) {
      if (isDamage(err)) throw corrupt(seg, err);
      throw err;
    }
    const found = records.find((r) => r.offset >= fromOffset && r.timestamp >= timestamp);
    if (found) return { offset: found.offset, timestamp: found.timestamp };
  }
  return undefined;
}
