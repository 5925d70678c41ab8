/**
 * Counting what DynamoDB charges: when enabled, every DynamoDB call asks for
 * `ReturnConsumedCapacity: TOTAL` and the returned read and write units are summed here — for
 * benchmarks and the cost model (`bench/`), and per-request cost notes.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export interface CapacityTotals {
  readUnits: number;
  writeUnits: number;
  /** Requests per operation name (GetItem, TransactWriteItems...). */
  requests: Record<string, number>;
}

const totals: CapacityTotals = { readUnits: 0, writeUnits: 0, requests: {} };
let enabled = process.env.TRIBUTARY_TRACK_CAPACITY === 'true';

export function trackCapacity(on: boolean): void {
  enabled = on;
}

/** Returns the totals since the last reset, and resets them. */
export function takeCapacity(): CapacityTotals {
  const out = { ...totals, requests: { ...totals.requests } };
  totals.readUnits = 0;
  totals.writeUnits = 0;
  totals.requests = {};
  return out;
}

interface Consumed { CapacityUnits?: number; ReadCapacityUnits?: number; WriteCapacityUnits?: number }

/** Adds the counting middleware to a client (once, when it is built). */
export function countCapacity(client: DynamoDBDocumentClient): void {
  client.middlewareStack.add((next, context) => async (args) => {
    if (!enabled) return next(args);
    const input = args.input as Record<string, unknown>;
    const op = context.commandName?.replace(/Command$/, '') ?? 'unknown';
    if (op !== 'DescribeTable' && op !== 'CreateTable') input.ReturnConsumedCapacity ??= 'TOTAL';
    const out = await next(args);
    totals.requests[op] = (totals.requests[op] ?? 0) + 1;
    const consumed = (out.output as { ConsumedCapacity?: Consumed | Consumed[] }).ConsumedCapacity;
    for (const c of Array.isArray(consumed) ? consumed : consumed ? [consumed] : []) {
      const write = c.WriteCapacityUnits ?? 0;
      const read = c.ReadCapacityUnits ?? 0;
      // Some operations report only the total: reads for reads, writes for writes.
      const reading = /^(Get|BatchGet|Query|Scan|TransactGet)/.test(op);
      totals.writeUnits += write || (!reading && !read ? c.CapacityUnits ?? 0 : 0);
      totals.readUnits += read || (reading && !write ? c.CapacityUnits ?? 0 : 0);
    }
    return out;
  }, { step: 'initialize', name: 'tributaryCapacity' });
}
