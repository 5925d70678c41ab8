/**
 * WebSocket connections and their partition subscriptions in the coordination table
 * (lib/http/websocket.ts serves them; API Gateway holds the sockets).
 *
 * Keys: `ws#conn#<connectionId>`/`conn` for a connection (its principal, and `subs`: the keys of
 * the partitions it subscribes to, so `$disconnect` finds them); `ws#tp#<topicId>#<partition>`/
 * `<connectionId>` for a subscription (the next offset to deliver, the isolation level), so that a
 * delivery finds every subscriber of a partition with one Query; `ws#subscribed`/
 * `<topicId>#<partition>` for a partition subscribed to within the TTL, so that the controller's
 * pass finds the subscriptions a lost wake left behind with one Query. Every item has `expiresAt` (epoch
 * seconds, the table's TTL) past API Gateway's two-hour connection lifetime, so items of a
 * connection whose `$disconnect` never ran go by themselves.
 *
 * Conditional writes:
 * - `putSubscription`: [Update connection ADD subs] (condition: the connection exists) beside a
 *   Put of the partition's `ws#subscribed` item (no condition; at most once per 10 minutes from an
 *   instance, best effort), then Put of the subscription (no condition: a subscribe again to the
 *   same partition replaces it).
 *   Fails: `ConditionFailed` when the connection is gone (nothing written).
 * - `putSubscription`'s Put writes a new `gen`: the subscription's identity, and (for a subscribe)
 *   the subscriber's delivery lease, so no deliverer posts its records before it is answered.
 * - `setConnectionGroup`: Update `grp` (the connection's group membership) and `gparts` (its
 *   partitions) where the connection exists and its membership is the expected member's (or none,
 *   to join), not at a later member epoch. Lost race (closed, left, joined by another, a later
 *   heartbeat first): false, nothing written.
 * - `claimDelivery`: Update `deliverer`, `leaseUntil` where the subscription is the one read (its
 *   `gen`) at the `next` read, and no other deliverer's lease is live. Lost race (a subscribe again
 *   or an unsubscribe meanwhile included): false, nothing written.
 * - `finishDelivery` / `releaseDelivery`: Update `next` (or not), REMOVE the lease where `deliverer` is the claimant's.
 *   Lost race (the subscription was replaced or removed, or the lease expired and another took it):
 *   false, nothing written.
 */
import { randomUUID } from 'node:crypto';
import { BatchGetCommand, BatchWriteCommand, DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { config } from '../../config.js';
import { logger } from '../../logger.js';
import { dynamo } from '../clients.js';
import { SUBSCRIBED_PARTITIONS_PK, connectionPk, subscriptionsPk } from '../tables.js';

const table = (): string => config().coordinationTable;
const db = () => dynamo();
const CONNECTION_SK = 'conn';
/** API Gateway closes a WebSocket connection after two hours; items live an hour past that. */
export const CONNECTION_TTL_SECONDS = 3 * 3600;
const expiresAt = (now: number): number => Math.floor(now / 1000) + CONNECTION_TTL_SECONDS;
/** The connection's item is gone (`$disconnect` ran, or it expired). */
export class ConnectionGone extends Error {
  override readonly name = 'ConnectionGone';
}

const isConditionFailure = (err: unknown): boolean => (err as { name?: string }).name === 'ConditionalCheckFailedException';

type ItemUpdate = Omit<ConstructorParameters<typeof UpdateCommand>[0], 'TableName' | 'Key'>;
/** A conditional Update of one subscription: true when it was written, false when its condition failed (nothing written). */
async function updateSubscriptionIf(s: SubscriptionRecord, update: ItemUpdate): Promise<boolean> {
  try {
    await db().send(new UpdateCommand({ TableName: table(), Key: { pk: subscriptionsPk(s.topicId, s.partition), sk: s.connectionId }, ...update }));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

export type Isolation = 'read_uncommitted' | 'read_committed';

/** A connection's membership of a consumer group: the group's member that the websocket function runs for it. */
export interface ConnectionGroup {
  readonly groupId: string;
  readonly memberId: string;
  readonly memberEpoch: number;
  readonly topics: readonly string[];
  /** Where a partition with no committed offset starts (Kafka's auto.offset.reset). */
  readonly reset: 'earliest' | 'latest';
  readonly isolation: Isolation;
  readonly sessionTimeoutMs: number;
  /** `topic#partition` of the partitions the connection is subscribed to through the group now. */
  readonly parts: readonly string[];
}

export interface ConnectionRecord {
  readonly connectionId: string;
  readonly principal: string;
  readonly connectedAt: number;
  /** `ws#tp#…` keys of the partitions it subscribes to. */
  readonly subs: readonly string[];
  readonly group?: ConnectionGroup;
}

export interface SubscriptionRecord {
  readonly connectionId: string;
  readonly topic: string;
  readonly topicId: string;
  readonly partition: number;
  /** The next offset to deliver. */
  readonly next: number;
  readonly isolation: Isolation;
  readonly principal: string;
  /** The subscriber's address (ACLs may name a host); '' when unknown. */
  readonly host: string;
  /** Set when the partition is the connection's through a consumer group: delivered while that member is live. */
  readonly groupId?: string;
  readonly memberId?: string;
  /** This subscription's identity: a subscribe again to the partition writes a new one, so a claim read before it cannot take the new subscription. */
  readonly gen: string;
  /** A delivery in progress: who, and until when its lease holds (epoch ms). */
  readonly deliverer?: string;
  readonly leaseUntil?: number;
}

/** Stores a new connection (a `$connect` again with the same id replaces it). */
export async function putConnection(connectionId: string, principal: string, now = Date.now()): Promise<void> {
  await db().send(new PutCommand({
    TableName: table(),
    Item: { pk: connectionPk(connectionId), sk: CONNECTION_SK, principal, connectedAt: now, expiresAt: expiresAt(now) },
  }));
}

export async function getConnection(connectionId: string): Promise<ConnectionRecord | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: { pk: connectionPk(connectionId), sk: CONNECTION_SK }, ConsistentRead: true }));
  const item = out.Item;
  if (!item) return undefined;
  return {
    connectionId, principal: item.principal as string, connectedAt: item.connectedAt as number,
    subs: item.subs instanceof Set ? [...(item.subs as Set<string>)] : [],
    ...(item.grp ? { group: { ...(item.grp as Omit<ConnectionGroup, 'parts'>), parts: item.gparts instanceof Set ? [...(item.gparts as Set<string>)].sort() : [] } } : {}),
  };
}

