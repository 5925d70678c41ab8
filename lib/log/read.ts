/**
 * The read path (DESIGN §7): fetch from the leader replica below the high watermark, long-poll
 * for new data, and ListOffsets (earliest, latest, by timestamp).
 */
import { config } from '../config.js';
import { invalidateMetadata, replicaStore, reportBrokerFailure, requireTopic } from '../cluster/metadata.js';
import { KafkaError, asKafkaError } from '../errors.js';
import { emitMetric } from '../metrics.js';
import { topicPartitionKey } from '../storage/model.js';
import { decodeBatch, withBaseOffset, type BatchRecord as LogRecordOut } from '../protocol/record-batch.js';
import type { BatchRecord, ReplicaHead } from '../storage/model.js';
import { readRange } from '../storage/objects.js';
import { firstBatchAtOrAfter, queryBatches, readHead, readHeads, type ReplicaStoreRef } from '../storage/replica.js';

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
}

export interface FetchResult {
  readonly records: LogRecordOut[];
  readonly highWatermark: number;
  readonly logStartOffset: number;
  readonly logEndOffset: number;
  /** The offset to fetch next. */
  readonly nextOffset: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function leaderHead(t: ReadTarget): Promise<ReplicaHead> {
  const head = await readHead(t.leader, t.tp);
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

/** The records of stored batches from `from` (inclusive) to `below` (exclusive). */
async function recordsOf(batches: readonly BatchRecord[], from: number, below: number): Promise<LogRecordOut[]> {
  const decoded = await Promise.all(batches.map(async (b) => decodeBatch(await batchBytes(b))));
  return decoded.flatMap((d) => d.records.filter((r) => r.offset >= from && r.offset < below));
}

/**
 * Reads records at and after `offset`, below the high watermark.
 * Errors: OFFSET_OUT_OF_RANGE (with the valid range) below the log start or above the log end;
 * NOT_LEADER_OR_FOLLOWER; UNKNOWN_TOPIC_OR_PARTITION.
 */
export async function fetchRecords(t: ReadTarget, req: FetchRequest): Promise<FetchResult> {
  const deadline = Date.now() + req.maxWaitMs;
  let head = await leaderHead(t);
  if (req.offset < head.logStartOffset || req.offset > head.leo) {
    throw new KafkaError(
      'OFFSET_OUT_OF_RANGE',
      `OFFSET_OUT_OF_RANGE: offset ${req.offset} is outside the range [${head.logStartOffset}, ${head.leo}] of partition ${t.partition}.`,
      { partition: t.partition, logStartOffset: head.logStartOffset, logEndOffset: head.leo },
    );
  }
  for (let pause = 20; head.hw <= req.offset && Date.now() < deadline; pause = Math.min(pause * 2, 200)) {
    await sleep(Math.min(pause, Math.max(0, deadline - Date.now())));
    head = await leaderHead(t);
  }
  const result = (records: LogRecordOut[]): FetchResult => ({
    records,
    highWatermark: head.hw,
    logStartOffset: head.logStartOffset,
    logEndOffset: head.leo,
    nextOffset: records.length > 0 ? (records[records.length - 1] as LogRecordOut).offset + 1 : req.offset,
  });
  if (head.hw <= req.offset) return result([]);
  const batches = await queryBatches(t.leader, t.tp, { fromOffset: req.offset, toOffset: head.hw - 1, maxBytes: req.maxBytes });
  const records = await recordsOf(batches, req.offset, head.hw);
  emitMetric('fetchRecords', records.length);
  emitMetric('fetchBytes', batches.reduce((n, b) => n + b.sizeBytes, 0));
  return result(records);
}

export type OffsetSpec = 'earliest' | 'latest' | { readonly timestamp: number };

export interface ListedOffset {
  /** The offset, or null when no record has a timestamp at or after the one asked for. */
  readonly offset: number | null;
  /** The found record's timestamp (by-timestamp lookups only). */
  readonly timestamp: number | null;
}

/** Kafka's ListOffsets for one partition: earliest, latest (the high watermark), or by timestamp. */
export async function listOffset(t: ReadTarget, spec: OffsetSpec): Promise<ListedOffset> {
  const head = await leaderHead(t);
  if (spec === 'earliest') return { offset: head.logStartOffset, timestamp: null };
  if (spec === 'latest') return { offset: head.hw, timestamp: null };
  const batch = await firstBatchAtOrAfter(t.leader, t.tp, head.logStartOffset, head.hw - 1, spec.timestamp);
  if (!batch) return { offset: null, timestamp: null };
  const found = (await recordsOf([batch], head.logStartOffset, head.hw)).find((r) => r.timestamp >= spec.timestamp);
  return found ? { offset: found.offset, timestamp: found.timestamp } : { offset: null, timestamp: null };
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
export async function readFromLeader<T>(topic: string, partition: number, read: (t: ReadTarget) => Promise<T>, deadline = Date.now() + config().requestTimeoutMs): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const view = await requireTopic(topic);
    const state = view.partitions[partition];
    if (!state) throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${partition} not found.`, { partition });
    try {
      if (state.leader < 0) throw new KafkaError('LEADER_NOT_AVAILABLE', `Partition ${partition} has no leader.`, { partition });
      return await read({ partition, tp: topicPartitionKey(view.topic.topicId, partition), leader: await replicaStore(state.leader) });
    } catch (caught) {
      const err = asKafkaError(caught);
      if (err.kafkaName === 'KAFKA_STORAGE_ERROR' && state.leader >= 0) reportBrokerFailure(state.leader);
      if (!RETRIABLE.has(err.kafkaName) || Date.now() + 100 > deadline) throw err;
      invalidateMetadata(topic);
      if (attempt > 1) await sleep(Math.min(50 * attempt, 500));
    }
  }
}
