/**
 * Transactions (Kafka's transaction coordinator state, KIP-98 with KIP-890's epoch bump per
 * transaction): `txn`/`<transactional id>` holds a transactional id's producer id and epoch, its
 * state, the partitions and the offsets of the transaction it has open, its timeout; and
 * `txn-aborted`/`<producer id>#<epoch>` marks one aborted transaction, so a read_committed reader
 * can tell which transactional batches to drop (the epoch names one transaction: every transaction
 * ends with an epoch bump).
 *
 * Conditional writes:
 * - `createTxn` — condition: no item for the id (`attribute_not_exists(pk)`). Effect: the item at
 *   `ver` 1. Fails: returns false.
 * - `replaceTxn` — condition: the item is still at `expectVer` (`ver = :v`). Effect: the item
 *   replaced at `expectVer + 1`; with `aborted`, that transaction's aborted mark put in the same
 *   transaction (so no transaction can be aborted without its mark); with `pending`, the group's
 *   pending-offsets item put in the same transaction (so no transaction holds offsets a reader of
 *   the group cannot see pending). Fails: returns false.
 * - `clearPendingOffsets` — condition: the group's pending item is this transaction's (producer id
 *   and epoch). Effect: deleted. Fails: nothing to do (a later transaction's item stays).
 *
 * A group's pending-offsets item lives beside its committed offsets (`offsets#<g>` /
 * `~txn#<transactional id>`, lib/storage/coordination/groups.ts reads both in one Query): the
 * partitions a transaction holds offsets for. A reader that asks for stable offsets (Kafka's
 * `require_stable`) waits while the transaction it names is open or being completed.
 * - `deleteTxn` — condition: still at `expectVer`. Effect: the item deleted. Fails: returns false.
 *
 * Reads: `readTxn` (strongly consistent), `listTxns` (one Query of the `txn` collection),
 * `abortedAmong` (BatchGetItem of the marks asked about).
 */
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { batchGetAll } from '../batch-get.js';
import { transactWrite, ConditionFailed } from '../transact.js';
import { COORDINATION_KEYS, groupPk, memberSk, offsetsPk, PENDING_OFFSETS_SK_PREFIX } from '../tables.js';
import { db, queryAll, strip, table } from './table.js';

export type TxnState = 'Empty' | 'Ongoing' | 'PrepareCommit' | 'PrepareAbort' | 'CompleteCommit' | 'CompleteAbort';

export interface TxnPartition {
  readonly topic: string;
  readonly partition: number;
}

/** Offsets sent in a transaction for one group (committed only if the transaction commits). */
export interface TxnGroupOffsets {
  readonly offsets: readonly { readonly topic: string; readonly partition: number; readonly offset: number; readonly metadata?: string }[];
}

export interface TxnRecord {
  readonly transactionalId: string;
  readonly producerId: number;
  /** The epoch the producer holds now (bumped when a transaction ends and by every init). */
  readonly producerEpoch: number;
  /** The epoch the last transaction ran under (a retried end of it is recognised by it). */
  readonly lastEpoch?: number;
  /** The producer id the last transaction ran under, when its end moved the id to a new one (its epochs had run out). */
  readonly lastProducerId?: number;
  readonly state: TxnState;
  readonly partitions: readonly TxnPartition[];
  /** group id → offsets sent in the open transaction. */
  readonly groups: Readonly<Record<string, TxnGroupOffsets>>;
  readonly timeoutMs: number;
  /** When the open transaction began (ms). */
  readonly startedAt?: number;
  readonly updatedAt: number;
  readonly ver: number;
}

const TXN_PK = COORDINATION_KEYS.transactions;
const ABORTED_PK = COORDINATION_KEYS.abortedTransactions;
const txnKey = (id: string) => ({ pk: TXN_PK, sk: id });
const abortedKey = (producerId: number, epoch: number) => ({ pk: ABORTED_PK, sk: `${producerId}#${epoch}` });

const toRecord = (item: Record<string, unknown>): TxnRecord => ({ ...strip<Omit<TxnRecord, 'transactionalId'>>(item), transactionalId: item.sk as string });

/** A transactional id's item (strongly consistent), or undefined. */
export async function readTxn(transactionalId: string): Promise<TxnRecord | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: txnKey(transactionalId), ConsistentRead: true }));
  return out.Item ? toRecord(out.Item) : undefined;
}

