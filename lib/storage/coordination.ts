/**
 * The coordination table: cluster, brokers, topics and partition state (docs/architecture.md,
 * "Components"). The only module that reads or writes it. Every metadata change bumps
 * `cluster/meta.metadataVersion` in the same transaction, so caches can tell they are stale with
 * one small read.
 *
 * Keys: `cluster`/`meta`; `brokers`/`<id>`; `topics`/`<name>` (the topic list);
 * `topic#<name>`/`meta` and `topic#<name>`/`p#<00000n>` (one Query returns a topic whole).
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { config } from '../config.js';
import { DEPLOYED_BROKERS_ITEM } from './tables.js';
import { dynamo } from './clients.js';
import type { BrokerRecord, ClusterRecord, Lease, PartitionRecord, TopicRecord } from './model.js';
import { ConditionFailed, MAX_TRANSACTION_ITEMS, transactWrite } from './transact.js';

const table = (): string => config().coordinationTable;
const db = () => dynamo();

const CLUSTER_KEY = { pk: 'cluster', sk: 'meta' } as const;
const topicPk = (name: string): string => `topic#${name}`;
const partitionSk = (p: number): string => `p#${String(p).padStart(6, '0')}`;

/** The transaction item that bumps the metadata version (and requires the cluster to exist). Other coordination-table modules (acls.ts, quotas.ts) put it in their transactions too. */
export const bumpVersion = () => ({
  Update: {
    TableName: table(),
    Key: CLUSTER_KEY,
    UpdateExpression: 'ADD metadataVersion :one',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeValues: { ':one': 1 },
  },
});

async function queryAll(input: Omit<QueryCommandInput, 'TableName'>): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await db().send(new QueryCommand({ TableName: table(), ConsistentRead: true, ...input, ExclusiveStartKey: start }));
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

function strip<T>(item: Record<string, unknown>): T {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return rest as T;
}

/** Reads the cluster item. Strongly consistent. */
export async function readCluster(): Promise<ClusterRecord | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: CLUSTER_KEY, ConsistentRead: true }));
  return out.Item ? strip<ClusterRecord>(out.Item) : undefined;
}

/**
 * Creates the cluster item once.
 * Condition: no cluster item exists. Effect: the cluster exists with `clusterId`, version 1.
 * Lost race: returns the cluster the winner created.
 */
export async function createCluster(clusterId: string): Promise<ClusterRecord> {
  const record: ClusterRecord = { clusterId, metadataVersion: 1, createdAt: new Date().toISOString() };
  try {
    await db().send(new PutCommand({
      TableName: table(), Item: { ...CLUSTER_KEY, ...record }, ConditionExpression: 'attribute_not_exists(pk)',
    }));
    return record;
  } catch (err) {
    if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
    const existing = await readCluster();
    if (!existing) throw err;
    return existing;
  }
}

/**
 * Registers a broker or updates where its replica table lives; keeps its state if it has one.
 * Effect: `brokers`/`<id>` holds the table, endpoint and rack; the metadata version is bumped.
 */
export async function registerBroker(b: Pick<BrokerRecord, 'brokerId' | 'replicaTable' | 'endpoint' | 'rack'>): Promise<void> {
  await transactWrite(db(), [
    bumpVersion(),
    {
      Update: {
        TableName: table(),
        Key: { pk: 'brokers', sk: String(b.brokerId) },
        UpdateExpression: b.endpoint
          ? 'SET brokerId = :id, replicaTable = :t, rack = :r, endpoint = :e, #s = if_not_exists(#s, :alive)'
          : 'SET brokerId = :id, replicaTable = :t, rack = :r, #s = if_not_exists(#s, :alive) REMOVE endpoint',
        ExpressionAttributeNames: { '#s': 'state' },
        ExpressionAttributeValues: {
          ':id': b.brokerId, ':t': b.replicaTable, ':r': b.rack, ':alive': 'alive', ...(b.endpoint ? { ':e': b.endpoint } : {}),
        },
      },
    },
  ]);
}

export async function listBrokers(): Promise<BrokerRecord[]> {
  const items = await queryAll({ KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': 'brokers' } });
  return items.map((i) => strip<BrokerRecord>(i)).sort((a, b) => a.brokerId - b.brokerId);
}

/** Every topic's partition count, from the topic list (one Query). */
export async function listTopicPartitionCounts(): Promise<Record<string, number>> {
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': 'topics' }, ProjectionExpression: 'sk, #p',
    ExpressionAttributeNames: { '#p': 'partitions' },
  });
  return Object.fromEntries(items.map((i) => [i.sk as string, (i.partitions as number | undefined) ?? 0]));
}

export async function listTopicNames(): Promise<string[]> {
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': 'topics' }, ProjectionExpression: 'sk',
  });
  return items.map((i) => i.sk as string);
}

