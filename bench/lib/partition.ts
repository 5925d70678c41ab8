/**
 * One partition that a benchmark drives with lib/ calls rather than over HTTP: the topic created,
 * its leader's replica store and its key in the replica tables; records appended straight to the
 * leader; a replication run with the benchmarks' patience; the log rolled to S3 segments; what the
 * leader's table holds; the snapshot a full sync left.
 */
import './env.js';
import { replicaStore } from '../../lib/cluster/metadata.js';
import { createTopic, type CreateTopicInput, type TopicDescription } from '../../lib/cluster/topics.js';
import { appendToLeader } from '../../lib/log/append.js';
import { prepareBatches, type BatchOptions, type PreparedBatch } from '../../lib/log/batches.js';
import { replicate, type ReplicateOptions, type ReplicateResult } from '../../lib/log/commit.js';
import { rollPartition, type RollOptions } from '../../lib/log/roll.js';
import { topicPartitionKey, type PartitionRecord, type TopicRecord } from '../../lib/storage/model.js';
import { listKeys, readObject } from '../../lib/storage/objects.js';
import { readHead, tailStartOf } from '../../lib/storage/replica/head.js';
import { queryBatches } from '../../lib/storage/replica/reads.js';
import type { ReplicaStoreRef } from '../../lib/storage/replica/store.js';

/**
 * The batch options records appended straight to a leader are prepared with: no compression,
 * producer timestamps, Kafka's default max.message.bytes, and no timestamp ever refused.
 */
export const BATCH_OPTIONS: BatchOptions = {
  compression: 'none', timestampType: 'CreateTime', maxMessageBytes: 1_048_588,
  timestampBeforeMaxMs: Number.MAX_SAFE_INTEGER, timestampAfterMaxMs: Number.MAX_SAFE_INTEGER,
};

/** Partition 0 of a topic: where its leader keeps it. */
export interface PartitionLeader {
  /** The partition's key in the replica tables. */
  readonly tp: string;
  readonly leader: ReplicaStoreRef;
}

/** A topic of one partition, just created, with its partition's state as created and its leader. */
export interface BenchPartition extends PartitionLeader {
  readonly name: string;
  readonly topic: TopicRecord;
  readonly topicId: string;
  readonly state: PartitionRecord;
}

/** Partition 0's key and its leader's replica store, for a topic as createTopic returned it. */
export async function leaderOf(created: TopicDescription): Promise<PartitionLeader> {
  const tp = topicPartitionKey(created.topic.topicId, 0);
  return { tp, leader: await replicaStore(created.partitions[0]!.leader) };
}

/** Creates a topic of one partition (RF 3 unless given) and finds its leader. */
export async function createPartition(name: string, o: Pick<CreateTopicInput, 'replicationFactor' | 'configs'> = {}): Promise<BenchPartition> {
  const created = await createTopic({ name, partitions: 1, replicationFactor: o.replicationFactor ?? 3, ...(o.configs ? { configs: o.configs } : {}) });
  return { name, topic: created.topic, topicId: created.topic.topicId, state: created.partitions[0]!, ...(await leaderOf(created)) };
}

/** The replica store of the partition's first follower (as created: the leader is the first replica). */
export const followerOf = (p: BenchPartition): Promise<ReplicaStoreRef> => replicaStore(p.state.replicas.find((b) => b !== p.state.leader)!);

/** A 100-byte value: `record-<i>-` padded with x. */
const smallValue = (i: number): Buffer => Buffer.from(`record-${i}-`.padEnd(100, 'x'));
/** A 1 KiB value, its bytes all `i mod 251`. */
const kibValue = (i: number): Buffer => Buffer.alloc(1024, i % 251);

/**
 * Appends `records` records to the leader, `perBatch` to a batch and `perCall` batches to an
 * appendToLeader call; record i gets `value(i)`. Returns the bytes of the batches appended.
 */
async function append(p: BenchPartition, records: number, perBatch: number, perCall: number, value: (i: number) => Buffer, inlineMaxBytes = 8192): Promise<number> {
  const target = { topic: p.name, leader: p.leader, topicId: p.topicId, partition: 0, tp: p.tp, leaderEpoch: p.state.leaderEpoch, inlineMaxBytes };
  let bytes = 0;
  for (let done = 0; done < records; done += perBatch * perCall) {
    const group: PreparedBatch[] = [];
    for (let b = done; b < Math.min(records, done + perBatch * perCall); b += perBatch) {
      group.push(...prepareBatches(Array.from({ length: Math.min(perBatch, records - b) }, (_, k) => ({ key: null, value: value(b + k), headers: [] })), BATCH_OPTIONS));
    }
    bytes += group.reduce((n, x) => n + x.bytes.length, 0);
    await appendToLeader(target, group);
  }
  return bytes;
}

/**
 * Appends `records` records of 100 bytes in batches of `perBatch`; each append call carries
 * `perCall` batches, by default about 1 MiB of them (a record takes about 110 bytes in a batch).
 * Returns the bytes of the batches appended.
 */
export function appendSmallRecords(p: BenchPartition, records: number, perBatch: number, o: { perCall?: number; inlineMaxBytes?: number } = {}): Promise<number> {
  return append(p, records, perBatch, o.perCall ?? Math.max(1, Math.floor(2 ** 20 / (perBatch * 110))), smallValue, o.inlineMaxBytes);
}

/** Appends `records` records of 1 KiB in batches of `perBatch`, 50 batches to an append call. */
export async function appendKiBRecords(p: BenchPartition, records: number, perBatch = 1): Promise<void> {
  await append(p, records, perBatch, 50, kibValue);
}

/**
 * One replication run of the partition, patient: its deadline and replica.lag.time.max.ms are `ms`
 * (10 minutes unless given) and no follower is shrunk out of the ISR unless `shrinkOnFailure` says so.
 */
export function replicatePartition(p: BenchPartition, o: Partial<ReplicateOptions> & { ms?: number } = {}): Promise<ReplicateResult> {
  const { ms = 600_000, ...options } = o;
  return replicate(p.name, p.topicId, 0, { deadline: Date.now() + ms, lagTimeMaxMs: ms, shrinkOnFailure: false, ...options });
}

/** Rolls partition 0 of `topic` into S3 segments, `maxSegments` a call, until a call rolls nothing. */
export async function rollAll(topic: string, o: RollOptions): Promise<void> {
  while ((await rollPartition(topic, 0, o)).rolled > 0);
}

/** The leader's head and the batches its table holds from `fromOffset` (the table tail's start unless given) to the log end. */
export async function tableLog(leader: ReplicaStoreRef, tp: string, fromOffset?: number) {
  const head = (await readHead(leader, tp))!;
  const batches = await queryBatches(leader, tp, { fromOffset: fromOffset ?? tailStartOf(head), toOffset: head.leo - 1, maxBytes: Number.MAX_SAFE_INTEGER });
  return { head, batches };
}

/** The manifest of the partition's latest snapshot (a full sync's): it names the snapshot's parts, and `bytes` is their sum. */
export async function latestSnapshot(tp: string): Promise<{ bytes: number; batches: number; parts: unknown[] }> {
  const manifests = (await listKeys(`snapshots/${tp.replace('#', '/')}/`)).filter((k) => k.endsWith('/manifest.json')).sort();
  return JSON.parse((await readObject(manifests[manifests.length - 1]!)).toString('utf8')) as { bytes: number; batches: number; parts: unknown[] };
}
