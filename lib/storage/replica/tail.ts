/**
 * The table tail's bounds: `tailStart` moves up once a roll put the batches below it in S3 (or
 * retention dropped them), the log start offset rises, the roll trigger's byte count is corrected.
 *
 * Conditional writes:
 * - `advanceTailStart` — condition: the replica holds everything below `end`, its tail starts
 *   below it, and no full sync fills it (`leo >= :end AND (attribute_not_exists(tailStart) OR
 *   tailStart < :end) AND attribute_not_exists(snapshotting)`). Effect: `tailStart = end`,
 *   `tailBytes` less the dropped batches' bytes, `tailSince = now`; then the batch items below
 *   `end` that carry no `expiresAt` deleted, unconditionally (the others expire by DynamoDB's
 *   TTL); returns true. Failure: returns false — after deleting those items when the head already
 *   says `tailStart >= end` (finishing a call that stopped between the two steps), having deleted
 *   nothing otherwise.
 * - `correctTailBytes` — condition: the head exists (`attribute_exists(tp)`). Effect: `tailBytes +
 *   delta`. Failure: nothing written, no error.
 * - `raiseLogStart` — condition: the log start moves up and the replica holds the offset
 *   (`logStartOffset < :o AND leo >= :o`). Effect: `logStartOffset = offset`, and `tailStart` =
 *   the old log start when it had none. Failure: returns false.
 *
 * `batchBoundsBelow` reads, strongly consistent.
 */
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { HEAD_OFFSET } from '../tables.js';
import { readHead, tailStartOf } from './head.js';
import { batchWriteAll, client, DELETE_CALLS_IN_FLIGHT, type ReplicaStoreRef } from './store.js';

/**
 * A roll's last step on one replica (or retention dropping batches wholly below the log start):
 * the table stops holding [tailStart, end), which is now in live S3 segments (or deleted).
 *
 *   1. the head: `tailStart = end`, `tailBytes` less the bytes of the batches below `end`,
 *      `tailSince` now
 *   2. the batch items below `end` that carry no `expiresAt` (written before batches carried
 *      one), deleted: the others expire by DynamoDB's TTL. Nothing reads below the tail start (a
 *      reader that read the head before 1 falls back to segments when it misses them), so a
 *      trim costs one head write, not a write unit per batch per replica.
 *
 * Condition (1): the replica holds everything below `end` (`leo >= end`), its tailStart is below
 * `end` (never moves back), and no full sync fills it. A replica that fails it is skipped (false):
 * a lagging one gets the leader's segment list through a full sync, a later pass retries the rest.
 * `end` must be a batch boundary; `known`: the batches in [tailStart, end), when the caller read
 * them (else a Query from the head's tail start finds them). Returns whether the head moved (the
 * deletes run either way when the head already says `end` or more, so a crash between 1 and 2 is
 * finished by the next call).
 */
export async function advanceTailStart(
  store: ReplicaStoreRef, tp: string, end: number, now = Date.now(), known?: readonly BatchKey[],
): Promise<boolean> {
  // (a roller that read the leader's batches passes them, saving a Query per replica: every replica
  // holds the same batches, though packed into items of its own (items.ts) — what is deleted by key
  // below is only items without `expiresAt`, never packed, so keyed by their one batch everywhere)
  const below = known ?? await batchKeysBetween(store, tp, tailStartOf((await readHead(store, tp)) ?? { logStartOffset: 0 }), end);
  const dropped = below.reduce((n, b) => n + b.sizeBytes, 0);
  let moved = true;
  try {
    await client(store).send(new UpdateCommand({
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: 'SET tailStart = :end, tailBytes = if_not_exists(tailBytes, :dropped) - :dropped, tailSince = :now',
      ConditionExpression: 'leo >= :end AND (attribute_not_exists(tailStart) OR tailStart < :end) AND attribute_not_exists(snapshotting)',
      ExpressionAttributeValues: { ':end': end, ':dropped': dropped, ':now': now },
    }));
  } catch (err) {
    if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
    moved = false;
    const head = await readHead(store, tp);
    if (!head || (head.tailStart ?? 0) < end) return false;
  }
  // (a 16 MiB tail of 1 KiB batches without expiresAt is ~650 BatchWriteItem calls: a few at once)
  const deletes = below.filter((b) => b.expiresAt === undefined).map((b) => ({ DeleteRequest: { Key: { tp, off: b.off } } }));
  await batchWriteAll(store, deletes, DELETE_CALLS_IN_FLIGHT);
  return moved;
}

