/**
 * Log compaction (Kafka's LogCleaner) for topics whose `cleanup.policy` includes `compact`: the
 * rolled segments keep only the latest record per key, tombstones go once `delete.retention.ms`
 * has passed, offsets never move. The table tail is Kafka's active segment and is never cleaned.
 *
 * One pass over a partition:
 *   1. list the live segments; the cleanable ones are the clean prefix (below the highest
 *      `cleanedTo`) plus the dirty segments after it up to the first one younger than
 *      `min.compaction.lag.ms`; go on only when dirty / (clean + dirty) bytes reaches
 *      `min.cleanable.dirty.ratio` (or the oldest dirty batch passed `max.compaction.lag.ms`);
 *   2. read every cleanable segment and map each key (compared as bytes) to its latest offset —
 *      not an aborted transaction's records, which go (only segments below the last stable
 *      offset are cleanable, so every transaction in them is decided);
 *   3. cut the cleanable segments into groups of adjacent segments whose kept bytes fit in
 *      `segment.bytes` (at most 98 segments: one replaceSegments transaction), filter each, write the
 *      rewrite as a new object under a new generation and swap it in with `replaceSegments`.
 * A swap is conditioned on every replaced item still being live under the generation read, so a
 * concurrent retention or compaction makes it fail, whole: the pass stops there (the rest of its
 * plan was computed from a state that no longer is) and its object is an orphan for the garbage pass.
 */
import { randomInt } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { crc32c } from '@aws-crypto/crc32c';
import { replicaStore, requireTopic } from '../cluster/metadata.js';
import { numericConfig, stringConfig } from '../cluster/topic-configs.js';
import { logger } from '../logger.js';
import {
  ATTRIBUTES_OFFSET, BATCH_LENGTH_OFFSET, CRC_OFFSET, LOG_OVERHEAD, MAX_TIMESTAMP_OFFSET, RECORDS_COUNT_OFFSET, RECORDS_OFFSET, decodeBatch, type DecodedBatch,
} from '../protocol/record-batch.js';
import { ByteReader } from '../protocol/varint.js';
import { firstUnstableOffset, topicPartitionKey } from '../storage/model.js';
import { readObject, readRange, putObject } from '../storage/objects.js';
import { readHead, tailStartOf } from '../storage/replica/head.js';
import { listSegments, replaceSegments, segmentObjectKey, type SegmentRecord } from '../storage/coordination/segments.js';
import { abortedAmong } from '../storage/coordination/transactions.js';
import { MAX_TRANSACTION_ITEMS } from '../storage/transact.js';
import {
  batchesOf, decodeFooter, decodeIndex, encodeSegment, indexRange, readPlan, verifyBatchRegion,
  type IndexEntry, type SegmentBatchInput,
} from './segment-format.js';

/** One replacement transaction holds the replacement, the first item's tombstone and the others' updates. */
const MAX_SEGMENTS_PER_REPLACEMENT = Math.min(98, MAX_TRANSACTION_ITEMS - 2);
/** Segments read in step 2 are kept for step 3 while their batches add up to at most this; beyond, step 3 reads them again. */
const CACHE_BYTES = 64 * 1024 * 1024;


export const isCompacted = (configs: Readonly<Record<string, string>>): boolean =>
  stringConfig(configs, 'cleanup.policy').split(',').map((s) => s.trim()).includes('compact');

export interface CleaningPlan {
  /** The offset where the dirty part starts: the highest `cleanedTo` of the live segments (their first base when none). */
  readonly firstDirtyOffset: number;
  /** Live segments a pass may clean, in offset order: the clean ones and the dirty ones old enough. */
  readonly cleanable: readonly SegmentRecord[];
  readonly cleanBytes: number;
  /** Bytes of the cleanable dirty segments. */
  readonly dirtyBytes: number;
  /** dirtyBytes / (cleanBytes + dirtyBytes); 0 when there is nothing. */
  readonly dirtyRatio: number;
  /** Whether a pass would clean: some dirty segment is cleanable and the ratio (or max.compaction.lag.ms) says so. */
  readonly due: boolean;
}

