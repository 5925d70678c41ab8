/**
 * The controller's cost, and its failover with default settings. (1) DynamoDB requests and capacity
 * units of one steady-state tick, and of a takeover tick (which walks every partition), at 10, 100,
 * 1,000 and 10,000 partitions (RF 3, topics of up to 100 partitions): the steady tick should stay
 * flat as partitions grow. (2) Failover with the default settings (broker.session.timeout.ms 9000,
 * tick 1000 ms, one DynamoDB Local per broker): from SIGKILL of the leader's store to the first
 * successful acks=all produce (the `failover` scenario measures the same over several rounds with
 * the fault tests' faster settings). Quick: 10 and 100 partitions, no failover.
 * Run: `npm run bench -- controller`; results in bench/results/controller.{md,json,svg}.
 */
import './lib/env.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { byOperation, isQuick, lineChart, sized, totalRequests, writeResult, type Table } from './lib/report.js';
import { startQuietStack } from './lib/quiet-stack.js';
import { startLocalStack } from '../local/stack.js';
import { takeCapacity, trackCapacity } from '../lib/storage/metering.js';
import { createTopic } from '../lib/cluster/topics.js';
import { Controller } from '../lib/cluster/controller.js';

const SIZES = sized([10, 100, 1000, 10_000], [10, 100]);
const STEADY_TICKS = 3;
const LEASE_MS = 60_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// 1. Tick cost.
// No stream replicator: its background calls would be counted as the tick's.
const stack = await startQuietStack();
const rows: (string | number)[][] = [];
const points: Record<string, unknown>[] = [];
const data: Record<string, unknown>[] = [];
let made = 0;
// Each size's controller takes over from the last one: its clock starts past the last lease.
let clock = Date.now();
for (const total of SIZES) {
  while (made < total) {
    const n = Math.min(100, total - made);
    await createTopic({ name: `t-${made}`, partitions: n, replicationFactor: 3 });
    made += n;
  }
  const c = new Controller({ id: `bench-${total}`, tickMs: 1000, leaseMs: LEASE_MS, sessionTimeoutMs: 60_000 });
  clock += LEASE_MS + 60_000;
  trackCapacity(true);
  takeCapacity();
  await c.tick(clock);
  const takeover = takeCapacity();
  for (let i = 1; i <= STEADY_TICKS; i++) await c.tick(clock + i * 1000);
  const steady = takeCapacity();
  trackCapacity(false);
  clock += STEADY_TICKS * 1000;
  for (const [what, x, ticks] of [['takeover (walks every partition)', takeover, 1], ['steady state', steady, STEADY_TICKS]] as const) {
    const requests = totalRequests(x.requests) / ticks;
    rows.push([total, what, requests, byOperation(x.requests, ticks), x.readUnits / ticks, x.writeUnits / ticks, x.billedWriteUnits / ticks]);
    data.push({ partitions: total, tick: what, requests, byOperation: Object.fromEntries(Object.entries(x.requests).map(([k, v]) => [k, v / ticks])), readUnits: x.readUnits / ticks, writeUnits: x.writeUnits / ticks, billedWriteUnits: x.billedWriteUnits / ticks });
    if (what === 'steady state') {
      points.push({ partitions: total, measure: 'requests', value: requests });
      points.push({ partitions: total, measure: 'read units', value: x.readUnits / ticks });
      points.push({ partitions: total, measure: 'write units (billed)', value: x.billedWriteUnits / ticks });
    }
  }
}
await stack.stop();

const tables: Table[] = [{
  title: 'DynamoDB cost of one controller tick',
  columns: ['partitions', 'tick', 'requests', 'by operation', 'read units', 'write units (reported)', 'write units (billed)'],
  rows,
  notes: [`Steady state: the mean of ${STEADY_TICKS} ticks after the takeover. In-memory DynamoDB Local, 3 brokers, RF 3 topics of up to 100 partitions.`],
}];

// 2. Failover with default settings (not in a quick run: it starts a store per broker and waits out a session).
let failover: Record<string, unknown> | undefined;
if (!isQuick()) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-bench-'));
  const cluster = await startLocalStack({ port: 0, brokers: 3, isolatedBrokers: true, dataDir: dir });
  const C = `${cluster.url}/v3/clusters/${cluster.clusterId}`;
  const post = (p: string, body: unknown) => fetch(`${cluster.url}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await post(`/v3/clusters/${cluster.clusterId}/topics`, { topic_name: 'failover', partitions_count: 1, replication_factor: 3 });
  await sleep(2000);
  const leader = ((await (await fetch(`${C}/topics/failover/partitions/0`)).json()) as any).leader_id as number;
  for (let i = 0; i < 20; i++) await (await post(`/v3/clusters/${cluster.clusterId}/topics/failover/records?acks=all`, { value: { type: 'STRING', data: `before-${i}` } })).text();
  const killedAt = Date.now();
  await post(`/local/processes/broker-${leader}/kill`, {});
  let firstOk = 0;
  let failed = 0;
  for (let i = 0; !firstOk; i++) {
    const r = await post(`/v3/clusters/${cluster.clusterId}/topics/failover/records?acks=all`, { value: { type: 'STRING', data: `after-${i}` } });
    if (r.status === 200) firstOk = Date.now();
    else failed++;
    await r.text();
  }
  const elected = ((await (await fetch(`${C}/topics/failover/partitions/0`)).json()) as any);
  await cluster.stop();
  fs.rmSync(dir, { recursive: true, force: true });
  failover = { leader, newLeader: elected.leader_id, leaderEpoch: elected.leader_epoch, firstAcksAllMs: firstOk - killedAt, failedRequests: failed };
  tables.push({
    title: 'Failover with default settings (broker.session.timeout.ms 9000, tick 1000 ms)',
    columns: ['leader → new leader', 'new epoch', 'SIGKILL → first acks=all produce (ms)', 'requests failed meanwhile'],
    rows: [[`${leader} → ${elected.leader_id}`, elected.leader_epoch, firstOk - killedAt, failed]],
  });
}

await writeResult({
  scenario: 'controller',
  title: 'Controller requests per tick, 10 → 10,000 partitions',
  description: 'DynamoDB requests and capacity units of one controller tick: the takeover tick walks every partition; a steady-state tick should cost the same at any partition count. '
    + 'Then failover with the default settings: SIGKILL of the leader\'s store (one DynamoDB Local per broker) to the first successful acks=all produce.',
  tables,
  charts: [{
    title: 'Steady-state tick cost vs partitions',
    spec: lineChart(points, { x: { field: 'partitions', scale: { type: 'log' } }, y: { field: 'value', title: 'per tick' }, color: { field: 'measure' } }),
  }],
  data: { ticks: data, failover: failover ?? null },
});
