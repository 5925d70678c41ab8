/**
 * Topics: the topic list `topics`/`<name>` (id and partition count; one Query lists them all), the
 * collision keys `topic-keys`/`<key>`, ids to names `topic-ids`/`<topicId>`, and each topic's
 * `topic#<name>`/`meta` beside its partition states `topic#<name>`/`p#<00000n>`, so one Query
 * returns a topic whole (a partition state's changes: ./partitions.ts).
 *
 * Conditional writes:
 * - `createTopic(topic, partitions, collisionKey)`: one transaction [bumpVersion, list entry,
 *   collision key, id entry, meta, the first 95 partition states]. With more partitions, the rest
 *   follow in unconditional transactions, then [bumpVersion, meta Update to `active`, list entry
 *   Update removing `creating`].
 *   Condition: the name is free (`topics`/`<name>`: `attribute_not_exists(pk)`), and so is the
 *   collision key (`topic-keys`/`<key>`: `attribute_not_exists(pk)`); the final flip: the meta
 *   item and the list entry still have the topic's id (`topicId = :id`).
 *   Effect: those items, the meta `active` (`creating` until the flip, on the list entry too);
 *   bumps metadataVersion.
 *   Fails: `TopicExists`; `TopicCollides` carrying the topic that holds the key; `ConditionFailed`
 *   when the cluster does not exist, or the final flip's condition failed.
 * - `deleteTopic(name, topicId, partitions, collisionKey)`: one transaction [bumpVersion, Deletes
 *   of the list entry, collision key, meta, the first 95 partition states, and the id entry
 *   rewritten as deleted (`deletedAt`, `partitions`) for the garbage pass]; the rest follow in
 *   unconditional transactions.
 *   Condition: the list entry still has `topicId` (`topicId = :id`).
 *   Effect: the topic gone from metadata at once; bumps metadataVersion.
 *   Fails: `TopicChanged`.
 * - `forgetDeletedTopic(topicId)`: Delete of a deleted topic's id entry. Condition: it is marked
 *   deleted (`attribute_exists(deletedAt)`). Fails: nothing written, no error.
 * - `writeTopicConfigs(name, topicId, configs)`: one transaction [bumpVersion, meta Update].
 *   Condition: the meta item still has `topicId` (`topicId = :id`).
 *   Effect: `configs` replaced; bumps metadataVersion.
 *   Fails: `TopicChanged`.
 * - `addPartitions(name, topicId, fromCount, partitions, beforeCommit?)`: with more than 97 new
 *   partitions, first a claim (a transaction of one meta Update: `growth` = a fresh token) and
 *   staging transactions [meta ConditionCheck, up to 99 partition states]; then the commit
 *   [bumpVersion, meta Update, list entry Update, the first 97 partition states].
 *   Condition (each step): the meta item has `topicId`, is active and has `fromCount` partitions
 *   (`topicId = :id AND #s = :active AND #p = :from`); after a claim, it also still holds this
 *   request's claim (`AND growth = :claim`). The list entry's Update is unconditional.
 *   Effect: the new partition states; `partitions` = fromCount + new on the meta item and the list
 *   entry, `growth` removed; bumps metadataVersion (at the commit).
 *   Fails: `TopicChanged` when the meta item is gone, has another id or is not active;
 *   `PartitionCountChanged` carrying the current count when the count changed or another request
 *   took the claim.
 */
import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { PartitionRecord, TopicRecord } from '../model.js';
import { partitionSk, topicPk } from '../tables.js';
import { ConditionFailed, MAX_TRANSACTION_ITEMS, transactWrite } from '../transact.js';
import { bumpVersion, db, queryAll, strip, table } from './table.js';

/** Every topic's partition count, from the topic list (one Query). */
export async function listTopicPartitionCounts(): Promise<Record<string, number>> {
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': 'topics' }, ProjectionExpression: 'sk, #p',
    ExpressionAttributeNames: { '#p': 'partitions' },
  });
  return Object.fromEntries(items.map((i) => [i.sk as string, (i.partitions as number | undefined) ?? 0]));
}

/**
 * The names on the topic list (one Query). `activeOnly`: without the topics still being created
 * (a topic of more partitions than one transaction holds carries `creating` on its list entry
 * until its flip to `active`).
 */
export async function listTopicNames(o: { activeOnly?: boolean } = {}): Promise<string[]> {
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': 'topics' }, ProjectionExpression: 'sk, creating',
  });
  return items.filter((i) => !o.activeOnly || i.creating !== true).map((i) => i.sk as string);
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
 * Up to 95 partitions this is one transaction. Beyond, the meta item is written first with
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
          TableName: table(), Item: { pk: 'topics', sk: topic.name, topicId: topic.topicId, partitions: topic.partitions, ...(single ? {} : { creating: true }) },
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
    {
      Update: {
        TableName: table(), Key: { pk: 'topics', sk: topic.name },
        UpdateExpression: 'REMOVE creating', ConditionExpression: 'topicId = :id', ExpressionAttributeValues: { ':id': topic.topicId },
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
      // The id stays, marked deleted, until the garbage pass has removed the topic's segments and
      // their registry items (which only the id names): then it goes too (forgetDeletedTopic).
      { Put: { TableName: table(), Item: { pk: 'topic-ids', sk: topicId, name, partitions, deletedAt: Date.now() } } },
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

/** The name of the topic with this id (replicas and streams know only ids); undefined once deleted. */
export async function topicNameById(topicId: string): Promise<string | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: { pk: 'topic-ids', sk: topicId }, ConsistentRead: true }));
  return out.Item && out.Item.deletedAt === undefined ? out.Item.name as string : undefined;
}

/** A deleted topic whose segments the garbage pass has yet to remove (`topic-ids`/`<topicId>` with `deletedAt`). */
export interface DeletedTopic {
  readonly topicId: string;
  readonly name: string;
  readonly partitions: number;
  readonly deletedAt: number;
}

/** Every deleted topic still waiting for the garbage pass (one Query of the `topic-ids` key). */
export async function listDeletedTopics(): Promise<DeletedTopic[]> {
  return (await queryAll({ KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': 'topic-ids' } }))
    .filter((i) => i.deletedAt !== undefined)
    .map((i) => ({ topicId: i.sk as string, name: i.name as string, partitions: i.partitions as number, deletedAt: i.deletedAt as number }));
}

/** Drops a deleted topic's record once nothing of it is left. Condition: it is a deleted topic's (`deletedAt` set). */
export async function forgetDeletedTopic(topicId: string): Promise<void> {
  try {
    await db().send(new DeleteCommand({ TableName: table(), Key: { pk: 'topic-ids', sk: topicId }, ConditionExpression: 'attribute_exists(deletedAt)' }));
  } catch (err) {
    if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
  }
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
