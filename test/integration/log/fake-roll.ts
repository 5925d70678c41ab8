/**
 * Test fixtures for retention and garbage: a partition of a quiet cluster, records produced with
 * chosen timestamps, and a roll done step by step with the storage functions (the registry, an
 * object of the rolled batches' bytes, `advanceTailStart` on every replica) — what
 * lib/log/roll.ts does, without its policy, so a test decides exactly where segments end.
 */
import { replicaStore } from '../../../lib/cluster/metadata.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { produce } from '../../../lib/log/produce.js';
import { topicPartitionKey } from '../../../lib/storage/model.js';
import { putObject } from '../../../lib/storage/objects.js';
import { advanceTailStart } from '../../../lib/storage/replica/tail.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { readHead, tailStartOf } from '../../../lib/storage/replica/head.js';
import { type ReplicaStoreRef } from '../../../lib/storage/replica/store.js';
import { commitSegment, registerPending, segmentObjectKey, type SegmentRecord } from '../../../lib/storage/coordination/segments.js';

export interface Partition {
  readonly name: string;
  readonly topicId: string;
  readonly tp: string;
  readonly leader: ReplicaStoreRef;
  readonly followers: readonly ReplicaStoreRef[];
  readonly stores: readonly ReplicaStoreRef[];
}

let n = 0;

/** A one-partition topic with three replicas and these configs. */
export async function partitionWith(prefix: string, configs: Record<string, string> = {}): Promise<Partition> {
  const name = `${prefix}-${process.pid}-${n++}`;
  const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: 3, configs: Object.entries(configs).map(([k, value]) => ({ name: k, value })) });
  const p0 = partitions[0]!;
  const leader = await replicaStore(p0.leader);
  const followers = await Promise.all(p0.replicas.filter((id) => id !== p0.leader).map((id) => replicaStore(id)));
  return { name, topicId: topic.topicId, tp: topicPartitionKey(topic.topicId, 0), leader, followers, stores: [leader, ...followers] };
}

/** Produces one batch of `records` records (acks=all: every replica holds it); returns its base offset. */
export async function produceBatch(p: Partition, records: number, o: { timestamp?: number; valueBytes?: number } = {}): Promise<number> {
  const out = await produce(p.name, Array.from({ length: records }, (_, i) => ({
    partition: 0, key: Buffer.from(`k${i}`), value: Buffer.alloc(o.valueBytes ?? 100, i % 251), headers: [], ...(o.timestamp === undefined ? {} : { timestamp: o.timestamp }),
  })), { acks: 'all' });
  const first = out[0];
  if (!first?.ok) throw new Error(`produce failed: ${first && !first.ok ? first.error.message : 'no outcome'}`);
  return first.offset;
}

/**
 * Rolls the leader's table from its tailStart to `end` (a batch boundary) into one live segment,
 * then drops those batches from every replica holding them. Returns the segment.
 */
export async function rollTo(p: Partition, end: number): Promise<SegmentRecord> {
  const head = (await readHead(p.leader, p.tp))!;
  const base = tailStartOf(head);
  const batches = await queryBatches(p.leader, p.tp, { fromOffset: base, toOffset: end - 1, maxBytes: 1e12 });
  const last = batches[batches.length - 1];
  if (!last || last.lastOffset + 1 !== end || batches[0]!.baseOffset !== base) throw new Error(`[${base}, ${end}) is not whole batches of the table`);
  const key = segmentObjectKey(p.topicId, 0, base);
  const createdAt = Date.now();
  if (!await registerPending({ topicId: p.topicId, partition: 0, baseOffset: base, endOffset: end, key, createdAt })) throw new Error(`a segment is registered at ${base}`);
  await putObject(key, Buffer.concat(batches.map((b) => Buffer.from(b.data ?? new Uint8Array(0)))));
  const sizeBytes = batches.reduce((s, b) => s + b.sizeBytes, 0);
  const externalKeys = batches.flatMap((b) => (b.s3 ? [b.s3.key] : []));
  const details = {
    sizeBytes, recordCount: batches.reduce((s, b) => s + b.recordCount, 0), batchCount: batches.length,
    minTimestamp: Math.min(...batches.map((b) => b.maxTimestamp)), maxTimestamp: Math.max(...batches.map((b) => b.maxTimestamp)),
    ...(externalKeys.length > 0 ? { externalKeys } : {}),
  };
  if (!await commitSegment({ topicId: p.topicId, partition: 0, baseOffset: base, endOffset: end, key }, details)) throw new Error('commit failed');
  for (const store of p.stores) await advanceTailStart(store, p.tp, end);
  return { topicId: p.topicId, partition: 0, baseOffset: base, endOffset: end, key, generation: 0, state: 'live', createdAt, ...details };
}

/** Every replica's head. */
export const heads = async (p: Partition) => Promise.all(p.stores.map(async (s) => (await readHead(s, p.tp))!));
