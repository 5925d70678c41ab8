/**
 * Push subscriptions in the coordination table: what to deliver where (lib/orchestration/push-delivery.ts
 * delivers; the group's committed offsets say how far).
 *
 * Keys: `push`/`<name>` for a subscription's definition, so one Query lists them all (there are
 * few: a delivery caches the list); `push#<name>#<createdAt>`/`p#<partition>` for a partition's
 * delivery state: the lease of the one deliverer at a time, the attempts of the batch being
 * retried, when it may be tried next and why it failed last. (`createdAt` in the key: a
 * subscription deleted and created again under its name starts with no state of the old one's.)
 *
 * Conditional writes:
 * - `createPushSubscription`: Put where no subscription has the name. Lost race: `false`, nothing written.
 * - `claimPushDelivery`: Update `deliverer`, `leaseUntil` where no lease is live and no retry is
 *   waiting (`retryAt` passed). Lost race: `false`, nothing written.
 * - `failPushDelivery`: Update (attempts counted with `retryAt`, and the batch's range, so the retry
 *   sends the same records under the same `webhook-id`), REMOVE the lease, where `deliverer` is the
 *   claimant's. Lost race (the lease expired and another took it): `false`, nothing written.
 * - `finishPushDelivery`: Update (attempts and the batch reset), REMOVE the lease, where `deliverer`
 *   is the claimant's; with a commit, in one transaction with it: Put the group's offset `next`
 *   where it is still `from`, the offset the batch was read from. Lost race: `'lease-lost'` or
 *   `'offset-moved'`, nothing written. An offset reset during a delivery wins:
 *
 *       deliverer:  claim ── read from 5 ── send [5, 8) ─────────── 2xx ── commit 8 if 5 ✗
 *       operator:                          reset to 0 (offset 0) ──┘
 *
 *   The deliverer then releases the lease (`finishPushDelivery` without a commit) and goes on from
 *   0. A reset to the very offset the batch was read from looks like no reset, and is none: the
 *   batch was delivered from there. Another deliverer cannot commit in between: the lease excludes it.
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { config } from '../../config.js';
import { dynamo } from '../clients.js';
import { COORDINATION_KEYS, offsetsPk, partitionSk, pushStatePk } from '../tables.js';
import { ConditionFailed, transactWrite } from '../transact.js';

const table = (): string => config().coordinationTable;
const db = () => dynamo();
const isConditionFailure = (err: unknown): boolean => (err as { name?: string }).name === 'ConditionalCheckFailedException';

export type PushEndpoint =
  | { readonly type: 'http'; readonly url: string; readonly headers: Readonly<Record<string, string>> }
  | { readonly type: 'lambda'; readonly functionArn: string };

export interface PushSubscription {
  readonly name: string;
  readonly topic: string;
  readonly topicId: string;
  readonly groupId: string;
  readonly startingPosition: 'earliest' | 'latest';
  readonly isolation: 'read_uncommitted' | 'read_committed';
  readonly endpoint: PushEndpoint;
  readonly maxBatchRecords: number;
  /** Attempts after the first before a batch goes to the dead-letter topic; undefined: retried for ever. */
  readonly maxRetries?: number;
  readonly deadLetterTopic?: string;
  /** The topic's partition count at the creation: partitions added later start at the earliest offset. */
  readonly partitions: number;
  /** The signing secret (`whsec_…`), shown to its creator once. */
  readonly secret: string;
  /** Who created it: deliveries read, commit and dead-letter as this principal would. */
  readonly principal: string;
  readonly createdAt: number;
}

/** A batch's range: the offset it was read from and the offset past it. */
export interface PushBatch {
  readonly from: number;
  readonly next: number;
}

export interface PushPartitionState {
  readonly partition: number;
  readonly deliverer?: string;
  readonly leaseUntil?: number;
  /** Failed attempts of the batch at the group's committed offset. */
  readonly attempts: number;
  /** The batch those attempts sent: its first offset and the offset past it (a retry sends the same). */
  readonly batch?: PushBatch;
  /** When that batch may be tried again (epoch ms). */
  readonly retryAt?: number;
  readonly lastError?: string;
}