const bytesOf = (s: SegmentRecord): number => s.sizeBytes ?? 0;

/**
 * What a pass would clean, from the live segments (offset order) and the topic's configs. Pure.
 * As in Kafka, only segments whose newest batch is older than `min.compaction.lag.ms` are cleanable,
 * and the first one that is not ends the cleanable range (offsets are cleaned in order).
 */
export function cleaningPlan(configs: Readonly<Record<string, string>>, segments: readonly SegmentRecord[], now = Date.now()): CleaningPlan {
  const firstDirtyOffset = segments.reduce((m, s) => Math.max(m, s.cleanedTo ?? -1), -1);
  const minLag = numericConfig(configs, 'min.compaction.lag.ms');
  const cleanable: SegmentRecord[] = [];
  let cleanBytes = 0;
  let dirtyBytes = 0;
  let oldestDirty = Infinity;
  for (const s of segments) {
    if (s.endOffset <= firstDirtyOffset) {
      cleanBytes += bytesOf(s);
    } else {
      if ((s.maxTimestamp ?? Infinity) > now - minLag) break;
      dirtyBytes += bytesOf(s);
      oldestDirty = Math.min(oldestDirty, s.minTimestamp ?? Infinity);
    }
    cleanable.push(s);
  }
  const total = cleanBytes + dirtyBytes;
  const dirtyRatio = total > 0 ? dirtyBytes / total : 0;
  const anyDirty = cleanable.some((s) => s.endOffset > firstDirtyOffset);
  const due = isCompacted(configs) && anyDirty
    && (dirtyRatio >= numericConfig(configs, 'min.cleanable.dirty.ratio') || now - oldestDirty > numericConfig(configs, 'max.compaction.lag.ms'));
  return { firstDirtyOffset: firstDirtyOffset >= 0 ? firstDirtyOffset : (segments[0]?.baseOffset ?? 0), cleanable, cleanBytes, dirtyBytes, dirtyRatio, due };
}

/** A test's window between the steps of a pass (to interleave a retention or another compaction). */
export type CompactionEvent = { readonly step: 'written'; readonly group: readonly SegmentRecord[]; readonly replacement: SegmentRecord };

export interface CompactOptions {
  /** The clock that compaction lag and tombstone expiry are measured against (not the registry's times). @default Date.now() */
  readonly now?: number;
  readonly hook?: (e: CompactionEvent) => void | Promise<void>;
  /**
   * No segment is read and no group rewritten after this time (ms): what was swapped in stays,
   * the rest waits for the next pass (a Lambda's end: nothing runs once it returns).
   * @default none
   */
  readonly deadline?: number;
  /**
   * The key map's bound in bytes (Kafka's log.cleaner.dedupe.buffer.size): once the segments read
   * fill it, the pass cleans only those, and the rest waits for the next pass. @default KEY_MAP_BYTES
   */
  readonly keyMapBytes?: number;
}

/** The key map's default bound: a pass holds no more than this of keys (and their offsets) in memory. */
export const KEY_MAP_BYTES = 64 * 1024 * 1024;
/** What one entry of the key map costs besides its key (the offset, the map's own overhead). */
const KEY_ENTRY_BYTES = 64;

export interface CompactionResult {
  /** Why nothing was done, when nothing was. */
  readonly skipped?: 'not-compacted' | 'not-due' | 'deadline';
  readonly dirtyRatio: number;
  /** Segments read (cleanable). */
  readonly segmentsRead: number;
  /** Replacements swapped in, and the live segments they replaced. */
  readonly replacements: number;
  readonly segmentsReplaced: number;
  /** A swap that failed because a replaced segment changed meanwhile: the pass stopped there. */
  readonly lostRace: boolean;
  readonly recordsRemoved: number;
  readonly tombstonesRemoved: number;
  readonly bytesBefore: number;
  readonly bytesAfter: number;
  /** The highest `cleanedTo` after the pass. */
  readonly cleanedTo: number;
}

