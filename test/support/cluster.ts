/**
 * A private local stack for fault tests: isolated broker stores (one DynamoDB Local process each,
 * on disk) so a broker can be killed, paused and wiped; plus producers and checks over HTTP.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { resetConfig } from '../../lib/config.js';
import { startLocalStack, type LocalStack } from '../../local/stack.js';
import { resetClients } from '../../lib/storage/clients.js';
import type { BatchRecord } from '../../lib/storage/model.js';
import { queryBatches } from '../../lib/storage/replica/reads.js';
import { readHead, tailStartOf } from '../../lib/storage/replica/head.js';
import { type ReplicaStoreRef } from '../../lib/storage/replica/store.js';
import { restoreEnv } from './env.js';
import { workerStore } from './worker-store.js';

export interface FaultCluster {
  readonly stack: LocalStack;
  readonly url: string;
  readonly v3: (p: string) => string;
  call(method: string, p: string, body?: unknown): Promise<{ status: number; body: any }>;
  store(brokerId: number): ReplicaStoreRef;
  /**
   * Polls `check` until it returns something other than `undefined` or `false`, and returns that.
   * A check that throws is retried (a store or the gateway may be down mid-fault), but after `ms`
   * the failure names `what` and carries the check's last error as its `cause`. A ReferenceError or
   * a failed `expect` inside the check is thrown at once: no retry cures those.
   */
  until<T>(what: string, check: () => Promise<T | undefined | false>, ms?: number): Promise<T>;
  stop(): Promise<void>;
}

export interface FaultClusterOptions {
  readonly brokers?: number;
  /** Environment for the handlers and controller processes (timeouts, session, tick). */
  readonly env?: Record<string, string>;
  /** @default 2 */
  readonly controllers?: number;
  /** One DynamoDB Local per broker, on disk. @default true */
  readonly isolatedBrokers?: boolean;
  /** Run the stream poller (the background replicator); interleaving tests turn it off. @default true */
  readonly replicator?: boolean;
  /**
   * Lambda-fidelity mode for the HTTP functions and the replicator (the controller stays in its
   * loop processes, which the faults pause and kill). @default true, false for a quiet cluster
   */
  readonly lambda?: boolean;
  /** With `lambda` and no controller processes: the controller function's schedule (0: never, the default here). */
  readonly controllerScheduleMs?: number;
}

export async function startFaultCluster(o: FaultClusterOptions = {}): Promise<FaultCluster> {
  const isolated = o.isolatedBrokers ?? true;
  if (isolated && process.env.VITEST && process.env.TRIBUTARY_TEST_PROJECT !== 'multi-process') {
    throw new Error('A fault cluster with isolated brokers starts a JVM per broker: list the test file in MULTI_PROCESS_FILES (vitest.config.ts) so it runs on its own.');
  }
  const saved = { ...process.env };
  Object.assign(process.env, o.env ?? {});
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-faults-'));
  // In the test suite a shared store is this worker's (test/support/worker-store.ts), its tables under a prefix of this stack's own.
  const store = !isolated && process.env.VITEST ? await workerStore() : undefined;
  const borrowed = store ? { dynamodbEndpoint: store.endpoint, tablePrefix: `q${path.basename(tmp).slice(-6)}` } : {};
  const stack = await startLocalStack({
    port: 0, brokers: o.brokers ?? 3, isolatedBrokers: isolated, ...(isolated ? { dataDir: tmp } : { inMemory: true }), ...borrowed,
    controllers: o.controllers ?? 2, replicator: o.replicator ?? true,
    lambda: o.lambda ?? true, controllerScheduleMs: o.controllerScheduleMs ?? 0,
  }).catch((err: unknown) => {
    store?.release();
    throw err;
  });
  const state = JSON.parse(fs.readFileSync(stack.stateFile, 'utf8')) as { brokers: { brokerId: number; store: string; replicaTable: string }[] };
  const call = async (method: string, p: string, body?: unknown) => {
    const r = await fetch(`${stack.url}${p}`, {
      method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text.split('\n')[0] as string) : undefined };
  };
  return {
    stack,
    url: stack.url,
    v3: (p) => `/v3/clusters/${stack.clusterId}${p}`,
    call,
    store: (brokerId) => {
      const b = state.brokers.find((x) => x.brokerId === brokerId);
      const endpoint = stack.supervisor.get(b?.store ?? '')?.endpoint ?? (isolated ? undefined : stack.env.AWS_ENDPOINT_URL_DYNAMODB);
      if (!b || !endpoint) throw new Error(`no broker ${brokerId}`);
      return { brokerId, replicaTable: b.replicaTable, endpoint };
    },
    until: (what, check, ms) => until(what, check, ms),
    async stop() {
      await stack.stop();
      store?.release();
      // TRIBUTARY_KEEP_FAULT_DATA=1 keeps the stores and the processes' logs for a post-mortem.
      if (process.env.TRIBUTARY_KEEP_FAULT_DATA === '1') console.log(`fault cluster data kept in ${tmp}`);
      else fs.rmSync(tmp, { recursive: true, force: true });
      restoreEnv(saved);
      resetConfig();
      resetClients();
    },
  };
}

