/**
 * Batches staged for a group commit on a leader replica (lib/log/staged-commit.ts): one item per
 * staging request, keyed by its stage id (the staging time in microseconds plus a random tail)
 * under the partition's key just below its head (lib/storage/tables.ts, `STAGE_BASE`), so one
 * Query returns everything staged since a time, oldest first, and then the head.
 *
 * A staged item's `stage` is `staged` until a commit takes it (`committed`, with each batch's
 * outcome) or its writer takes it back (`dropped`); either way its batch bytes are removed then.
 * Items expire by the table's TTL (`expiresAt`), never read again once outside the window.
 *
 * Conditional writes:
 * - `stageBatches` — condition: no item at the stage id (`attribute_not_exists(off)`). Effect: the
 *   staged item. Failure: returns false (an id taken: the caller draws another).
 * - `commitStagedItem` — a transaction item (appendBatches adds it to its own transaction):
 *   condition: still staged (`#stage = :staged`). Effect: `committed` with the outcomes, the
 *   batches removed. Failure: the enclosing transaction writes nothing and throws
 *   `ConditionFailed`, whose entry at this item's index carries the item as stored.
 * - `settleStaged` — condition: the head is the leader's as read (`leo = :leo AND leaderEpoch =
 *   :epoch AND role = leader`), each item still staged; with a lease to renew, `renewCommitter`'s.
 *   Effect: the items marked committed (a commit that appends nothing: retries answered from
 *   producer state, refusals). Failure: throws `ConditionFailed`, nothing written.
 * - `claimCommitter` — condition: no lease, or one that ran out (`attribute_not_exists(off) OR
 *   until < :now`). Effect: the lease item (`holder`, `until`; `stage` = `lease`, so the replicator's
 *   stream filter passes it by). Failure: returns false.
 * - `renewCommitter` — a transaction item (a group commit adds it to its own transaction when
 *   the lease would run out before the commit's next round): condition: still the holder's
 *   (`holder = :h`). Effect: `until` moved on. Failure: the enclosing transaction writes nothing
 *   and throws `ConditionFailed` (its holder lost the lease: it commits no more).
 * - `releaseCommitter` — condition: still the holder's (`holder = :h`). Effect: the lease deleted.
 *   Failure: nothing (it ran out and another writer holds it).
 * - `markCombining` — condition: the head is the leader's under the holder's epoch (`leaderEpoch =
 *   :epoch AND role = leader`). Effect: the head's `combinedAt` (appends that lost no race stage for
 *   a while: lib/log/staged-commit.ts, `combining`). Failure: nothing — leadership moved (the
 *   holder's next commit finds it), or a transaction in flight on the head (the mark is a hint).
 * - `dropStaged` — condition: still staged. Effect: `dropped`, the batches removed. Met by a
 *   commit's transaction in flight on the item, it asks again (a few times). Failure:
 *   returns the item as stored (committed by someone else, or gone).
 */
import { DeleteCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException, TransactionConflictException } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { S3Pointer } from '../model.js';
import type { ReplicaHead } from '../model.js';
import { COMMITTER_OFFSET, HEAD_OFFSET, STAGE_BASE } from '../tables.js';
import { batchGetAll } from '../batch-get.js';
import { transactWrite, type ConditionFailed } from '../transact.js';
import { client, toHead, type ReplicaStoreRef } from './store.js';

const keyOf = (tp: string, id: number) => ({ tp, off: id - STAGE_BASE });

/** One batch as staged: its bytes (base offset 0) or where in S3 they are, and its header fields. */
export interface StagedBatchItem {
  readonly data?: Uint8Array;
  readonly s3?: S3Pointer;
  readonly recordCount: number;
  readonly maxTimestamp: number;
  readonly sizeBytes: number;
  readonly producerId?: number;
  readonly producerEpoch?: number;
  readonly baseSequence?: number;
  readonly transactional?: boolean;
  readonly control?: 'commit' | 'abort';
}

/** What a commit gave one staged batch: its offsets, or the error that refused it. */
export type StagedOutcome =
  | { readonly base: number; readonly last: number }
  | { readonly error: string; readonly message: string };

export interface StagedItem {
  readonly off: number;
  readonly stage: 'staged' | 'committed' | 'dropped';
  /** The leader epoch its writer appends under: only a commit under that epoch takes it. */
  readonly leaderEpoch: number;
  /** acks=all: its writer waits for the high watermark (the committer commits its round at once). */
  readonly acksAll?: boolean;
  /** acks=all: the ISR count a commit must have (min.insync.replicas). */
  readonly minIsr?: number;
  readonly batches?: readonly StagedBatchItem[];
  /** When committed: one outcome per batch, in order. */
  readonly outcomes?: readonly StagedOutcome[];
  /** When its writer gives up waiting (epoch ms): a commit that could not land before leaves it out. */
  readonly deadline?: number;
  readonly expiresAt: number;
}

const toStaged = (item: Record<string, unknown>): StagedItem => {
  const { tp: _tp, off, ...rest } = item;
  return { ...rest, off: (off as number) + STAGE_BASE } as unknown as StagedItem;
};