/** A batch of a segment as read: its index entry, its bytes (real base offset), its records. */
interface ReadBatch { readonly entry: IndexEntry; readonly bytes: Buffer; readonly decoded: DecodedBatch }

/** Reads a whole segment object (and the external batches its index points to), checking every CRC. */
async function readSegment(s: SegmentRecord): Promise<ReadBatch[]> {
  const body = await readObject(s.key);
  const footer = decodeFooter(body, body.length);
  const { position, length } = indexRange(footer);
  const index = decodeIndex(body.subarray(position, position + length), footer);
  verifyBatchRegion(body.subarray(0, footer.batchRegionBytes), footer);
  const plan = readPlan(index, footer.baseOffset, Infinity);
  const out: ReadBatch[] = [];
  for (const range of plan.ranges) {
    const data = range.key === undefined ? body.subarray(range.position, range.position + range.length) : await readRange(range.key, range.position, range.length);
    batchesOf(index, range, data).forEach((bytes, i) => {
      out.push({ entry: index.entries[range.first + i] as IndexEntry, bytes, decoded: decodeBatch(bytes) });
    });
  }
  return out;
}

/** Keys compared as bytes: latin1 maps each byte to one code unit. */
const keyOf = (key: Buffer): string => key.toString('latin1');

/** Byte spans (length varint included) of the records of a batch's decompressed records block, in order. */
function recordSpans(block: Buffer, count: number): [number, number][] {
  const r = new ByteReader(block, 0, block.length, 'record batch');
  const spans: [number, number][] = [];
  for (let i = 0; i < count; i++) {
    const start = r.pos;
    r.bytes(r.varint('record length'), 'record body');
    spans.push([start, r.pos]);
  }
  return spans;
}

/**
 * The batch with only the records at `keep` (indexes into its records), as Kafka's cleaner writes
 * it (MemoryRecords.filterTo): same base offset, lastOffsetDelta, leader epoch, producer id, epoch
 * and base sequence, attributes and base timestamp; each kept record's bytes unchanged (its offset
 * and timestamp deltas stay valid against the unchanged base); maxTimestamp recomputed (kept as is
 * under LogAppendTime); CRC recomputed. With no record kept it is the batch's empty header.
 */
function retain(b: ReadBatch, keep: readonly number[]): Buffer {
  const orig = b.bytes;
  const header = Buffer.from(orig.subarray(0, RECORDS_OFFSET));
  let block: Buffer;
  if (keep.length === 0) {
    block = Buffer.alloc(0);
    header.writeInt16BE(header.readInt16BE(ATTRIBUTES_OFFSET) & ~0x07, ATTRIBUTES_OFFSET); // an empty block is stored uncompressed
  } else {
    const gzip = b.decoded.compression === 'gzip';
    const records = gzip ? gunzipSync(orig.subarray(RECORDS_OFFSET)) : orig.subarray(RECORDS_OFFSET);
    const spans = recordSpans(records, b.decoded.recordCount);
    const kept = Buffer.concat(keep.map((i) => records.subarray(...(spans[i] as [number, number]))));
    block = gzip ? gzipSync(kept) : kept;
    if (b.decoded.timestampType === 'create') {
      const maxTimestamp = keep.reduce((m, i) => Math.max(m, (b.decoded.records[i] as DecodedBatch['records'][number]).timestamp), -Infinity);
      header.writeBigInt64BE(BigInt(maxTimestamp), MAX_TIMESTAMP_OFFSET);
    }
  }
  header.writeInt32BE(keep.length, RECORDS_COUNT_OFFSET);
  const out = Buffer.concat([header, block]);
  out.writeInt32BE(out.length - LOG_OVERHEAD, BATCH_LENGTH_OFFSET);
  out.writeUInt32BE(crc32c(out.subarray(ATTRIBUTES_OFFSET)), CRC_OFFSET);
  return out;
}