/** Errors that retrying a check cannot cure: a programming mistake or a hard assertion. */
const isPermanent = (err: unknown): boolean =>
  err instanceof ReferenceError || (err instanceof Error && err.name === 'AssertionError');

const describeError = (err: unknown): string =>
  err instanceof Error && err.cause !== undefined ? `${String(err)} (cause: ${String(err.cause)})` : String(err);

export interface UntilOptions {
  /** How long it waits. @default 30_000 */
  readonly ms?: number;
  /** The pause between two checks. @default 100 */
  readonly everyMs?: number;
  /**
   * Whether a check that throws is tried again (a store or the gateway may be down mid-fault) or
   * its error ends the wait at once (a check of what is in memory, or of a call that must not
   * fail). @default true
   */
  readonly retry?: boolean;
}

/**
 * The `until` of a fault cluster (see there), usable without one. The check may answer at once or
 * in a promise; `o` is its timeout in ms, or the options.
 */
export async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, o: number | UntilOptions = {}): Promise<T> {
  const { ms = 30_000, everyMs = 100, retry = true } = typeof o === 'number' ? { ms: o } : o;
  const started = Date.now();
  const deadline = started + ms;
  let last: { error: unknown } | { value: unknown } = { value: undefined };
  for (;;) {
    // A check stuck on a request that never answers still ends at the deadline.
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<'expired'>((r) => { timer = setTimeout(() => r('expired'), Math.max(0, deadline - Date.now())); });
    const attempt = (async () => check())().then((value) => ({ value }), (error: unknown) => ({ error }));
    const outcome = await Promise.race([attempt, expired]).finally(() => clearTimeout(timer));
    if (outcome !== 'expired') {
      if ('error' in outcome && (!retry || isPermanent(outcome.error))) throw outcome.error;
      if ('value' in outcome && outcome.value !== undefined && outcome.value !== false) return outcome.value as T;
      last = outcome;
    }
    if (outcome === 'expired' || Date.now() >= deadline) {
      const after = `${Date.now() - started} ms`;
      if (outcome === 'expired') {
        const before = 'error' in last ? `; before that it threw ${describeError(last.error)}` : `; before that it returned ${String(last.value)}`;
        throw new Error(`timed out waiting for ${what} after ${after}: the check was still running${before}`, 'error' in last ? { cause: last.error } : {});
      }
      if ('error' in last) throw new Error(`timed out waiting for ${what} after ${after}; the check last threw ${describeError(last.error)}`, { cause: last.error });
      throw new Error(`timed out waiting for ${what} after ${after}; the check last returned ${String(last.value)}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * A private quiet stack for one test file — no controllers, no background replicator, broker
 * tables in one in-memory store — started before its tests and stopped after them, for tests
 * that drive an interleaving step by step. Returns the running cluster.
 */
export function useQuietCluster(o: Pick<FaultClusterOptions, 'brokers'> = {}): () => FaultCluster {
  let c: FaultCluster | undefined;
  beforeAll(async () => {
    c = await startFaultCluster({ isolatedBrokers: false, controllers: 0, replicator: false, lambda: false, ...o });
  }, 120_000);
  afterAll(async () => {
    await c?.stop();
  });
  return () => {
    if (!c) throw new Error('the quiet cluster is not running (useQuietCluster is for a file\'s tests)');
    return c;
  };
}

export interface Acked { readonly partition: number; readonly offset: number; readonly value: string }

/**
 * Producers that keep writing unique values to one partition until stopped; they record every
 * acknowledged (offset, value) and count failures (a store down mid-request is not an error here).
 */
export function startProducers(c: FaultCluster, topic: string, o: { count: number; acks: '0' | '1' | 'all'; partition?: number }) {
  let running = true;
  const acked: Acked[] = [];
  let failed = 0;
  const errors: string[] = [];
  let seq = 0;
  const loops = Array.from({ length: o.count }, async (_, w) => {
    while (running) {
      const value = `w${w}-${seq++}`;
      const r = await c.call('POST', c.v3(`/topics/${topic}/records?acks=${o.acks}`), { partition_id: o.partition ?? 0, value: { type: 'STRING', data: value } }).catch(() => ({ status: 0, body: undefined }));
      if (r.status === 200) acked.push({ partition: r.body.partition_id, offset: r.body.offset, value });
      else {
        failed++;
        errors.push(`${r.status} ${r.body?.message ?? ''}`);
      }
    }
  });
  return {
    acked,
    get failed() { return failed; },
    errors,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** A replica's table log: its batches from its tail start to its log end offset, as stored. */
export async function replicaLog(store: ReplicaStoreRef, tp: string): Promise<BatchRecord[]> {
  const head = await readHead(store, tp);
  if (!head) return [];
  // (below the tail start the table's items are rolled into segments and wait for their expiry)
  return (await queryBatches(store, tp, { fromOffset: tailStartOf(head), toOffset: head.leo - 1, maxBytes: 1e12 }));
}

/** The comparable content of a log: offsets, epochs and bytes of every batch. */
export const logFingerprint = (batches: readonly BatchRecord[]): string[] =>
  batches.map((b) => `${b.baseOffset}-${b.lastOffset}@${b.leaderEpoch}:${b.data ? Buffer.from(b.data).toString('base64') : b.s3?.key}`);