export interface TopicWithPartitions {
  readonly topic: TopicRecord;
  readonly partitions: readonly PartitionRecord[];
}

/** Reads a topic and all its partition states in one strongly consistent Query. */
export async function readTopic(name: string): Promise<TopicWithPartitions | undefined> {
  const items = await queryAll({ KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': topicPk(name) } });
  const meta = items.find((i) => i.sk === 'meta');
  if (!meta) return undefined;
  const topic = strip<TopicRecord>(meta);
  const partitions = items
    // Items at or past the count are partitions being added (addPartitions): not there yet.
    .filter((i) => (i.sk as string).startsWith('p#') && i.topicId === topic.topicId && (i.partition as number) < topic.partitions)
    .map((i) => strip<PartitionRecord>(i))
    .sort((a, b) => a.partition - b.partition);
  return { topic, partitions };
}

export class TopicExists extends Error {
  override readonly name = 'TopicExists';
}

/** Another topic already holds the name's collision key (Kafka: names differing only by '.' and '_'). */
export class TopicCollides extends Error {
  override readonly name = 'TopicCollides';
  constructor(readonly existing: string) {
    super(`collides with existing topic ${existing}`);
  }
}

/**
 * Creates a topic with its partition states.
 * Condition: no topic of that name exists (`topics`/`<name>` absent), and none with the same
 * collision key (`topic-keys`/`<key>` absent).
 * Effects: the list entry, the collision key, the meta item and one item per partition; the
 * metadata version bumped.
 * Up to 97 partitions this is one transaction. Beyond, the meta item is written first with
 * state `creating` (readers treat such a topic as absent), then the partitions in chunks,
 * then the state flips to `active`; a creator that dies midway leaves a `creating` topic.
 * Errors: `TopicExists` when the name is taken, `TopicCollides` when its collision key is (lost races included).
 */
export async function createTopic(topic: TopicRecord, partitions: readonly PartitionRecord[], collisionKey: string): Promise<void> {
  const partitionPut = (p: PartitionRecord) => ({
    Put: { TableName: table(), Item: { pk: topicPk(topic.name), sk: partitionSk(p.partition), ...p } },
  });
  const firstChunk = MAX_TRANSACTION_ITEMS - 5;
  const single = partitions.length <= firstChunk;
  const meta: TopicRecord = { ...topic, state: single ? 'active' : 'creating' };
  try {
    await transactWrite(db(), [
      bumpVersion(),
      {
        Put: {
          TableName: table(), Item: { pk: 'topics', sk: topic.name, topicId: topic.topicId, partitions: topic.partitions },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      {
        Put: {
          TableName: table(), Item: { pk: 'topic-keys', sk: collisionKey, name: topic.name },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      { Put: { TableName: table(), Item: { pk: 'topic-ids', sk: topic.topicId, name: topic.name } } },
      { Put: { TableName: table(), Item: { pk: topicPk(topic.name), sk: 'meta', ...meta } } },
      ...partitions.slice(0, firstChunk).map(partitionPut),
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(1)?.code === 'ConditionalCheckFailed') {
      throw new TopicExists(`topic "${topic.name}" already exists`);
    }
    if (err instanceof ConditionFailed && err.at(2)?.code === 'ConditionalCheckFailed') {
      throw new TopicCollides(String(err.at(2)?.current?.name ?? collisionKey));
    }
    throw err;
  }
  if (single) return;
  for (let i = firstChunk; i < partitions.length; i += MAX_TRANSACTION_ITEMS) {
    await transactWrite(db(), partitions.slice(i, i + MAX_TRANSACTION_ITEMS).map(partitionPut));
  }
  await transactWrite(db(), [
    bumpVersion(),
    {
      Update: {
        TableName: table(), Key: { pk: topicPk(topic.name), sk: 'meta' },
        UpdateExpression: 'SET #s = :active', ConditionExpression: 'topicId = :id',
        ExpressionAttributeNames: { '#s': 'state' }, ExpressionAttributeValues: { ':active': 'active', ':id': topic.topicId },
      },
    },
  ]);
}

export class TopicChanged extends Error {
  override readonly name = 'TopicChanged';
}

/**
 * Deletes a topic's metadata: the list entry, the collision key, the meta item and the partition states.
 * Condition: the topic still has `topicId` (it was not deleted and recreated meanwhile).
 * Effects: the topic is gone from metadata at once (one transaction with the list entry and meta);
 * partition items beyond the first transaction follow in chunks. The metadata version is bumped.
 * Errors: `TopicChanged` when the topic is gone or has another id.
 */
export async function deleteTopic(name: string, topicId: string, partitions: number, collisionKey: string): Promise<void> {
  const sks = Array.from({ length: partitions }, (_, p) => partitionSk(p));
  const del = (sk: string) => ({ Delete: { TableName: table(), Key: { pk: topicPk(name), sk } } });
  const firstChunk = MAX_TRANSACTION_ITEMS - 5;
  try {
    await transactWrite(db(), [
      bumpVersion(),
      {
        Delete: {
          TableName: table(), Key: { pk: 'topics', sk: name },
          ConditionExpression: 'topicId = :id', ExpressionAttributeValues: { ':id': topicId },
        },
      },
      { Delete: { TableName: table(), Key: { pk: 'topic-keys', sk: collisionKey } } },
      { Delete: { TableName: table(), Key: { pk: 'topic-ids', sk: topicId } } },
      del('meta'),
      ...sks.slice(0, firstChunk).map(del),
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(1)?.code === 'ConditionalCheckFailed') {
      throw new TopicChanged(`topic "${name}" no longer has id ${topicId}`);
    }
    throw err;
  }
  for (let i = firstChunk; i < sks.length; i += MAX_TRANSACTION_ITEMS) {
    await transactWrite(db(), sks.slice(i, i + MAX_TRANSACTION_ITEMS).map(del));
  }
}

/**
 * Replaces a topic's explicitly set configs.
 * Condition: the topic still has `topicId`. Effect: `configs` replaced; metadata version bumped.
 * Errors: `TopicChanged`.
 */
export async function writeTopicConfigs(name: string, topicId: string, configs: Record<string, string>): Promise<void> {
  try {
    await transactWrite(db(), [
      bumpVersion(),
      {
        Update: {
          TableName: table(), Key: { pk: topicPk(name), sk: 'meta' },
          UpdateExpression: 'SET configs = :c', ConditionExpression: 'topicId = :id',
          ExpressionAttributeValues: { ':c': configs, ':id': topicId },
        },
      },
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(1)?.code === 'ConditionalCheckFailed') {
      throw new TopicChanged(`topic "${name}" no longer has id ${topicId}`);
    }
    throw err;
  }
}

/** The current metadata version (one small strongly consistent read). */
export async function readMetadataVersion(): Promise<number | undefined> {
  const out = await db().send(new GetCommand({
    TableName: table(), Key: CLUSTER_KEY, ConsistentRead: true, ProjectionExpression: 'metadataVersion',
  }));
  return out.Item?.metadataVersion as number | undefined;
}

/** The name of the topic with this id (replicas and streams know only ids); undefined once deleted. */
export async function topicNameById(topicId: string): Promise<string | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: { pk: 'topic-ids', sk: topicId }, ConsistentRead: true }));
  return out.Item?.name as string | undefined;
}

export class PartitionChanged extends Error {
  override readonly name = 'PartitionChanged';
  constructor(readonly current: PartitionRecord | undefined) {
    super(`partition state changed (now at partition epoch ${current?.partitionEpoch ?? 'none'})`);
  }
}

export interface PartitionChange {
  readonly leader?: number;
  readonly leaderEpoch?: number;
  readonly isr?: readonly number[];
  readonly replicas?: readonly number[];
  /** `undefined` removes the field (no reassignment, nothing to purge). */
  readonly addingReplicas?: readonly number[] | undefined;
  readonly removingReplicas?: readonly number[] | undefined;
  readonly purging?: readonly number[] | undefined;
}

/**
 * Changes a partition's state by compare-and-set (Kafka's AlterPartition).
 * Condition: its `partitionEpoch` is still `expectPartitionEpoch` (and the topic id matches), and,
 * for the controller, its lease is still its own.
 * Effects: the changed fields, `partitionEpoch` + 1, the metadata version bumped.
 * Errors: `PartitionChanged` carrying the current state when someone changed it first; `LeaseLost`.
 */
export async function alterPartition(
  topicName: string, current: PartitionRecord, change: PartitionChange, lease?: Lease,
): Promise<PartitionRecord> {
  const next = Object.fromEntries(Object.entries({ ...current, ...change, partitionEpoch: current.partitionEpoch + 1 })
    .filter(([, v]) => v !== undefined)) as unknown as PartitionRecord;
  try {
    await transactWrite(db(), [
      bumpVersion(),
      {
        Put: {
          TableName: table(),
          Item: { pk: topicPk(topicName), sk: partitionSk(current.partition), ...next },
          ConditionExpression: 'partitionEpoch = :pe AND topicId = :id',
          ExpressionAttributeValues: { ':pe': current.partitionEpoch, ':id': current.topicId },
        },
      },
      // The controller's changes are fenced by its lease (index 2).
      ...(lease ? [leaseCheck(lease)] : []),
    ]);
    return next;
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(2)?.code === 'ConditionalCheckFailed') throw new LeaseLost('the controller lease was lost');
    if (err instanceof ConditionFailed && err.at(1)?.code === 'ConditionalCheckFailed') {
      const item = err.at(1)?.current;
      throw new PartitionChanged(item ? strip<PartitionRecord>(item) : undefined);
    }
    throw err;
  }
}

/** One partition's state, strongly consistent. */
export async function readPartition(topicName: string, partition: number): Promise<PartitionRecord | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: { pk: topicPk(topicName), sk: partitionSk(partition) }, ConsistentRead: true }));
  return out.Item ? strip<PartitionRecord>(out.Item) : undefined;
}

