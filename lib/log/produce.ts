/**
 * Produce (docs/architecture.md, "Request path"): route each record to a partition, validate
 * everything, then append one set of batches per partition on its leader — partitions in parallel.
 * A stale route (leader moved, epoch changed) refreshes metadata and retries within the request's
 * deadline.
 */
import { deadlineIn } from '../deadline.js';
import { KafkaError } from '../protocol/errors.js';
import { asKafkaError, isKafkaError } from '../errors.js';
import { partitionForKey } from '../protocol/murmur2.js';
import type { RecordHeader } from '../protocol/record-batch.js';
import { invalidateMetadata, replicaStore, reportBrokerFailure, requireTopic } from '../cluster/metadata.js';
import { numericConfig, stringConfig } from '../cluster/topic-configs.js';
import { topicPartitionKey } from '../storage/model.js';
import type { TopicWithPartitions } from '../storage/coordination/topics.js';
import { config } from '../config.js';
import { logger } from '../logger.js';
import { emitMetric } from '../metrics.js';
import { AppendOutcomeUnknown, appendToLeader } from './append.js';
import { isCompacted } from './compaction.js';
import { replicateShared, type Appended } from './commit.js';
import { checkRecord, prepareBatches, prepareMarker, type ProducerTag, type BatchOptions, type LogRecord, type PreparedBatch } from './batches.js';

export interface ProduceRecord extends LogRecord {
  /** Explicit partition; else murmur2 of the key; else one sticky partition per request. */
  readonly partition?: number;
  /** An idempotent producer's sequence number for this record in its partition. */
  readonly sequence?: number;
}

export type ProduceOutcome =
  | { readonly ok: true; readonly partition: number; readonly offset: number; readonly timestamp: number }
  | { readonly ok: false; readonly partition?: number; readonly error: KafkaError };

/** Kafka's acks: 0 — no acknowledgement; 1 — the leader appended; 'all' — every in-sync replica holds it. */
export type Acks = 0 | 1 | 'all';

export interface ProduceOptions {
  /** Give up retrying stale routes, dead leaders and slow followers after this long. @default config().requestTimeoutMs */
  readonly deadlineMs?: number;
  /** @default 'all' (Kafka 3's default) */
  readonly acks?: Acks;
  /**
   * An idempotent producer (Kafka's InitProducerId gives both); then every record carries a
   * `sequence`. `transactional`: its batches belong to its open transaction (the caller has added
   * the partitions to it: lib/orchestration/transactions.ts).
   */
  readonly producer?: { readonly producerId: number; readonly producerEpoch: number; readonly transactional?: boolean };
}

/** Errors of a route that moved or a leader that died: refresh metadata and try again within the deadline. */
const RETRY_ON_STALE_ROUTE = new Set(['NOT_LEADER_OR_FOLLOWER', 'FENCED_LEADER_EPOCH', 'UNKNOWN_LEADER_EPOCH', 'LEADER_NOT_AVAILABLE', 'KAFKA_STORAGE_ERROR', 'BROKER_NOT_AVAILABLE']);

function batchOptions(configs: Readonly<Record<string, string>>): BatchOptions {
  return {
    compression: stringConfig(configs, 'compression.type') === 'gzip' ? 'gzip' : 'none',
    timestampType: stringConfig(configs, 'message.timestamp.type') as BatchOptions['timestampType'],
    maxMessageBytes: numericConfig(configs, 'max.message.bytes'),
    timestampBeforeMaxMs: numericConfig(configs, 'message.timestamp.before.max.ms'),
    timestampAfterMaxMs: numericConfig(configs, 'message.timestamp.after.max.ms'),
  };
}

