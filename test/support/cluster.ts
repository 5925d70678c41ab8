/**
 * A private local stack for fault tests: isolated broker stores (one DynamoDB Local process each,
 * on disk) so a broker can be killed, paused and wiped; plus producers and checks over HTTP.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resetConfig } from '../../lib/config.js';
import { startLocalStack, type LocalStack } from '../../lib/local/stack.js';
import { resetClients } from '../../lib/storage/clients.js';
import type { BatchRecord } from '../../lib/storage/model.js';
import { queryBatches, readHead, type ReplicaStoreRef } from '../../lib/storage/replica.js';

export interface FaultCluster {
  readonly stack: LocalStack;
  readonly url: string;
  readonly v3: (p: string) => string;
  call(method: string, p: string, body?: unknown): Promise<{ status: number; body: any }>;
  store(brokerId: number): ReplicaStoreRef;
  /** Waits until `check` holds (polling), failing with `what` after `ms`. */
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
}

export async function startFaultCluster(o: FaultClusterOptions = {}): Promise<FaultCluster> {
  const saved = { ...process.env };
  Object.assign(process.env, o.env ?? {});
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-faults-'));
  const isolated = o.isolatedBrokers ?? true;
  const stack = await startLocalStack({
    port: 0, brokers: o.brokers ?? 3, isolatedBrokers: isolated, ...(isolated ? { dataDir: tmp } : { inMemory: true }), controllers: o.controllers ?? 2, replicator: o.replicator ?? true,
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
      const proc = stack.supervisor.get(b?.store ?? '');
      if (!b || !proc) throw new Error(`no broker ${brokerId}`);
      return { brokerId, replicaTable: b.replicaTable, endpoint: proc.endpoint };
    },
    async until(what, check, ms = 30_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const v = await check().catch(() => undefined);
        if (v !== undefined && v !== false) return v as never;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async stop() {
      await stack.stop();
      fs.rmSync(tmp, { recursive: true, force: true });
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
      resetConfig();
      resetClients();
    },
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

/** A replica's log: its batches below its log end offset, as stored. */
export async function replicaLog(store: ReplicaStoreRef, tp: string): Promise<BatchRecord[]> {
  const head = await readHead(store, tp);
  if (!head) return [];
  return (await queryBatches(store, tp, { fromOffset: 0, toOffset: head.leo - 1, maxBytes: 1e12 }));
}

/** The comparable content of a log: offsets, epochs and bytes of every batch. */
export const logFingerprint = (batches: readonly BatchRecord[]): string[] =>
  batches.map((b) => `${b.baseOffset}-${b.lastOffset}@${b.leaderEpoch}:${b.data ? Buffer.from(b.data).toString('base64') : b.s3?.key}`);