/**
 * Kafka's InitProducerId: a new producer id (epoch 0), or the next epoch of an existing one.
 * Effects: `producers`/`next` counts ids; `producers`/`<id>` holds the current epoch.
 * Errors: `UnknownProducer` for an id that was never handed out.
 */
export async function initProducerId(existing?: number): Promise<{ producerId: number; producerEpoch: number }> {
  if (existing === undefined) {
    const out = await db().send(new UpdateCommand({
      TableName: table(), Key: { pk: 'producers', sk: 'next' }, UpdateExpression: 'ADD nextId :one',
      ExpressionAttributeValues: { ':one': 1 }, ReturnValues: 'UPDATED_NEW',
    }));
    const producerId = (out.Attributes?.nextId as number) - 1;
    await db().send(new PutCommand({ TableName: table(), Item: { pk: 'producers', sk: String(producerId), epoch: 0 } }));
    return { producerId, producerEpoch: 0 };
  }
  try {
    const out = await db().send(new UpdateCommand({
      TableName: table(), Key: { pk: 'producers', sk: String(existing) }, UpdateExpression: 'ADD epoch :one',
      ConditionExpression: 'attribute_exists(pk)', ExpressionAttributeValues: { ':one': 1 }, ReturnValues: 'UPDATED_NEW',
    }));
    return { producerId: existing, producerEpoch: out.Attributes?.epoch as number };
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') throw new UnknownProducer(existing);
    throw err;
  }
}

