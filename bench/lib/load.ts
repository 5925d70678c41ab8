/**
 * What the load benchmarks (throughput, end-to-end, scaling) share: the stack they run on, an HTTP
 * client for the local gateway, sequential writers driven for a fixed time, percentiles, the
 * round trips and store calls of each request the gateway served, and the CPU seconds of the
 * stack's child processes (the DynamoDB Local JVMs, s3rver).
 */
import './env.js';
import fs from 'node:fs';
import { startLocalStack, type LocalStack } from '../../local/stack.js';
import { observeRequests, sequentialRoundTrips, type StoreCall } from '../../lib/storage/metering.js';
import { isQuick } from './report.js';

/**
 * The stack the load benchmarks measure: 3 brokers, each broker's replica table in its own
 * DynamoDB Local process ON DISK (throughput is compared on stores that persist every write, as DynamoDB does), s3rver.
 * No stream replicator and no controller loops unless BENCH_BACKGROUND=1: on this 2-core machine
 * they would take CPU from the request path they do not belong to (in AWS they are other Lambdas);
 * nothing in these scenarios needs them (acks=all replicates inline, nothing fails over).
 * A quick run (the smoke test in `npm test`) checks that the scenario runs, not its numbers: its
 * brokers share one in-memory DynamoDB Local, which saves starting three more JVMs.
 */
export async function startBenchStack(): Promise<LocalStack> {
  const background = process.env.BENCH_BACKGROUND === '1';
  const stores = isQuick() ? { isolatedBrokers: false, inMemory: true } : { isolatedBrokers: true, inMemory: false };
  return startLocalStack({ port: 0, brokers: 3, ...stores, controllers: background ? 2 : 0, replicator: background });
}

export const STACK_NOTE = (isQuick() ? 'Stack (quick run): 3 brokers sharing one in-memory DynamoDB Local, s3rver, ' : 'Stack: 3 brokers, each replica table in its own DynamoDB Local process on disk (plus one for the coordination table), s3rver, ')
  + 'the in-process local gateway; no stream replicator and no controller loops (BENCH_BACKGROUND=1 turns them on) — acks=all replicates inline.';

export class HttpFailure extends Error {}

/** A JSON request to the gateway; throws on a status ≥ 300. */
export async function http(url: string, method: 'GET' | 'POST' = 'GET', body?: unknown): Promise<any> {
  const r = await fetch(url, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await r.text();
  if (r.status >= 300) throw new HttpFailure(`${method} ${url}: ${r.status} ${text.slice(0, 300)}`);
  return text === '' ? null : JSON.parse(text);
}

/** The p-th quantile (0..1) of `xs`, nearest rank. */
export function pct(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(s.length * p) - 1))] as number;
}

export const mean = (xs: readonly number[]): number => (xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length);

export interface LoadRun {
  readonly ops: number;
  /** Records moved (produced or fetched). */
  readonly records: number;
  readonly seconds: number;
  readonly opsPerSec: number;
  readonly recordsPerSec: number;
  readonly latencies: number[];
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
  /** Ops finished in the warm-up (not counted): a request recorder saw these first. */
  readonly warmupOps: number;
}

/**
 * Runs `writers` sequential loops for `seconds` (after `warmupSeconds` not counted); each call of
 * `op(writer, i)` returns the records it moved. A failed op counts as an error, not as records.
 */
export async function runWriters(writers: number, seconds: number, op: (writer: number, i: number) => Promise<number>, warmupSeconds = 0.5): Promise<LoadRun> {
  const latencies: number[] = [];
  let ops = 0;
  let records = 0;
  let errors = 0;
  let warmupOps = 0;
  let firstError: unknown;
  const t0 = performance.now();
  const measureFrom = t0 + warmupSeconds * 1000;
  const end = measureFrom + seconds * 1000;
  await Promise.all(Array.from({ length: writers }, async (_, w) => {
    for (let i = 0; performance.now() < end; i++) {
      const started = performance.now();
      try {
        const moved = await op(w, i);
        if (started >= measureFrom) {
          ops++;
          records += moved;
          latencies.push(performance.now() - started);
        } else warmupOps++;
      } catch (err) {
        errors++;
        firstError ??= err;
        if (errors > 20) throw err;
      }
    }
  }));
  if (firstError) process.stderr.write(`  (${errors} errors; first: ${(firstError as Error).message})\n`);
  const elapsed = (performance.now() - measureFrom) / 1000;
  return { ops, records, seconds: elapsed, opsPerSec: ops / elapsed, recordsPerSec: records / elapsed, latencies, p50: pct(latencies, 0.5), p99: pct(latencies, 0.99), errors, warmupOps };
}