/** A batch item as a trim needs it: its key (the last offset), its size, its expiry if it has one. */
export interface BatchKey {
  readonly off: number;
  readonly sizeBytes: number;
  readonly expiresAt?: number;
}

/** The keys, sizes and expiries of the batch items in [from, end) (keyed by last offset: `from <= off < end`). */
async function batchKeysBetween(store: ReplicaStoreRef, tp: string, from: number, end: number): Promise<BatchKey[]> {
  const out: BatchKey[] = [];
  if (end <= from) return out;
  let start: Record<string, unknown> | undefined;
  do {
    const res = await client(store).send(new QueryCommand({
      TableName: store.replicaTable,
      KeyConditionExpression: 'tp = :tp AND off BETWEEN :from AND :last',
      ExpressionAttributeValues: { ':tp': tp, ':from': Math.max(0, from), ':last': end - 1 },
      ProjectionExpression: 'off, sizeBytes, expiresAt',
      ConsistentRead: true,
      ExclusiveStartKey: start,
    }));
    out.push(...(res.Items ?? []).map((i) => ({ off: i.off as number, sizeBytes: (i.sizeBytes as number | undefined) ?? 0, ...(i.expiresAt === undefined ? {} : { expiresAt: i.expiresAt as number }) })));
    start = res.LastEvaluatedKey;
  } while (start);
  return out;
}

/**
 * Corrects a head's `tailBytes` (a roll trigger that drifted: a truncation or a full sync does not
 * keep it exact) by `delta`, relative to the value the caller read: appends since add their own.
 * Condition: the head exists. Errors: store failures only.
 */
export async function correctTailBytes(store: ReplicaStoreRef, tp: string, delta: number): Promise<void> {
  try {
    await client(store).send(new UpdateCommand({
      TableName: store.replicaTable, Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: 'ADD tailBytes :d', ConditionExpression: 'attribute_exists(tp)', ExpressionAttributeValues: { ':d': delta },
    }));
  } catch (err) {
    if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
  }
}

/**
 * Raises a replica's log start offset (retention, DeleteRecords); never moves it back. A head
 * without `tailStart` gets its old log start as `tailStart` in the same write: the table still
 * holds the batches from there, and a roller must start at a batch boundary, not at an offset
 * DeleteRecords chose inside a batch.
 * Condition: `logStartOffset < offset` and the replica holds the offset (`leo >= offset`; one that
 * does not will take the leader's log start with a full sync). Returns false when it failed.
 */
export async function raiseLogStart(store: ReplicaStoreRef, tp: string, offset: number): Promise<boolean> {
  try {
    await client(store).send(new UpdateCommand({
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: 'SET tailStart = if_not_exists(tailStart, logStartOffset), logStartOffset = :o',
      ConditionExpression: 'logStartOffset < :o AND leo >= :o',
      ExpressionAttributeValues: { ':o': offset },
    }));
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}

/** A batch's offsets and size, without its bytes. */
export interface BatchBounds {
  readonly baseOffset: number;
  readonly lastOffset: number;
  readonly sizeBytes: number;
}

/**
 * The batches a replica's table holds whose last offset is in [fromOffset, below) — the batches
 * wholly below `below` (DeleteRecords drops them) — in offset order, without their bytes.
 */
export async function batchBoundsBelow(store: ReplicaStoreRef, tp: string, fromOffset: number, below: number): Promise<BatchBounds[]> {
  const out: BatchBounds[] = [];
  if (below <= fromOffset) return out;
  let start: Record<string, unknown> | undefined;
  do {
    const res = await client(store).send(new QueryCommand({
      TableName: store.replicaTable,
      KeyConditionExpression: 'tp = :tp AND off BETWEEN :from AND :last',
      ExpressionAttributeValues: { ':tp': tp, ':from': Math.max(0, fromOffset), ':last': below - 1 },
      ProjectionExpression: 'baseOffset, lastOffset, sizeBytes',
      ConsistentRead: true,
      ExclusiveStartKey: start,
    }));
    for (const item of res.Items ?? []) out.push({ baseOffset: item.baseOffset as number, lastOffset: item.lastOffset as number, sizeBytes: item.sizeBytes as number });
    start = res.LastEvaluatedKey;
  } while (start);
  return out;
}
