/**
 * A chaos run: a private local stack with one DynamoDB Local process per broker,
 * two controller processes with skewed clocks, two gateways in their own processes and a fault
 * proxy in front of every broker store; the workload and the nemesis for `durationMs`, with a
 * quiet phase after every fault; then heal, wait for the cluster to recover, read everything back,
 * and let the checker judge the history. Beside them, transactional producers and read_committed
 * readers on a topic of their own (txn-workload.ts).
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of our own API, read field by field */
import fs from 'node:fs';
import path from 'node:path';
import { bootstrapCluster } from '../lib/cluster/bootstrap.js';
import { replicaStore } from '../lib/cluster/metadata.js';
import { resetConfig } from '../lib/config.js';
import { logger } from '../lib/logger.js';
import { FaultProxy } from '../local/fault-proxy.js';
import { startLocalStack, type LocalStack, type LocalStackOptions } from '../local/stack.js';
import { resetClients } from '../lib/storage/clients.js';
import { resetStreamClients } from '../lib/storage/streams.js';
import { topicPartitionKey } from '../lib/storage/model.js';
import { readHead } from '../lib/storage/replica/head.js';
import { check, type CheckReport } from './checker.js';
import type { FaultEvent, TP } from './history.js';
import { Readability } from './liveness.js';
import { Nemesis, type NemesisControls } from './nemesis.js';
import { FAULT_KINDS, type FaultKind } from './faults.js';
import { generators, Recorder } from './recorder.js';
import { finalReads, probeReadable, Workload, type WorkloadOptions, type WorkloadTarget } from './workload.js';
import { PushReader } from './push-reader.js';
import { WebSocketReader } from './ws-reader.js';
import { finalTxnReads, TxnWorkload, type TxnTarget } from './txn-workload.js';
import type { TxnCounts } from './txn-checker.js';

export interface ChaosOptions {
  readonly durationMs: number;
  readonly seed: number;
  /** Where the history, the summary and the stack's data and logs go. */
  readonly dir: string;
  readonly kinds?: readonly FaultKind[];
  /**
   * The liveness bound: after each fault, writes stop, and every record acknowledged before must be
   * readable within this many ms; 0 runs no quiet phases.
   * @default 20000
   */
  readonly quietBoundMs?: number;
  /**
   * The topics' `segment.bytes`: small, so that table tails roll to S3 segments (and readers cross
   * tiers) under the faults.
   * @default 32768
   */
  readonly segmentBytes?: number;
  /**
   * Concurrent producers. With 8 or more, three in four of their writes go to one partition (the
   * first topic's partition 0), so that many writers meet in its group commit.
   * @default 16
   */
  readonly producers?: number;
  /**
   * Transactional producers, each with its own transactional id, writing to `chaos-txn` (3
   * partitions) beside two read_committed readers; 0 runs no transactional workload.
   * @default 2
   */
  readonly transactions?: number;
  /**
   * A push subscription on the first topic among the readers, to a receiver that refuses some
   * deliveries (push-reader.ts).
   * @default true
   */
  readonly push?: boolean;
  /**
   * A WebSocket subscriber to the first topic's partitions among the readers (ws-reader.ts).
   * @default true
   */
  readonly websocket?: boolean;
}

export interface ChaosSummary {
  readonly seed: number;
  readonly durationMs: number;
  readonly operations: number;
  readonly acknowledgedWrites: number;
  readonly faults: Record<string, number>;
  /** Of `faults`, those applied (the rest are in the history as `not applied: ...`). */
  readonly faultsApplied: Record<string, number>;
  readonly failovers: number;
  readonly recoveryMs: number;
  readonly quietPhases: number;
  readonly quietBoundMs: number;
  readonly droppedDeliveries: number;
  readonly anomalies: number;
  readonly anomalyKinds: Record<string, number>;
  /** The transactional workload's transactions (committed, aborted, unknown), sends and reads. */
  readonly transactions: TxnCounts;
  readonly report: CheckReport;
}