/** Stores a new subscription; false when one has the name already (nothing written). */
export async function createPushSubscription(s: PushSubscription): Promise<boolean> {
  try {
    await db().send(new PutCommand({
      TableName: table(), Item: { pk: COORDINATION_KEYS.push, sk: s.name, ...s }, ConditionExpression: 'attribute_not_exists(pk)',
    }));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

const toSubscription = (item: Record<string, unknown>): PushSubscription => {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return rest as unknown as PushSubscription;
};

export async function getPushSubscription(name: string): Promise<PushSubscription | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: { pk: COORDINATION_KEYS.push, sk: name }, ConsistentRead: true }));
  return out.Item ? toSubscription(out.Item) : undefined;
}

/** Every push subscription (one strongly consistent Query, paged). */
export async function listPushSubscriptions(): Promise<PushSubscription[]> {
  const out: PushSubscription[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db().send(new QueryCommand({
      TableName: table(), ConsistentRead: true, KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': COORDINATION_KEYS.push }, ExclusiveStartKey: start,
    }));
    for (const item of page.Items ?? []) out.push(toSubscription(item));
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

/** The key of a subscription's delivery states (see the file's comment): what the state functions below take. */
export const pushStateKey = (s: Pick<PushSubscription, 'name' | 'createdAt'>): string => `${s.name}#${s.createdAt}`;

/** Removes a subscription and the delivery states of its partitions. */
export async function deletePushSubscription(s: PushSubscription): Promise<void> {
  await db().send(new DeleteCommand({ TableName: table(), Key: { pk: COORDINATION_KEYS.push, sk: s.name } }));
  for (const state of await listPushStates(pushStateKey(s))) {
    await db().send(new DeleteCommand({ TableName: table(), Key: { pk: pushStatePk(pushStateKey(s)), sk: partitionSk(state.partition) } }));
  }
}

const toState = (item: Record<string, unknown>): PushPartitionState => ({
  partition: Number(String(item.sk).slice(2)),
  attempts: typeof item.attempts === 'number' ? item.attempts : 0,
  ...(typeof item.deliverer === 'string' ? { deliverer: item.deliverer } : {}),
  ...(typeof item.leaseUntil === 'number' ? { leaseUntil: item.leaseUntil } : {}),
  ...(typeof item.retryAt === 'number' ? { retryAt: item.retryAt } : {}),
  ...(typeof item.lastError === 'string' ? { lastError: item.lastError } : {}),
  ...(typeof item.batchFrom === 'number' && typeof item.batchNext === 'number' ? { batch: { from: item.batchFrom, next: item.batchNext } } : {}),
});

/** The delivery states of a subscription's partitions (only those delivered to or tried); `key` is its pushStateKey. */
export async function listPushStates(key: string): Promise<PushPartitionState[]> {
  const out: PushPartitionState[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db().send(new QueryCommand({
      TableName: table(), ConsistentRead: true, KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pushStatePk(key) }, ExclusiveStartKey: start,
    }));
    for (const item of page.Items ?? []) out.push(toState(item));
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

/** One partition's delivery state; undefined when it was never delivered to. */
export async function getPushState(key: string, partition: number): Promise<PushPartitionState | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: { pk: pushStatePk(key), sk: partitionSk(partition) }, ConsistentRead: true }));
  return out.Item ? toState(out.Item) : undefined;
}

