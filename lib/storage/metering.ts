/**
 * Counting what DynamoDB and S3 charge: when enabled, every DynamoDB call asks for
 * `ReturnConsumedCapacity: TOTAL` and the returned read and write units are summed here, and
 * every S3 request is counted by command — for benchmarks and the cost model (`bench/`), and
 * per-request cost notes. Separately, `traceCalls` records every store call a piece of work makes
 * (with its start and end), so a benchmark can count the sequential round trips of a request.
 *
 * Write units as DynamoDB bills them (`billedWriteUnits`). DynamoDB bills a write by the larger of
 * the item before and the item after it (1 unit per started KB; 2 per item inside a transaction,
 * a `ConditionCheck` included), so the attributes a write sends are only a lower bound. With
 * tracking on, the counter learns both sizes for every write, without changing what the caller
 * sees:
 * - PutItem, DeleteItem, UpdateItem asking for nothing back are sent with `ReturnValues: ALL_OLD`
 *   (the item before; the answer's `Attributes` is removed again before the caller gets it);
 * - the size after an UpdateItem (unless it asked for ALL_NEW), and the items a transaction or a
 *   BatchWriteItem touches (before the call, and after it for updates), are read with a strongly
 *   consistent GetItem of the key that is neither counted nor traced (a Put's key comes from the
 *   table's key schema, read once with DescribeTable);
 * - a write whose condition failed bills the larger of the existing item and the item it sent
 *   (an Update's after-image is unknown: the existing item), at least 1 unit; a cancelled
 *   transaction bills nothing (see below); BatchWriteItem bills only the items it processed.
 * Item sizes follow DynamoDB's rules (attribute names + values; numbers ≈ significant digits / 2 + 1;
 * maps and lists 3 bytes + 1 per element).
 * Remaining error: a write racing another writer between the lookup and the call is billed from
 * the sizes the lookups saw; numbers are sized approximately (a byte either way per number); a
 * cancelled transaction is counted as 0 units, though DynamoDB bills the items it prepared.
 * The extra lookups make tracked writes slower: keep tracking off where time is measured.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { STAGE_ROOT } from './model.js';

export interface CapacityTotals {
  /** As the store reported them (ReturnConsumedCapacity). */
  readUnits: number;
  writeUnits: number;
  /**
   * Write units by DynamoDB's billing rules (the file's header): the larger of each item before
   * and after, 1 per started KB, 2 inside a transaction. DynamoDB Local under-reports transactions
   * (2 units for a six-item transaction that DynamoDB bills 12), so the cost model uses this.
   */
  billedWriteUnits: number;
  /** Requests per operation name (GetItem, TransactWriteItems...), failed ones included. */
  requests: Record<string, number>;
  /**
   * S3 requests per command (PutObject, GetObject, ListObjectsV2, DeleteObjects...); S3 bills per
   * request. Requests on the group commit's stage (keys under `stage/`: S3 Express One Zone in
   * AWS, billed at its own prices) are counted as `Stage` + the command (StagePutObject...).
   */
  s3Requests: Record<string, number>;
  /** Body bytes of the PutObject requests counted (the stage's apart). */
  s3PutBytes: number;
  /** Body bytes of the stage's PutObject requests (S3 Express bills every byte uploaded, and again when read). */
  stagePutBytes: number;
}

const totals: CapacityTotals = { readUnits: 0, writeUnits: 0, billedWriteUnits: 0, requests: {}, s3Requests: {}, s3PutBytes: 0, stagePutBytes: 0 };
let enabled = process.env.TRIBUTARY_TRACK_CAPACITY === 'true';
/** Set while the counter makes its own lookups: those are neither counted nor traced. */
const internal = new AsyncLocalStorage<true>();

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
  totals.stagePutBytes = 0;
  return out;
}

/** Adds the S3 request-counting middleware to a client (once, when it is built): one count per command sent (retries, rare, are not counted). */
export function countS3Requests(client: S3Client): void {
  client.middlewareStack.add((next, context) => async (args) => {
    if (!enabled) return next(args);
    const command = context.commandName?.replace(/Command$/, '') ?? 'unknown';
    const input = args.input as { Key?: string; Prefix?: string; ContentLength?: number; Delete?: { Objects?: { Key?: string }[] } };
    const staged = (input.Key ?? input.Prefix ?? input.Delete?.Objects?.[0]?.Key ?? '').startsWith(STAGE_ROOT);
    const op = staged ? `Stage${command}` : command;
    totals.s3Requests[op] = (totals.s3Requests[op] ?? 0) + 1;
    if (op === 'PutObject') totals.s3PutBytes += Number(input.ContentLength ?? 0);
    if (op === 'StagePutObject') totals.stagePutBytes += Number(input.ContentLength ?? 0);
    return next(args);
  }, { step: 'initialize', name: 'tributaryS3Requests' });
}