export class UnknownProducer extends Error {
  override readonly name = 'UnknownProducer';
  constructor(readonly producerId: number) {
    super(`producer id ${producerId} was never handed out`);
  }
}

// ---- the controller lease ------------------------------------------------------------------

export type { Lease };

const LEASE_KEY = { pk: 'controller', sk: 'lease' } as const;

export async function readLease(): Promise<Lease | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: LEASE_KEY, ConsistentRead: true }));
  return out.Item ? { holder: out.Item.holder as string, epoch: out.Item.epoch as number, expiresAt: out.Item.expiresAt as number } : undefined;
}

/**
 * Takes the lease for `holder` under the next epoch.
 *
 *   controller A: holds epoch 7 ── paused ─────────────────────────── wakes: writes with epoch 7 ✗
 *   controller B:        ... lease expired ── acquire (epoch 7 → 8) ✓ ── writes with epoch 8 ✓
 *
 * Condition: no lease, or it expired by `now`. Effect: holder, epoch + 1, expiresAt = now + ms.
 * Returns undefined when someone else holds a live lease.
 */
export async function acquireLease(holder: string, leaseMs: number, now = Date.now()): Promise<Lease | undefined> {
  try {
    const out = await db().send(new UpdateCommand({
      TableName: table(), Key: LEASE_KEY,
      UpdateExpression: 'SET holder = :h, expiresAt = :exp, epoch = if_not_exists(epoch, :zero) + :one',
      ConditionExpression: 'attribute_not_exists(pk) OR expiresAt < :now',
      ExpressionAttributeValues: { ':h': holder, ':exp': now + leaseMs, ':zero': 0, ':one': 1, ':now': now },
      ReturnValues: 'ALL_NEW',
    }));
    return { holder, epoch: out.Attributes?.epoch as number, expiresAt: now + leaseMs };
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return undefined;
    throw err;
  }
}

/**
 * Extends a held lease. Condition: `holder` and `epoch` unchanged (nobody took it over).
 * Returns undefined when the lease was lost.
 */
export async function renewLease(lease: Lease, leaseMs: number, now = Date.now()): Promise<Lease | undefined> {
  try {
    await db().send(new UpdateCommand({
      TableName: table(), Key: LEASE_KEY,
      UpdateExpression: 'SET expiresAt = :exp',
      ConditionExpression: 'holder = :h AND epoch = :e',
      ExpressionAttributeValues: { ':h': lease.holder, ':e': lease.epoch, ':exp': now + leaseMs },
    }));
    return { ...lease, expiresAt: now + leaseMs };
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return undefined;
    throw err;
  }
}

