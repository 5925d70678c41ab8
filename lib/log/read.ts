/**
 * The read path (docs/architecture.md, "Request path"): fetch from the leader replica below the
 * high watermark, long-poll for new data, and ListOffsets (earliest, latest, by timestamp).
 */
import { config } from '../config.js';
import { deadlineIn } from '../deadline.js';
import { invalidateMetadata, replicaStore, reportBrokerFailure, requireTopic } from '../cluster/metadata.js';
import { KafkaError } from '../protocol/errors.js';
import { asKafkaError } from '../errors.js';
import { logger } from '../logger.js';
import { emitMetric } from '../metrics.js';
import { topicPartitionKey } from '../storage/model.js';
import { decodeBatch, withBaseOffset, type BatchRecord as LogRecordOut, type DecodedBatch } from '../protocol/record-batch.js';
import { lastStableOffset, type BatchRecord, type ReplicaHead } from '../storage/model.js';
import { abortedAmong } from '../storage/coordination/transactions.js';
import { ObjectMissing, readRange } from '../storage/objects.js';
import { firstBatchAtOrAfter, queryBatches } from '../storage/replica/reads.js';
import { readHead, readHeads, tailStartOf } from '../storage/replica/head.js';
import { type ReplicaStoreRef } from '../storage/replica/store.js';
import { segmentFor, type SegmentRecord } from '../storage/coordination/segments.js';
import { firstOffsetAtOrAfterTime, liveSegments, readSegment } from './segment-reader.js';
import { knownHighWatermark, noteHighWatermark, sleepUntilMoved } from './hw-signal.js';

export interface ReadTarget {
  readonly leader: ReplicaStoreRef;
  readonly tp: string;
  readonly partition: number;
}

export interface FetchRequest {
  readonly offset: number;
  /** Stop after about this many bytes of batches (one batch is always returned). */
  readonly maxBytes: number;
  /** Long poll: wait up to this long for records at `offset`. */
  readonly maxWaitMs: number;
  /**
   * Kafka's isolation level: `read_uncommitted` (the default) reads below the high watermark;
   * `read_committed` below the last stable offset, without the records of aborted transactions.
   * Neither returns transaction markers (control records).
   */
  readonly isolation?: IsolationLevel;
}

export type IsolationLevel = 'read_uncommitted' | 'read_committed';

