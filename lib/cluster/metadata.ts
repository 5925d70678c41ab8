/**
 * The per-instance metadata cache the data path routes by (docs/architecture.md, "Request path"). A
 * cached view is trusted for `metadataMaxAgeMs`; after that one small read of the cluster's
 * metadata version tells whether anything changed, and a changed version drops the whole cache.
 */
import { config } from '../config.js';
import { KafkaError } from '../protocol/errors.js';
import { listAcls, type AclRecord } from '../storage/coordination/acls.js';
import { listBrokers, markBrokerSuspect } from '../storage/coordination/brokers.js';
import { listTopicPartitionCounts, readTopic, type TopicWithPartitions } from '../storage/coordination/topics.js';
import { readCluster, readMetadataVersion } from '../storage/coordination/cluster.js';
import { readClusterConfigs } from '../storage/coordination/cluster-configs.js';
import type { BrokerRecord, ClusterRecord } from '../storage/model.js';
import type { ReplicaStoreRef } from '../storage/replica/store.js';
import { listClientQuotas, type ClientQuotaRecord } from '../storage/coordination/quotas.js';
import { effectiveClusterConfigs, LOG_FORMAT_CONFIG, PACKED_LOG_FORMAT, type EffectiveClusterConfigs } from './cluster-configs.js';

let version: number | undefined;
let checkedAt = 0;
let cluster: ClusterRecord | undefined;
let brokers: BrokerRecord[] | undefined;
const topics = new Map<string, TopicWithPartitions>();
let partitionCounts: Record<string, number> | undefined;
let clusterConfigSet: EffectiveClusterConfigs | undefined;
let acls: readonly AclRecord[] | undefined;
let clientQuotas: ReadonlyMap<string, ClientQuotaRecord> | undefined;

function clear(): void {
  cluster = undefined;
  acls = undefined;
  clusterConfigSet = undefined;
  clientQuotas = undefined;
  brokers = undefined;
  partitionCounts = undefined;
  topics.clear();
}

async function revalidate(): Promise<void> {
  if (Date.now() - checkedAt < config().metadataMaxAgeMs) return;
  const current = await readMetadataVersion();
  checkedAt = Date.now();
  if (current !== version) {
    clear();
    version = current;
  }
}

/** Forget cached metadata: everything, or one topic (after a NOT_LEADER_OR_FOLLOWER, say). */
export function invalidateMetadata(topic?: string): void {
  if (topic === undefined) {
    clear();
    checkedAt = 0;
  } else {
    topics.delete(topic);
  }
}

/** Makes the next lookup check the metadata version first, keeping what is cached if it has not changed. */
export function metadataCheckDue(): void {
  checkedAt = 0;
}

/** The cluster record; BROKER_NOT_AVAILABLE when the cluster was never bootstrapped. */
export async function clusterRecord(): Promise<ClusterRecord> {
  await revalidate();
  cluster ??= await readCluster();
  if (!cluster) {
    throw new KafkaError('BROKER_NOT_AVAILABLE', 'The cluster is not initialized: its coordination table has no cluster record yet.');
  }
  return cluster;
}

export async function cachedBrokers(): Promise<BrokerRecord[]> {
  await revalidate();
  brokers ??= await listBrokers();
  return brokers;
}

/** Where a broker's replica table is; BROKER_NOT_AVAILABLE for an unknown broker id. */
export async function replicaStore(brokerId: number): Promise<ReplicaStoreRef> {
  const b = (await cachedBrokers()).find((x) => x.brokerId === brokerId);
  if (!b) throw new KafkaError('BROKER_NOT_AVAILABLE', `Broker ${brokerId} is not registered.`);
  return b;
}

/**
 * An active topic with its partitions, or undefined when it does not exist (or is still being
 * created). Only a found topic is cached: another instance may create the topic any moment, and
 * this one must find it at once (a miss is an error path; its read costs little).
 */