const inputOf = (bytes: Buffer): SegmentBatchInput => {
  const d = decodeBatch(bytes);
  return { baseOffset: d.baseOffset, lastOffset: d.lastOffset, leaderEpoch: d.partitionLeaderEpoch, maxTimestamp: d.maxTimestamp, recordCount: d.recordCount, sizeBytes: bytes.length, bytes };
};
const unchangedInputOf = (b: ReadBatch): SegmentBatchInput => {
  const e = b.entry;
  const common = { baseOffset: e.baseOffset, lastOffset: e.lastOffset, leaderEpoch: e.leaderEpoch, maxTimestamp: e.maxTimestamp, recordCount: e.recordCount, sizeBytes: e.length };
  // An adopted large batch left whole keeps pointing into its data/ object: no copy.
  return e.externalKey !== undefined ? { ...common, external: { key: e.externalKey, position: e.position, length: e.length } } : { ...common, bytes: b.bytes };
};

interface Filtered {
  readonly segment: SegmentRecord;
  readonly batches: SegmentBatchInput[];
  /** The segment's last batch as an empty header: kept only when a whole group ends up empty. */
  readonly emptyLast: SegmentBatchInput;
  readonly bytes: number;
  readonly changed: boolean;
  readonly recordsRemoved: number;
  readonly tombstonesRemoved: number;
}

interface Rules {
  readonly latest: ReadonlyMap<string, number>;
  readonly now: number;
  readonly deleteRetentionMs: number;
}

/**
 * Kafka's shouldRetainRecord: a record stays iff it has a key, it is the latest for that key, and
 * it has a value or is a tombstone not yet expired. Tombstone expiry (Tributary's approximation of
 * Kafka's delete horizon, which counts from the cleaning that first kept it): the record's
 * timestamp plus `delete.retention.ms` has passed *and* an earlier pass already cleaned it (it sits
 * in a segment that has a `cleanedTo`), so every tombstone is kept by at least one pass. Control
 * batches stay whole. Emptied batches go (the segment's footer keeps its end offset).
 */
function filterSegment(segment: SegmentRecord, batches: readonly ReadBatch[], r: Rules): Filtered {
  const cleanedBefore = segment.cleanedTo !== undefined;
  const out: SegmentBatchInput[] = [];
  let bytes = 0;
  let changed = false;
  let recordsRemoved = 0;
  let tombstonesRemoved = 0;
  for (const b of batches) {
    const keep: number[] = [];
    if (b.decoded.isControl) {
      b.decoded.records.forEach((_, i) => keep.push(i));
    } else {
      b.decoded.records.forEach((rec, i) => {
        if (rec.key === null || r.latest.get(keyOf(rec.key)) !== rec.offset) return;
        if (rec.value === null && cleanedBefore && rec.timestamp + r.deleteRetentionMs <= r.now) {
          tombstonesRemoved++;
          return;
        }
        keep.push(i);
      });
    }
    recordsRemoved += b.decoded.records.length - keep.length;
    if (keep.length === b.decoded.records.length) {
      const input = unchangedInputOf(b);
      out.push(input);
      bytes += input.sizeBytes;
    } else {
      changed = true;
      if (keep.length > 0) {
        const input = inputOf(retain(b, keep));
        out.push(input);
        bytes += input.sizeBytes;
      }
    }
  }
  const last = batches[batches.length - 1] as ReadBatch;
  return { segment, batches: out, emptyLast: inputOf(retain(last, [])), bytes, changed, recordsRemoved, tombstonesRemoved };
}

/** The aborted transactions among a segment's transactional batches (`producerId#epoch`). */
async function abortedOfSegment(batches: readonly ReadBatch[]): Promise<Set<string>> {
  const txns = batches.filter((b) => b.decoded.isTransactional && !b.decoded.isControl).map((b) => ({ producerId: b.decoded.producerId, epoch: b.decoded.producerEpoch }));
  return txns.length === 0 ? new Set() : abortedAmong(txns);
}

/** A higher generation for a rewrite. Random steps: two compactions racing on the same segments write different objects, so the loser's PUT never replaces the winner's bytes. */
const nextGeneration = (group: readonly SegmentRecord[]): number =>
  group.reduce((m, s) => Math.max(m, s.generation), 0) + 1 + randomInt(1 << 20);

