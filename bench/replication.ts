/**
 * Replication costs on the local stack: produce latency per acks setting (RF 3), the DynamoDB
 * requests and write units one acks=all append of a 1 KiB record costs (ReturnConsumedCapacity),
 * and the time a full sync (snapshot + replay) of 100,000 records takes.
 * Quick: 20 requests per acks, 3 cost samples, full syncs of 1,000 records.
 * Run: `npm run bench -- replication`; results in bench/results/replication.{md,json,svg}.
 */
import './lib/env.js';
import { barChart, byOperation, percentile, sized, writeResult } from './lib/report.js';
import { appendSmallRecords, createPartition, followerOf, latestSnapshot, replicatePartition } from './lib/partition.js';
import { startLocalStack } from '../local/stack.js';
import { takeCapacity, trackCapacity } from '../lib/storage/metering.js';
import { produce } from '../lib/log/produce.js';
import { createTopic } from '../lib/cluster/topics.js';
import { fullSync } from '../lib/log/full-sync.js';
import { deletePartition } from '../lib/storage/replica/deletion.js';
import { readHead } from '../lib/storage/replica/head.js';

const stack = await startLocalStack({ port: 0, brokers: 3, inMemory: true });
const C = `${stack.url}/v3/clusters/${stack.clusterId}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LATENCY_REQUESTS = sized(200, 20);
const COST_SAMPLES = sized(15, 3);
const SYNC_RECORDS = sized(100_000, 1000);
const latencyRows: (string | number)[][] = [];
const latencyPoints: Record<string, unknown>[] = [];
const syncRows: (string | number)[][] = [];

// 1. Latency per acks (HTTP, one record of 100 bytes, one request in flight).
await createTopic({ name: 'acks', partitions: 1, replicationFactor: 3 });
for (const acks of ['0', '1', 'all']) {
  const ms: number[] = [];
  for (let i = 0; i < LATENCY_REQUESTS; i++) {
    const t = performance.now();
    const r = await fetch(`${C}/topics/acks/records?acks=${acks}`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ value: { type: 'BINARY', data: Buffer.alloc(100, i).toString('base64') } }),
    });
    await r.text();
    ms.push(performance.now() - t);
  }
  latencyRows.push([acks, ms.length, percentile(ms, 0.5), percentile(ms, 0.9), percentile(ms, 0.99)]);
  for (const [p, q] of [['p50', 0.5], ['p90', 0.9], ['p99', 0.99]] as const) latencyPoints.push({ acks: `acks=${acks}`, percentile: p, ms: percentile(ms, q) });
  await sleep(500);
}

// 2. What one acks=all append of a 1 KiB record costs at RF 3 (median of the samples, the stream-driven echo excluded by timing).
await createTopic({ name: 'cost', partitions: 1, replicationFactor: 3 });
trackCapacity(true);
const samples: { writeUnits: number; readUnits: number; billedWriteUnits: number; requests: Record<string, number> }[] = [];
for (let i = 0; i < COST_SAMPLES; i++) {
  await sleep(400);
  takeCapacity();
  await produce('cost', [{ partition: 0, key: null, value: Buffer.alloc(1024, i), headers: [] }], { acks: 'all' });
  samples.push(takeCapacity());
}
trackCapacity(false);
const median = [...samples].sort((a, b) => a.billedWriteUnits - b.billedWriteUnits)[Math.floor(samples.length / 2)]!;

// 3. Full sync of SYNC_RECORDS records: built directly on the leader, then a wiped follower is synced.
for (const perBatch of [100, 10]) {
  const name = `sync-${perBatch}`;
  const p = await createPartition(name);
  const { tp, leader } = p;
  const batches = SYNC_RECORDS / perBatch;
  await appendSmallRecords(p, SYNC_RECORDS, perBatch, { perCall: 500 });
  await replicatePartition(p);
  const follower = await followerOf(p);
  await sleep(sized(3000, 500)); // let the stream-driven replication of the appends above settle
  // From wiping the follower to it holding all SYNC_RECORDS records (whoever runs the sync: this
  // bench, or the stream-driven replicator if it notices first).
  await deletePartition(follower, tp);
  const started = performance.now();
  await fullSync(leader, follower, tp);
  for (;;) {
    const h = await readHead(follower, tp);
    if (h?.leo === SYNC_RECORDS && h.snapshotting === undefined) break;
    await sleep(20);
  }
  const seconds = (performance.now() - started) / 1000;
  const { bytes } = await latestSnapshot(tp);
  syncRows.push([name, batches, SYNC_RECORDS, Math.round(bytes / 1e5) / 10, seconds, Math.round(SYNC_RECORDS / seconds)]);
}
await stack.stop();

await writeResult({
  scenario: 'replication',
  title: 'Replication on the local stack',
  description: 'Local stack (DynamoDB Local in memory, one process; s3rver), 3 brokers, RF 3, with the stream-driven replicator. '
    + `(1) Produce latency per acks setting over HTTP, one 100-byte record per request, one request in flight (${LATENCY_REQUESTS} requests each). `
    + '(2) What one acks=all produce of a 1 KiB record costs in DynamoDB (median sample by billed write units; the stream-driven echo excluded by timing). '
    + `(3) A full sync (snapshot + replay) of ${SYNC_RECORDS.toLocaleString('en-US')} records of 100 bytes to a wiped follower.`,
  tables: [
    { title: 'Produce latency per acks', columns: ['acks', 'requests', 'p50 ms', 'p90 ms', 'p99 ms'], rows: latencyRows },
    {
      title: 'One acks=all produce of a 1 KiB record, RF 3',
      columns: ['samples', 'write units (billed)', 'write units (DynamoDB Local reports)', 'read units', 'requests'],
      rows: [[samples.length, median.billedWriteUnits, median.writeUnits, median.readUnits, byOperation(median.requests)]],
    },
    { title: 'Full sync of a wiped follower', columns: ['full sync', 'batches', 'records', 'snapshot MB', 'seconds', 'records/s'], rows: syncRows },
  ],
  charts: [{ title: 'Produce latency per acks (one request in flight)', spec: barChart(latencyPoints, { x: { field: 'acks', title: null }, y: { field: 'ms', title: 'ms' }, color: { field: 'percentile' } }) }],
  data: { latency: latencyRows, acksAllCost: median, fullSync: syncRows },
});