type StateUpdate = Omit<ConstructorParameters<typeof UpdateCommand>[0], 'TableName' | 'Key'>;
async function updateStateIf(key: string, partition: number, update: StateUpdate): Promise<boolean> {
  try {
    await db().send(new UpdateCommand({ TableName: table(), Key: { pk: pushStatePk(key), sk: partitionSk(partition) }, ...update }));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/**
 * Takes a partition's delivery lease (see the file's comment): false when another deliverer holds
 * it or a retry is not due yet. Answers the state as claimed (its attempts so far).
 */
export async function claimPushDelivery(key: string, partition: number, deliverer: string, leaseMs: number, now = Date.now()): Promise<PushPartitionState | undefined> {
  try {
    const out = await db().send(new UpdateCommand({
      TableName: table(), Key: { pk: pushStatePk(key), sk: partitionSk(partition) },
      UpdateExpression: 'SET deliverer = :me, leaseUntil = :until',
      ConditionExpression: '(attribute_not_exists(leaseUntil) OR leaseUntil < :now) AND (attribute_not_exists(retryAt) OR retryAt <= :now)',
      ExpressionAttributeValues: { ':me': deliverer, ':until': now + leaseMs, ':now': now },
      ReturnValues: 'ALL_NEW',
    }));
    return toState(out.Attributes ?? { sk: partitionSk(partition) });
  } catch (err) {
    if (isConditionFailure(err)) return undefined;
    throw err;
  }
}

/** What a delivery commits with its finish: the group's offset of the partition, moved from `from` to `next`. */
export interface PushCommit {
  readonly groupId: string;
  readonly topic: string;
  readonly topicId: string;
  readonly from: number;
  readonly next: number;
}

const FINISH = {
  UpdateExpression: 'SET attempts = :zero REMOVE deliverer, leaseUntil, retryAt, lastError, batchFrom, batchNext',
  ConditionExpression: 'deliverer = :me',
};

/**
 * A batch was delivered (or dead-lettered): attempts and the batch reset, the lease released, and
 * with `commit` the group's offset moved past the batch in the same transaction (see the file's
 * comment). Answers `'done'`, or which condition failed (nothing written then).
 */
export async function finishPushDelivery(key: string, partition: number, deliverer: string, commit?: PushCommit): Promise<'done' | 'lease-lost' | 'offset-moved'> {
  if (!commit) return (await updateStateIf(key, partition, { ...FINISH, ExpressionAttributeValues: { ':me': deliverer, ':zero': 0 } })) ? 'done' : 'lease-lost';
  const offset = { topic: commit.topic, partition, offset: commit.next, metadata: '', committedAt: Date.now(), topicId: commit.topicId };
  try {
    await transactWrite(db(), [
      {
        Update: {
          TableName: table(), Key: { pk: pushStatePk(key), sk: partitionSk(partition) }, ...FINISH,
          ExpressionAttributeValues: { ':me': deliverer, ':zero': 0 },
        },
      },
      {
        Put: {
          TableName: table(), Item: { pk: offsetsPk(commit.groupId), sk: `${commit.topic}#${partition}`, ...offset },
          ConditionExpression: '#o = :from', ExpressionAttributeNames: { '#o': 'offset' }, ExpressionAttributeValues: { ':from': commit.from },
        },
      },
    ]);
    return 'done';
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
    if (err.at(0)?.code === 'ConditionalCheckFailed') return 'lease-lost';
    if (err.at(1)?.code === 'ConditionalCheckFailed') return 'offset-moved';
    throw err;
  }
}

/**
 * A delivery attempt failed: counted, retried no sooner than `retryAt`, the lease released; with
 * `batch`, the range the retry sends. False when the claim was lost.
 */
export async function failPushDelivery(key: string, partition: number, deliverer: string, attempts: number, retryAt: number, error: string, batch?: PushBatch): Promise<boolean> {
  return updateStateIf(key, partition, {
    UpdateExpression: `SET attempts = :n, retryAt = :at, lastError = :err${batch ? ', batchFrom = :from, batchNext = :next' : ''} REMOVE deliverer, leaseUntil`,
    ConditionExpression: 'deliverer = :me',
    ExpressionAttributeValues: { ':me': deliverer, ':n': attempts, ':at': retryAt, ':err': error.slice(0, 500), ...(batch ? { ':from': batch.from, ':next': batch.next } : {}) },
  });
}

/** Releases a lease without counting an attempt (nothing to deliver, or a read failed); false when the claim was lost. */
export async function releasePushDelivery(key: string, partition: number, deliverer: string): Promise<boolean> {
  return updateStateIf(key, partition, {
    UpdateExpression: 'REMOVE deliverer, leaseUntil', ConditionExpression: 'deliverer = :me',
    ExpressionAttributeValues: { ':me': deliverer },
  });
}