/** Puts a staged item. Returns false when its id is taken. */
export async function stageBatches(store: ReplicaStoreRef, tp: string, item: StagedItem): Promise<boolean> {
  try {
    await client(store).send(new PutCommand({
      TableName: store.replicaTable,
      Item: { ...item, ...keyOf(tp, item.off) },
      ConditionExpression: 'attribute_not_exists(off)',
    }));
    return true;
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException) return false;
    throw err;
  }
}

/** The committer lease: who holds it, until when (epoch ms). */
export interface CommitterLease {
  readonly holder: string;
  readonly until: number;
}

/** When DynamoDB's TTL may delete a lease that runs until `until` (an hour after). */
const leaseExpiry = (until: number): number => Math.ceil(until / 1000) + 3600;

/** One read of the stage: the staged items from a stage id on, oldest first, the committer lease, the head. */
export interface Stage {
  readonly head: ReplicaHead | undefined;
  readonly items: StagedItem[];
  readonly lease?: CommitterLease;
}

/** Reads the stage from a stage id on, with the lease and the head: one Query (strongly consistent). */
export async function readStage(store: ReplicaStoreRef, tp: string, fromId: number): Promise<Stage> {
  const items: StagedItem[] = [];
  let head: ReplicaHead | undefined;
  let lease: Stage['lease'];
  let start: Record<string, unknown> | undefined;
  do {
    const res = await client(store).send(new QueryCommand({
      TableName: store.replicaTable,
      KeyConditionExpression: 'tp = :tp AND off BETWEEN :from AND :head',
      ExpressionAttributeValues: { ':tp': tp, ':from': fromId - STAGE_BASE, ':head': HEAD_OFFSET },
      ConsistentRead: true,
      ...(start ? { ExclusiveStartKey: start } : {}),
    }));
    for (const item of res.Items ?? []) {
      if (item.off === HEAD_OFFSET) head = toHead(item);
      else if (item.off === COMMITTER_OFFSET) lease = { holder: item.holder as string, until: item.until as number };
      else items.push(toStaged(item));
    }
    start = res.LastEvaluatedKey;
  } while (start);
  return { head, items, ...(lease ? { lease } : {}) };
}

/** What a waiting writer reads: its own staged item (undefined once gone), the committer lease, the head. */
export interface Waiting {
  readonly head: ReplicaHead | undefined;
  readonly own: StagedItem | undefined;
  readonly lease?: CommitterLease;
}

/**
 * Reads a waiting writer's item, the lease and the head: one strongly consistent BatchGetItem of
 * three keys, however many items are staged (a commit, which needs them all, reads the stage).
 */
export async function readWaiting(store: ReplicaStoreRef, tp: string, own: number): Promise<Waiting> {
  // (keys left unprocessed twice throw: the writer's loop counts a throttled read as a store failure)
  const found = await batchGetAll(client(store), store.replicaTable, [{ tp, off: HEAD_OFFSET }, { tp, off: COMMITTER_OFFSET }, keyOf(tp, own)], 2);
  const at = (off: number) => found.find((item) => item.off === off);
  const head = at(HEAD_OFFSET);
  const lease = at(COMMITTER_OFFSET);
  const item = at(own - STAGE_BASE);
  return {
    head: head ? toHead(head) : undefined,
    own: item ? toStaged(item) : undefined,
    ...(lease ? { lease: { holder: lease.holder as string, until: lease.until as number } } : {}),
  };
}

/** Takes the committer lease until `until` when nobody holds it (or its holder's ran out before `now`). Returns whether it did. */
export async function claimCommitter(store: ReplicaStoreRef, tp: string, holder: string, until: number, now: number): Promise<boolean> {
  try {
    await client(store).send(new PutCommand({
      TableName: store.replicaTable,
      Item: { tp, off: COMMITTER_OFFSET, stage: 'lease', holder, until, expiresAt: leaseExpiry(until) },
      ConditionExpression: 'attribute_not_exists(off) OR #until < :now',
      ExpressionAttributeNames: { '#until': 'until' },
      ExpressionAttributeValues: { ':now': now },
    }));
    return true;
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException) return false;
    throw err;
  }
}

/** The transaction item that renews the committer lease until `until`, on condition `holder` still holds it. */
export function renewCommitter(store: ReplicaStoreRef, tp: string, lease: CommitterLease) {
  return {
    Update: {
      TableName: store.replicaTable,
      Key: { tp, off: COMMITTER_OFFSET },
      UpdateExpression: 'SET #until = :until, expiresAt = :expiresAt',
      ConditionExpression: 'holder = :h',
      ExpressionAttributeNames: { '#until': 'until' },
      ExpressionAttributeValues: { ':until': lease.until, ':expiresAt': leaseExpiry(lease.until), ':h': lease.holder },
    },
  };
}

