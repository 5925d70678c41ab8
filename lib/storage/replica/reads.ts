/**
 * Reading a log's batches from a replica table: by offset range, by timestamp, and where a
 * truncation must end. Strongly consistent Queries on `tp`; an item is keyed by the last offset it
 * holds and may hold several batches (lib/storage/replica/items.ts), so the item holding the last
 * offset wanted can have a key past it: a read that ends short of it looks one item further.
 *
 * Conditional writes: none.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { BatchRecord } from '../model.js';
import { batchBaseIn, batchesOf } from './items.js';
import { client, type ReplicaStoreRef } from './store.js';

/**
 * Where a log truncated at `offset` must end so that it holds whole batches: the base offset of
 * the batch holding `offset`, or `offset` itself when a batch starts there (or none holds it).
 */
export async function batchStartAt(store: ReplicaStoreRef, tp: string, offset: number): Promise<number> {
  const item = await itemAfter(store, tp, offset - 1, 'baseOffset, parts');
  const base = item ? batchBaseIn(item, offset) : undefined;
  return base !== undefined && base < offset ? base : offset;
}

/** The first item keyed past `offset` (the one holding `offset + 1`, if any does), with `projection` or whole. */
async function itemAfter(store: ReplicaStoreRef, tp: string, offset: number, projection?: string): Promise<Record<string, unknown> | undefined> {
  const out = await client(store).send(new QueryCommand({
    TableName: store.replicaTable,
    KeyConditionExpression: 'tp = :tp AND off > :at',
    ExpressionAttributeValues: { ':tp': tp, ':at': offset },
    ...(projection ? { ProjectionExpression: projection } : {}),
    ConsistentRead: true,
    Limit: 1,
  }));
  return out.Items?.[0];
}

/** The batches of the item past `toOffset` that end at or below it (an item that straddles it): as from an item of their own. */
async function straddling(store: ReplicaStoreRef, tp: string, fromOffset: number, toOffset: number): Promise<BatchRecord[]> {
  const item = await itemAfter(store, tp, toOffset);
  if (!item || (item.baseOffset as number) > toOffset) return [];
  return batchesOf(item).filter((b) => b.lastOffset >= fromOffset && b.lastOffset <= toOffset);
}

export interface BatchQuery {
  /** First offset wanted: the batch holding it comes first. */
  readonly fromOffset: number;
  /** Last offset wanted (inclusive), e.g. the high watermark minus one. */
  readonly toOffset: number;
  /** Stop once this many bytes of batches were read (at least one batch is always returned). */
  readonly maxBytes: number;
}

/** Reads batches in offset order, strongly consistent, paging until `maxBytes` or `toOffset`. */
export async function queryBatches(store: ReplicaStoreRef, tp: string, q: BatchQuery): Promise<BatchRecord[]> {
  const batches: BatchRecord[] = [];
  let bytes = 0;
  let start: Record<string, unknown> | undefined;
  if (q.toOffset < q.fromOffset) return batches;
  /** Takes `b` unless the budget is spent; false once it is. */
  const take = (b: BatchRecord): boolean => {
    if (batches.length > 0 && bytes + b.sizeBytes > q.maxBytes) return false;
    batches.push(b);
    bytes += b.sizeBytes;
    return true;
  };
  do {
    const out = await client(store).send(new QueryCommand({
      TableName: store.replicaTable,
      KeyConditionExpression: 'tp = :tp AND off BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':tp': tp, ':from': q.fromOffset, ':to': q.toOffset },
      ConsistentRead: true,
      ExclusiveStartKey: start,
    }));
    for (const item of out.Items ?? []) {
      for (const b of batchesOf(item)) if (b.lastOffset >= q.fromOffset && !take(b)) return batches;
    }
    start = out.LastEvaluatedKey;
  } while (start && bytes < q.maxBytes);
  if (start || bytes >= q.maxBytes) return batches;
  const end = batches[batches.length - 1]?.lastOffset ?? q.fromOffset - 1;
  if (end < q.toOffset) for (const b of await straddling(store, tp, end + 1, q.toOffset)) if (!take(b)) break;
  return batches;
}

/** The first batch in `[fromOffset, toOffset]` holding a record with timestamp ≥ `timestamp` (ListOffsets by time). */
export async function firstBatchAtOrAfter(store: ReplicaStoreRef, tp: string, fromOffset: number, toOffset: number, timestamp: number): Promise<BatchRecord | undefined> {
  let start: Record<string, unknown> | undefined;
  if (toOffset < fromOffset) return undefined;
  do {
    const out = await client(store).send(new QueryCommand({
      TableName: store.replicaTable,
      KeyConditionExpression: 'tp = :tp AND off BETWEEN :from AND :to',
      FilterExpression: 'maxTimestamp >= :ts',
      ExpressionAttributeValues: { ':tp': tp, ':from': fromOffset, ':to': toOffset, ':ts': timestamp },
      ConsistentRead: true,
      ExclusiveStartKey: start,
    }));
    for (const item of out.Items ?? []) {
      const found = batchesOf(item).find((b) => b.lastOffset >= fromOffset && b.maxTimestamp >= timestamp);
      if (found) return found;
    }
    start = out.LastEvaluatedKey;
  } while (start);
  return (await straddling(store, tp, fromOffset, toOffset)).find((b) => b.maxTimestamp >= timestamp);
}