/** Another controller holds the lease: the write that carried this check did nothing. */
export class LeaseLost extends Error {
  override readonly name = 'LeaseLost';
}

/** The transaction item every controller write carries: the lease is still `holder` at `epoch`. */
const leaseCheck = (lease: Lease) => ({
  ConditionCheck: {
    TableName: table(), Key: LEASE_KEY,
    ConditionExpression: 'holder = :h AND epoch = :e',
    ExpressionAttributeValues: { ':h': lease.holder, ':e': lease.epoch },
  },
});

/**
 * Sets a broker's state (the controller fencing or unfencing it), and with `incarnation` the
 * incarnation its store now holds (the pending ones are cleared: see `addPendingIncarnation`).
 * Condition: the lease is still the caller's. Effects: state, and the metadata version bumped.
 * Errors: `LeaseLost`.
 */
export async function setBrokerState(lease: Lease, brokerId: number, state: BrokerRecord['state'], incarnation?: string): Promise<void> {
  try {
    await transactWrite(db(), [
      leaseCheck(lease),
      bumpVersion(),
      {
        Update: {
          TableName: table(), Key: { pk: 'brokers', sk: String(brokerId) },
          // A judged broker is no longer suspect: the report is cleared, so this write (and later
          // ones) do not match the controller's wake filter (CONTROLLER_WAKE_PATTERN) again.
          UpdateExpression: `SET #s = :s, stateChangedAt = :now${incarnation ? ', incarnation = :inc' : ''} REMOVE suspectAt${incarnation ? ', pendingIncarnations' : ''}`, ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#s': 'state' },
          ExpressionAttributeValues: { ':s': state, ':now': Date.now(), ...(incarnation ? { ':inc': incarnation } : {}) },
        },
      },
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(0)?.code === 'ConditionalCheckFailed') throw new LeaseLost('the controller lease was lost');
    throw err;
  }
}

/**
 * Records that the caller is about to write `incarnation` to the broker's store, before it does
 * (the store is in another table, beyond the lease's transaction). A controller that stalls and
 * writes it late, after losing the lease, then leaves a value the record knows: the probe takes
 * it for what it is, the contents the cluster accounted for, not a wiped store.
 * Condition: the lease is still the caller's. Effect: `incarnation` appended to
 * `pendingIncarnations`. Errors: `LeaseLost`.
 */
export async function addPendingIncarnation(lease: Lease, brokerId: number, incarnation: string): Promise<void> {
  try {
    await transactWrite(db(), [
      leaseCheck(lease),
      {
        Update: {
          TableName: table(), Key: { pk: 'brokers', sk: String(brokerId) },
          UpdateExpression: 'SET pendingIncarnations = list_append(if_not_exists(pendingIncarnations, :none), :inc)',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':none': [], ':inc': [incarnation] },
        },
      },
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(0)?.code === 'ConditionalCheckFailed') throw new LeaseLost('the controller lease was lost');
    throw err;
  }
}

/** A data-path function could not reach a broker's store: it says so (the controller probes it). */
/** A broker is reported suspect at most once in this long: each report wakes the controller (CONTROLLER_WAKE_PATTERN). */
export const SUSPECT_REPORT_MS = 10_000;

/**
 * A data path's report that broker `brokerId`'s store failed: sets `suspectAt` unless a report
 * less than SUSPECT_REPORT_MS old stands (the write is what wakes the controller, so many
 * failing requests wake it once). True when this call wrote it. Never throws.
 */
export async function markBrokerSuspect(brokerId: number, now = Date.now()): Promise<boolean> {
  try {
    await db().send(new UpdateCommand({
      TableName: table(), Key: { pk: 'brokers', sk: String(brokerId) },
      UpdateExpression: 'SET suspectAt = :now',
      ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(suspectAt) OR suspectAt < :stale)',
      ExpressionAttributeValues: { ':now': now, ':stale': now - SUSPECT_REPORT_MS },
    }));
    return true;
  } catch {
    return false;
  }
}

// ---- The lag index: partitions whose followers lag their leader ----
// (docs/architecture.md, "Replication liveness")
//
// Keys: `lagging`/`<topicId>#<partition>`. The replication run that finds a follower behind the
// leader writes the mark (only when the leader's head says none is set: transitions cost a write,
// appends do not); the run that finds every follower caught up deletes it. The controller's sweep
// reads the whole index with one Query per pass, so its steady cost follows the lagging
// partitions, not all partitions.

/** One partition the lag index names. `markedAt`: when the mark was (last) written. */
export interface LagMark {
  readonly topic: string;
  readonly topicId: string;
  readonly partition: number;
  readonly markedAt: number;
}

const LAG_PK = 'lagging';
const lagKey = (topicId: string, partition: number) => ({ pk: LAG_PK, sk: `${topicId}#${partition}` });
let lastMarkedAt = 0;