interface Consumed { CapacityUnits?: number; ReadCapacityUnits?: number; WriteCapacityUnits?: number }
type Doc = Record<string, unknown>;

/** Adds the counting middleware to a client (once, when it is built). */
export function countCapacity(client: DynamoDBDocumentClient): void {
  client.middlewareStack.add((next, context) => async (args) => {
    if (!enabled || internal.getStore()) return next(args);
    const op = context.commandName?.replace(/Command$/, '') ?? 'unknown';
    const input = { ...(args.input as Doc) };
    if (op !== 'DescribeTable' && op !== 'CreateTable') input.ReturnConsumedCapacity ??= 'TOTAL';
    const bill = await billing(client, op, input);
    let out;
    try {
      out = await next({ ...args, input: bill.input });
    } catch (err) {
      totals.requests[op] = (totals.requests[op] ?? 0) + 1;
      totals.billedWriteUnits += await bill.failed(err).catch(() => 0);
      throw err;
    }
    totals.requests[op] = (totals.requests[op] ?? 0) + 1;
    const output = out.output as Doc;
    totals.billedWriteUnits += await bill.settle(output).catch(() => 0);
    const consumed = output.ConsumedCapacity as Consumed | Consumed[] | undefined;
    for (const c of Array.isArray(consumed) ? consumed : consumed ? [consumed] : []) {
      const write = c.WriteCapacityUnits ?? 0;
      const read = c.ReadCapacityUnits ?? 0;
      // Some operations report only the total: reads for reads, writes for writes.
      const reading = /^(Get|BatchGet|Query|Scan|TransactGet)/.test(op);
      totals.writeUnits += write || (!reading && !read ? c.CapacityUnits ?? 0 : 0);
      totals.readUnits += read || (reading && !write ? c.CapacityUnits ?? 0 : 0);
    }
    return out;
  }, { step: 'initialize', name: 'tributaryCapacity', priority: 'high' });
}

/** DynamoDB's size of a value: strings and binaries by length, numbers ~ digits / 2 + 1, maps and lists 3 bytes + 1 per element. */
export function sizeOf(v: unknown): number {
  if (v === null || v === undefined || typeof v === 'boolean') return 1;
  if (typeof v === 'string') return Buffer.byteLength(v);
  if (typeof v === 'number' || typeof v === 'bigint') return Math.ceil(String(v).replace(/[-.]/g, '').length / 2) + 1;
  if (v instanceof Uint8Array) return v.length;
  if (v instanceof Set) return [...v].reduce((n: number, x) => n + sizeOf(x), 0);
  if (Array.isArray(v)) return 3 + v.reduce((n: number, x) => n + 1 + sizeOf(x), 0);
  if (typeof v === 'object') return 3 + Object.entries(v).reduce((n, [k, x]) => n + Buffer.byteLength(k) + sizeOf(x), 0);
  return 1;
}

/** An item's size as DynamoDB bills it: its attributes' names and values (no map overhead at the top). */
export const itemSize = (item: Doc | undefined): number => (item ? sizeOf(item) - 3 : 0);

/** Write units for an item of `bytes` (1 per started KB, at least 1). */
export const writeUnitsFor = (bytes: number): number => Math.max(1, Math.ceil(bytes / 1024));

// --- Billing: what one write costs ------------------------------------------------------------

interface Billing {
  /** The input to send (maybe asking for ALL_OLD). */
  readonly input: Doc;
  /** Billed write units of the call that answered `output` (and strips what was asked for billing only). */
  settle(output: Doc): Promise<number>;
  /** Billed write units of the call that failed with `err`. */
  failed(err: unknown): Promise<number>;
}

const NOTHING: Omit<Billing, 'input'> = { settle: async () => 0, failed: async () => 0 };

const keySchemas = new Map<string, Promise<string[]>>();

/** The key attribute names of `table` (DescribeTable, once per table). */
function keyNames(client: DynamoDBDocumentClient, table: string): Promise<string[]> {
  let names = keySchemas.get(table);
  if (!names) {
    names = internal.run(true, async () => {
      const out = await client.send(new DescribeTableCommand({ TableName: table }));
      return (out.Table?.KeySchema ?? []).map((k) => k.AttributeName as string);
    });
    names.catch(() => keySchemas.delete(table));
    keySchemas.set(table, names);
  }
  return names;
}

