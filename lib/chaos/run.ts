/**
 * A chaos run (issue 7): a private local stack with one DynamoDB Local process per broker, two
 * controller processes with skewed clocks, a gateway in its own process and a fault proxy in
 * front of every broker store; the workload and the nemesis for `durationMs`; then heal, wait for
 * the cluster to recover, read everything back, and let the checker judge the history.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of our own API, read field by field */
import fs from 'node:fs';
import path from 'node:path';
import { bootstrapCluster } from '../cluster/bootstrap.js';
import { logger } from '../logger.js';
import { FaultProxy } from '../local/fault-proxy.js';
import { startLocalStack } from '../local/stack.js';
import { check, type CheckReport } from './checker.js';
import { Nemesis, FAULT_KINDS, type FaultKind } from './nemesis.js';
import { generators, Recorder } from './recorder.js';
import { finalReads, Workload, type WorkloadTarget } from './workload.js';

export interface ChaosOptions {
  readonly durationMs: number;
  readonly seed: number;
  /** Where the history, the summary and the stack's data and logs go. */
  readonly dir: string;
  readonly kinds?: readonly FaultKind[];
}

export interface ChaosSummary {
  readonly seed: number;
  readonly durationMs: number;
  readonly operations: number;
  readonly acknowledgedWrites: number;
  readonly faults: Record<string, number>;
  readonly failovers: number;
  readonly recoveryMs: number;
  readonly anomalies: number;
  readonly anomalyKinds: Record<string, number>;
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
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runChaos(o: ChaosOptions): Promise<ChaosSummary> {
  fs.mkdirSync(o.dir, { recursive: true });
  Object.assign(process.env, ENV);
  const random = generators(o.seed);
  const h = new Recorder(path.join(o.dir, 'history.jsonl'));
  const stack = await startLocalStack({
    port: 0, brokers: 3, isolatedBrokers: true, dataDir: path.join(o.dir, 'data'), controllers: 2, controllerClockSkewMs: [400, -400],
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
    const gw = await stack.supervisor.start({ name: 'gateway', role: 'gateway (the Lambda handlers)', kind: 'node', dataDir: null, script: 'lib/local/gateway-process.ts', logFile: path.join(stack.dataDir, 'logs', 'gateway.log') });
    const url = gw.endpoint;
    const v3 = `${url}/v3/clusters/${stack.clusterId}`;
    const topics = [{ name: 'chaos-a', partitions: 3, minIsr: '2' }, { name: 'chaos-b', partitions: 2, minIsr: '1' }];
    for (const t of topics) {
      const r = await fetch(`${v3}/topics`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ topic_name: t.name, partitions_count: t.partitions, replication_factor: 3, configs: [{ name: 'min.insync.replicas', value: t.minIsr }] }),
      });
      if (r.status !== 201) throw new Error(`could not create ${t.name}: ${r.status} ${await r.text()}`);
    }
    const target: WorkloadTarget = { url, clusterId: stack.clusterId, topics, group: 'chaos-group' };
    const metadata = async () => (await (await fetch(`${v3}/metadata`, { signal: AbortSignal.timeout(5000) })).json()) as any;
    const healthy = async () => {
      const m = await metadata();
      return m.brokers.every((b: any) => b.state === 'alive') && m.topics.every((t: any) => t.partitions.every((p: any) => p.leader_id !== null && p.isr.length === 3));
    };

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
      producers: [
        { name: 'idem-0', idempotent: true, acks: 'all' }, { name: 'idem-1', idempotent: true, acks: 'all' },
        { name: 'all-0', idempotent: false, acks: 'all' }, { name: 'one-0', idempotent: false, acks: '1' },
      ],
      consumers: 3, readers: 2, sessionTimeoutMs: 6000, random: random.workload, requestTimeoutMs: 15_000,
    }, h);
    const nemesis = new Nemesis(stack, {
      random: random.nemesis, kinds: o.kinds ?? FAULT_KINDS, brokers: state.brokers.map((b) => b.brokerId), controllers: ['controller-1', 'controller-2'], proxies,
      holdMs: [3000, 9000], gapMs: [3000, 7000], sessionTimeoutMs: Number(ENV.TRIBUTARY_BROKER_SESSION_TIMEOUT_MS), leaseMs: 1500, healthy,
    }, h);
    workload.start();
    nemesis.start();
    logger.warn({ event: 'chaos-started', seed: o.seed, durationMs: o.durationMs, dir: o.dir }, 'chaos run started');
    await sleep(o.durationMs);
    await nemesis.stop();
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
    await workload.stop();
    watching = false;
    await watcher;
    await finalReads(target, h, Date.now() + 90_000);
    h.close();
    const report = check(h.events);
    const acknowledgedWrites = h.events.filter((e) => e.type === 'produce' && e.outcome === 'ok').length;
    const anomalyKinds: Record<string, number> = {};
    for (const a of report.anomalies) anomalyKinds[a.kind] = (anomalyKinds[a.kind] ?? 0) + 1;
    const summary: ChaosSummary = {
      seed: o.seed, durationMs: o.durationMs, operations: report.counts.operations, acknowledgedWrites,
      faults: nemesis.counts, failovers, recoveryMs: recovered ? recoveryMs : -1, anomalies: report.anomalies.length, anomalyKinds, report,
    };
    fs.writeFileSync(path.join(o.dir, 'summary.json'), `${JSON.stringify({ ...summary, report: { counts: report.counts, anomalies: report.anomalies } }, null, 2)}\n`);
    return summary;
  } finally {
    for (const p of proxies.values()) await p.stop();
    await stack.stop();
  }
}