/** The partition a record goes to, or the error that keeps it from going anywhere. */
function route(r: ProduceRecord, partitions: number, sticky: number): number | KafkaError {
  if (r.partition !== undefined) {
    if (!Number.isInteger(r.partition) || r.partition < 0 || r.partition >= partitions) {
      return new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${r.partition} not found: the topic has ${partitions} partitions.`, { partition: r.partition });
    }
    return r.partition;
  }
  return r.key ? partitionForKey(r.key, partitions) : sticky;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Appends a partition's batches on its leader (and, for acks=all, waits until the ISR holds them
 * and the high watermark covers them). Returns each batch's base offset.
 */
async function appendPartition(
  topicName: string,
  view: TopicWithPartitions,
  partition: number,
  batches: readonly PreparedBatch[],
  deadline: number,
  acks: Acks,
): Promise<number[]> {
  let current = view;
  const minIsr = numericConfig(view.topic.configs, 'min.insync.replicas');
  for (let attempt = 1; ; attempt++) {
    const state = current.partitions[partition];
    try {
      if (!state || state.leader < 0) throw new KafkaError('LEADER_NOT_AVAILABLE', `Partition ${partition} has no leader.`, { partition });
      // acks=all refuses a shrunken ISR before writing: the append's own condition checks the
      // leader's count (no read: with min.insync.replicas=1 the leader alone always suffices).
      const ranges = await appendToLeader({
        topic: topicName,
        leader: await replicaStore(state.leader),
        topicId: current.topic.topicId,
        partition,
        tp: topicPartitionKey(current.topic.topicId, partition),
        leaderEpoch: state.leaderEpoch,
        inlineMaxBytes: numericConfig(current.topic.configs, 'inline.max.bytes'),
        stateIsr: state.isr,
        ...(acks === 'all' ? { minIsr } : {}),
      }, batches);
      const end = (ranges[ranges.length - 1]?.lastOffset ?? -1) + 1;
      // Written: from here a failure must not append again. With one replica the leader's append
      // is the commit, so the high watermark moves now whatever the acks.
      // (another writer's group commit appended them, and its commit covered them: seen, nothing to do)
      const seen = ranges.every((r) => r.committed) ? ranges[ranges.length - 1]?.committed : undefined;
      if (acks === 'all' || state.replicas.length === 1) await commit(topicName, current.topic.topicId, partition, { leader: state.leader, isr: state.isr }, end, state.leaderEpoch, minIsr, deadline, seen);
      return ranges.map((r) => r.baseOffset);
    } catch (caught) {
      if (caught instanceof CommitFailed) throw caught.cause;
      const err = asKafkaError(caught);
      if ((err.kafkaName === 'KAFKA_STORAGE_ERROR' || caught instanceof AppendOutcomeUnknown) && state && state.leader >= 0) await reportBrokerFailure(state.leader);
      // (an append that may have been written is never sent again: REQUEST_TIMED_OUT is not retried here)
      // A replica with no log for the partition: the topic may have been deleted (or deleted and
      // created again) by another instance while this one's cache still routes to it; one look
      // at fresh metadata tells.
      const stale = RETRY_ON_STALE_ROUTE.has(err.kafkaName) || (err.kafkaName === 'UNKNOWN_TOPIC_OR_PARTITION' && attempt === 1);
      if (!stale || Date.now() + 50 * attempt > deadline) throw err;
      invalidateMetadata(topicName);
      if (attempt > 1) await sleep(Math.min(50 * attempt, 500));
      current = await requireTopic(topicName);
      if (current.topic.topicId !== view.topic.topicId) {
        throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Topic ${topicName} was deleted.`, { topic: topicName });
      }
    }
  }
}

/**
 * Replicates to the ISR until the high watermark reaches `end` (acks=all).
 * Errors: NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below min.insync.replicas (the
 * records are on the leader but not acknowledged); REQUEST_TIMED_OUT when the deadline passed.
 */
async function commit(
  topicName: string, topicId: string, partition: number, appended: Appended, end: number, leaderEpoch: number, minIsr: number, deadline: number,
  seen?: { readonly highWatermark: number; readonly isr: readonly number[] },
): Promise<void> {
  let result;
  try {
    result = seen && seen.highWatermark >= end ? seen : await replicateShared(topicName, topicId, partition, {
      until: end, leaderEpoch, appended, deadline, shrinkOnFailure: true, lagTimeMaxMs: config().replicaLagTimeMaxMs,
    });
  } catch (err) {
    throw new CommitFailed(asKafkaError(err));
  }
  if (result.isr.length < minIsr) {
    throw new CommitFailed(new KafkaError('NOT_ENOUGH_REPLICAS_AFTER_APPEND', `NOT_ENOUGH_REPLICAS_AFTER_APPEND: partition ${partition} has ${result.isr.length} in-sync replicas (${result.isr.join(', ')}), fewer than min.insync.replicas=${minIsr}.`, { partition }));
  }
  if (result.highWatermark < end) {
    throw new CommitFailed(new KafkaError('REQUEST_TIMED_OUT', `The high watermark of partition ${partition} reached ${result.highWatermark}, not ${end}, before the deadline.`, { partition }));
  }
}