/** Every transactional id's item. */
export async function listTxns(): Promise<TxnRecord[]> {
  const items = await queryAll({ KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': TXN_PK } });
  return items.map(toRecord);
}

const itemOf = (r: Omit<TxnRecord, 'ver'>, ver: number) => {
  const { transactionalId, ...rest } = r;
  return { ...txnKey(transactionalId), ...rest, ver };
};

/** Creates a transactional id's item; false when one exists. */
export async function createTxn(r: Omit<TxnRecord, 'ver'>): Promise<boolean> {
  try {
    await db().send(new PutCommand({ TableName: table(), Item: itemOf(r, 1), ConditionExpression: 'attribute_not_exists(pk)' }));
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}

/**
 * Replaces a transactional id's item if it is still at `expectVer`; with `aborted`, marks that
 * transaction (producer id, epoch) aborted in the same write. False when it lost.
 */
export async function replaceTxn(
  r: Omit<TxnRecord, 'ver'>, expectVer: number,
  also: {
    readonly aborted?: { readonly producerId: number; readonly epoch: number };
    readonly pending?: PendingOffsets;
    /** The group member the pending offsets are fenced by (KIP-447): still at this epoch, or nothing is written. */
    readonly member?: { readonly memberId: string; readonly memberEpoch: number };
  } = {},
): Promise<boolean> {
  const put = { TableName: table(), Item: itemOf(r, expectVer + 1), ConditionExpression: 'ver = :v', ExpressionAttributeValues: { ':v': expectVer } };
  const { aborted, pending, member } = also;
  const extra = [
    ...(pending && member ? [{
      ConditionCheck: {
        TableName: table(), Key: { pk: groupPk(pending.groupId), sk: memberSk(member.memberId) },
        ConditionExpression: 'memberEpoch = :e', ExpressionAttributeValues: { ':e': member.memberEpoch },
      },
    }] : []),
    ...(aborted ? [{ Put: { TableName: table(), Item: { ...abortedKey(aborted.producerId, aborted.epoch), at: Date.now() } } }] : []),
    ...(pending ? [{ Put: { TableName: table(), Item: { ...pendingKey(pending.groupId, pending.transactionalId), ...pending } } }] : []),
  ];
  try {
    if (extra.length === 0) await db().send(new PutCommand(put));
    else await transactWrite(db(), [{ Put: put }, ...extra]);
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException' || err instanceof ConditionFailed) return false;
    throw err;
  }
}

/** Offsets a transaction holds for a group, not committed yet: its partitions as `<topic>#<partition>`. */
export interface PendingOffsets {
  readonly groupId: string;
  readonly transactionalId: string;
  readonly producerId: number;
  /** The epoch of the transaction that holds them. */
  readonly epoch: number;
  readonly partitions: readonly string[];
}

const pendingKey = (groupId: string, transactionalId: string) => ({ pk: offsetsPk(groupId), sk: `${PENDING_OFFSETS_SK_PREFIX}${transactionalId}` });

/** Deletes a group's pending-offsets item of this transaction (a later transaction's stays). */
export async function clearPendingOffsets(groupId: string, transactionalId: string, producerId: number, epoch: number): Promise<void> {
  try {
    await db().send(new DeleteCommand({
      TableName: table(), Key: pendingKey(groupId, transactionalId),
      ConditionExpression: 'producerId = :p AND epoch = :e', ExpressionAttributeValues: { ':p': producerId, ':e': epoch },
    }));
  } catch (err) {
    if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
  }
}

/** Deletes a transactional id's item if it is still at `expectVer`; false when it lost. */
export async function deleteTxn(transactionalId: string, expectVer: number): Promise<boolean> {
  try {
    await db().send(new DeleteCommand({ TableName: table(), Key: txnKey(transactionalId), ConditionExpression: 'ver = :v', ExpressionAttributeValues: { ':v': expectVer } }));
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}

/** Which of these transactions (producer id, epoch) were aborted, as `<producer id>#<epoch>` keys. */
export async function abortedAmong(txns: readonly { readonly producerId: number; readonly epoch: number }[]): Promise<Set<string>> {
  const keys = [...new Map(txns.map((t) => [`${t.producerId}#${t.epoch}`, abortedKey(t.producerId, t.epoch)])).values()];
  return new Set((await batchGetAll(db(), table(), keys)).map((item) => item.sk as string));
}
