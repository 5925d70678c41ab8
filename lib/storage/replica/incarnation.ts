/**
 * A replica store's incarnation: the item naming whose accounting the store's contents belong to,
 * which the controller probes for liveness (`probeStore`, a read) and stamps once it has accounted
 * for them.
 *
 * Conditional writes:
 * - `writeIncarnation` — condition: no controller of a newer lease epoch wrote the item
 *   (`attribute_not_exists(controllerEpoch) OR controllerEpoch <= :epoch`), and it still holds the
 *   incarnation the probe read (`incarnation = :replaces`, or `attribute_not_exists(incarnation)`
 *   when `replaces` is null). Effect: the item put with `incarnation` and `controllerEpoch`.
 *   Failure: returns false.
 * - `stampNewStore` — condition: the store has no incarnation item (`attribute_not_exists(tp)`).
 *   Effect: the item put with `incarnation` (no `controllerEpoch`: a registration is no
 *   controller). Failure: returns what the item holds instead.
 * - `fenceStore` — condition: the item exists and no controller of a newer lease epoch wrote it
 *   (`attribute_exists(tp) AND (attribute_not_exists(controllerEpoch) OR controllerEpoch <= :epoch)`).
 *   Effect: `controllerEpoch = :epoch`. Failure: returns false.
 * - `fencedBy` (a ConditionCheck other writes carry): the item's `controllerEpoch` is still `:epoch`.
 */
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { INCARNATION_KEY } from '../tables.js';
import { client, type ReplicaStoreRef } from './store.js';

/**
 * The controller's liveness probe: one strongly consistent read of the store's incarnation item,
 * bounded by `timeoutMs`. Returns the incarnation, `null` when the store answers without one
 * (a new or wiped store), or `undefined` when it did not answer.
 * Strongly consistent because an eventually consistent read may return the incarnation before
 * the last one written (or none): a healthy store would look wiped, and be fenced.
 */
export async function probeStore(store: ReplicaStoreRef, timeoutMs: number): Promise<string | null | undefined> {
  try {
    const out = await client(store).send(
      new GetCommand({ TableName: store.replicaTable, Key: INCARNATION_KEY, ConsistentRead: true }),
      { abortSignal: AbortSignal.timeout(timeoutMs) },
    );
    return (out.Item?.incarnation as string | undefined) ?? null;
  } catch {
    return undefined;
  }
}

export interface IncarnationWrite {
  /** The new incarnation (already recorded as pending in the broker record, under the lease). */
  readonly incarnation: string;
  /** The writer's controller lease epoch. */
  readonly controllerEpoch: number;
  /** The incarnation the writer's probe read and means to replace; `null` for none. */
  readonly replaces: string | null;
}

/**
 * Marks a store's contents as belonging to `incarnation` (the controller, once it has accounted
 * for them). The lease lives in another table (maybe another endpoint), so the write is fenced by
 * the epoch it leaves in the item instead:
 *
 *   controller A (epoch 7): records X ── stalls ──────────────────────────────── writes X ✗ (8 > 7)
 *   controller B (epoch 8):           takes over ── records Y ── writes Y, epoch 8 ✓
 *
 * Condition: the item's `controllerEpoch` is absent or ≤ the writer's, and the item holds
 * `replaces` (or no incarnation when `replaces` is null) — a store wiped or rewritten since the
 * probe is not stamped as if it held what was accounted for.
 * Effect: `incarnation` and `controllerEpoch` written. Returns false when the condition failed.
 */
export async function writeIncarnation(store: ReplicaStoreRef, w: IncarnationWrite): Promise<boolean> {
  try {
    await client(store).send(new PutCommand({
      TableName: store.replicaTable,
      Item: { ...INCARNATION_KEY, incarnation: w.incarnation, controllerEpoch: w.controllerEpoch },
      ConditionExpression: `(attribute_not_exists(controllerEpoch) OR controllerEpoch <= :epoch) AND ${w.replaces === null ? 'attribute_not_exists(incarnation)' : 'incarnation = :replaces'}`,
      ExpressionAttributeValues: { ':epoch': w.controllerEpoch, ...(w.replaces === null ? {} : { ':replaces': w.replaces }) },
    }));
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}

/**
 * Stamps a store as it is registered: from then on the cluster accounts for its contents, so a
 * store wiped at any time after — before the controller first probed it too — answers without
 * the incarnation the registration records, and is treated as a store that lost its data. Returns
 * the incarnation the store holds: `incarnation` when it had none, else its own (a store already
 * stamped, registered again), or null when its item carries none. Both calls end by `timeoutMs`.
 */
export async function stampNewStore(store: ReplicaStoreRef, incarnation: string, timeoutMs: number): Promise<string | null> {
  const abortSignal = AbortSignal.timeout(timeoutMs);
  try {
    await client(store).send(new PutCommand({
      TableName: store.replicaTable,
      Item: { ...INCARNATION_KEY, incarnation },
      ConditionExpression: 'attribute_not_exists(tp)',
    }), { abortSignal });
    return incarnation;
  } catch (err) {
    if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
    const out = await client(store).send(new GetCommand({ TableName: store.replicaTable, Key: INCARNATION_KEY, ConsistentRead: true }), { abortSignal });
    return (out.Item?.incarnation as string | undefined) ?? null;
  }
}

/**
 * Claims a store for the controller of lease epoch `controllerEpoch` before it deletes a copy there:
 * the lease lives in another table (maybe another endpoint), so the deletes carry `fencedBy`
 * instead, and a controller deposed in the middle deletes nothing once its successor claimed the
 * store — not a copy the broker synced again after the successor's purge:
 *
 *   controller A (epoch 7): claims ── deletes ── stalls ──────────────────────────────────── deletes ✗ (8 ≠ 7)
 *   controller B (epoch 8):                         claims ── deletes all ── broker 3 re-added, syncs
 *
 * Condition: the item exists (a store without one is new or wiped: nothing of it is accounted
 * for yet) and its `controllerEpoch` is ≤ the claimant's. Effect: `controllerEpoch` written.
 * Returns false when the condition failed.
 */
export async function fenceStore(store: ReplicaStoreRef, controllerEpoch: number): Promise<boolean> {
  try {
    await client(store).send(new UpdateCommand({
      TableName: store.replicaTable,
      Key: INCARNATION_KEY,
      UpdateExpression: 'SET controllerEpoch = :epoch',
      ConditionExpression: 'attribute_exists(tp) AND (attribute_not_exists(controllerEpoch) OR controllerEpoch <= :epoch)',
      ExpressionAttributeValues: { ':epoch': controllerEpoch },
    }));
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}

/** The transaction item that keeps a write to `fenceStore`'s claim: the store's `controllerEpoch` is still `controllerEpoch`. */
export const fencedBy = (store: ReplicaStoreRef, controllerEpoch: number) => ({
  ConditionCheck: {
    TableName: store.replicaTable,
    Key: INCARNATION_KEY,
    ConditionExpression: 'controllerEpoch = :epoch',
    ExpressionAttributeValues: { ':epoch': controllerEpoch },
  },
});
