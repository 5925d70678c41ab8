/**
 * A follower's truncation after a leader epoch change (KIP-101): its log cut back to whole batches
 * and marked reconciled with the epoch, at most once per epoch.
 *
 * Conditional writes:
 * - `truncateLog` — condition, in every transaction: the head is still the one read (its log end
 *   as the previous transaction left it), not yet reconciled with its epoch, and not being filled
 *   by a full sync (`leo = :expect AND leaderEpoch = :epoch AND (attribute_not_exists(syncEpoch)
 *   OR syncEpoch <> :epoch) AND attribute_not_exists(snapshotting) AND logId = :logId`, or no
 *   `logId`); each producer state at its expected version. Effect: the batch items from the new
 *   log end up deleted highest first, 98 a transaction, each transaction lowering the head's `leo`
 *   (and `hw`, the epoch cache) to the base of the lowest batch it deletes — the head never claims
 *   a batch that is gone; the last transaction also puts back the batches below the new end of an
 *   item that held batches on both sides of it, sets `syncEpoch = leaderEpoch`, a new `logId`
 *   and the producer states that fit (the others first, on the same head condition). Returns the
 *   new log end. Failure: throws `ConditionFailed` (index 0 carries the current head when the
 *   head's condition failed); that transaction wrote nothing, earlier ones stay written.
 */