/** A failure after the records were appended: reported as it is, never retried by appending again. */
class CommitFailed extends Error {
  constructor(override readonly cause: KafkaError) {
    super(cause.message);
  }
}

/**
 * The producer tag of a partition's records: their sequences must run on without a gap, and the
 * batch's base sequence is the first one (Kafka numbers records baseSequence + offset delta).
 */
function producerTag(producer: NonNullable<ProduceOptions['producer']>, partition: number, records: readonly ProduceRecord[]): ProducerTag {
  const first = records[0]?.sequence;
  records.forEach((r, i) => {
    if (r.sequence === undefined || first === undefined || r.sequence !== (first + i) % 2 ** 31) {
      throw new KafkaError('OUT_OF_ORDER_SEQUENCE_NUMBER', `OUT_OF_ORDER_SEQUENCE_NUMBER: the sequences of an idempotent producer's records for partition ${partition} must run on without gaps within a request.`, { partition });
    }
  });
  return { producerId: producer.producerId, producerEpoch: producer.producerEpoch, baseSequence: first as number, ...(producer.transactional ? { transactional: true } : {}) };
}

/** A validated produce request: records routed, checked and encoded, nothing written yet. */
export interface ProducePlan {
  readonly topicName: string;
  readonly view: TopicWithPartitions;
  /** Per record: its failure when it was rejected before any write, else undefined. */
  readonly outcomes: (ProduceOutcome | undefined)[];
  readonly byPartition: ReadonlyMap<number, number[]>;
  readonly prepared: ReadonlyMap<number, PreparedBatch[]>;
  readonly acks: Acks;
  readonly deadline: number;
}

/**
 * Routes, checks and encodes every record before anything is written.
 * Errors (whole request): UNKNOWN_TOPIC_OR_PARTITION for a missing topic. Per record (in
 * `outcomes`): an unknown partition, MESSAGE_TOO_LARGE, INVALID_TIMESTAMP, INVALID_RECORD (no key,
 * compacted topic).
 */
export async function planProduce(topicName: string, records: readonly ProduceRecord[], opts: ProduceOptions = {}): Promise<ProducePlan> {
  const deadline = deadlineIn(opts.deadlineMs ?? config().requestTimeoutMs);
  let view = await requireTopic(topicName);
  // A partition past the cached count may have just been added (lib/cluster/topics.ts,
  // addPartitions): one look at fresh metadata tells.
  if (records.some((r) => r.partition !== undefined && r.partition >= view.topic.partitions)) {
    invalidateMetadata(topicName);
    view = await requireTopic(topicName);
  }
  const n = view.topic.partitions;
  const sticky = Math.floor(Math.random() * n);
  const outcomes: (ProduceOutcome | undefined)[] = new Array(records.length).fill(undefined);
  const byPartition = new Map<number, number[]>();
  const options = batchOptions(view.topic.configs);
  const now = Date.now();
  const compacted = isCompacted(view.topic.configs);
  records.forEach((r, i) => {
    const p = route(r, n, sticky);
    if (p instanceof KafkaError) {
      outcomes[i] = { ok: false, error: p };
      return;
    }
    // Kafka's LogValidator: a compacted log keeps the latest record per key, so a keyless one has no place in it.
    if (compacted && r.key === null) {
      outcomes[i] = { ok: false, partition: p, error: new KafkaError('INVALID_RECORD', `Compacted topic cannot accept message without key in topic partition ${topicName}-${p}.`, { partition: p }) };
      return;
    }
    try {
      checkRecord(r, options, now);
    } catch (err) {
      if (!isKafkaError(err)) throw err;
      outcomes[i] = { ok: false, partition: p, error: err };
      return;
    }
    if (byPartition.has(p)) byPartition.get(p)?.push(i);
    else byPartition.set(p, [i]);
  });
  const prepared = new Map<number, PreparedBatch[]>();
  for (const [p, indexes] of byPartition) {
    try {
      const partitionRecords = indexes.map((i) => records[i] as ProduceRecord);
      prepared.set(p, prepareBatches(partitionRecords, options, now, opts.producer && producerTag(opts.producer, p, partitionRecords)));
    } catch (err) {
      if (!isKafkaError(err)) throw err;
      for (const i of indexes) outcomes[i] = { ok: false, partition: p, error: err };
    }
  }
  return { topicName, view, outcomes, byPartition, prepared, acks: opts.acks ?? 'all', deadline };
}