/** Timeouts short enough that faults resolve within seconds. */
const ENV: Record<string, string> = {
  TRIBUTARY_BROKER_SESSION_TIMEOUT_MS: '4000',
  TRIBUTARY_CONTROLLER_TICK_MS: '500',
  TRIBUTARY_BROKER_PROBE_TIMEOUT_MS: '1500',
  TRIBUTARY_REPLICA_LAG_TIME_MAX_MS: '4000',
  TRIBUTARY_REQUEST_TIMEOUT_MS: '12000',
  TRIBUTARY_STORE_TIMEOUT_MS: '2000',
  TRIBUTARY_STORE_MAX_ATTEMPTS: '2',
  // (the sweep's full pass rolls by segment.ms: often enough that time-based rolls happen under faults)
  TRIBUTARY_SWEEP_FULL_PASS_MS: '15000',
};
/** While the stack starts: fresh JVMs on a busy machine answer their first requests slowly. */
const SETUP_ENV: Record<string, string> = { TRIBUTARY_STORE_TIMEOUT_MS: '20000', TRIBUTARY_STORE_MAX_ATTEMPTS: '4' };

/** Applies the run's timeouts to this process (its clients are built again on next use). */
function useEnv(env: Record<string, string>): void {
  Object.assign(process.env, env);
  resetConfig();
  resetClients();
  resetStreamClients();
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * On a busy machine six JVMs and node processes starting at once can miss a readiness wait or a
 * short store timeout; nothing has run yet, so starting again is safe.
 */
async function startStack(opts: LocalStackOptions, attempts = 3): Promise<LocalStack> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startLocalStack(opts);
    } catch (err) {
      if (attempt >= attempts) throw err;
      logger.warn({ event: 'chaos-stack-start-failed', attempt, err }, 'the chaos stack did not start; trying again');
    }
  }
}

/** The workload's producers: the first four as they have always been, then idempotent, acks=all and acks=1 ones in turn, on both gateways. */
function producersOf(n: number): WorkloadOptions['producers'] {
  const first: WorkloadOptions['producers'] = [
    { name: 'idem-0', idempotent: true, acks: 'all' }, { name: 'idem-1', idempotent: true, acks: 'all', gateway: 1 },
    { name: 'all-0', idempotent: false, acks: 'all', gateway: 1 }, { name: 'one-0', idempotent: false, acks: '1' },
  ];
  const more = Array.from({ length: Math.max(0, n - first.length) }, (_, i) => {
    const k = Math.floor(i / 3) + 1;
    const kind = (['idem', 'all', 'one'] as const)[i % 3];
    return { name: `${kind}-${kind === 'idem' ? k + 1 : k}`, idempotent: kind === 'idem', acks: kind === 'one' ? '1' as const : 'all' as const, gateway: i % 2 };
  });
  return [...first, ...more].slice(0, n);
}