/**
 * Marks a partition as lagging.
 * Condition: none (idempotent; a second mark only moves `markedAt`). Effects: the mark item.
 * Errors: store failures only.
 */
export async function markLagging(topic: string, topicId: string, partition: number, now?: number): Promise<LagMark> {
  // A clear is conditioned on `markedAt`: two marks from this process never share one.
  const markedAt = now ?? (lastMarkedAt = Math.max(Date.now(), lastMarkedAt + 1));
  const mark: LagMark = { topic, topicId, partition, markedAt };
  await db().send(new PutCommand({ TableName: table(), Item: { ...lagKey(topicId, partition), ...mark } }));
  return mark;
}

/**
 * Clears a partition's lag mark.
 * Condition: with `markedAt`, only the mark written at that time (a sweep that found a partition
 * caught up must not delete a newer mark a run wrote since); without it, any mark. A mark that is
 * already gone is not an error.
 * Effects: the mark item deleted. Returns false when `markedAt` did not match (a newer mark stays).
 * Errors: store failures only.
 */
export async function clearLagging(topicId: string, partition: number, markedAt?: number): Promise<boolean> {
  try {
    await db().send(new DeleteCommand({
      TableName: table(), Key: lagKey(topicId, partition),
      ...(markedAt !== undefined ? {
        ConditionExpression: 'attribute_not_exists(pk) OR markedAt = :m', ExpressionAttributeValues: { ':m': markedAt },
      } : {}),
    }));
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}

/** Every lag mark (one strongly consistent Query, paged). */
export async function listLagging(): Promise<LagMark[]> {
  const items = await queryAll({ KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': LAG_PK } });
  return items.map((i) => strip<LagMark>(i));
}

// ---- The broker list a deployment wrote ----------------------------------------------------

/** The brokers a deployment names (DEPLOYED_BROKERS_ITEM in lib/functions.ts). */
export interface DeployedBrokers {
  /** Changes whenever the list does. */
  readonly version: string;
  readonly brokers: readonly Pick<BrokerRecord, 'brokerId' | 'replicaTable' | 'rack'>[];
}

/**
 * Reads the broker list the deployment wrote (the CDK construct writes it on every create and
 * update); undefined when there is none (the local stack registers its brokers itself).
 * Strongly consistent, one GetItem. Errors: store failures; a `brokers` attribute that is not JSON.
 */
export async function readDeployedBrokers(): Promise<DeployedBrokers | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: DEPLOYED_BROKERS_ITEM, ConsistentRead: true }));
  if (!out.Item) return undefined;
  return { version: String(out.Item.version), brokers: JSON.parse(String(out.Item.brokers)) as DeployedBrokers['brokers'] };
}

/** The partition count changed, or another request took the topic over, after it was read. */
export class PartitionCountChanged extends Error {
  override readonly name = 'PartitionCountChanged';
  constructor(readonly current: number) {
    super(`the partition count changed (now ${current}) or another request is adding partitions`);
  }
}

/**
 * Adds partitions to a topic (Kafka's CreatePartitions): the new partitions' states, the count.
 * Condition: the topic still has `topicId`, is active and has `fromCount` partitions.
 * Effects: one item per new partition; `partitions` on the meta item and the topic list entry;
 * the metadata version bumped. Readers ignore partition items at or past the count, so the new
 * partitions appear together, with the count, in the last transaction.
 * Up to 97 new partitions that is the only transaction. Beyond, the request first claims the
 * topic (`growth` on the meta item: a fresh token, replacing any earlier claim, so a claim left by
 * a crash never blocks a retry), then writes the partitions past the first 97 in transactions that
 * each check the claim and the count, then commits the rest on the same check:
 *
 *   A: claim(a) --- stage(a) --------------------- commit(a): growth is b, fails
 *   B:                       claim(b) --- stage(b) ------------ commit(b): wins
 *
 * Once B claimed, nothing of A's is written, so the committed items are all B's. A request that
 * dies midway leaves only invisible items and a claim, which the next request replaces.
 * `beforeCommit` runs just before the last transaction (the caller writes replica heads there).
 * Errors: `TopicChanged` (gone or another id); `PartitionCountChanged` (another request changed
 * the count, or took the claim).
 */
