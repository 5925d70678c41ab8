/**
 * Counting what DynamoDB and S3 charge: when enabled, every DynamoDB call asks for
 * `ReturnConsumedCapacity: TOTAL` and the returned read and write units are summed here, and
 * every S3 request is counted by command — for benchmarks and the cost model (`bench/`), and
 * per-request cost notes. Separately, `traceCalls` records every store call a piece of work makes
 * (with its start and end), so a benchmark can count the sequential round trips of a request.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';

export interface CapacityTotals {
  /** As the store reported them (ReturnConsumedCapacity). */
  readUnits: number;
  writeUnits: number;
  /**
   * Write units by DynamoDB's billing rules, from the sizes of the items written: 1 per started
   * KB, 2 inside a transaction. DynamoDB Local under-reports transactions (2 units for a
   * six-item transaction that DynamoDB bills 12), so the cost model uses this. Updates count the
   * key and the values they set — a lower bound when the item is larger.
   */
  billedWriteUnits: number;
  /** Requests per operation name (GetItem, TransactWriteItems...). */
  requests: Record<string, number>;
  /** S3 requests per command (PutObject, GetObject, ListObjectsV2, DeleteObjects...); S3 bills per request. */
  s3Requests: Record<string, number>;
  /** Body bytes of the PutObject requests counted. */
  s3PutBytes: number;
}

const totals: CapacityTotals = { readUnits: 0, writeUnits: 0, billedWriteUnits: 0, requests: {}, s3Requests: {}, s3PutBytes: 0 };
let enabled = process.env.TRIBUTARY_TRACK_CAPACITY === 'true';

export function trackCapacity(on: boolean): void {
  enabled = on;
}

/** Returns the totals since the last reset, and resets them. */
export function takeCapacity(): CapacityTotals {
  const out = { ...totals, requests: { ...totals.requests }, s3Requests: { ...totals.s3Requests } };
  totals.readUnits = 0;
  totals.writeUnits = 0;
  totals.billedWriteUnits = 0;
  totals.requests = {};
  totals.s3Requests = {};
  totals.s3PutBytes = 0;
  return out;
}

/** Adds the S3 request-counting middleware to a client (once, when it is built): one count per command sent (retries, rare, are not counted). */
export function countS3Requests(client: S3Client): void {
  client.middlewareStack.add((next, context) => async (args) => {
    if (!enabled) return next(args);
    const op = context.commandName?.replace(/Command$/, '') ?? 'unknown';
    totals.s3Requests[op] = (totals.s3Requests[op] ?? 0) + 1;
    if (op === 'PutObject') totals.s3PutBytes += Number((args.input as { ContentLength?: number }).ContentLength ?? 0);
    return next(args);
  }, { step: 'initialize', name: 'tributaryS3Requests' });
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
    totals.billedWriteUnits += billedWrites(op, input);
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

/** DynamoDB's item size: attribute names plus values (strings and binaries by length, numbers ~ digits / 2 + 1). */
export function sizeOf(v: unknown): number {
  if (v === null || v === undefined || typeof v === 'boolean') return 1;
  if (typeof v === 'string') return Buffer.byteLength(v);
  if (typeof v === 'number') return Math.ceil(String(v).replace(/[-.]/g, '').length / 2) + 1;
  if (v instanceof Uint8Array) return v.length;
  if (Array.isArray(v)) return 3 + v.reduce((n: number, x) => n + 1 + sizeOf(x), 0);
  if (typeof v === 'object') return 3 + Object.entries(v).reduce((n, [k, x]) => n + Buffer.byteLength(k) + sizeOf(x), 0);
  return 1;
}

const units = (bytes: number): number => Math.max(1, Math.ceil(bytes / 1024));

function billedWrites(op: string, input: Record<string, unknown>): number {
  const one = (w: Record<string, unknown> | undefined): number => {
    if (!w) return 0;
    if (w.Item) return units(sizeOf(w.Item));
    if (w.Key) return units(sizeOf(w.Key) + sizeOf(w.ExpressionAttributeValues ?? {}));
    return 0;
  };
  if (op === 'PutItem' || op === 'UpdateItem' || op === 'DeleteItem') return one(input);
  if (op === 'TransactWriteItems') {
    return (input.TransactItems as Record<string, Record<string, unknown>>[]).reduce((n, item) =>
      n + (item.Put ? 2 * one(item.Put) : item.Update ? 2 * one(item.Update) : item.Delete ? 2 * one(item.Delete) : 0), 0);
  }
  if (op === 'BatchWriteItem') {
    const requests = Object.values(input.RequestItems as Record<string, Record<string, Record<string, unknown>>[]>).flat();
    return requests.reduce((n, r) => n + (r.PutRequest ? units(sizeOf(r.PutRequest.Item)) : r.DeleteRequest ? 1 : 0), 0);
  }
  return 0;
}

// --- Round trips ------------------------------------------------------------------------------

/** One DynamoDB or S3 request, as the SDK sent it (retries inside it included). */
export interface StoreCall {
  readonly service: 'dynamodb' | 's3';
  readonly op: string;
  /** performance.now() when the command was sent and when its answer (or error) came. */
  readonly start: number;
  readonly end: number;
}

const traces = new AsyncLocalStorage<StoreCall[]>();

/** Runs `fn`, recording every DynamoDB and S3 call made by it and by whatever async work it starts. */
export async function traceCalls<T>(fn: () => Promise<T>): Promise<{ result: T; calls: StoreCall[] }> {
  const calls: StoreCall[] = [];
  const result = await traces.run(calls, fn);
  return { result, calls: [...calls] };
}

/**
 * The sequential round trips among `calls`: the longest chain of calls each sent after the one
 * before it answered (calls in flight together count once). Greedy by end time finds it: the
 * largest set of pairwise non-overlapping intervals is exactly such a chain.
 */
export function sequentialRoundTrips(calls: readonly StoreCall[]): number {
  let n = 0;
  let free = -Infinity;
  for (const c of [...calls].sort((a, b) => a.end - b.end)) {
    if (c.start >= free) {
      n++;
      free = c.end;
    }
  }
  return n;
}

/** Adds the call-recording middleware to a client (once, when it is built). */
export function traceStoreCalls(client: DynamoDBDocumentClient | S3Client, service: StoreCall['service']): void {
  (client as DynamoDBDocumentClient).middlewareStack.add((next, context) => async (args) => {
    const trace = traces.getStore();
    if (!trace) return next(args);
    const start = performance.now();
    try {
      return await next(args);
    } finally {
      trace.push({ service, op: context.commandName?.replace(/Command$/, '') ?? 'unknown', start, end: performance.now() });
    }
  }, { step: 'initialize', name: 'tributaryTrace' });
}

/** What a benchmark sees of each HTTP request the local gateway served. */
export type RequestObserver = (route: string, calls: readonly StoreCall[], ms: number) => void;
let observer: RequestObserver | undefined;

/** Sets (or, with no argument, removes) the observer of the local gateway's requests. */
export function observeRequests(o?: RequestObserver): void {
  observer = o;
}

/** Runs one request's handler; with an observer set, records its store calls and reports them. */
export async function observedRequest<T>(route: string, fn: () => Promise<T>): Promise<T> {
  const o = observer;
  if (!o) return fn();
  const started = performance.now();
  const { result, calls } = await traceCalls(fn);
  o(route, calls, performance.now() - started);
  return result;
}
