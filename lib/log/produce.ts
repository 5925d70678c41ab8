/**
 * Produce (DESIGN §4): route each record to a partition, validate everything, then append one set
 * of batches per partition on its leader — partitions in parallel. A stale route (leader moved,
 * epoch changed) refreshes metadata and retries within the request's deadline.
 */
import { KafkaError, asKafkaError, isKafkaError } from '../errors.js';
import { partitionForKey } from '../protocol/murmur2.js';
import type { RecordHeader } from '../protocol/record-batch.js';
import { invalidateMetadata, replicaStore, requireTopic } from '../cluster/metadata.js';
import { numericConfig, stringConfig } from '../cluster/topic-configs.js';
import { topicPartitionKey } from '../storage/model.js';
import type { TopicWithPartitions } from '../storage/coordination.js';
import { appendToLeader } from './append.js';
import { checkRecord, prepareBatches, type BatchOptions, type LogRecord, type PreparedBatch } from './batches.js';

export interface ProduceRecord extends LogRecord {
  /** Explicit partition; else murmur2 of the key; else one sticky partition per request. */
  readonly partition?: number;
}

export type ProduceOutcome =
  | { readonly ok: true; readonly partition: number; readonly offset: number; readonly timestamp: number }
  | { readonly ok: false; readonly partition?: number; readonly error: KafkaError };

export interface ProduceOptions {
  /** Give up retrying stale routes after this long. @default 10000 */
  readonly deadlineMs?: number;
}

const RETRY_ON_STALE_ROUTE = new Set(['NOT_LEADER_OR_FOLLOWER', 'FENCED_LEADER_EPOCH', 'UNKNOWN_LEADER_EPOCH', 'LEADER_NOT_AVAILABLE']);

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

async function appendPartition(
  topicName: string,
  view: TopicWithPartitions,
  partition: number,
  batches: readonly PreparedBatch[],
  deadline: number,
): Promise<number[]> {
  let current = view;
  for (let attempt = 1; ; attempt++) {
    const state = current.partitions[partition];
    try {
      if (!state || state.leader < 0) throw new KafkaError('LEADER_NOT_AVAILABLE', `Partition ${partition} has no leader.`, { partition });
      const ranges = await appendToLeader({
        leader: await replicaStore(state.leader),
        topicId: current.topic.topicId,
        partition,
        tp: topicPartitionKey(current.topic.topicId, partition),
        leaderEpoch: state.leaderEpoch,
        inlineMaxBytes: numericConfig(current.topic.configs, 'inline.max.bytes'),
      }, batches);
      return ranges.map((r) => r.baseOffset);
    } catch (err) {
      const stale = isKafkaError(err) && RETRY_ON_STALE_ROUTE.has(err.kafkaName);
      if (!stale || Date.now() + 50 * attempt > deadline) throw err;
      invalidateMetadata(topicName);
      await sleep(Math.min(50 * attempt, 500));
      current = await requireTopic(topicName);
      if (current.topic.topicId !== view.topic.topicId) {
        throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Topic ${topicName} was deleted.`, { topic: topicName });
      }
    }
  }
}

/**
 * Produces records to a topic; one outcome per record, in order.
 * Errors (whole request): UNKNOWN_TOPIC_OR_PARTITION for a missing topic. Per record: an unknown
 * partition, MESSAGE_TOO_LARGE, INVALID_TIMESTAMP (none of that partition's records are written),
 * or the append's failure.
 */
export async function produce(topicName: string, records: readonly ProduceRecord[], opts: ProduceOptions = {}): Promise<ProduceOutcome[]> {
  const deadline = Date.now() + (opts.deadlineMs ?? 10_000);
  const view = await requireTopic(topicName);
  const n = view.topic.partitions;
  const sticky = Math.floor(Math.random() * n);
  const outcomes: ProduceOutcome[] = new Array(records.length);
  const byPartition = new Map<number, number[]>();
  const options = batchOptions(view.topic.configs);
  const now = Date.now();
  records.forEach((r, i) => {
    const p = route(r, n, sticky);
    if (p instanceof KafkaError) {
      outcomes[i] = { ok: false, error: p };
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

  // Everything is encoded and validated before anything is written.
  const prepared = new Map<number, PreparedBatch[]>();
  for (const [p, indexes] of byPartition) {
    try {
      prepared.set(p, prepareBatches(indexes.map((i) => records[i] as ProduceRecord), options, now));
    } catch (err) {
      if (!isKafkaError(err)) throw err;
      for (const i of indexes) outcomes[i] = { ok: false, partition: p, error: err };
    }
  }

  await Promise.all([...prepared].map(async ([p, batches]) => {
    const indexes = byPartition.get(p) as number[];
    try {
      const bases = await appendPartition(topicName, view, p, batches, deadline);
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
  return outcomes;
}

export type { RecordHeader };
