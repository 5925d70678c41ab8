/**
 * Topic administration: create (validation, placement, partition states, replica heads),
 * describe, add partitions, delete (metadata first, then the data), and configs.
 */
import { randomUUID } from 'node:crypto';
import { KafkaError } from '../protocol/errors.js';
import { logger } from '../logger.js';
import { mapLimit } from '../map-limit.js';
import * as brokerStore from '../storage/coordination/brokers.js';
import * as leaseStore from '../storage/coordination/lease.js';
import * as topicStore from '../storage/coordination/topics.js';
import { topicPartitionKey, type PartitionRecord, type TopicRecord } from '../storage/model.js';
import { deletePrefix } from '../storage/objects.js';
import { createHeads, emptyHead, putHead } from '../storage/replica/head.js';
import { deletePartition } from '../storage/replica/deletion.js';
import { type ReplicaStoreRef } from '../storage/replica/store.js';
import { ConditionFailed } from '../storage/transact.js';
import { invalidateMetadata } from './metadata.js';
import { assignReplicas, continuationStart } from './placement.js';
import { checkTopicConfig, checkTopicConfigs, isTopicConfig } from './topic-configs.js';

const LEGAL = /^[a-zA-Z0-9._-]+$/;
/** How many topics a listing reads at once (a Query each). */
const TOPIC_READS_IN_FLIGHT = 16;
export const MAX_TOPIC_NAME_LENGTH = 249;
/** Upper bound on partitions per topic, far above practical use, to keep one request bounded. */
export const MAX_PARTITIONS = 10_000;

/** Kafka's topic name rules (Topic.validate); INVALID_TOPIC_EXCEPTION naming the rule broken. */
export function validateTopicName(name: string): void {
  if (name.length === 0) throw new KafkaError('INVALID_TOPIC_EXCEPTION', 'Topic name is illegal, it can\'t be empty');
  if (name === '.' || name === '..') throw new KafkaError('INVALID_TOPIC_EXCEPTION', 'Topic name cannot be "." or ".."');
  if (name.length > MAX_TOPIC_NAME_LENGTH) {
    throw new KafkaError('INVALID_TOPIC_EXCEPTION', `Topic name is illegal, it can't be longer than ${MAX_TOPIC_NAME_LENGTH} characters, topic name: ${name}`);
  }
  if (!LEGAL.test(name)) {
    throw new KafkaError('INVALID_TOPIC_EXCEPTION', `Topic name "${name}" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'`);
  }
}

/** Kafka refuses names that differ only by '.' versus '_' (their metrics names would collide). */
const collisionKey = (name: string): string => name.replaceAll('.', '_');

export interface CreateTopicInput {
  readonly name: string;
  /** @default 1 (Kafka's num.partitions) */
  readonly partitions?: number;
  /** @default min(3, registered brokers) */
  readonly replicationFactor?: number;
  readonly configs?: readonly { name: string; value: unknown }[];
  /** Validate and place, but write nothing (Kafka's validateOnly). */
  readonly validateOnly?: boolean;
}

export type TopicDescription = topicStore.TopicWithPartitions;

export async function createTopic(input: CreateTopicInput): Promise<TopicDescription> {
  validateTopicName(input.name);
  const brokers = (await brokerStore.listBrokers()).filter((b) => b.state === 'alive');
  const partitions = input.partitions ?? 1;
  const replicationFactor = input.replicationFactor ?? Math.min(3, brokers.length);
  if (!Number.isInteger(partitions) || partitions < 1 || partitions > MAX_PARTITIONS) {
    throw new KafkaError('INVALID_PARTITIONS', `Number of partitions must be an integer between 1 and ${MAX_PARTITIONS}, got ${partitions}.`);
  }
  if (!Number.isInteger(replicationFactor) || replicationFactor < 1 || replicationFactor > 32767) {
    throw new KafkaError('INVALID_REPLICATION_FACTOR', `Replication factor must be a positive integer, got ${replicationFactor}.`);
  }
  const configs = checkTopicConfigs(input.configs ?? []);
  const existing = await topicStore.listTopicNames();
  if (existing.includes(input.name)) throw new KafkaError('TOPIC_ALREADY_EXISTS', `Topic '${input.name}' already exists.`);
  const collides = existing.find((t) => collisionKey(t) === collisionKey(input.name));
  if (collides) {
    throw new KafkaError('INVALID_TOPIC_EXCEPTION', `Topic '${input.name}' collides with existing topic: ${collides}`);
  }
  const assignment = assignReplicas(brokers, partitions, replicationFactor);

  const topic: TopicRecord = {
    name: input.name, topicId: randomUUID(), partitions, replicationFactor, configs,
    createdAt: new Date().toISOString(), state: 'active',
  };
  const states: PartitionRecord[] = assignment.map((replicas, partition) => ({
    topicId: topic.topicId, partition, leader: replicas[0] as number, leaderEpoch: 0,
    replicas, isr: replicas, partitionEpoch: 0,
  }));
  if (input.validateOnly) return { topic, partitions: states };

  try {
    await topicStore.createTopic(topic, states, collisionKey(input.name));
  } catch (err) {
    if (err instanceof topicStore.TopicExists) throw new KafkaError('TOPIC_ALREADY_EXISTS', `Topic '${input.name}' already exists.`);
    if (err instanceof topicStore.TopicCollides) {
      throw new KafkaError('INVALID_TOPIC_EXCEPTION', `Topic '${input.name}' collides with existing topic: ${err.existing}`);
    }
    throw err;
  }
  invalidateMetadata(input.name);
  // Each replica's head: the first replica leads until a controller says otherwise.
  await Promise.all(brokers.map(async (b) => {
    const heads = states.flatMap((s) =>
      s.replicas.includes(b.brokerId)
        ? [{ tp: topicPartitionKey(topic.topicId, s.partition), role: s.leader === b.brokerId ? 'leader' as const : 'follower' as const, leaderEpoch: 0, isr: s.isr }]
        : []);
    if (heads.length > 0) await createHeads(b, heads);
  }));
  logger.info({ event: 'topic-created', topic: topic.name, topicId: topic.topicId, partitions, replicationFactor }, 'topic created');
  return { topic, partitions: states };
}

