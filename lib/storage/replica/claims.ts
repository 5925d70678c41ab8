/**
 * Full-sync claims: a full sync marks a replica's head `snapshotting` before it refills the log,
 * fills the replica only while it holds the claim, keeps the claim alive, and gives it back.
 *
 * Conditional writes:
 * - `fillClaimed` — condition, in every transaction: the head still holds this claim
 *   (`snapshotting = :t`). Effect: the batch items and producer states put, up to 99 (and about
 *   2 MB) a transaction. Failure: throws `ConditionFailed` (index 0 carries the current head); that
 *   transaction wrote nothing, earlier ones stay written.
 * - `claimHead` — condition, without `prior`: the head exists and is unclaimed
 *   (`attribute_exists(tp) AND attribute_not_exists(snapshotting)`); with `prior`: still the stale
 *   claim that was read (`snapshotting = :p AND snapshotRenewedAt = :r`, or no
 *   `snapshotRenewedAt`), so a claim renewed since is not taken over. Effect: `snapshotting` and
 *   `snapshotRenewedAt` = `at`. Failure: returns false.
 * - `renewClaim` — condition: still this claim (`snapshotting = :t`). Effect: `snapshotRenewedAt =
 *   at` (0 gives the claim up). Failure: returns false.
 * - `releaseClaim` — condition: still this claim (`snapshotting = :t`). Effect: `snapshotting` and
 *   `snapshotRenewedAt` removed. Failure: returns false.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { BatchRecord, StoredProducerState } from '../model.js';
import { HEAD_OFFSET, producersKey } from '../tables.js';
import { MAX_TRANSACTION_ITEMS, transactWrite } from '../transact.js';
import { toItems } from './items.js';
import { client, type ReplicaStoreRef } from './store.js';

/**
 * Writes a snapshot's batches and producer states into a replica that a full sync claimed, in
 * transactions that each check the claim: once another sync took the replica over, a stale one
 * (paused, or slow) cannot write a single item into it.
 * Condition: the head's `snapshotting` is `claimedAt`. Errors: `ConditionFailed`.
 */
export async function fillClaimed(
  store: ReplicaStoreRef, tp: string, claimedAt: number,
  batches: readonly BatchRecord[], producers: readonly Omit<StoredProducerState, 'ver'>[], pack = false,
): Promise<void> {
  const items = [
    ...toItems(batches, pack).map((b) => ({ tp, off: b.lastOffset, ...b })),
    ...producers.map((st) => ({ tp: producersKey(tp), off: st.producerId, ...st, ver: Date.now() })),
  ];
  const check = { ConditionCheck: { TableName: store.replicaTable, Key: { tp, off: HEAD_OFFSET }, ConditionExpression: 'snapshotting = :t', ExpressionAttributeValues: { ':t': claimedAt } } };
  for (let i = 0; i < items.length;) {
    // Up to 99 items and well under the 4 MB a transaction may carry.
    let bytes = 0;
    let j = i;
    while (j < items.length && j - i < MAX_TRANSACTION_ITEMS - 1 && bytes < 2_000_000) bytes += approxBytes(items[j++]);
    await transactWrite(client(store), [check, ...items.slice(i, j).map((Item) => ({ Put: { TableName: store.replicaTable, Item } }))]);
    i = j;
  }
}

const approxBytes = (item: Record<string, unknown> | undefined): number => {
  const data = item?.data;
  return 200 + (data instanceof Uint8Array ? data.length : 0);
};

/**
 * Claims a replica for a full sync without touching its log: the head gets `snapshotting` (and
 * `snapshotRenewedAt`) = `at`, and from then on no copy step or truncation writes to it.
 * Condition: without `prior`, the head exists and is not claimed; with `prior`, it is still the
 * claim that was read as stale (same `snapshotting` and `snapshotRenewedAt`: one renewed since
 * is not taken over). Returns false when the condition failed — unless the head holds this very
 * claim (a retry after a lost answer).
 */
export async function claimHead(
  store: ReplicaStoreRef, tp: string, at: number, prior?: { readonly snapshotting: number; readonly snapshotRenewedAt?: number },
): Promise<boolean> {
  const renewed = prior?.snapshotRenewedAt;
  try {
    await client(store).send(new UpdateCommand({
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: 'SET snapshotting = :at, snapshotRenewedAt = :at',
      ConditionExpression: !prior
        ? 'attribute_exists(tp) AND attribute_not_exists(snapshotting)'
        : `snapshotting = :p AND ${renewed === undefined ? 'attribute_not_exists(snapshotRenewedAt)' : 'snapshotRenewedAt = :r'}`,
      ExpressionAttributeValues: { ':at': at, ...(prior ? { ':p': prior.snapshotting } : {}), ...(renewed === undefined ? {} : { ':r': renewed }) },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    }));
    return true;
  } catch (err) {
    if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
    // A retry of this very claim, whose first answer was lost, finds the claim it made itself.
    const raw = (err as { Item?: Record<string, AttributeValue> }).Item;
    const current = raw ? unmarshall(raw) : undefined;
    return current?.snapshotting === at && current.snapshotRenewedAt === at;
  }
}

/**
 * Shows a full sync's claim is alive (`at` = now), or gives it up (`at` = 0: stale at once).
 * Condition: the head's `snapshotting` is `claimedAt`. Returns false when it failed.
 */
export async function renewClaim(store: ReplicaStoreRef, tp: string, claimedAt: number, at: number): Promise<boolean> {
  try {
    await client(store).send(new UpdateCommand({
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: 'SET snapshotRenewedAt = :at',
      ConditionExpression: 'snapshotting = :t',
      ExpressionAttributeValues: { ':t': claimedAt, ':at': at },
    }));
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}

/**
 * Ends a full sync's claim of a replica whose log it never touched: the head is left as it was
 * before the claim (and any role pushed meanwhile).
 * Condition: the head's `snapshotting` is `claimedAt`. Effect: `snapshotting` and
 * `snapshotRenewedAt` removed. Returns false when the condition failed.
 */
export async function releaseClaim(store: ReplicaStoreRef, tp: string, claimedAt: number): Promise<boolean> {
  try {
    await client(store).send(new UpdateCommand({
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: 'REMOVE snapshotting, snapshotRenewedAt',
      ConditionExpression: 'snapshotting = :t',
      ExpressionAttributeValues: { ':t': claimedAt },
    }));
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}