/** What the gateway saw of one request: its store calls and how long its handler ran. */
export interface ObservedRequest {
  readonly route: string;
  readonly calls: readonly StoreCall[];
  readonly ms: number;
}

/** Time during which at least one store call was in flight: the store's share of the request's critical path. */
export function storeTime(calls: readonly StoreCall[]): number {
  let total = 0;
  let until = -Infinity;
  for (const c of [...calls].sort((a, b) => a.start - b.start)) {
    if (c.end <= until) continue;
    total += c.end - Math.max(c.start, until);
    until = c.end;
  }
  return total;
}

/** Records every request the gateway serves into the current label's list (undefined: not recorded). */
export class RequestRecorder {
  readonly byLabel = new Map<string, ObservedRequest[]>();
  label: string | undefined;
  constructor() {
    observeRequests((route, calls, ms) => {
      if (this.label === undefined) return;
      const list = this.byLabel.get(this.label) ?? [];
      list.push({ route, calls, ms });
      this.byLabel.set(this.label, list);
    });
  }

  /** Runs `fn` with requests recorded under `label`. */
  async during<T>(label: string, fn: () => Promise<T>): Promise<T> {
    this.label = label;
    try {
      return await fn();
    } finally {
      this.label = undefined;
    }
  }

  stop(): void {
    observeRequests();
  }
}

export interface RoundTripSummary {
  readonly requests: number;
  readonly p50: number;
  readonly max: number;
  /** Mean store calls per request, by `service op`. */
  readonly callsByOp: Record<string, number>;
  /** Mean handler time, and its store share (the union of the calls' intervals), ms. */
  readonly handlerMs: number;
  readonly storeMs: number;
}

export function summarize(requests: readonly ObservedRequest[]): RoundTripSummary {
  const trips = requests.map((r) => sequentialRoundTrips(r.calls));
  const callsByOp: Record<string, number> = {};
  for (const r of requests) for (const c of r.calls) {
    const k = `${c.service === 's3' ? 'S3 ' : ''}${c.op}`;
    callsByOp[k] = (callsByOp[k] ?? 0) + 1 / requests.length;
  }
  return {
    requests: requests.length,
    p50: pct(trips, 0.5),
    max: trips.length ? Math.max(...trips) : NaN,
    callsByOp,
    handlerMs: mean(requests.map((r) => r.ms)),
    storeMs: mean(requests.map((r) => storeTime(r.calls))),
  };
}

export const formatCalls = (byOp: Record<string, number>): string =>
  Object.entries(byOp).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${Number.isInteger(v) ? v : v.toFixed(2)}`).join(', ') || '—';

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat; NaN when it cannot be read. */
export function processCpuSeconds(pid: number | null): number {
  if (pid === null) return NaN;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start at state, field 3; utime and stime are 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/** CPU seconds of this process and of each of the stack's child processes, at one moment. */
export function cpuSnapshot(stack: LocalStack): Record<string, number> {
  const u = process.cpuUsage();
  const out: Record<string, number> = { 'bench process (Node: gateway, handlers, client)': (u.user + u.system) / 1e6 };
  for (const p of stack.supervisor.list()) out[p.kind === 'dynamodb' ? `DynamoDB Local ${p.name} (JVM)` : p.name] = processCpuSeconds(p.pid);
  return out;
}

export const cpuDelta = (a: Record<string, number>, b: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.keys(b).map((k) => [k, (b[k] ?? 0) - (a[k] ?? 0)]));

/** A 1 KiB value as the REST Proxy's binary form. */
export const KIB_VALUE = { type: 'BINARY', data: Buffer.alloc(1024, 7).toString('base64') };