export interface FetchResult {
  readonly records: LogRecordOut[];
  readonly highWatermark: number;
  /** Kafka's last stable offset: below it every transaction is decided. */
  readonly lastStableOffset: number;
  readonly logStartOffset: number;
  readonly logEndOffset: number;
  /** The offset to fetch next. */
  readonly nextOffset: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Each partition's table tail start as this instance last read it (a fetch below it reads segments, not the table). */
const knownTails = new Map<string, number>();

function noteHead(tp: string, head: ReplicaHead): void {
  noteHighWatermark(tp, head.hw);
  if (knownTails.size > 100_000) knownTails.clear();
  knownTails.set(tp, tailStartOf(head));
}

/** The leader epoch a replica's epoch cache gives `offset` (undefined: the cache does not say). */
function epochOf(head: ReplicaHead, offset: number): number | undefined {
  let epoch: number | undefined;
  for (const [e, start] of head.epochs) if (start <= offset) epoch = e;
  return epoch;
}

/**
 * The leader's head; `consistent: false` for a long poll's re-reads, which only watch for the high
 * watermark to move (half the read units): a stale answer is a past head, whose high watermark was
 * committed then, and whose tail start the tier fallbacks below correct.
 */
async function leaderHead(t: ReadTarget, consistent = true): Promise<ReplicaHead> {
  const head = await readHead(t.leader, t.tp, consistent);
  if (!head) throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${t.partition} has no replica on broker ${t.leader.brokerId}.`, { partition: t.partition });
  if (head.role !== 'leader') {
    throw new KafkaError('NOT_LEADER_OR_FOLLOWER', `Broker ${t.leader.brokerId} is not the leader of partition ${t.partition}.`, { partition: t.partition });
  }
  return head;
}

/** The bytes of a stored batch with its real base offset, whether inline or in S3. */
export async function batchBytes(b: BatchRecord): Promise<Buffer> {
  if (b.data) return Buffer.from(b.data);
  if (!b.s3) throw new KafkaError('KAFKA_STORAGE_ERROR', `Batch at offset ${b.baseOffset} has neither data nor an S3 pointer.`);
  const bytes = await readRange(b.s3.key, b.s3.position, b.s3.length);
  return withBaseOffset(bytes, b.baseOffset, b.leaderEpoch);
}

/**
 * The bytes of stored batches, in order, each with its real base offset: one ranged GET for each
 * run of batches that sit back to back in one S3 object (a group-commit round's), one for any
 * other batch in S3.
 */
export function batchesBytes(batches: readonly BatchRecord[]): Promise<Buffer>[] {
  const out: Promise<Buffer>[] = [];
  for (let i = 0; i < batches.length;) {
    const first = batches[i] as BatchRecord;
    const s3 = first.s3;
    let k = i + 1;
    let end = s3 ? s3.position + s3.length : 0;
    for (let next = batches[k]?.s3; s3 && next?.key === s3.key && next.position === end; next = batches[++k]?.s3) end += next.length;
    if (!s3 || k === i + 1) {
      out.push(batchBytes(first));
      i++;
      continue;
    }
    const whole = readRange(s3.key, s3.position, end - s3.position);
    whole.catch(() => undefined); // awaited through each batch's promise
    for (const b of batches.slice(i, k)) {
      const at = (b.s3?.position ?? 0) - s3.position;
      out.push(whole.then((bytes) => withBaseOffset(bytes.subarray(at, at + (b.s3?.length ?? 0)), b.baseOffset, b.leaderEpoch)));
    }
    i = k;
  }
  return out;
}

/** Tests: a pause between reading the leader's head and reading the log (a roll may run there). */
export interface ReadHooks {
  readonly afterHead?: () => Promise<void> | void;
}

/** The records of stored batches from `from` (inclusive) to `below` (exclusive). */
async function recordsOf(batches: readonly BatchRecord[], from: number, below: number): Promise<LogRecordOut[]> {
  const decoded = (await Promise.all(batchesBytes(batches))).map((bytes) => decodeBatch(bytes));
  return decoded.flatMap((d) => d.records.filter((r) => r.offset >= from && r.offset < below));
}

/** `<topicId>#<partition>` → topic id. */
const topicIdOf = (tp: string): string => tp.slice(0, tp.lastIndexOf('#'));

/** Rounds of one fetch between the tiers (a roll racing the fetch sends it back to segments). */
const MAX_TIER_ROUNDS = 64;

/** One fetch's answer so far: batches in offset order, contiguous from the offset asked for. */
interface Gathered {
  /** Batch bytes with real offsets; `verified`: the CRC was already checked (segments). */
  readonly parts: { bytes: Buffer | Promise<Buffer>; verified: boolean }[];
  bytes: number;
  next: number;
}

/** OFFSET_OUT_OF_RANGE with the valid range `head` gives. */
function outOfRange(t: ReadTarget, offset: number, head: ReplicaHead): KafkaError {
  return new KafkaError(
    'OFFSET_OUT_OF_RANGE',
    `OFFSET_OUT_OF_RANGE: offset ${offset} is outside the range [${head.logStartOffset}, ${head.leo}] of partition ${t.partition}.`,
    { partition: t.partition, logStartOffset: head.logStartOffset, logEndOffset: head.leo },
  );
}

/**
 * An offset below the table's tail that the live segments do not serve, after a refresh: below
 * the log start (retention or DeleteRecords moved it meanwhile) it is OFFSET_OUT_OF_RANGE; else a
 * segment is lost, which is KAFKA_STORAGE_ERROR, counted and logged for the controller to surface.
 */
async function notServed(t: ReadTarget, offset: number, segments: readonly SegmentRecord[], missingKey?: string): Promise<KafkaError> {
  const head = await leaderHead(t);
  const first = segments[0];
  if (offset < head.logStartOffset || (missingKey === undefined && first !== undefined && offset < first.baseOffset)) return outOfRange(t, offset, head);
  emitMetric('segmentMissing', 1);
  logger.error({
    event: 'segment-missing', tp: t.tp, partition: t.partition, offset,
    ...(missingKey ? { segment: missingKey } : { liveSegments: segments.map((s) => [s.baseOffset, s.endOffset]) }),
  }, missingKey ? 'a live segment\'s object is missing' : 'no live segment covers an offset below the table tail');
  return new KafkaError(
    'KAFKA_STORAGE_ERROR',
    missingKey
      ? `Offset ${offset} of partition ${t.partition} is in a live segment whose object ${missingKey} is missing.`
      : `Offset ${offset} of partition ${t.partition} is below the table tail, and no live segment holds it.`,
    { partition: t.partition, offset, segmentMissing: true, ...(missingKey ? { segment: missingKey } : {}) },
  );
}

/**
 * Reads on from `g.next` in the live segments, within `budget` bytes (at least one batch when the
 * answer is still empty). The cached segment list is refreshed once when it does not hold the
 * offset or names an object that is gone (rolled, compacted or deleted since it was read).
 */
async function fromSegments(t: ReadTarget, g: Gathered, budget: number): Promise<boolean> {
  const topicId = topicIdOf(t.tp);
  for (let refreshed = false; ; refreshed = true) {
    const segments = await liveSegments(topicId, t.partition, { refresh: refreshed });
    const seg = segmentFor(segments, g.next);
    if (!seg) {
      if (refreshed) throw await notServed(t, g.next, segments);
      continue;
    }
    let read;
    try {
      read = await readSegment(seg, g.next, budget, { minOneBatch: g.parts.length === 0 });
    } catch (err) {
      if (err instanceof ObjectMissing) {
        if (refreshed) throw await notServed(t, g.next, segments, err.key);
        continue;
      }
      throw s3Failure(err);
    }
    for (const bytes of read.batches) {
      g.parts.push({ bytes, verified: true });
      g.bytes += bytes.length;
    }
    const moved = read.nextOffset > g.next;
    g.next = read.nextOffset;
    return moved;
  }
}

/** An S3 request that failed is a storage error of S3, not of the leader's replica store. */
function s3Failure(err: unknown): unknown {
  if (err instanceof KafkaError) return err;
  const k = asKafkaError(err);
  return new KafkaError(k.kafkaName, k.message, { ...k.context, store: 's3' });
}

/**
 * Reads on from `g.next` in the leader's table, within `budget`. Takes the batches only while they
 * run on without a hole from `g.next`: a roll that trimmed the table after the head was read leaves
 * a hole (or nothing) there. Returns whether the table answered from `g.next` to its end (the high
 * watermark or the budget), i.e. whether the fetch is complete.
 */
async function fromTable(t: ReadTarget, g: Gathered, budget: number, hw: number, prefetched?: readonly BatchRecord[]): Promise<boolean> {
  // (a prefetched answer was read with the head, from the offset asked for: only what is below the high watermark counts)
  const batches = prefetched?.filter((b) => b.lastOffset < hw) ?? await queryBatches(t.leader, t.tp, { fromOffset: g.next, toOffset: hw - 1, maxBytes: Math.max(1, budget) });
  const taken: BatchRecord[] = [];
  for (const b of batches) {
    if (b.baseOffset > g.next || b.lastOffset < g.next) break;
    // The Query returns one batch even past the budget; a continuing answer does not take it.
    if (taken.length === 0 && g.parts.length > 0 && b.sizeBytes > budget) return true;
    taken.push(b);
    g.bytes += b.sizeBytes;
    g.next = b.lastOffset + 1;
  }
  for (const bytes of batchesBytes(taken)) {
    bytes.catch(() => undefined); // awaited with the rest; a later round's error must not leave it unhandled
    g.parts.push({ bytes, verified: false });
  }
  return taken.length === batches.length && (batches.length > 0 || g.next >= hw);
}

/**
 * Reads records at and after `offset`, below the high watermark: from the leader's table when the
 * offset is at or above its tail start (one head read and one Query, as ever), else from the live
 * S3 segments and on into later segments and the table, so that one answer is contiguous up to
 * `maxBytes` whichever tiers it spans. A table answer that does not start at the offset wanted
 * (rolled away after the head was read) is read from the segments instead.
 * Errors: OFFSET_OUT_OF_RANGE (with the valid range) below the log start or above the log end;
 * NOT_LEADER_OR_FOLLOWER; UNKNOWN_TOPIC_OR_PARTITION; CORRUPT_MESSAGE (a stored batch or segment
 * fails its checksum; no bytes are returned); KAFKA_STORAGE_ERROR with `segmentMissing` in its
 * context (a live segment's object is gone: metric `SegmentMissing` and an error log).
 */
export async function fetchRecords(t: ReadTarget, req: FetchRequest, o: ReadHooks = {}): Promise<FetchResult> {
  const deadline = deadlineIn(req.maxWaitMs);
  // One round trip when the records are there: the head and the Query from the offset go together,
  // and the head then says how much of the answer is committed (batches below a leader's high
  // watermark never change). A Query of a table tail rolled away meanwhile answers from later
  // batches, and the tiers below take over.
  // (a test hook that pauses after the head wants the table read after it: no prefetch then)
  // A fetch at or past the last high watermark this instance saw is most likely a consumer at the
  // end of the log: the head goes first there, so an empty long poll does not read the table too.
  // The prefetch reads only what is surely committed and surely in the table: up to that high
  // watermark, and not below the table's tail start as last seen (segments serve those).
  const knownHw = knownHighWatermark(t.tp);
  const behind = req.offset < knownHw && req.offset >= (knownTails.get(t.tp) ?? 0);
  const query = o.afterHead || !behind ? undefined : queryBatches(t.leader, t.tp, { fromOffset: req.offset, toOffset: knownHw - 1, maxBytes: Math.max(1, req.maxBytes) });
  query?.catch(() => undefined); // awaited below only when the head says it is wanted
  let head = await leaderHead(t);
  noteHead(t.tp, head);
  let prefetched: readonly BatchRecord[] | undefined = query && req.offset < head.hw && req.offset >= tailStartOf(head) ? await query : undefined;
  // The Query may have been answered before the head: the replica may since have been truncated and
  // written again (a follower of a new leader, then leader once more). A batch is the one the head's
  // log holds when the head's epoch cache gives its offset the batch's own epoch (one leader per
  // epoch writes an offset, KIP-101); otherwise the table is read again, after the head.
  if (prefetched?.some((b) => b.lastOffset < head.hw && epochOf(head, b.baseOffset) !== b.leaderEpoch)) prefetched = undefined;
  if (req.offset < head.logStartOffset || req.offset > head.leo) throw outOfRange(t, req.offset, head);
  // What the reader may see: below the high watermark, or (read_committed) the last stable offset.
  const limitOf = (h: ReplicaHead): number => (req.isolation === 'read_committed' ? lastStableOffset(h) : h.hw);
  // Long poll: re-read the head every longPollMs (a commit in this process wakes it sooner). At
  // 50 ms that is 20 half-unit reads a second: about $3 a month per partition a consumer waits on
  // around the clock, small next to the Lambda that waits (docs/performance.md).
  while (limitOf(head) <= req.offset && Date.now() < deadline) {
    await sleepUntilMoved(t.tp, Math.min(config().longPollMs, Math.max(0, deadline - Date.now())));
    head = await leaderHead(t, false);
  }
  noteHead(t.tp, head);
  const limit = limitOf(head);
  /** The answer: `records`, and the offset to read next — past the last record, or past what was read without a record to show (markers, aborted batches). */
  const result = (records: LogRecordOut[], scannedTo = req.offset): FetchResult => ({
    records,
    highWatermark: head.hw,
    lastStableOffset: lastStableOffset(head),
    logStartOffset: head.logStartOffset,
    logEndOffset: head.leo,
    nextOffset: Math.max(records.length > 0 ? (records[records.length - 1] as LogRecordOut).offset + 1 : req.offset, Math.min(scannedTo, limit)),
  });
  if (limit <= req.offset) return result([]);
  await o.afterHead?.();
  const g: Gathered = { parts: [], bytes: 0, next: req.offset };
  let tableFrom = tailStartOf(head);
  for (let round = 0; round < MAX_TIER_ROUNDS && g.next < limit && (g.parts.length === 0 || g.bytes < req.maxBytes); round++) {
    const budget = req.maxBytes - g.bytes;
    if (g.next < tableFrom) {
      if (!(await fromSegments(t, g, budget))) break;
      continue;
    }
    const first = prefetched;
    prefetched = undefined;
    if (await fromTable(t, g, budget, limit, first)) {
      // A prefetched answer ends at the high watermark known before the head was read: read on
      // from the table when the head's is further and the budget allows.
      if (first === undefined || g.next >= limit || g.next < knownHw) break;
      continue;
    }
    // The table no longer starts at g.next: a roll moved its tail after the head was read.
    const now = await leaderHead(t);
    if (tailStartOf(now) <= g.next) break;
    tableFrom = tailStartOf(now);
  }
  const decoded = await Promise.all(g.parts.map(async (p) => decodeBatch(await p.bytes, { verifyCrc: !p.verified })));
  // Only batches below the last stable offset belong to decided transactions: one at or past it may
  // be open still, and must not be remembered as committed.
  const aborted = req.isolation === 'read_committed' ? await abortedOf(decoded.filter((d) => d.baseOffset < limit)) : undefined;
  const records = decoded.flatMap((d) => (d.isControl || (aborted && d.isTransactional && aborted.has(txnKeyOf(d)))
    ? []
    : d.records.filter((r) => r.offset >= req.offset && r.offset < limit)));
  emitMetric('fetchRecords', records.length);
  emitMetric('fetchBytes', g.bytes);
  return result(records, g.next);
}

/** A transaction's key: its producer id and the epoch it ran under. */
const txnKeyOf = (d: { readonly producerId: number; readonly producerEpoch: number }): string => `${d.producerId}#${d.producerEpoch}`;

/**
 * The decided transactions this instance has looked up (a transaction below the last stable
 * offset is decided for good): key → aborted.
 */
const decided = new Map<string, boolean>();
const DECIDED_MAX = 100_000;

/** Which transactions of these batches (below the last stable offset) were aborted. */
async function abortedOf(batches: readonly DecodedBatch[]): Promise<Set<string>> {
  const unknown = new Map<string, { producerId: number; epoch: number }>();
  for (const d of batches) {
    if (d.isTransactional && !d.isControl && !decided.has(txnKeyOf(d))) unknown.set(txnKeyOf(d), { producerId: d.producerId, epoch: d.producerEpoch });
  }
  if (unknown.size > 0) {
    const found = await abortedAmong([...unknown.values()]);
    if (decided.size > DECIDED_MAX) decided.clear();
    for (const k of unknown.keys()) decided.set(k, found.has(k));
  }
  return new Set(batches.filter((d) => decided.get(txnKeyOf(d)) === true).map(txnKeyOf));
}

export type OffsetSpec = 'earliest' | 'latest' | { readonly timestamp: number };

export interface ListedOffset {
  /** The offset, or null when no record has a timestamp at or after the one asked for. */
  readonly offset: number | null;
  /** The found record's timestamp (by-timestamp lookups only). */
  readonly timestamp: number | null;
  /** With `latest`: the last stable offset, where a read_committed reader ends (Kafka's ListOffsets at READ_COMMITTED). */
  readonly lastStableOffset?: number;
  /** With `latest`: the leader's log end offset, the highest offset a fetch may start at (above the high watermark it waits). */
  readonly logEndOffset?: number;
}

type Found = { offset: number; timestamp: number } | undefined;

/**
 * The first record in [from, below) with a timestamp ≥ `timestamp`, in the live segments: only
 * those whose maxTimestamp can hold it are opened (index cached, one ranged GET for the batch).
 */
async function timeInSegments(t: ReadTarget, from: number, below: number, timestamp: number): Promise<Found> {
  const topicId = topicIdOf(t.tp);
  for (let refreshed = false; ; refreshed = true) {
    const segments = await liveSegments(topicId, t.partition, { refresh: refreshed });
    const last = segments[segments.length - 1];
    // A list read before the latest roll does not reach the table's tail.
    if (!refreshed && (last === undefined || last.endOffset < below)) continue;
    try {
      for (const seg of segments) {
        if (seg.endOffset <= from || seg.baseOffset >= below) continue;
        if (seg.maxTimestamp !== undefined && seg.maxTimestamp < timestamp) continue;
        const found = await firstOffsetAtOrAfterTime(seg, timestamp, Math.max(from, seg.baseOffset));
        if (found) return found.offset < below ? found : undefined;
      }
      return undefined;
    } catch (err) {
      if (err instanceof ObjectMissing) {
        if (refreshed) throw await notServed(t, from, segments, err.key);
        continue;
      }
      throw s3Failure(err);
    }
  }
}

/**
 * Kafka's ListOffsets for one partition: earliest, latest (the high watermark), or by timestamp
 * (the first record whose timestamp is at or after it): the live segments through their time
 * indexes, then the table's tail, never reading the whole log.
 */
export async function listOffset(t: ReadTarget, spec: OffsetSpec, o: ReadHooks = {}): Promise<ListedOffset> {
  const head = await leaderHead(t);
  if (spec === 'earliest') return { offset: head.logStartOffset, timestamp: null };
  if (spec === 'latest') return { offset: head.hw, timestamp: null, lastStableOffset: lastStableOffset(head), logEndOffset: head.leo };
  await o.afterHead?.();
  const none = { offset: null, timestamp: null };
  let tail = Math.min(tailStartOf(head), head.hw);
  let searched = head.logStartOffset;
  for (let round = 0; round < MAX_TIER_ROUNDS; round++) {
    if (searched < tail) {
      const found = await timeInSegments(t, searched, tail, spec.timestamp);
      if (found) return found;
      searched = tail;
    }
    const batch = await firstBatchAtOrAfter(t.leader, t.tp, tail, head.hw - 1, spec.timestamp);
    // A batch at the tail start itself hides nothing; otherwise a roll after the head was read may
    // have moved batches before it into segments: search those first.
    if (!batch || batch.baseOffset > tail) {
      const now = Math.min(tailStartOf(await leaderHead(t)), head.hw);
      if (now > tail) {
        tail = now;
        continue;
      }
    }
    if (!batch) return none;
    const found = (await recordsOf([batch], head.logStartOffset, head.hw)).find((r) => r.timestamp >= spec.timestamp);
    return found ? { offset: found.offset, timestamp: found.timestamp } : none;
  }
  return none;
}

/**
 * The heads of many partitions on every broker that hosts them: one BatchGetItem per broker (per
 * 100 partitions), brokers in parallel. Keyed `<brokerId>/<tp>`; an unreachable store's heads are
 * simply absent.
 */
export async function replicaHeads(wanted: readonly { store: ReplicaStoreRef; tp: string }[]): Promise<Map<string, ReplicaHead>> {
  const byBroker = new Map<number, { store: ReplicaStoreRef; tps: string[] }>();
  for (const w of wanted) {
    const entry = byBroker.get(w.store.brokerId) ?? { store: w.store, tps: [] };
    entry.tps.push(w.tp);
    byBroker.set(w.store.brokerId, entry);
  }
  const out = new Map<string, ReplicaHead>();
  await Promise.all([...byBroker.values()].map(async ({ store, tps }) => {
    const heads = await readHeads(store, tps).catch(() => new Map<string, ReplicaHead>());
    for (const [tp, head] of heads) out.set(`${store.brokerId}/${tp}`, head);
  }));
  return out;
}

/** Errors after which a read tries again on fresh metadata: the leader moved, died, or is being elected. */
const RETRIABLE = new Set(['NOT_LEADER_OR_FOLLOWER', 'UNKNOWN_TOPIC_OR_PARTITION', 'KAFKA_STORAGE_ERROR', 'LEADER_NOT_AVAILABLE', 'FENCED_LEADER_EPOCH', 'UNKNOWN_LEADER_EPOCH', 'BROKER_NOT_AVAILABLE']);

/**
 * Runs `read` on the current leader of a partition; when the leader moved or died it refreshes
 * metadata and tries again until the request timeout, so a reader sees a slower request during a
 * failover rather than an error.
 * Errors: UNKNOWN_TOPIC_OR_PARTITION (with `partition` in its context for a missing partition),
 * LEADER_NOT_AVAILABLE while the partition is offline, and what `read` throws.
 */
export async function readFromLeader<T>(topic: string, partition: number, read: (t: ReadTarget) => Promise<T>, deadline = deadlineIn(config().requestTimeoutMs)): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    let view = await requireTopic(topic);
    if (!view.partitions[partition] && attempt === 1) {
      // The partition may have just been added (addPartitions): one look at fresh metadata tells.
      invalidateMetadata(topic);
      view = await requireTopic(topic);
    }
    const state = view.partitions[partition];
    if (!state) throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${partition} not found.`, { partition });
    try {
      if (state.leader < 0) throw new KafkaError('LEADER_NOT_AVAILABLE', `Partition ${partition} has no leader.`, { partition });
      return await read({ partition, tp: topicPartitionKey(view.topic.topicId, partition), leader: await replicaStore(state.leader) });
    } catch (caught) {
      const err = asKafkaError(caught);
      // A lost segment stays lost on any leader; S3 failing is not the leader's store failing.
      if (err.context.segmentMissing) throw err;
      if (err.kafkaName === 'KAFKA_STORAGE_ERROR' && state.leader >= 0 && err.context.store !== 's3') await reportBrokerFailure(state.leader);
      if (!RETRIABLE.has(err.kafkaName) || Date.now() + 100 > deadline) throw err;
      invalidateMetadata(topic);
      if (attempt > 1) await sleep(Math.min(50 * attempt, 500));
    }
  }
}
