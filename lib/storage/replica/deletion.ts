/**
 * Removing items from a replica table — a deleted partition, a removed replica's copy, a full
 * sync's restart, a removed broker's whole table — and listing the S3 objects a partition's batch
 * items point to (the garbage pass keeps those).
 *
 * Conditional writes:
 * - `deleteLog` — condition, in every transaction: the head still holds this full sync's claim
 *   (`snapshotting = :t`). Effect: the partition's batch items and producer states deleted, up to
 *   99 a transaction; the head kept. Failure: throws `ConditionFailed` (index 0 carries the
 *   current head); that transaction deleted nothing, earlier ones stay deleted.
 * - `purgePartition` — condition, in every transaction: the store is still claimed by this
 *   controller's lease epoch (`fencedBy`, lib/storage/replica/incarnation.ts). Effect: the
 *   partition's head, batches, producer states and committer lease deleted, up to 99 a transaction
 *   (all, or as many as a time budget allows). Failure: throws `ConditionFailed`; that transaction
 *   deleted nothing, earlier ones stay deleted.
 * - `emptyStore` — condition, in every transaction: as `purgePartition`'s. Effect: every item of
 *   the table deleted, up to 99 a transaction, the incarnation item that holds the claim last.
 *   Failure: as `purgePartition`'s.
 * - `deletePartition` — no condition: batched deletes of a partition's head, batches, producer
 *   states and committer lease.
 */
import { QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { COMMITTER_OFFSET, HEAD_OFFSET, INCARNATION_KEY, producersKey } from '../tables.js';
import { MAX_TRANSACTION_ITEMS, transactWrite } from '../transact.js';
import { readHead, tailStartOf } from './head.js';
import { fencedBy, fenceStore } from './incarnation.js';
import { batchWriteAll, client, DELETE_CALLS_IN_FLIGHT, type ReplicaStoreRef } from './store.js';

/**
 * How a page of keys is deleted: `step` keys between two looks at the clock, each step by `remove`.
 */
interface Remover {
  readonly step: number;
  readonly remove: (keys: Record<string, unknown>[]) => Promise<void>;
}

/** Unconditional deletes: BatchWriteItems of 25, DELETE_CALLS_IN_FLIGHT at once. */
const unconditional = (store: ReplicaStoreRef): Remover => ({
  step: 25 * DELETE_CALLS_IN_FLIGHT,
  remove: (keys) => batchWriteAll(store, keys.map((Key) => ({ DeleteRequest: { Key } })), DELETE_CALLS_IN_FLIGHT),
});

/**
 * Deletes that each transaction makes with `check`: 99 keys and the check a transaction, one
 * transaction at a time (each checks the same item).
 */
const checked = (store: ReplicaStoreRef, check: Record<string, unknown>): Remover => ({
  step: MAX_TRANSACTION_ITEMS - 1,
  remove: async (keys) => {
    for (let i = 0; i < keys.length; i += MAX_TRANSACTION_ITEMS - 1) {
      await transactWrite(client(store), [check, ...keys.slice(i, i + MAX_TRANSACTION_ITEMS - 1).map((Key) => ({ Delete: { TableName: store.replicaTable, Key } }))]);
    }
  },
});

/**
 * Deletes a partition from a replica table: its head, every batch, every producer state and the
 * committer lease. Round items (below the lease, lib/storage/replica/rounds.ts) are left to their
 * TTL: a busy leader holds one per commit of the last day, and no writer reads one of another
 * leader epoch. For a partition no copy of which can come back (a deleted topic's: its id is
 * never reused). With `until` (epoch ms) it stops once past it, after at least one call of
 * deletes; returns whether everything is deleted.
 */
export async function deletePartition(store: ReplicaStoreRef, tp: string, until = Number.POSITIVE_INFINITY): Promise<boolean> {
  return deleteCopy(store, tp, unconditional(store), until);
}

/**
 * Deletes a replica's copy of a partition that stays (a broker's the partition moved away from),
 * as `deletePartition` does, under the store's claim by the controller of lease epoch
 * `controllerEpoch` (`fenceStore`, taken first): a controller deposed while it deletes stops at
 * its next transaction, and deletes nothing of a copy the broker synced again since.
 * Errors: `ConditionFailed` once the claim is gone.
 */
export async function purgePartition(store: ReplicaStoreRef, tp: string, controllerEpoch: number, until = Number.POSITIVE_INFINITY): Promise<boolean> {
  return deleteCopy(store, tp, checked(store, fencedBy(store, controllerEpoch)), until);
}

async function deleteCopy(store: ReplicaStoreRef, tp: string, remover: Remover, until: number): Promise<boolean> {
  if (!(await deleteAll(store, tp, COMMITTER_OFFSET, remover, until))) return false;
  return deleteAll(store, producersKey(tp), undefined, remover, until);
}

/**
 * Deletes a partition's batches and producer states, keeping its head, for the full sync that
 * holds the claim `claimedAt`: each transaction of deletes checks the claim, so a claimant that
 * lost it (paused, then taken over) deletes nothing of what its successor wrote.
 * Condition: the head's `snapshotting` is `claimedAt`. Errors: `ConditionFailed`.
 */
export async function deleteLog(store: ReplicaStoreRef, tp: string, claimedAt: number): Promise<void> {
  const remover = checked(store, { ConditionCheck: { TableName: store.replicaTable, Key: { tp, off: HEAD_OFFSET }, ConditionExpression: 'snapshotting = :t', ExpressionAttributeValues: { ':t': claimedAt } } });
  await deleteAll(store, tp, 0, remover);
  await deleteAll(store, producersKey(tp), undefined, remover);
}

/**
 * Keys a page of the deleting Query asks for. Without a limit a page is 1 MB of items as stored,
 * thousands of small ones (a busy partition's round items) — a read a loaded store may not
 * answer within the client's request timeout, so that a purge that starts over could never pass it.
 */
const DELETE_PAGE_KEYS = 500;

/**
 * Deletes every item under `key` (from offset `fromOff` on), a page of keys at a time, by
 * `remover`. Past `until` it stops after the deletes it sent (at least one step of them) and
 * returns false; true once everything is deleted.
 */
async function deleteAll(store: ReplicaStoreRef, key: string, fromOff: number | undefined, remover: Remover, until = Number.POSITIVE_INFINITY): Promise<boolean> {
  let start: Record<string, unknown> | undefined;
  let sent = false;
  do {
    const out = await client(store).send(new QueryCommand({
      TableName: store.replicaTable,
      KeyConditionExpression: fromOff === undefined ? 'tp = :tp' : 'tp = :tp AND off >= :from',
      ExpressionAttributeValues: { ':tp': key, ...(fromOff === undefined ? {} : { ':from': fromOff }) },
      ProjectionExpression: 'tp, off',
      Limit: DELETE_PAGE_KEYS,
      // (what a failed sync wrote just before it gave its claim up must be seen)
      ConsistentRead: true,
      ExclusiveStartKey: start,
    }));
    const keys = (out.Items ?? []).map((k) => ({ tp: k.tp, off: k.off }));
    // (with no budget, the page goes to `remove` whole)
    const step = until === Number.POSITIVE_INFINITY ? Math.max(1, keys.length) : remover.step;
    for (let i = 0; i < keys.length; i += step) {
      if (sent && Date.now() >= until) return false;
      await remover.remove(keys.slice(i, i + step));
      sent = true;
    }
    start = out.LastEvaluatedKey;
    if (start && sent && Date.now() >= until) return false;
  } while (start);
  return true;
}

/**
 * The `data/` objects a replica's table tail points to for a partition (large batches kept in S3):
 * a paged, strongly consistent Query of the batch items from the head's tail start, projecting
 * `s3` (the garbage pass keeps every object named here). Below the tail start the items are rolled
 * (a segment holds or adopted their bytes) and wait for their expiry: nothing reads them. Reads
 * every batch item of the table tail (billed by item size).
 */
export async function batchPointerKeys(store: ReplicaStoreRef, tp: string): Promise<Set<string>> {
  const keys = new Set<string>();
  const head = await readHead(store, tp);
  const from = head ? tailStartOf(head) : 0;
  let start: Record<string, unknown> | undefined;
  do {
    const out = await client(store).send(new QueryCommand({
      TableName: store.replicaTable,
      KeyConditionExpression: 'tp = :tp AND off >= :from',
      FilterExpression: 'attribute_exists(s3)',
      ExpressionAttributeNames: { '#s3': 's3' },
      ExpressionAttributeValues: { ':tp': tp, ':from': from },
      ProjectionExpression: '#s3',
      ConsistentRead: true,
      ExclusiveStartKey: start,
    }));
    for (const item of out.Items ?? []) {
      const key = (item.s3 as { key?: unknown } | undefined)?.key;
      if (typeof key === 'string') keys.add(key);
    }
    start = out.LastEvaluatedKey;
  } while (start);
  return keys;
}

/**
 * Deletes every item of a broker's replica table (a removed broker's, once nothing refers to it), a
 * page of keys at a time, under the store's claim by the controller of lease epoch
 * `controllerEpoch` (`fenceStore`, taken first; the incarnation item that holds the claim goes
 * last): a controller deposed while it empties the table stops at its next transaction, and
 * deletes nothing of a table the broker was given again since. Returns the items deleted, or
 * undefined when the claim could not be taken (a newer controller holds the store, or it has no
 * incarnation yet). Errors: `ConditionFailed` once the claim is gone.
 */
export async function emptyStore(store: ReplicaStoreRef, controllerEpoch: number): Promise<number | undefined> {
  if (!(await fenceStore(store, controllerEpoch))) return undefined;
  const remover = checked(store, fencedBy(store, controllerEpoch));
  const isIncarnation = (k: Record<string, unknown>) => k.tp === INCARNATION_KEY.tp && k.off === INCARNATION_KEY.off;
  let deleted = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const out = await client(store).send(new ScanCommand({ TableName: store.replicaTable, ProjectionExpression: 'tp, #o', ExpressionAttributeNames: { '#o': 'off' }, ExclusiveStartKey: start }));
    const keys = (out.Items ?? []).filter((k) => !isIncarnation(k));
    await remover.remove(keys);
    deleted += keys.length;
    start = out.LastEvaluatedKey;
  } while (start);
  await transactWrite(client(store), [{
    Delete: { TableName: store.replicaTable, Key: INCARNATION_KEY, ConditionExpression: 'controllerEpoch = :epoch', ExpressionAttributeValues: { ':epoch': controllerEpoch } },
  }]);
  return deleted + 1;
}
