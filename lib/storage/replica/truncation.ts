/**
 * A follower's truncation after a leader epoch change (KIP-101): its log cut back to whole batches
 * and marked reconciled with the epoch, at most once per epoch.
 *
 * Conditional writes:
 * - `truncateLog` — condition, in every transaction: the head is still the one read, not yet
 *   reconciled with its epoch, and not being filled by a full sync (`leo = :expect AND leaderEpoch
 *   = :epoch AND (attribute_not_exists(syncEpoch) OR syncEpoch <> :epoch) AND
 *   attribute_not_exists(snapshotting) AND logId = :logId`, or no `logId`); each producer state at
 *   its expected version. Effect: the batch items from the new log end up deleted (99 a
 *   transaction); producer states that do not fit in the last transaction put or deleted; then,
 *   in one transaction, head `leo`, `hw` (at most the new `leo`), the epoch cache below it,
 *   `syncEpoch = leaderEpoch`, a new `logId`, with the remaining producer states. Returns the new
 *   log end. Failure: throws `ConditionFailed` (index 0 carries the current head when the head's
 *   condition failed); that transaction wrote nothing, earlier ones stay written.
 */
import { randomUUID } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { ReplicaHead, StoredProducerState } from '../model.js';
import { HEAD_OFFSET } from '../tables.js';
import { MAX_TRANSACTION_ITEMS, transactWrite } from '../transact.js';
import { producerDelete, producerPut } from './producer-states.js';
import { batchStartAt } from './reads.js';
import { client, type ReplicaStoreRef } from './store.js';

/** A producer's state after a truncation (none: delete it), written only if its version is still `expectVer`. */
export interface ProducerStateTruncation {
  readonly producerId: number;
  readonly state?: Omit<StoredProducerState, 'ver'>;
  readonly expectVer: number;
}

/**
 * Truncates a follower's log to `toOffset` and marks it reconciled with its leader epoch (KIP-101).
 * Whole batches only, as Kafka truncates: when `toOffset` falls inside a batch, the log ends at
 * that batch's base offset (batch items are keyed by their last offset, so the batch holding
 * `toOffset` is one of those deleted; a log end inside it would leave a hole).
 *
 *   1. delete every batch item from the truncation point up, in transactions that each check the
 *      head is still the one `head` was read as
 *   2. one transaction: the head (leo, hw, epoch cache, `syncEpoch`, a new `logId`) on the same
 *      condition, with the producers' states on condition of their versions
 *
 * Condition (both steps): the head has `head`'s leo, leader epoch and `logId`, no full sync, and
 * is not yet reconciled with its leader epoch (`syncEpoch` ≠ `leaderEpoch`): a follower's log never
 * shrinks within one leader epoch — only a new epoch truncates, once. So a truncator that read the
 * head before another one truncated it (and copied the leader's batches in) deletes nothing; one
 * that stops between 1 and 2 leaves the head unreconciled (no copier writes to it) over a tail
 * the next attempt deletes again.
 * Returns the log end it set. Errors: `ConditionFailed` (that transaction wrote nothing).
 */
export async function truncateLog(store: ReplicaStoreRef, tp: string, head: ReplicaHead, toOffset: number, producers: readonly ProducerStateTruncation[] = []): Promise<number> {
  const check = headUnchanged(head);
  const leo = toOffset < head.leo ? await batchStartAt(store, tp, toOffset) : head.leo;
  if (leo < head.leo) await deleteBatchesFrom(store, tp, leo, check);
  const stateWrites = producers.map((p) => p.state
    ? producerPut(store, tp, { state: p.state, expectVer: p.expectVer })
    : producerDelete(store, tp, p.producerId, p.expectVer));
  const room = MAX_TRANSACTION_ITEMS - 1;
  // (more producers than one transaction holds: the rest first, each still conditioned on its version)
  for (let i = room; i < stateWrites.length; i += MAX_TRANSACTION_ITEMS - 1) await transactWrite(client(store), [headCheck(store, tp, check), ...stateWrites.slice(i, i + MAX_TRANSACTION_ITEMS - 1)]);
  await transactWrite(client(store), [{
    Update: {
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: 'SET leo = :leo, hw = :hw, epochs = :epochs, syncEpoch = :epoch, logId = :newLogId',
      ConditionExpression: check.expression,
      ExpressionAttributeValues: {
        ...check.values,
        ':leo': leo, ':hw': Math.min(head.hw, leo), ':epochs': head.epochs.filter(([, start]) => start < leo).map((e) => [...e]),
        ':newLogId': randomUUID(),
      },
    },
  }, ...stateWrites.slice(0, room)]);
  return leo;
}

/** A condition that a head is still the one `head` was read as, and still to be reconciled with its epoch. */
interface HeadCondition {
  readonly expression: string;
  readonly values: Record<string, unknown>;
}

function headUnchanged(head: ReplicaHead): HeadCondition {
  return {
    expression: 'leo = :expect AND leaderEpoch = :epoch AND (attribute_not_exists(syncEpoch) OR syncEpoch <> :epoch) AND attribute_not_exists(snapshotting) AND '
      + (head.logId === undefined ? 'attribute_not_exists(logId)' : 'logId = :logId'),
    values: { ':expect': head.leo, ':epoch': head.leaderEpoch, ...(head.logId === undefined ? {} : { ':logId': head.logId }) },
  };
}

const headCheck = (store: ReplicaStoreRef, tp: string, c: HeadCondition) => ({
  ConditionCheck: { TableName: store.replicaTable, Key: { tp, off: HEAD_OFFSET }, ConditionExpression: c.expression, ExpressionAttributeValues: c.values },
});

/**
 * Deletes every batch item at or above `fromOffset` (the key is the batch's last offset), up to
 * 99 per transaction, each transaction on `check` of the head: once the head moved, nothing more
 * is deleted. Errors: `ConditionFailed`.
 */
async function deleteBatchesFrom(store: ReplicaStoreRef, tp: string, fromOffset: number, check: HeadCondition): Promise<void> {
  for (;;) {
    const out = await client(store).send(new QueryCommand({
      TableName: store.replicaTable,
      KeyConditionExpression: 'tp = :tp AND off >= :from',
      ExpressionAttributeValues: { ':tp': tp, ':from': fromOffset },
      ProjectionExpression: 'tp, off',
      ConsistentRead: true,
      Limit: MAX_TRANSACTION_ITEMS - 1,
    }));
    const keys = out.Items ?? [];
    if (keys.length === 0) return;
    await transactWrite(client(store), [
      headCheck(store, tp, check),
      ...keys.map((k) => ({ Delete: { TableName: store.replicaTable, Key: { tp: k.tp, off: k.off } } })),
    ]);
  }
}