export async function cachedTopic(name: string): Promise<TopicWithPartitions | undefined> {
  await revalidate();
  let view = topics.get(name);
  if (view === undefined) {
    const read = await readTopic(name);
    view = read && read.topic.state === 'active' ? read : undefined;
    if (view) topics.set(name, view);
  }
  return view;
}

/** Every topic and its partition count (consumer groups match subscriptions against it). */
export async function cachedPartitionCounts(): Promise<Readonly<Record<string, number>>> {
  await revalidate();
  partitionCounts ??= await listTopicPartitionCounts();
  return partitionCounts;
}

/**
 * Every topic's partition count, read afresh when one of `topics` is not in the cache: it may have
 * been created since (only a miss pays the extra read; a topic that really does not exist is then
 * absent from the answer).
 */
export async function partitionCountsKnowing(topics: Iterable<string>): Promise<Readonly<Record<string, number>>> {
  const counts = await cachedPartitionCounts();
  for (const t of topics) {
    if (counts[t] === undefined) {
      invalidateMetadata();
      return cachedPartitionCounts();
    }
  }
  return counts;
}

/**
 * The cluster-wide broker configs (lib/cluster/cluster-configs.ts), typed, defaults filled in.
 * Cached like the rest of the metadata: a write bumps the metadata version, so this instance sees
 * it within `metadataMaxAgeMs` (at once after its own write).
 */
export async function clusterConfigs(): Promise<EffectiveClusterConfigs> {
  await revalidate();
  clusterConfigSet ??= effectiveClusterConfigs((await readClusterConfigs()).configs);
  return clusterConfigSet;
}

/** Whether the log writers pack small batches written together into one item (the cluster's `tributary.log.format.version`). */
export async function packsBatchItems(): Promise<boolean> {
  return (await clusterConfigs())[LOG_FORMAT_CONFIG] >= PACKED_LOG_FORMAT;
}

/**
 * Every stored ACL binding (lib/storage/coordination/acls.ts), for the authorizer. Cached like the rest of the
 * metadata: every ACL write bumps the metadata version, so a change reaches this instance within
 * `metadataMaxAgeMs` (at once after its own write, which calls `metadataCheckDue`), and the ACLs
 * are reread at most once per `metadataMaxAgeMs` however often the version moves.
 */
export async function cachedAcls(): Promise<readonly AclRecord[]> {
  await revalidate();
  acls ??= await listAcls();
  return acls;
}

/**
 * Every principal's client quotas by principal (lib/security/quotas.ts), `<default>` included.
 * Cached like the rest of the metadata: one Query per instance after each metadata version change,
 * none otherwise — so with no quota set anywhere, enforcement costs no store call per request.
 */
export async function cachedClientQuotas(): Promise<ReadonlyMap<string, ClientQuotaRecord>> {
  await revalidate();
  clientQuotas ??= new Map((await listClientQuotas()).map((q) => [q.principal, q]));
  return clientQuotas;
}

/** Like `cachedTopic`, but UNKNOWN_TOPIC_OR_PARTITION when absent. */
export async function requireTopic(name: string): Promise<TopicWithPartitions> {
  const view = await cachedTopic(name);
  if (!view) throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Topic ${name} not found.`, { topic: name });
  return view;
}

const reported = new Map<number, number>();

/**
 * A data-path request could not reach a broker's store: mark it suspect for the controller (at
 * most once a second per broker from this instance) and drop cached metadata, so the next
 * attempt routes by fresh state. Awaited by the caller: in Lambda nothing runs after the
 * response, so a report left running would be written at the container's next invocation, or never.
 * (A failed report is not an error of the request: `markBrokerSuspect` swallows it.)
 */
export async function reportBrokerFailure(brokerId: number): Promise<void> {
  invalidateMetadata();
  const last = reported.get(brokerId) ?? 0;
  if (Date.now() - last < 1000) return;
  reported.set(brokerId, Date.now());
  await markBrokerSuspect(brokerId);
}
