/**
 * Reading a log's batches from a replica table: by offset range, by timestamp, and where a
 * truncation must end. Strongly consistent Queries on `tp`; batch items are keyed by last offset.
 *
 * Conditional writes: none.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { BatchRecord } from '../model.js';
import { client, type ReplicaStoreRef } from './store.js';

function toBatch(item: Record<string, unknown>): BatchRecord {
  const { tp: _tp, off: _off, ...rest } = item;
  return rest as unknown as BatchRecord;
}

/**
 * Where a log truncated at `offset` must end so that it holds whole batches: the base offset of
 * the batch holding `offset`, or `offset` itself when a batch starts there (or none holds it).
 */
export async function batchStartAt(store: ReplicaStoreRef, tp: string, offset: number): Promise<number> {
  const out = await client(store).send(new QueryCommand({
    TableName: store.replicaTable,
    KeyConditionExpression: 'tp = :tp AND off >= :from',
    ExpressionAttributeValues: { ':tp': tp, ':from': offset },
    ProjectionExpression: 'baseOffset',
    ConsistentRead: true,
    Limit: 1,
  }));
  const base = out.Items?.[0]?.baseOffset as number | undefined;
  return base !== undefined && base < offset ? base : offset;
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
  do {
    const out = await client(store).send(new QueryCommand({
      TableName: store.replicaTable,
      KeyConditionExpression: 'tp = :tp AND off BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':tp': tp, ':from': q.fromOffset, ':to': q.toOffset },
      ConsistentRead: true,
      ExclusiveStartKey: start,
    }));
    for (const item of out.Items ?? []) {
      if (batches.length > 0 && bytes + (item.sizeBytes as number) > q.maxBytes) return batches;
      batches.push(toBatch(item));
      bytes += item.sizeBytes as number;
    }
    start = out.LastEvaluatedKey;
  } while (start && bytes < q.maxBytes);
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
    const first = out.Items?.[0];
    if (first) return toBatch(first);
    start = out.LastEvaluatedKey;
  } while (start);
  return undefined;
}