const keyOf = async (client: DynamoDBDocumentClient, table: string, item: Doc): Promise<Doc> =>
  Object.fromEntries((await keyNames(client, table)).map((n) => [n, item[n]]));

/** The size of the item at `key` now (0 when absent or unreadable), read uncounted and untraced. */
async function sizeNow(client: DynamoDBDocumentClient, table: string, key: Doc): Promise<number> {
  try {
    const out = await internal.run(true, () => client.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true })));
    return itemSize(out.Item);
  } catch {
    return 0;
  }
}

const conditionFailed = (err: unknown): boolean => (err as Error).name === 'ConditionalCheckFailedException';

async function billing(client: DynamoDBDocumentClient, op: string, input: Doc): Promise<Billing> {
  const table = input.TableName as string;
  if (op === 'PutItem' || op === 'DeleteItem' || op === 'UpdateItem') {
    const asked = (input.ReturnValues as string | undefined) ?? 'NONE';
    const inject = asked === 'NONE';
    const key = op === 'PutItem' ? undefined : input.Key as Doc;
    const keyFor = async () => key ?? keyOf(client, table, input.Item as Doc);
    const sent = (op === 'PutItem' ? itemSize(input.Item as Doc) : 0);
    // The item before: ALL_OLD in the answer, or (an Update asking for something else) a lookup now.
    const before = inject || asked === 'ALL_OLD' ? undefined : await sizeNow(client, table, await keyFor());
    return {
      input: inject ? { ...input, ReturnValues: 'ALL_OLD' } : input,
      async settle(output) {
        const old = before ?? itemSize(output.Attributes as Doc | undefined);
        if (inject) delete output.Attributes;
        const after = op === 'PutItem' ? sent : op === 'DeleteItem' ? 0
          : asked === 'ALL_NEW' ? itemSize(output.Attributes as Doc | undefined) : await sizeNow(client, table, await keyFor());
        return writeUnitsFor(Math.max(old, after));
      },
      async failed(err) {
        if (!conditionFailed(err)) return 0;
        return writeUnitsFor(Math.max(before ?? await sizeNow(client, table, await keyFor()), sent));
      },
    };
  }
  if (op === 'TransactWriteItems') {
    const items = await Promise.all((input.TransactItems as Doc[]).map(async (t) => {
      const [kind, body] = Object.entries(t)[0] as [string, Doc];
      const name = body.TableName as string;
      const key = kind === 'Put' ? await keyOf(client, name, body.Item as Doc) : body.Key as Doc;
      return { kind, table: name, key, sent: kind === 'Put' ? itemSize(body.Item as Doc) : 0, before: await sizeNow(client, name, key) };
    }));
    return {
      input,
      async settle() {
        const after = await Promise.all(items.map((i) => (i.kind === 'Update' ? sizeNow(client, i.table, i.key) : i.sent)));
        return items.reduce((n, i, at) => n + 2 * writeUnitsFor(Math.max(i.before, after[at]!)), 0);
      },
      failed: async () => 0,
    };
  }
  if (op === 'BatchWriteItem') {
    const requests = await Promise.all(Object.entries(input.RequestItems as Record<string, Doc[]>).flatMap(([name, rs]) => rs.map(async (r) => {
      const put = (r.PutRequest as Doc | undefined)?.Item as Doc | undefined;
      const key = await keyOf(client, name, put ?? (r.DeleteRequest as Doc).Key as Doc);
      return { table: name, id: JSON.stringify(key), sent: itemSize(put), before: await sizeNow(client, name, key) };
    })));
    return {
      input,
      async settle(output) {
        const unprocessed = new Set(await Promise.all(Object.entries((output.UnprocessedItems ?? {}) as Record<string, Doc[]>).flatMap(([name, rs]) => rs.map(async (r) => {
          const put = (r.PutRequest as Doc | undefined)?.Item as Doc | undefined;
          return `${name} ${JSON.stringify(await keyOf(client, name, put ?? (r.DeleteRequest as Doc).Key as Doc))}`;
        }))));
        return requests.filter((r) => !unprocessed.has(`${r.table} ${r.id}`)).reduce((n, r) => n + writeUnitsFor(Math.max(r.before, r.sent)), 0);
      },
      failed: async () => 0,
    };
  }
  return { input, ...NOTHING };
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
    if (!trace || internal.getStore()) return next(args);
    const start = performance.now();
    try {
      return await next(args);
    } finally {
      trace.push({ service, op: context.commandName?.replace(/Command$/, '') ?? 'unknown', start, end: performance.now() });
    }
  }, { step: 'initialize', name: 'tributaryTrace', priority: 'low' });
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
