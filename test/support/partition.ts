/**
 * Partitions for the storage and replication tests: a new partition as the append path's target
 * on its leader; one RF 3 partition on the quiet cluster (its stores, an acks=all `send` of
 * one-record-per-value batches, whether every replica's log is the same, whether every replica
 * has caught up); and a leader election forced on one.
 */
import { replicaStore } from '../../lib/cluster/metadata.js';
import { changePartition } from '../../lib/cluster/partition-state.js';
import { createTopic } from '../../lib/cluster/topics.js';
import type { AppendTarget } from '../../lib/log/append.js';
import { produce, type ProduceRecord } from '../../lib/log/produce.js';
import { readPartition } from '../../lib/storage/coordination/partitions.js';
import { topicPartitionKey, type PartitionRecord } from '../../lib/storage/model.js';
import { readHead } from '../../lib/storage/replica/head.js';
import type { ReplicaStoreRef } from '../../lib/storage/replica/store.js';
import { logFingerprint, replicaLog } from './cluster.js';

let n = 0;

/**
 * A new topic of one partition (RF `replicationFactor`, 1 by default), as the append path's target
 * on its leader, with the topic's name.
 */
export async function newAppendTarget(prefix: string, o: { replicationFactor?: number; inlineMaxBytes?: number } = {}): Promise<AppendTarget & { name: string }> {
  const { topic, partitions } = await createTopic({ name: `${prefix}-${process.pid}-${Date.now()}-${n++}`, partitions: 1, replicationFactor: o.replicationFactor ?? 1 });
  const state = partitions[0];
  if (!state) throw new Error('no partition');
  return {
    name: topic.name, leader: await replicaStore(state.leader), topicId: topic.topicId, partition: 0,
    tp: topicPartitionKey(topic.topicId, 0), leaderEpoch: state.leaderEpoch, inlineMaxBytes: o.inlineMaxBytes ?? 8192,
  };
}

export async function rf3Partition(prefix: string, o: { minIsr?: number; configs?: Readonly<Record<string, string>> } = {}) {
  const name = `${prefix}-${process.pid}-${n++}`;
  const configs = { ...o.configs, ...(o.minIsr ? { 'min.insync.replicas': String(o.minIsr) } : {}) };
  const { topic, partitions } = await createTopic({
    name, partitions: 1, replicationFactor: 3, configs: Object.entries(configs).map(([k, v]) => ({ name: k, value: v })),
  });
  const p0 = partitions[0]!;
  const tp = topicPartitionKey(topic.topicId, 0);
  const stores = new Map(await Promise.all(p0.replicas.map(async (b) => [b, await replicaStore(b)] as const)));
  const store = (b: number): ReplicaStoreRef => stores.get(b)!;
  const followers = p0.replicas.filter((b) => b !== p0.leader);
  /** Produces one record per value (keyed by `keys`, by position, when given), acks=all unless `opts` say otherwise. */
  const send = (values: string[], opts: Parameters<typeof produce>[2] & { keys?: readonly string[] } = {}) => {
    const { keys, ...produceOpts } = opts;
    return produce(name, values.map((v, i): ProduceRecord => ({ partition: 0, key: keys?.[i] === undefined ? null : Buffer.from(keys[i] as string), value: Buffer.from(v), headers: [] })), { acks: 'all', ...produceOpts });
  };
  const logsEqual = async () => {
    const logs = await Promise.all(p0.replicas.map(async (b) => logFingerprint(await replicaLog(store(b), tp))));
    return logs.every((l) => JSON.stringify(l) === JSON.stringify(logs[0]));
  };
  /** Whether the first leader's high watermark is its log end, and every follower holds that whole log. */
  const converged = async () => {
    const l = (await readHead(store(p0.leader), tp))!;
    const fs = await Promise.all(followers.map((b) => readHead(store(b), tp)));
    return l.hw === l.leo && fs.every((f) => f?.leo === l.leo);
  };
  return { name, topic, p0, tp, store, followers, send, logsEqual, converged };
}

/**
 * Makes `leader` the partition's leader under a new leader epoch (adding it to the ISR), as the
 * controller's election writes it: a compare-and-set on the partition epoch, from `expect` when
 * given. The replicas' heads are told separately (`setRole`).
 */
export async function electLeader(topic: string, partition: number, leader: number, expect?: PartitionRecord): Promise<PartitionRecord> {
  const current = expect ?? (await readPartition(topic, partition));
  if (!current) throw new Error(`partition ${partition} of ${topic} not found`);
  return changePartition(topic, current, (p) => ({ leader, leaderEpoch: p.leaderEpoch + 1, isr: p.isr.includes(leader) ? p.isr : [...p.isr, leader] }));
}