/**
 * One compaction pass over a partition's rolled segments (see the file's comment).
 * Inputs: the topic's name and the partition. Condition: the topic's `cleanup.policy` includes
 * `compact` and the cleaning plan is due. Effects: groups of live segments replaced by their
 * cleaned rewrites (new objects `segments/<topicId>/<p>/<base>.g<generation>.seg`, `cleanedTo` =
 * the replacement's end); the replaced objects are garbage after the grace period.
 * Errors: UNKNOWN_TOPIC_OR_PARTITION; CORRUPT_MESSAGE (SegmentCorrupt) when a segment fails its
 * checks — nothing is replaced from a segment that could not be read whole. A lost race is not an
 * error (`lostRace`).
 */
export async function compactPartition(topic: string, partition: number, o: CompactOptions = {}): Promise<CompactionResult> {
  const now = o.now ?? Date.now();
  const view = await requireTopic(topic);
  const { configs, topicId } = view.topic;
  // Only segments below the leader's tail start: one a roll committed but has not trimmed yet is
  // still the next roll's to finish, and a rewrite merging it would move its base.
  const state = view.partitions[partition];
  const head = state && state.leader >= 0 ? await readHead(await replicaStore(state.leader), topicPartitionKey(topicId, partition)) : undefined;
  const all = await listSegments(topicId, partition);
  // (committed but not yet trimmed on the leader: the leader's table still holds it above its tail start)
  const untrimmed = (s: SegmentRecord) => head !== undefined && s.endOffset > tailStartOf(head) && s.endOffset <= head.leo;
  // As Kafka's cleaner, nothing past the first unstable transaction (segments are below the high
  // watermark, so that is the last stable offset): its records are not yet committed or aborted
  // on every replica, so they can neither replace a key's value nor be dropped.
  const firstOpen = head === undefined ? 0 : firstUnstableOffset(head);
  const unstable = (s: SegmentRecord) => s.endOffset > firstOpen;
  const cut = all.findIndex((s) => untrimmed(s) || unstable(s));
  const segments = cut < 0 ? all : all.slice(0, cut);
  const plan = cleaningPlan(configs, segments, now);
  const result = {
    dirtyRatio: plan.dirtyRatio, segmentsRead: 0, replacements: 0, segmentsReplaced: 0, lostRace: false,
    recordsRemoved: 0, tombstonesRemoved: 0, bytesBefore: 0, bytesAfter: 0, cleanedTo: plan.firstDirtyOffset,
  };
  if (!isCompacted(configs)) return { ...result, skipped: 'not-compacted' };
  if (!plan.due) return { ...result, skipped: 'not-due' };

  // Step 2: the key map over every cleanable segment (a record beyond them is not in it, so an
  // older record of its key in a cleanable segment stays, as in Kafka).
  // The map is bounded: once it fills, only the segments read so far are cleaned (their keys' latest
  // offsets among them are known); an older record of a key whose latest is further on stays.
  const latest = new Map<string, number>();
  const cache = new Map<string, ReadBatch[]>();
  const mapLimit = o.keyMapBytes ?? KEY_MAP_BYTES;
  const past = () => o.deadline !== undefined && Date.now() >= o.deadline;
  let mapBytes = 0;
  let cached = 0;
  let mapped = 0;
  for (const s of plan.cleanable) {
    if (mapBytes >= mapLimit) break;
    if (past()) return { ...result, skipped: 'deadline' };
    const batches = await readSegment(s);
    // An aborted transaction's records are no key's value: left out of the map, they are dropped.
    const aborted = await abortedOfSegment(batches);
    for (const b of batches) {
      if (b.decoded.isControl || aborted.has(`${b.decoded.producerId}#${b.decoded.producerEpoch}`)) continue;
      for (const rec of b.decoded.records) {
        if (rec.key === null) continue;
        const k = keyOf(rec.key);
        if (!latest.has(k)) mapBytes += k.length + KEY_ENTRY_BYTES;
        latest.set(k, rec.offset);
      }
    }
    mapped++;
    const size = batches.reduce((n, b) => n + b.bytes.length, 0);
    if (cached + size <= CACHE_BYTES) {
      cache.set(s.key, batches);
      cached += size;
    }
  }
  const cleanable = plan.cleanable.slice(0, mapped);
  result.segmentsRead = cleanable.length;

  // Step 3: groups of adjacent segments, each swapped in as soon as it is written.
  const rules: Rules = { latest, now, deleteRetentionMs: numericConfig(configs, 'delete.retention.ms') };
  const segmentBytes = numericConfig(configs, 'segment.bytes');
  let group: Filtered[] = [];
  const flush = async (): Promise<boolean> => {
    const g = group;
    group = [];
    const first = g[0];
    const last = g[g.length - 1];
    if (!first || !last) return true;
    // A clean segment that would come out the same is left alone.
    if (g.length === 1 && !first.changed && first.segment.endOffset <= plan.firstDirtyOffset) return true;
    const old = g.map((f) => f.segment);
    let inputs = g.flatMap((f) => f.batches);
    // A segment needs at least one batch and the log no holes: an all-empty group keeps its last batch's empty header.
    if (inputs.length === 0) inputs = [last.emptyLast];
    const baseOffset = first.segment.baseOffset;
    const endOffset = last.segment.endOffset;
    const encoded = encodeSegment(inputs, { allowGaps: true, baseOffset, endOffset });
    const generation = nextGeneration(old);
    const key = segmentObjectKey(topicId, partition, baseOffset, generation);
    await putObject(key, encoded.body);
    const externalKeys = [...new Set(encoded.index.flatMap((e) => (e.externalKey === undefined ? [] : [e.externalKey])))];
    const replacement: SegmentRecord = {
      topicId, partition, baseOffset, endOffset, key, generation, state: 'live', createdAt: Date.now(),
      sizeBytes: encoded.body.length, // as a roll counts it (lib/log/roll.ts): the dirty ratio compares like with like
      recordCount: encoded.footer.recordCount, batchCount: encoded.footer.batchCount,
      minTimestamp: encoded.footer.minTimestamp, maxTimestamp: encoded.footer.maxTimestamp,
      ...(externalKeys.length > 0 ? { externalKeys } : {}),
      cleanedTo: endOffset,
    };
    await o.hook?.({ step: 'written', group: old, replacement });
    // Registry times are the real clock (the garbage pass's grace period counts from deletedAt), whatever `now` says.
    if (!(await replaceSegments(old, replacement, Date.now()))) {
      logger.info({ event: 'compaction-lost-race', topic, partition, baseOffset, endOffset, key }, 'a replaced segment changed meanwhile; the rewrite is left for the garbage pass');
      return false;
    }
    result.replacements++;
    result.segmentsReplaced += old.length;
    result.bytesBefore += old.reduce((n, s) => n + bytesOf(s), 0);
    result.bytesAfter += replacement.sizeBytes ?? 0;
    result.recordsRemoved += g.reduce((n, f) => n + f.recordsRemoved, 0);
    result.tombstonesRemoved += g.reduce((n, f) => n + f.tombstonesRemoved, 0);
    result.cleanedTo = Math.max(result.cleanedTo, endOffset);
    return true;
  };
  for (const s of cleanable) {
    if (past()) return result;
    const f = filterSegment(s, cache.get(s.key) ?? await readSegment(s), rules);
    const groupBytes = group.reduce((n, x) => n + x.bytes, 0);
    if (group.length > 0 && (groupBytes + f.bytes > segmentBytes || group.length >= MAX_SEGMENTS_PER_REPLACEMENT)) {
      if (!(await flush())) return { ...result, lostRace: true };
    }
    group.push(f);
  }
  if (past()) return result;
  if (!(await flush())) return { ...result, lostRace: true };
  logger.info({ event: 'compaction', topic, partition, ...result }, 'compacted');
  return result;
}