export interface AddPartitionsOptions {
  /** Validate and place, but write nothing (Kafka's validateOnly). @default false */
  readonly validateOnly?: boolean;
}

/** Interleaving point for tests: runs after the new replica heads are written, before the commit. */
export const addPartitionsHooks: { beforeCommit?: (topic: string) => Promise<void> } = {};

/**
 * Grows a topic to `count` partitions (Kafka's CreatePartitions). The new partitions are placed as
 * Kafka places them (its start index from partition 0's first replica, ids continuing from the
 * current count), on live brokers, with the topic's replication factor. Their replica heads are
 * written first, then the states and the count in one commit (topicStore.addPartitions): a
 * request that dies midway leaves nothing visible, and its retry succeeds. Keys then map by
 * murmur2 over the new count, as in Kafka.
 * Errors: INVALID_PARTITIONS (not an increase, too many, or another request changed the count
 * first), INVALID_REPLICATION_FACTOR (fewer live brokers than replicas), UNKNOWN_TOPIC_OR_PARTITION.
 */
export async function addPartitions(name: string, count: number, options: AddPartitionsOptions = {}): Promise<TopicDescription> {
  const { topic, partitions } = await describeTopic(name);
  if (!Number.isInteger(count) || count < 1 || count > MAX_PARTITIONS) {
    throw new KafkaError('INVALID_PARTITIONS', `Number of partitions must be an integer between 1 and ${MAX_PARTITIONS}, got ${count}.`);
  }
  notAnIncrease(topic.partitions, count);
  const brokers = (await brokerStore.listBrokers()).filter((b) => b.state === 'alive');
  const first = partitions[0]?.replicas[0] ?? 0;
  const assignment = assignReplicas(brokers, count - topic.partitions, topic.replicationFactor, continuationStart(brokers, first), topic.partitions);
  const added: PartitionRecord[] = assignment.map((replicas, i) => ({
    topicId: topic.topicId, partition: topic.partitions + i, leader: replicas[0] as number, leaderEpoch: 0,
    replicas, isr: replicas, partitionEpoch: 0,
  }));
  const grown = { topic: { ...topic, partitions: count }, partitions: [...partitions, ...added] };
  if (options.validateOnly) return grown;

  try {
    await topicStore.addPartitions(name, topic.topicId, topic.partitions, added, async () => {
      await writeNewHeads(brokers, topic.topicId, added);
      await addPartitionsHooks.beforeCommit?.(name);
    });
  } catch (err) {
    if (err instanceof topicStore.TopicChanged) throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Topic ${name} not found.`, { topic: name });
    if (err instanceof topicStore.PartitionCountChanged) {
      notAnIncrease(err.current, count);
      throw new KafkaError('INVALID_PARTITIONS', err.current === topic.partitions
        ? `Another request is adding partitions to topic ${name}; nothing was added by this one.`
        : `Topic ${name} went from ${topic.partitions} to ${err.current} partitions while this request ran; nothing was added by this one.`);
    }
    throw err;
  }
  invalidateMetadata(name);
  logger.info({ event: 'partitions-added', topic: name, topicId: topic.topicId, from: topic.partitions, to: count }, 'partitions added');
  return grown;
}

/** Kafka's refusals of a count that is not an increase (ZkAdminManager.createPartitions). */
function notAnIncrease(current: number, requested: number): void {
  if (current === requested) throw new KafkaError('INVALID_PARTITIONS', `Topic already has ${current} partitions.`);
  if (current > requested) throw new KafkaError('INVALID_PARTITIONS', `Topic currently has ${current} partitions, which is higher than the requested ${requested}.`);
}

/**
 * The new partitions' heads, written only where none exists: the partitions are not visible yet,
 * but a racing request may have committed them already, and its heads may hold records by now.
 */
async function writeNewHeads(brokers: readonly ReplicaStoreRef[], topicId: string, added: readonly PartitionRecord[]): Promise<void> {
  await Promise.all(brokers.map(async (b) => {
    const mine = added.filter((s) => s.replicas.includes(b.brokerId));
    for (let i = 0; i < mine.length; i += 25) {
      await Promise.all(mine.slice(i, i + 25).map(async (s) => {
        const head = emptyHead(topicPartitionKey(topicId, s.partition), s.leader === b.brokerId ? 'leader' : 'follower', 0, s.isr);
        await putHead(b, head, 'ifAbsent').catch((err: unknown) => {
          if (!(err instanceof ConditionFailed)) throw err;
        });
      }));
    }
  }));
}

/** A topic as stored now (strongly consistent); UNKNOWN_TOPIC_OR_PARTITION when absent. */
export async function describeTopic(name: string): Promise<TopicDescription> {
  const view = await topicStore.readTopic(name);
  if (!view || view.topic.state !== 'active') {
    throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Topic ${name} not found.`, { topic: name });
  }
  return view;
}