export async function runChaos(o: ChaosOptions): Promise<ChaosSummary> {
  fs.mkdirSync(o.dir, { recursive: true });
  useEnv({ ...ENV, ...SETUP_ENV });
  const random = generators(o.seed);
  const quietBoundMs = o.quietBoundMs ?? 20_000;
  const h = new Recorder(path.join(o.dir, 'history.jsonl'));
  // drop-stream-batch: the stream poller's deliveries go nowhere while this is set.
  let dropping = false;
  let dropped = 0;
  const stack = await startStack({
    port: 0, brokers: 3, isolatedBrokers: true, dataDir: path.join(o.dir, 'data'), controllers: 2, controllerClockSkewMs: [400, -400],
    // The replicator runs as Lambda runs it (frozen between stream batches); so do the HTTP
    // functions, in the gateway processes below (each with its environments, which the nemesis
    // kills and pauses with it, mid-request).
    lambda: true,
    dropDelivery: () => {
      if (dropping) dropped++;
      return dropping;
    },
  });
  const proxies = new Map<number, FaultProxy>();
  try {
    // Every broker's store behind a proxy, so network faults sit between the functions and the store.
    const state = JSON.parse(fs.readFileSync(stack.stateFile, 'utf8')) as { brokers: { brokerId: number; store: string; replicaTable: string; rack: string | null }[] };
    for (const b of state.brokers) {
      const proxy = new FaultProxy(stack.supervisor.get(b.store)?.port as number);
      await proxy.start();
      proxies.set(b.brokerId, proxy);
    }
    await bootstrapCluster(state.brokers.map((b) => ({ brokerId: b.brokerId, replicaTable: b.replicaTable, rack: b.rack, endpoint: (proxies.get(b.brokerId) as FaultProxy).endpoint })));
    // From here on the run's short timeouts, in this process and (restarted) in the controllers.
    useEnv(ENV);
    const controllers = ['controller-1', 'controller-2'];
    for (const name of controllers) await stack.supervisor.restart(name);
    // Two gateways: some producers write through the second, the copier pause-copier stops mid-copy
    // while the first serves everyone else.
    const gateways = ['gateway', 'gateway-2'];
    const urls: string[] = [];
    for (const name of gateways) {
      const gw = await stack.supervisor.start({
        name, role: 'gateway (the Lambda functions, each request an invocation)', kind: 'node', dataDir: null, script: 'local/gateway-process.ts', args: ['--lambda'], group: true,
        logFile: path.join(stack.dataDir, 'logs', `${name}.log`),
      });
      urls.push(gw.endpoint);
    }
    const v3 = `${urls[0]}/v3/clusters/${stack.clusterId}`;
    const kinds = o.kinds ?? FAULT_KINDS;
    // (the unclean-election fault's topic, only in runs that have the fault: the others' workload stays as it was)
    const topics = [
      { name: 'chaos-a', partitions: 3, minIsr: '2', unclean: false }, { name: 'chaos-b', partitions: 2, minIsr: '1', unclean: false },
      ...(kinds.includes('unclean-election') ? [{ name: 'chaos-u', partitions: 1, minIsr: '1', unclean: true }] : []),
    ];
    const txnWorkers = o.transactions ?? 2;
    // The transactional workload's topic: the nemesis's partition faults and the other workloads leave it alone.
    const txnTopic = { name: 'chaos-txn', partitions: 3, minIsr: '2', unclean: false };
    for (const t of [...topics, ...(txnWorkers > 0 ? [txnTopic] : [])]) {
      const configs = { 'min.insync.replicas': t.minIsr, 'segment.bytes': String(o.segmentBytes ?? 32_768), 'segment.ms': '20000', ...(t.unclean ? { 'unclean.leader.election.enable': 'true' } : {}) };
      const r = await fetch(`${v3}/topics`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ topic_name: t.name, partitions_count: t.partitions, replication_factor: 3, configs: Object.entries(configs).map(([name, value]) => ({ name, value })) }),
      });
      if (r.status !== 201) throw new Error(`could not create ${t.name}: ${r.status} ${await r.text()}`);
    }
    const uncleanTopic = topics.find((t) => t.unclean);
    const target: WorkloadTarget = { urls, clusterId: stack.clusterId, topics, group: 'chaos-group' };
    const txnTarget: TxnTarget = { urls, clusterId: stack.clusterId, topic: txnTopic.name, partitions: txnTopic.partitions, group: 'chaos-txn-group' };
    const metadata = async () => (await (await fetch(`${v3}/metadata`, { signal: AbortSignal.timeout(5000) })).json()) as any;
    const healthy = async () => {
      const m = await metadata();
      // (every replica in sync: while a reassignment adds one, a partition has more than three)
      return m.brokers.every((b: any) => b.state === 'alive') && m.topics.every((t: any) => t.partitions.every((p: any) => p.leader_id !== null && p.isr.length >= 3 && p.replicas.every((r: number) => p.isr.includes(r))));
    };
    // The admin API for the reshaping faults, through whichever gateway answers (one may be down).
    const admin = async (method: string, route: string, body?: unknown): Promise<{ status: number; body: any; errorCode?: string; message: string }> => {
      let last: { status: number; body: any; message: string } = { status: 0, body: undefined, message: 'no gateway answered' };
      for (const url of urls) {
        try {
          const r = await fetch(`${url}/v3/clusters/${stack.clusterId}${route}`, {
            method, signal: AbortSignal.timeout(90_000),
            ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
          });
          const text = await r.text();
          const json = text ? (() => { try { return JSON.parse(text); } catch { return undefined; } })() : undefined;
          const message = String(json?.message ?? text.slice(0, 200));
          // (a Kafka error's message opens with its name: "INVALID_REPLICATION_FACTOR: ...")
          const code = /^([A-Z_]+):/.exec(message)?.[1];
          last = { status: r.status, body: json, ...(code ? { errorCode: code } : {}), message };
          if (r.status < 500) return last;
        } catch (err) {
          last = { status: 0, body: undefined, message: (err as Error).message };
        }
      }
      return last;
    };
    const partitionPath = (tp: TP) => `/topics/${tp.topic}/partitions/${tp.partition}`;

    // Failovers: leader epoch changes seen by a metadata watcher.
    let failovers = 0;
    let watching = true;
    const epochs = new Map<string, number>();
    const watcher = (async () => {
      while (watching) {
        try {
          for (const t of (await metadata()).topics) {
            for (const p of t.partitions) {
              const k = `${t.topic_name}#${p.partition_id}`;
              if (epochs.has(k) && p.leader_epoch > (epochs.get(k) as number)) failovers += p.leader_epoch - (epochs.get(k) as number);
              epochs.set(k, p.leader_epoch);
            }
          }
        } catch {
          /* the gateway may be down */
        }
        await sleep(1000);
      }
    })();

    const workload = new Workload(target, {
      producers: producersOf(o.producers ?? 16),
      ...((o.producers ?? 16) >= 8 ? { hot: { tp: { topic: topics[0]!.name, partition: 0 }, share: 0.75 } } : {}),
      consumers: 3, readers: 2, sessionTimeoutMs: 6000, random: random.workload, requestTimeoutMs: 15_000,
    }, h);
    const push = o.push === false ? undefined : new PushReader(target, h, random.push);
    const wsReader = o.websocket === false ? undefined : new WebSocketReader(stack.url, target, h);
    const txns = txnWorkers > 0
      ? new TxnWorkload(txnTarget, { workers: txnWorkers, readers: 2, random: random.transactions, requestTimeoutMs: 15_000 }, h)
      : undefined;
    const unread = new Readability();
    let quietPhases = 0;
    /** Topic ids by name, as the admin API gave them (they never change). */
    const topicIds = new Map<string, string>();
    const controls: NemesisControls = {
      healthy,
      leaderOf: async (tp: TP) => {
        const p = (await metadata()).topics.find((t: any) => t.topic_name === tp.topic)?.partitions.find((x: any) => x.partition_id === tp.partition);
        return p && p.leader_id !== null ? { leader: p.leader_id as number, epoch: p.leader_epoch as number, isr: p.isr as number[], replicas: p.replicas as number[] } : undefined;
      },
      electedLogEnd: async (tp: TP, broker: number, epoch: number) => {
        let topicId = topicIds.get(tp.topic);
        if (!topicId) {
          const r = await admin('GET', `/topics/${tp.topic}`);
          if (r.status !== 200) throw new Error(`GET topic: ${r.status} ${r.message}`);
          topicId = r.body.topic_id as string;
          topicIds.set(tp.topic, topicId);
        }
        const head = await readHead(await replicaStore(broker), topicPartitionKey(topicId, tp.partition));
        if (!head || head.leaderEpoch < epoch) return undefined;
        // (the epoch's entry comes with its first append: until then, the log end is where it began)
        return head.epochs.find(([e]) => e >= epoch)?.[1] ?? head.leo;
      },
      deleteRecords: async (tp: TP, fraction: number) => {
        const p = await admin('GET', partitionPath(tp));
        const [start, hw] = [p.body?.log_start_offset, p.body?.high_watermark];
        if (p.status !== 200 || typeof start !== 'number' || typeof hw !== 'number') throw new Error(`GET partition: ${p.status} ${p.message}`);
        const offset = start + Math.floor(fraction * (hw - start));
        const r = await admin('POST', `${partitionPath(tp)}/records:delete`, { offset });
        const said = `DeleteRecords to ${offset} (log start ${start}, high watermark ${hw}): ${r.status}${r.status === 200 ? '' : ` ${r.message}`}`;
        // A 4xx changed nothing; a timeout or a 5xx may have deleted (the log start rises before the answer).
        if (r.status >= 400 && r.status < 500 && r.errorCode !== 'REQUEST_TIMED_OUT') return { detail: said };
        return { detail: said, deletion: { offset: r.status === 200 ? r.body.low_watermark as number : offset, answered: r.status === 200 } };
      },
      nextWrite: (w, timeoutMs) => workload.nextWrite(w, timeoutMs),
      leaseHolder: async () => {
        let best: { name: string; expiresAt: number } | undefined;
        for (const name of controllers) {
          const endpoint = stack.supervisor.get(name)?.endpoint;
          const lease = endpoint ? await fetch(endpoint, { signal: AbortSignal.timeout(1000) }).then(async (r) => ((await r.json()) as any).lease, () => null) : null;
          if (lease && (!best || lease.expiresAt > best.expiresAt)) best = { name, expiresAt: lease.expiresAt };
        }
        return best?.name;
      },
      dropDeliveries: () => {
        dropping = true;
      },
      droppedDeliveries: () => dropped,
      killFunctionInstance: async (fn, pick) => {
        // The gateways' execution environments of `fn` that are running an invocation: children of
        // a gateway process, named tributary-<fn>, not stopped (a frozen one is SIGSTOPped: state T).
        const parents = new Set(gateways.map((g) => stack.supervisor.get(g)?.pid).filter((p): p is number => p !== undefined));
        const busy = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).flatMap((d) => {
          try {
            const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
            const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
            const cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8');
            return parents.has(Number(ppid)) && state !== 'T' && cmd.includes(`tributary-${fn}\0`) ? [Number(d)] : [];
          } catch {
            return [];
          }
        });
        const pid = busy[Math.floor(pick * busy.length)];
        if (pid === undefined) return undefined;
        try {
          process.kill(pid, 'SIGKILL');
          return pid;
        } catch {
          return undefined;
        }
      },
      brokers: async () => {
        const r = await admin('GET', '/brokers');
        if (r.status !== 200) throw new Error(`GET brokers: ${r.status} ${r.message}`);
        return (r.body.data as any[]).map((b) => ({ id: b.broker_id as number, state: b.state as string, replicaCount: b.replica_count as number }));
      },
      addBroker: (id) => admin('POST', '/brokers', { broker_id: id }),
      removeBroker: (id) => admin('DELETE', `/brokers/${id}`),
      replicasOf: async (tp) => {
        const p = (await metadata()).topics.find((t: any) => t.topic_name === tp.topic)?.partitions.find((x: any) => x.partition_id === tp.partition);
        if (!p) return undefined;
        const r = await admin('GET', `${partitionPath(tp)}/reassignment`);
        if (r.status !== 200 && r.status !== 404) throw new Error(`GET reassignment: ${r.status} ${r.message}`);
        return { replicas: p.replicas as number[], adding: r.status === 200 ? r.body.adding_replicas : [], removing: r.status === 200 ? r.body.removing_replicas : [] };
      },
      reassign: (tp, replicas) => admin('PATCH', `${partitionPath(tp)}/reassignment`, { replicas }),
      cancelReassignment: (tp) => admin('DELETE', `${partitionPath(tp)}/reassignment`),
      // The quiet phase: stop the writes, let those in flight return (the last stream batches are
      // still dropped meanwhile), then give everything acknowledged the bound to become readable.
      quiet: async (fault: FaultEvent) => {
        if (quietBoundMs <= 0) {
          dropping = false;
          return;
        }
        const pausedAt = Date.now();
        try {
          txns?.pause(); // (no transaction begins; those open go on to their end)
          await workload.pauseWrites(Number(ENV.TRIBUTARY_REQUEST_TIMEOUT_MS) + 3000);
          dropping = false;
          const start = Date.now();
          const left = await probeReadable(target, h, unread, start, quietBoundMs);
          if (left > 0) unread.forget(start); // reported by the checker; the next phases wait only for newer records
          h.add({ type: 'quiet', fault: fault.id, pausedAt, start, end: Date.now(), boundMs: quietBoundMs });
          quietPhases++;
        } finally {
          dropping = false;
          workload.resumeWrites();
          txns?.resume();
        }
      },
    };
    const nemesis = new Nemesis(stack, {
      random: random.nemesis, kinds, brokers: state.brokers.map((b) => b.brokerId), controllers, gateways,
      partitions: topics.flatMap((t) => Array.from({ length: t.partitions }, (_, partition) => ({ topic: t.name, partition }))), proxies,
      ...(uncleanTopic ? { unclean: { topic: uncleanTopic.name, partition: 0 } } : {}),
      holdMs: [3000, 9000], gapMs: [3000, 7000], controls,
      outlastSessionMs: Number(ENV.TRIBUTARY_BROKER_SESSION_TIMEOUT_MS) + 1500, outlastLeaseMs: 1500 + 1000,
    }, h);
    await push?.start(Date.now() + 60_000);
    wsReader?.start();
    workload.start();
    txns?.start();
    nemesis.start();
    logger.warn({ event: 'chaos-started', seed: o.seed, durationMs: o.durationMs, dir: o.dir }, 'chaos run started');
    await sleep(o.durationMs);
    await nemesis.stop();
    dropping = false;
    const healedAt = Date.now();
    h.add({ type: 'heal', at: healedAt });
    let recovered = false;
    while (Date.now() - healedAt < 120_000) {
      if (await healthy().catch(() => false)) {
        recovered = true;
        break;
      }
      await sleep(500);
    }
    const recoveryMs = Date.now() - healedAt;
    await sleep(3000); // let the workload see the healed cluster
    await Promise.all([workload.stop(), txns?.stop(), wsReader?.stop()]);
    watching = false;
    await watcher;
    await push?.finish(Date.now() + 90_000);
    await finalReads(target, h, Date.now() + 90_000);
    if (txns) await finalTxnReads(txnTarget, h, Date.now() + 90_000);
    h.close();
    const report = check(h.events);
    const acknowledgedWrites = h.events.filter((e) => e.type === 'produce' && e.outcome === 'ok').length;
    const anomalyKinds: Record<string, number> = {};
    for (const a of report.anomalies) anomalyKinds[a.kind] = (anomalyKinds[a.kind] ?? 0) + 1;
    const summary: ChaosSummary = {
      seed: o.seed, durationMs: o.durationMs, operations: report.counts.operations, acknowledgedWrites,
      faults: nemesis.counts, faultsApplied: nemesis.applied, failovers, recoveryMs: recovered ? recoveryMs : -1, quietPhases, quietBoundMs, droppedDeliveries: dropped, anomalies: report.anomalies.length, anomalyKinds,
      transactions: report.counts.transactions, report,
    };
    fs.writeFileSync(path.join(o.dir, 'summary.json'), `${JSON.stringify({ ...summary, report: { counts: report.counts, anomalies: report.anomalies, allowed: report.allowed } }, null, 2)}\n`);
    return summary;
  } finally {
    for (const p of proxies.values()) await p.stop();
    await stack.stop();
  }
}