export async function addPartitions(
  name: string, topicId: string, fromCount: number, partitions: readonly PartitionRecord[], beforeCommit?: () => Promise<void>,
): Promise<void> {
  const metaKey = { pk: topicPk(name), sk: 'meta' };
  const put = (p: PartitionRecord) => ({ Put: { TableName: table(), Item: { pk: topicPk(name), sk: partitionSk(p.partition), ...p } } });
  const firstChunk = MAX_TRANSACTION_ITEMS - 3;
  const staged = partitions.slice(firstChunk);
  const claim = staged.length > 0 ? globalThis.crypto.randomUUID() : undefined;
  const same = 'topicId = :id AND #s = :active AND #p = :from';
  const names = { '#s': 'state', '#p': 'partitions' };
  const values = { ':id': topicId, ':active': 'active', ':from': fromCount };
  /** The meta item's condition failed at `index`: which of the two errors. */
  const refused = (err: unknown, index: number): unknown => {
    if (!(err instanceof ConditionFailed) || err.at(index)?.code !== 'ConditionalCheckFailed') return err;
    const cur = err.at(index)?.current;
    if (!cur || cur.topicId !== topicId || cur.state !== 'active') return new TopicChanged(`topic "${name}" no longer has id ${topicId}`);
    return new PartitionCountChanged(cur.partitions as number);
  };
  if (claim) {
    await transactWrite(db(), [{
      Update: {
        TableName: table(), Key: metaKey, UpdateExpression: 'SET growth = :claim', ConditionExpression: same,
        ExpressionAttributeNames: names, ExpressionAttributeValues: { ...values, ':claim': claim },
      },
    }]).catch((err: unknown) => { throw refused(err, 0); });
    for (let i = 0; i < staged.length; i += MAX_TRANSACTION_ITEMS - 1) {
      await transactWrite(db(), [
        {
          ConditionCheck: {
            TableName: table(), Key: metaKey, ConditionExpression: `${same} AND growth = :claim`,
            ExpressionAttributeNames: names, ExpressionAttributeValues: { ...values, ':claim': claim },
          },
        },
        ...staged.slice(i, i + MAX_TRANSACTION_ITEMS - 1).map(put),
      ]).catch((err: unknown) => { throw refused(err, 0); });
    }
  }
  await beforeCommit?.();
  const toCount = fromCount + partitions.length;
  await transactWrite(db(), [
    bumpVersion(),
    {
      Update: {
        TableName: table(), Key: metaKey,
        UpdateExpression: 'SET #p = :to REMOVE growth',
        ConditionExpression: claim ? `${same} AND growth = :claim` : same,
        ExpressionAttributeNames: names, ExpressionAttributeValues: { ...values, ':to': toCount, ...(claim ? { ':claim': claim } : {}) },
      },
    },
    {
      Update: {
        TableName: table(), Key: { pk: 'topics', sk: name }, UpdateExpression: 'SET #p = :to',
        ExpressionAttributeNames: { '#p': 'partitions' }, ExpressionAttributeValues: { ':to': toCount },
      },
    },
    ...partitions.slice(0, firstChunk).map(put),
  ]).catch((err: unknown) => { throw refused(err, 1); });
}

// ---- Cluster configs (lib/cluster/cluster-configs.ts) --------------------------------------

// `cluster`/`configs`: the cluster-wide broker configs (Kafka's `--entity-default`), only the ones set.
const CLUSTER_CONFIGS_KEY = { pk: 'cluster', sk: 'configs' } as const;

/** The cluster configs as stored: only the set ones, and the version a write compares. */
export interface StoredClusterConfigs {
  readonly configs: Readonly<Record<string, string>>;
  /** Bumped by every write; 0 while none was made. */
  readonly version: number;
}

/** Reads the set cluster configs (one strongly consistent GetItem); none set and version 0 when the item is absent. */
export async function readClusterConfigs(): Promise<StoredClusterConfigs> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: CLUSTER_CONFIGS_KEY, ConsistentRead: true }));
  return { configs: (out.Item?.configs as Record<string, string> | undefined) ?? {}, version: (out.Item?.version as number | undefined) ?? 0 };
}

/** Someone else wrote the cluster configs since they were read: the write did nothing. */
export class ClusterConfigsChanged extends Error {
  override readonly name = 'ClusterConfigsChanged';
}

/**
 * Replaces the set cluster configs.
 *
 *   admin A: read (version 4) ── SET x ─────────────── write if version = 4 ✓ (version 5)
 *   admin B:    read (version 4) ── SET y ─────────────────────── write if version = 4 ✗ → read again
 *
 * Condition: the item's version is still `expectVersion` (absent for 0), and the cluster exists.
 * Effects: `configs` replaced, version + 1, the metadata version bumped (caches of the configs drop them).
 * Errors: `ClusterConfigsChanged` when another write came first.
 */