/** The names of the active topics, sorted: the topic list alone (one Query). */
export async function listTopicNames(): Promise<string[]> {
  return (await topicStore.listTopicNames({ activeOnly: true })).sort();
}

/** Every active topic, by name, with its partitions: the topic list, then each topic (a Query each, TOPIC_READS_IN_FLIGHT at once). */
export async function listTopics(): Promise<TopicDescription[]> {
  const names = (await topicStore.listTopicNames()).sort();
  const views = await mapLimit(names, TOPIC_READS_IN_FLIGHT, (n) => topicStore.readTopic(n));
  return views.filter((v): v is TopicDescription => v !== undefined && v.topic.state === 'active');
}

/**
 * Deletes a topic: its metadata at once (so it is gone for every reader), then its data in every
 * replica table and in S3. A failure while purging data is logged and leaves only unreachable
 * items behind (they are keyed by the deleted topic's id).
 */
export async function deleteTopic(name: string): Promise<void> {
  const { topic, partitions } = await describeTopic(name);
  try {
    await topicStore.deleteTopic(name, topic.topicId, topic.partitions, collisionKey(name));
  } catch (err) {
    if (err instanceof topicStore.TopicChanged) throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Topic ${name} not found.`, { topic: name });
    throw err;
  }
  invalidateMetadata(name);
  const stores = new Map((await brokerStore.listBrokers()).map((b) => [b.brokerId, b as ReplicaStoreRef]));
  const purges = partitions.flatMap((p) => p.replicas.map(async (id) => {
    const store = stores.get(id);
    if (store) await deletePartition(store, topicPartitionKey(topic.topicId, p.partition));
  }));
  const results = await Promise.allSettled([...purges, deletePrefix(`data/${topic.topicId}/`)]);
  const failed = results.filter((r) => r.status === 'rejected').length;
  if (failed > 0) logger.warn({ event: 'topic-purge-incomplete', topic: name, topicId: topic.topicId, failed }, 'some topic data was not purged');
  logger.info({ event: 'topic-deleted', topic: name, topicId: topic.topicId }, 'topic deleted');
}

export interface ConfigChange {
  readonly name: string;
  /** `null` resets the config to its default (Kafka's DELETE operation). */
  readonly value: unknown;
}

/** Incrementally alters a topic's configs (Kafka's IncrementalAlterConfigs: SET and DELETE). */
export async function alterTopicConfigs(topicName: string, changes: readonly ConfigChange[]): Promise<TopicRecord> {
  const { topic } = await describeTopic(topicName);
  const next: Record<string, string> = { ...topic.configs };
  for (const c of changes) {
    if (c.value === null) {
      if (!isTopicConfig(c.name)) throw new KafkaError('INVALID_CONFIG', `Unknown topic config name: ${c.name}`);
      delete next[c.name];
    } else {
      next[c.name] = checkTopicConfig(c.name, c.value);
    }
  }
  try {
    await topicStore.writeTopicConfigs(topicName, topic.topicId, next);
  } catch (err) {
    if (err instanceof topicStore.TopicChanged) throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Topic ${topicName} not found.`, { topic: topicName });
    throw err;
  }
  invalidateMetadata(topicName);
  return { ...topic, configs: next };
}

/** Every registered broker, as stored now. */
export const describeBrokers = brokerStore.listBrokers;

/** The controller lease as stored now: who holds it, under which epoch, until when (undefined: none yet). */
export const describeController = leaseStore.readLease;