/** A conditional Update of the connection's item: false when its condition failed. */
async function updateConnectionIf(connectionId: string, update: ItemUpdate): Promise<boolean> {
  try {
    await db().send(new UpdateCommand({ TableName: table(), Key: { pk: connectionPk(connectionId), sk: CONNECTION_SK }, ...update }));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/**
 * Stores (or, with null, removes) the connection's group membership: `grp`, and its partitions as
 * the string set `gparts`. Condition: the connection exists and its stored membership is `member`'s
 * (null: it has none, a join) and, when storing, not at a later member epoch. False when the
 * condition failed: closed, left, joined by another, or a later heartbeat stored first.
 */
export async function setConnectionGroup(connectionId: string, group: ConnectionGroup | null, member: string | null): Promise<boolean> {
  const owner = member === null
    ? { ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(grp)' }
    : { ConditionExpression: `attribute_exists(pk) AND grp.memberId = :m${group ? ' AND grp.memberEpoch <= :e' : ''}` };
  const values = { ...(member !== null ? { ':m': member } : {}), ...(group && member !== null ? { ':e': group.memberEpoch } : {}) };
  const withValues = (v: Record<string, unknown>) => (Object.keys(v).length > 0 ? { ExpressionAttributeValues: v } : {});
  if (!group) return updateConnectionIf(connectionId, { UpdateExpression: 'REMOVE grp, gparts', ...owner, ...withValues(values) });
  const { parts, ...grp } = group;
  return updateConnectionIf(connectionId, parts.length > 0
    ? { UpdateExpression: 'SET grp = :g, gparts = :p', ...owner, ExpressionAttributeValues: { ...values, ':g': grp, ':p': new Set(parts) } }
    : { UpdateExpression: 'SET grp = :g REMOVE gparts', ...owner, ExpressionAttributeValues: { ...values, ':g': grp } });
}

/** When this instance last listed each partition under `ws#subscribed` (epoch ms). */
const listedAt = new Map<string, number>();
/** A listing this recent is not written again: it lives CONNECTION_TTL_SECONDS, far longer. */
const RELIST_MS = 10 * 60_000;

/**
 * Lists a subscribed partition under `ws#subscribed` (the controller's pass reads it), at most once
 * per RELIST_MS from this instance: one item every subscriber of a partition shares, so a
 * reconnect storm writes it about once per instance. Best effort: the listing backs up lost wakes
 * only, and a failure to write it (a throttle on that one item) does not fail the subscribe.
 */
async function listPartition(s: Pick<SubscriptionRecord, 'topic' | 'topicId' | 'partition'>, now: number): Promise<void> {
  const sk = `${s.topicId}#${s.partition}`;
  if (now - (listedAt.get(sk) ?? -Infinity) < RELIST_MS) return;
  try {
    await db().send(new PutCommand({
      TableName: table(), Item: { pk: SUBSCRIBED_PARTITIONS_PK, sk, topicId: s.topicId, partition: s.partition, topic: s.topic, expiresAt: expiresAt(now) },
    }));
    if (listedAt.size > 10_000) listedAt.clear();
    listedAt.set(sk, now);
  } catch (err) {
    logger.warn({ event: 'subscription-listing-failed', topic: s.topic, partition: s.partition, err }, 'could not list a subscribed partition for the controller\'s pass');
  }
}

/**
 * Subscribes the connection to a partition from `next` (see the file's comment); answers the
 * subscription as stored, with its new `gen`. With `lease`, the subscription is stored with its
 * delivery lease held by `lease.deliverer` (a subscribe that answers `subscribed` before any
 * deliverer may post the subscription's records).
 */
export async function putSubscription(
  s: Omit<SubscriptionRecord, 'deliverer' | 'leaseUntil' | 'gen'>, o: { readonly now?: number; readonly lease?: { readonly deliverer: string; readonly ms: number } } = {},
): Promise<SubscriptionRecord> {
  const now = o.now ?? Date.now();
  const pk = subscriptionsPk(s.topicId, s.partition);
  // (the partition is listed before its subscription is stored, so the pass finds the subscription)
  await Promise.all([
    db().send(new UpdateCommand({
      TableName: table(), Key: { pk: connectionPk(s.connectionId), sk: CONNECTION_SK },
      UpdateExpression: 'ADD subs :pk', ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':pk': new Set([pk]) },
    })).catch((err: unknown) => {
      if (isConditionFailure(err)) throw new ConnectionGone(`Connection ${s.connectionId} is closed.`);
      throw err;
    }),
    listPartition(s, now),
  ]);
  const stored: SubscriptionRecord = { ...s, gen: randomUUID(), ...(o.lease ? { deliverer: o.lease.deliverer, leaseUntil: now + o.lease.ms } : {}) };
  await db().send(new PutCommand({
    TableName: table(),
    Item: {
      pk, sk: s.connectionId, topic: s.topic, topicId: s.topicId, partition: s.partition, next: s.next,
      isolation: s.isolation, principal: s.principal, host: s.host, gen: stored.gen, expiresAt: expiresAt(now),
      ...(s.groupId !== undefined ? { groupId: s.groupId, memberId: s.memberId } : {}),
      ...(stored.deliverer !== undefined ? { deliverer: stored.deliverer, leaseUntil: stored.leaseUntil } : {}),
    },
  }));
  return stored;
}

/** Which of these partitions the connection is subscribed to (strongly consistent BatchGetItems of 100 keys; unprocessed keys asked again). */
export async function subscribedAmong(connectionId: string, partitions: readonly { readonly topicId: string; readonly partition: number }[]): Promise<SubscriptionRecord[]> {
  const out: SubscriptionRecord[] = [];
  for (let i = 0; i < partitions.length; i += 100) {
    let keys: Record<string, unknown>[] | undefined = partitions.slice(i, i + 100).map((p) => ({ pk: subscriptionsPk(p.topicId, p.partition), sk: connectionId }));
    for (let attempt = 0; keys && keys.length > 0; attempt++) {
      if (attempt > 8) throw new Error(`BatchGetItem on ${table()} left ${keys.length} keys unprocessed`);
      if (attempt > 0) await new Promise((r) => setTimeout(r, 20 * 2 ** attempt));
      const res = await db().send(new BatchGetCommand({ RequestItems: { [table()]: { Keys: keys, ConsistentRead: true } } }));
      for (const item of res.Responses?.[table()] ?? []) out.push(toSubscription(item));
      keys = res.UnprocessedKeys?.[table()]?.Keys as Record<string, unknown>[] | undefined;
    }
  }
  return out;
}

const toSubscription = (item: Record<string, unknown>): SubscriptionRecord => ({
  connectionId: item.sk as string, topic: item.topic as string, topicId: item.topicId as string,
  partition: item.partition as number, next: item.next as number, isolation: item.isolation as Isolation,
  principal: item.principal as string, host: typeof item.host === 'string' ? item.host : '', gen: item.gen as string,
  ...(typeof item.groupId === 'string' ? { groupId: item.groupId, memberId: item.memberId as string } : {}),
  ...(typeof item.deliverer === 'string' ? { deliverer: item.deliverer } : {}),
  ...(typeof item.leaseUntil === 'number' ? { leaseUntil: item.leaseUntil } : {}),
});

/** Every subscription to a partition (one Query, paged; strongly consistent unless `consistent` is false). */
export async function listSubscriptions(topicId: string, partition: number, consistent = true): Promise<SubscriptionRecord[]> {
  const out: SubscriptionRecord[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db().send(new QueryCommand({
      TableName: table(), ConsistentRead: consistent, KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': subscriptionsPk(topicId, partition) }, ExclusiveStartKey: start,
    }));
    for (const item of page.Items ?? []) out.push(toSubscription(item));
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

/** Takes the delivery lease of a subscription at `next` (see the file's comment); false when another holds it or `next` moved. */
export async function claimDelivery(s: SubscriptionRecord, deliverer: string, leaseMs: number, now = Date.now()): Promise<boolean> {
  return updateSubscriptionIf(s, {
    UpdateExpression: 'SET deliverer = :me, leaseUntil = :until',
    ConditionExpression: 'gen = :gen AND #next = :next AND (attribute_not_exists(leaseUntil) OR leaseUntil < :now)',
    ExpressionAttributeNames: { '#next': 'next' },
    ExpressionAttributeValues: { ':me': deliverer, ':until': now + leaseMs, ':next': s.next, ':now': now, ':gen': s.gen },
  });
}

/** Moves a claimed subscription's `next` and releases the lease; false when the claim was lost. */
export async function finishDelivery(s: SubscriptionRecord, deliverer: string, next: number): Promise<boolean> {
  return updateSubscriptionIf(s, {
    UpdateExpression: 'SET #next = :next REMOVE deliverer, leaseUntil',
    ConditionExpression: 'deliverer = :me',
    ExpressionAttributeNames: { '#next': 'next' },
    ExpressionAttributeValues: { ':me': deliverer, ':next': next },
  });
}

/** Releases a claimed subscription's lease, `next` unchanged (a delivery that failed after its claim); false when the claim was lost. */
export async function releaseDelivery(s: SubscriptionRecord, deliverer: string): Promise<boolean> {
  return updateSubscriptionIf(s, {
    UpdateExpression: 'REMOVE deliverer, leaseUntil', ConditionExpression: 'deliverer = :me',
    ExpressionAttributeValues: { ':me': deliverer },
  });
}

/** Removes one subscription (the connection's `subs` keeps its key; `$disconnect` deletes what is gone already without harm). */
export async function deleteSubscription(connectionId: string, topicId: string, partition: number): Promise<void> {
  await db().send(new DeleteCommand({ TableName: table(), Key: { pk: subscriptionsPk(topicId, partition), sk: connectionId } }));
}

/** Removes a connection and every subscription it lists (25 deletes per request). */
export async function deleteConnection(connectionId: string): Promise<void> {
  const c = await getConnection(connectionId);
  const keys = [{ pk: connectionPk(connectionId), sk: CONNECTION_SK }, ...(c?.subs ?? []).map((pk) => ({ pk, sk: connectionId }))];
  for (let i = 0; i < keys.length; i += 25) {
    let requests: Record<string, unknown>[] | undefined = keys.slice(i, i + 25).map((Key) => ({ DeleteRequest: { Key } }));
    for (let attempt = 0; requests && requests.length > 0 && attempt < 5; attempt++) {
      const out = await db().send(new BatchWriteCommand({ RequestItems: { [table()]: requests as never } }));
      requests = out.UnprocessedItems?.[table()] as Record<string, unknown>[] | undefined;
    }
  }
}

/** A partition subscribed to over WebSocket within the TTL (it may have no subscription left). */
export interface SubscribedPartition {
  readonly topic: string;
  readonly topicId: string;
  readonly partition: number;
}

/** Every partition subscribed to within the TTL (one Query of `ws#subscribed`, paged; eventually consistent). */
export async function subscribedPartitions(): Promise<SubscribedPartition[]> {
  const out: SubscribedPartition[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db().send(new QueryCommand({
      TableName: table(), KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': SUBSCRIBED_PARTITIONS_PK }, ExclusiveStartKey: start,
    }));
    const now = Math.floor(Date.now() / 1000);
    // (DynamoDB's TTL deletes an expired item up to days late)
    for (const item of page.Items ?? []) if ((item.expiresAt as number) > now) out.push({ topic: item.topic as string, topicId: item.topicId as string, partition: item.partition as number });
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

/** Whether a partition has any subscription (a strongly consistent Query of at most one item: one read unit). */
export async function hasSubscriptions(topicId: string, partition: number): Promise<boolean> {
  const out = await db().send(new QueryCommand({
    TableName: table(), ConsistentRead: true, KeyConditionExpression: 'pk = :pk', Limit: 1, Select: 'COUNT',
    ExpressionAttributeValues: { ':pk': subscriptionsPk(topicId, partition) },
  }));
  return (out.Count ?? 0) > 0;
}