export async function writeClusterConfigs(configs: Readonly<Record<string, string>>, expectVersion: number): Promise<void> {
  try {
    await transactWrite(db(), [
      bumpVersion(),
      {
        Put: {
          TableName: table(),
          Item: { ...CLUSTER_CONFIGS_KEY, configs, version: expectVersion + 1 },
          ...(expectVersion === 0
            ? { ConditionExpression: 'attribute_not_exists(pk)' }
            : { ConditionExpression: '#ver = :v', ExpressionAttributeNames: { '#ver': 'version' }, ExpressionAttributeValues: { ':v': expectVersion } }),
        },
      },
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(1)?.code === 'ConditionalCheckFailed') {
      throw new ClusterConfigsChanged(`the cluster configs changed since version ${expectVersion} was read`);
    }
    throw err;
  }
}

// ---- Brokers joining and leaving (lib/cluster/brokers.ts) -----------------------------------

/** The broker is not registered (or no longer): the write did nothing. */
export class UnknownBroker extends Error {
  override readonly name = 'UnknownBroker';
}

/**
 * Marks a broker for removal (the balancer drains it, then the controller deregisters it).
 * Condition: the broker is registered. Effects: `decommissioning` set; the metadata version
 * bumped. Idempotent. Errors: `UnknownBroker`.
 */
export async function markDecommissioning(brokerId: number): Promise<void> {
  try {
    await transactWrite(db(), [
      bumpVersion(),
      {
        Update: {
          TableName: table(), Key: { pk: 'brokers', sk: String(brokerId) },
          UpdateExpression: 'SET decommissioning = :t', ConditionExpression: 'attribute_exists(pk)', ExpressionAttributeValues: { ':t': true },
        },
      },
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(1)?.code === 'ConditionalCheckFailed') throw new UnknownBroker(`broker ${brokerId} is not registered`);
    throw err;
  }
}

/**
 * Deregisters a drained broker. Condition: the lease is the caller's, and the broker is still
 * being decommissioned. Effects: its item deleted; the metadata version bumped. Returns false when
 * the broker is gone already or not decommissioning. Errors: `LeaseLost`.
 */
export async function deregisterBroker(lease: Lease, brokerId: number): Promise<boolean> {
  try {
    await transactWrite(db(), [
      leaseCheck(lease),
      bumpVersion(),
      {
        Delete: {
          TableName: table(), Key: { pk: 'brokers', sk: String(brokerId) },
          ConditionExpression: 'decommissioning = :t', ExpressionAttributeValues: { ':t': true },
        },
      },
    ]);
    return true;
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(0)?.code === 'ConditionalCheckFailed') throw new LeaseLost('the controller lease was lost');
    if (err instanceof ConditionFailed && err.at(2)?.code === 'ConditionalCheckFailed') return false;
    throw err;
  }
}

// ---- The balancer's status (lib/cluster/balancer.ts) ----------------------------------------

const BALANCER_KEY = { pk: 'cluster', sk: 'balancer' } as const;

export interface BalancerStatus {
  readonly status: 'IDLE' | 'PLANNING' | 'MOVING';
  /** Replica moves completed since the current plan began. */
  readonly movesDone: number;
  /** Replica moves the current plan holds (done and to do). */
  readonly movesTotal: number;
  /** When the balancer last planned (ms since epoch). */
  readonly lastPlanAt?: number;
}

/** The balancer's status as last written (IDLE, nothing planned, when never). */
export async function readBalancerStatus(): Promise<BalancerStatus> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: BALANCER_KEY, ConsistentRead: true }));
  return out.Item ? strip<BalancerStatus>(out.Item) : { status: 'IDLE', movesDone: 0, movesTotal: 0 };
}

/** Writes the balancer's status. Condition: the lease is the caller's. Errors: `LeaseLost`. */
export async function writeBalancerStatus(lease: Lease, status: BalancerStatus): Promise<void> {
  try {
    await transactWrite(db(), [leaseCheck(lease), { Put: { TableName: table(), Item: { ...BALANCER_KEY, ...status } } }]);
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(0)?.code === 'ConditionalCheckFailed') throw new LeaseLost('the controller lease was lost');
    throw err;
  }
}

/** Which version of the deployment's broker list the controller registered, and the ids it held (`deployment`/`registered`). */
export interface RegisteredDeployment {
  readonly version: string;
  readonly brokerIds: readonly number[];
}

const REGISTERED_KEY = { pk: 'deployment', sk: 'registered' } as const;

export async function readRegisteredDeployment(): Promise<RegisteredDeployment | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: REGISTERED_KEY, ConsistentRead: true }));
  return out.Item ? strip<RegisteredDeployment>(out.Item) : undefined;
}

/** Records the registered version of the broker list. Unconditional (idempotent: the same list gives the same record). */
export async function writeRegisteredDeployment(r: RegisteredDeployment): Promise<void> {
  await db().send(new PutCommand({ TableName: table(), Item: { ...REGISTERED_KEY, version: r.version, brokerIds: [...r.brokerIds] } }));
}