/** Gives the committer lease back, if `holder` still holds it. */
export async function releaseCommitter(store: ReplicaStoreRef, tp: string, holder: string): Promise<void> {
  try {
    await client(store).send(new DeleteCommand({
      TableName: store.replicaTable,
      Key: { tp, off: COMMITTER_OFFSET },
      ConditionExpression: 'holder = :h',
      ExpressionAttributeValues: { ':h': holder },
    }));
  } catch (err) {
    if (!(err instanceof ConditionalCheckFailedException)) throw err;
  }
}

/** The transaction item that marks a staged item committed with its outcomes, on condition it is still staged. */
export function commitStagedItem(store: ReplicaStoreRef, tp: string, off: number, outcomes: readonly StagedOutcome[]) {
  return {
    Update: {
      TableName: store.replicaTable,
      Key: keyOf(tp, off),
      UpdateExpression: 'SET #stage = :committed, outcomes = :outcomes REMOVE batches',
      ConditionExpression: '#stage = :staged',
      ExpressionAttributeNames: { '#stage': 'stage' },
      ExpressionAttributeValues: { ':committed': 'committed', ':staged': 'staged', ':outcomes': outcomes },
    },
  };
}

/** Marks staged items committed with outcomes that append nothing, on condition the head is still as read. */
export async function settleStaged(
  store: ReplicaStoreRef, tp: string, head: { readonly expectLeo: number; readonly leaderEpoch: number }, marks: readonly { readonly off: number; readonly outcomes: readonly StagedOutcome[] }[],
  lease?: CommitterLease,
): Promise<void> {
  await transactWrite(client(store), [
    {
      ConditionCheck: {
        TableName: store.replicaTable,
        Key: { tp, off: HEAD_OFFSET },
        ConditionExpression: 'leo = :leo AND leaderEpoch = :epoch AND #role = :leader',
        ExpressionAttributeNames: { '#role': 'role' },
        ExpressionAttributeValues: { ':leo': head.expectLeo, ':epoch': head.leaderEpoch, ':leader': 'leader' },
      },
    },
    ...marks.map((m) => commitStagedItem(store, tp, m.off, m.outcomes)),
    ...(lease ? [renewCommitter(store, tp, lease)] : []),
  ], { conflictAttempts: 1 });
}

/**
 * What a commit transaction that lost says, from its cancellation reasons: the head as it is now
 * when the head's condition failed, and which of the staged items it took are no longer staged.
 * `marksFrom` is the index of the first staged item's entry in the transaction. Undefined when
 * that does not tell (a conflict, the head gone, another item's condition alone): the caller reads
 * the stage again.
 */
export function lostCommit(err: ConditionFailed, marks: readonly { readonly off: number }[], marksFrom: number): { readonly head?: ReplicaHead; readonly notStaged: ReadonlySet<number> } | undefined {
  if (err.items.some((i) => i.code !== 'ConditionalCheckFailed')) return undefined;
  const head = err.at(0);
  if (head && !head.current) return undefined;
  if (!head && err.items.some((i) => i.index < marksFrom)) return undefined;
  const notStaged = new Set(err.items.flatMap((i) => {
    const mark = i.index >= marksFrom ? marks[i.index - marksFrom] : undefined;
    return mark ? [mark.off] : [];
  }));
  return { ...(head?.current ? { head: toHead(head.current) } : {}), notStaged };
}

/** Marks the head as combining writers at `at` (see the file comment), if it is still the leader's under `leaderEpoch`. */
export async function markCombining(store: ReplicaStoreRef, tp: string, leaderEpoch: number, at: number): Promise<void> {
  try {
    await client(store).send(new UpdateCommand({
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: 'SET combinedAt = :at',
      ConditionExpression: 'leaderEpoch = :epoch AND #role = :leader',
      ExpressionAttributeNames: { '#role': 'role' },
      ExpressionAttributeValues: { ':at': at, ':epoch': leaderEpoch, ':leader': 'leader' },
    }));
  } catch (err) {
    if (!(err instanceof ConditionalCheckFailedException) && !(err instanceof TransactionConflictException)) throw err;
  }
}

/** How often a take-back that meets a transaction on its item is asked again before it throws (a store failure). */
const DROP_CONFLICT_ATTEMPTS = 5;

/** Takes a staged item back. Returns undefined when it was dropped, else the item as stored (committed, or gone: undefined too). */
export async function dropStaged(store: ReplicaStoreRef, tp: string, off: number): Promise<StagedItem | undefined> {
  for (let attempt = 1; ; attempt++) {
    try {
      await client(store).send(new UpdateCommand({
        TableName: store.replicaTable,
        Key: keyOf(tp, off),
        UpdateExpression: 'SET #stage = :dropped REMOVE batches',
        ConditionExpression: '#stage = :staged',
        ExpressionAttributeNames: { '#stage': 'stage' },
        ExpressionAttributeValues: { ':dropped': 'dropped', ':staged': 'staged' },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }));
      return undefined;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return err.Item ? toStaged(unmarshall(err.Item)) : undefined;
      // (a commit's transaction is writing the item: once it ends, the condition tells which won)
      if (!(err instanceof TransactionConflictException) || attempt >= DROP_CONFLICT_ATTEMPTS) throw err;
      await new Promise((r) => setTimeout(r, 20 * attempt));
    }
  }
}