/** Writes a plan: partitions in parallel; one outcome per record, in order. */
export async function executePlan(plan: ProducePlan): Promise<ProduceOutcome[]> {
  const outcomes = [...plan.outcomes];
  let records = 0;
  let bytes = 0;
  await Promise.all([...plan.prepared].map(async ([p, batches]) => {
    const indexes = plan.byPartition.get(p) as number[];
    try {
      const bases = await appendPartition(plan.topicName, plan.view, p, batches, plan.deadline, plan.acks);
      for (const b of batches) {
        records += b.recordCount;
        bytes += b.bytes.length;
      }
      let k = 0;
      batches.forEach((b, j) => {
        for (let r = 0; r < b.recordCount; r++, k++) {
          outcomes[indexes[k] as number] = { ok: true, partition: p, offset: (bases[j] as number) + r, timestamp: b.timestamps[r] as number };
        }
      });
    } catch (err) {
      const error = asKafkaError(err);
      for (const i of indexes) outcomes[i] = { ok: false, partition: p, error };
    }
  }));
  if (records > 0) {
    emitMetric('produceRecords', records);
    emitMetric('produceBytes', bytes);
  }
  return outcomes as ProduceOutcome[];
}

/** A record accepted under acks=0: validated and handed to the leader, no offset reported. */
export interface Accepted {
  readonly ok: true;
  readonly partition: number;
  readonly offset: null;
  readonly timestamp: null;
}

/**
 * acks=0: validates the records and writes them to the leader before it answers — in Lambda
 * nothing runs after the response, so a write left running would happen at the container's next
 * invocation, or never. The answer is what a Kafka acks=0 producer learns: no offsets and no
 * errors (a failed write is logged, and the records are reported accepted). It costs what acks=1
 * costs, and takes as long (docs/architecture.md, "Lambda semantics").
 */
export async function produceNoAck(topicName: string, records: readonly ProduceRecord[], opts: ProduceOptions = {}): Promise<(ProduceOutcome | Accepted)[]> {
  const plan = await planProduce(topicName, records, { ...opts, acks: 0 });
  const outcomes = await executePlan(plan).catch((err: unknown) => {
    logger.error({ event: 'acks0-write-failed', topic: topicName, err }, 'acks=0 write failed');
    return [];
  });
  const failed = outcomes.filter((o) => !o.ok).length;
  if (failed > 0) logger.warn({ event: 'acks0-write-failed', topic: topicName, failed }, 'acks=0 records were not written');
  const partitionOf = new Map<number, number>();
  for (const [p, indexes] of plan.byPartition) for (const i of indexes) partitionOf.set(i, p);
  return plan.outcomes.map((o, i) => o ?? { ok: true, partition: partitionOf.get(i) as number, offset: null, timestamp: null });
}

/**
 * Writes a transaction marker (lib/log/batches.ts, prepareMarker) on a partition's leader and waits
 * until the ISR holds it, as Kafka's coordinator does; a repeat of a marker already there writes
 * nothing. Returns the marker's offset, -1 for a repeat. Errors: as an acks=all produce's (UNKNOWN_TOPIC_OR_PARTITION when the topic is gone).
 */
export async function appendMarker(
  topicName: string, partition: number, producerId: number, markerEpoch: number, commit: boolean,
  deadlineMs = config().requestTimeoutMs, opts: { readonly repair?: boolean } = {},
): Promise<number> {
  const view = await requireTopic(topicName);
  if (partition >= view.topic.partitions) throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${partition} not found.`, { partition });
  const [offset] = await appendPartition(topicName, view, partition, [prepareMarker(producerId, markerEpoch, commit, Date.now(), 0, opts.repair)], deadlineIn(deadlineMs), 'all');
  return offset ?? -1;
}

/** Produces records to a topic (plan, then execute); one outcome per record, in order. */
export async function produce(topicName: string, records: readonly ProduceRecord[], opts: ProduceOptions = {}): Promise<ProduceOutcome[]> {
  return executePlan(await planProduce(topicName, records, opts));
}

export type { RecordHeader };