import { randomUUID } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { ReplicaHead, StoredProducerState } from '../model.js';
import { HEAD_OFFSET } from '../tables.js';
import { MAX_TRANSACTION_ITEMS, transactWrite } from '../transact.js';
import { producerDelete, producerPut } from './producer-states.js';
import { toItems } from './items.js';
import { batchStartAt, queryBatches } from './reads.js';
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
 * `toOffset` is one of those deleted; a log end inside it would leave a hole). An item that holds
 * batches on both sides of the new end is deleted and its batches below the end put back as a new
 * item, in the last transaction.
 *
 * The batches above the new end go highest first, each transaction lowering the head's log end to
 * the lowest batch it deletes, so at every step the head's log end is where its batches end: a
 * truncator that stops part way leaves a shorter log, never a hole (a head that claims batches that
 * are gone, which a later election could make a leader's). The last transaction marks the head
 * reconciled (`syncEpoch`, a new `logId`, the producers' states on condition of their versions).
 *
 * Condition (every transaction): the head has the leo the previous step left, `head`'s leader
 * epoch and `logId`, no full sync, and is not yet reconciled with its leader epoch (`syncEpoch` ≠
 * `leaderEpoch`): a follower's log never shrinks once reconciled within one leader epoch — only a
 * new epoch truncates, once. So a truncator that read the head before another one truncated it (and
 * copied the leader's batches in) deletes nothing; one that stops part way leaves the head
 * unreconciled (no copier writes to it) and the next attempt carries on from there.
 * Returns the log end it set. Errors: `ConditionFailed` (that transaction wrote nothing).
 */
export async function truncateLog(
  store: ReplicaStoreRef, tp: string, head: ReplicaHead, toOffset: number, producers: readonly ProducerStateTruncation[] = [], openTxns?: Readonly<Record<string, number>>,
): Promise<number> {
  const leo = toOffset < head.leo ? await batchStartAt(store, tp, toOffset) : head.leo;
  const doomed = leo < head.leo ? (await batchesFrom(store, tp, leo)).reverse() : [];
  // An item holding batches on both sides of the new end (lib/storage/replica/items.ts) is
  // rewritten with those below it, in the last transaction: the log never holds a hole.
  const straddler = doomed[doomed.length - 1];
  const kept = straddler && straddler.baseOffset < leo
    ? toItems(await queryBatches(store, tp, { fromOffset: straddler.baseOffset, toOffset: leo - 1, maxBytes: Number.MAX_SAFE_INTEGER }), true)
    : [];
  const stateWrites = producers.map((p) => p.state
    ? producerPut(store, tp, { state: p.state, expectVer: p.expectVer })
    : producerDelete(store, tp, p.producerId, p.expectVer));
  // (room in the last transaction for the rewritten item too)
  const CHUNK = MAX_TRANSACTION_ITEMS - 2 - kept.length;
  let at = head.leo;
  // Every chunk but the last (the lowest batches), highest first, each lowering the log end.
  const chunks = Array.from({ length: Math.ceil(doomed.length / CHUNK) }, (_, i) => doomed.slice(i * CHUNK, (i + 1) * CHUNK));
  const last = chunks.pop() ?? [];
  for (const chunk of chunks) {
    const to = Math.min(...chunk.map((b) => b.baseOffset));
    await transactWrite(client(store), [lowerHead(store, tp, head, at, to), ...deletes(store, tp, chunk)]);
    at = to;
  }
  // The producers' states that do not fit beside the last deletes: before them, on the same head.
  const room = MAX_TRANSACTION_ITEMS - 1 - last.length - kept.length;
  const check = headUnchanged(head, at);
  for (let i = room; i < stateWrites.length; i += MAX_TRANSACTION_ITEMS - 1) await transactWrite(client(store), [headCheck(store, tp, check), ...stateWrites.slice(i, i + MAX_TRANSACTION_ITEMS - 1)]);
  await transactWrite(client(store), [
    lowerHead(store, tp, head, at, leo, true, openTxns), ...deletes(store, tp, last),
    ...kept.map((b) => ({ Put: { TableName: store.replicaTable, Item: { tp, off: b.lastOffset, ...b } } })),
    ...stateWrites.slice(0, room),
  ]);
  return leo;
}

/**
 * The head's log end lowered from `from` to `to` (hw and the epoch cache with it), on `head`'s
 * condition; `reconcile`: marked reconciled with its epoch too, with the open transactions the
 * truncated producer states leave (`openTxns`, when they change).
 */
function lowerHead(store: ReplicaStoreRef, tp: string, head: ReplicaHead, from: number, to: number, reconcile = false, openTxns?: Readonly<Record<string, number>>) {
  const check = headUnchanged(head, from);
  const txns = reconcile && openTxns !== undefined;
  return {
    Update: {
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: `SET leo = :leo, hw = :hw, epochs = :epochs${reconcile ? ', syncEpoch = :epoch, logId = :newLogId' : ''}${txns ? ', openTxns = :openTxns' : ''}`,
      ConditionExpression: check.expression,
      ExpressionAttributeValues: {
        ...check.values,
        ':leo': to, ':hw': Math.min(head.hw, to), ':epochs': head.epochs.filter(([, start]) => start < to).map((e) => [...e]),
        ...(reconcile ? { ':newLogId': randomUUID() } : {}),
        ...(txns ? { ':openTxns': openTxns } : {}),
      },
    },
  };
}

const deletes = (store: ReplicaStoreRef, tp: string, batches: readonly { readonly off: number }[]) =>
  batches.map((b) => ({ Delete: { TableName: store.replicaTable, Key: { tp, off: b.off } } }));

/** A condition that a head is still the one `head` was read as, and still to be reconciled with its epoch. */
interface HeadCondition {
  readonly expression: string;
  readonly values: Record<string, unknown>;
}

function headUnchanged(head: ReplicaHead, leo: number): HeadCondition {
  return {
    expression: 'leo = :expect AND leaderEpoch = :epoch AND (attribute_not_exists(syncEpoch) OR syncEpoch <> :epoch) AND attribute_not_exists(snapshotting) AND '
      + (head.logId === undefined ? 'attribute_not_exists(logId)' : 'logId = :logId'),
    values: { ':expect': leo, ':epoch': head.leaderEpoch, ...(head.logId === undefined ? {} : { ':logId': head.logId }) },
  };
}

const headCheck = (store: ReplicaStoreRef, tp: string, c: HeadCondition) => ({
  ConditionCheck: { TableName: store.replicaTable, Key: { tp, off: HEAD_OFFSET }, ConditionExpression: c.expression, ExpressionAttributeValues: c.values },
});

/** The keys and base offsets of every batch item keyed at or above `fromOffset` (the key is the item's last offset), in offset order. */
async function batchesFrom(store: ReplicaStoreRef, tp: string, fromOffset: number): Promise<{ off: number; baseOffset: number }[]> {
  const out: { off: number; baseOffset: number }[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const res = await client(store).send(new QueryCommand({
      TableName: store.replicaTable,
      KeyConditionExpression: 'tp = :tp AND off >= :from',
      ExpressionAttributeValues: { ':tp': tp, ':from': fromOffset },
      ProjectionExpression: 'off, baseOffset',
      ConsistentRead: true,
      ExclusiveStartKey: start,
    }));
    out.push(...(res.Items ?? []).map((i) => ({ off: i.off as number, baseOffset: i.baseOffset as number })));
    start = res.LastEvaluatedKey;
  } while (start);
  return out;
}
