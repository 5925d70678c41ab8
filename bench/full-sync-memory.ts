/**
 * Memory and time of one full sync: a follower that lost its log gets a partition of 20,000
 * one-record batches of 1 KiB back from the leader. Peak growth of the JS heap and of the
 * memory outside it (Buffers: `arrayBuffers`) over the sync, sampled every 2 ms, from a baseline
 * taken after a GC (run with `node --expose-gc --import tsx` for a clean baseline).
 * Quick: 1,000 records. Run: `npm run bench -- full-sync-memory` (the runner exposes the GC);
 * results in bench/results/full-sync-memory.{md,json,svg}.
 */
import './lib/env.js';
import { lineChart, sized, writeResult } from './lib/report.js';
import { appendKiBRecords, createPartition, followerOf } from './lib/partition.js';
import { startQuietStack } from './lib/quiet-stack.js';
import { fullSync } from '../lib/log/full-sync.js';
import { deletePartition } from '../lib/storage/replica/deletion.js';
import { readHead } from '../lib/storage/replica/head.js';

const RECORDS = Number(process.env.FULL_SYNC_RECORDS ?? sized(20_000, 1000));
const stack = await startQuietStack();
const p = await createPartition('sync-memory');
const { tp, leader } = p;
const follower = await followerOf(p);
await appendKiBRecords(p, RECORDS);
await deletePartition(follower, tp);

const gc = (globalThis as { gc?: () => void }).gc;
gc?.();
const base = process.memoryUsage();
const peak = { heapUsed: base.heapUsed, arrayBuffers: base.arrayBuffers, sum: base.heapUsed + base.arrayBuffers, rss: base.rss };
// The growth over the sync, kept every ~50 ms for the chart.
const series: { s: number; measure: string; MiB: number }[] = [];
let lastKept = -Infinity;
const started = performance.now();
const sample = setInterval(() => {
  const m = process.memoryUsage();
  peak.heapUsed = Math.max(peak.heapUsed, m.heapUsed);
  peak.arrayBuffers = Math.max(peak.arrayBuffers, m.arrayBuffers);
  peak.sum = Math.max(peak.sum, m.heapUsed + m.arrayBuffers);
  peak.rss = Math.max(peak.rss, m.rss);
  const t = performance.now() - started;
  if (t - lastKept >= 50) {
    lastKept = t;
    series.push({ s: t / 1000, measure: 'heap', MiB: (m.heapUsed - base.heapUsed) / 2 ** 20 });
    series.push({ s: t / 1000, measure: 'Buffers', MiB: (m.arrayBuffers - base.arrayBuffers) / 2 ** 20 });
  }
}, 2);
const ok = await fullSync(leader, follower, tp);
const seconds = (performance.now() - started) / 1000;
clearInterval(sample);
const head = await readHead(follower, tp);
await stack.stop();

const mib = (n: number) => Math.round((n / 2 ** 20) * 10) / 10;
await writeResult({
  scenario: 'full-sync-memory',
  title: 'Memory and time of one full sync',
  description: `A follower that lost its log gets a partition of ${RECORDS.toLocaleString('en-US')} one-record batches of 1 KiB back from the leader (lib/log/full-sync.ts). `
    + `Peak growth of the JS heap and of the memory outside it (Buffers) over the sync, sampled every 2 ms, from a baseline taken after a GC (GC exposed: ${gc !== undefined}). `
    + 'Local stack (DynamoDB Local in memory, one process; s3rver; no replicator), RF 3.',
  tables: [{
    title: 'Full sync',
    columns: ['records × size', 'synced', 'follower leo', 'seconds', 'peak heap growth MiB', 'peak Buffer growth MiB', 'peak heap+Buffer growth MiB', 'peak RSS growth MiB'],
    rows: [[`${RECORDS} × 1 KiB`, String(ok), head?.leo ?? 'none', seconds, mib(peak.heapUsed - base.heapUsed), mib(peak.arrayBuffers - base.arrayBuffers), mib(peak.sum - base.heapUsed - base.arrayBuffers), mib(peak.rss - base.rss)]],
  }],
  charts: [{ title: 'Memory growth during the full sync', spec: lineChart(series, { x: { field: 's', title: 'seconds' }, y: { field: 'MiB', title: 'growth over baseline (MiB)' }, color: { field: 'measure' } }) }],
  data: { records: RECORDS, synced: ok, followerLeo: head?.leo ?? null, seconds, peakGrowthBytes: { heap: peak.heapUsed - base.heapUsed, buffers: peak.arrayBuffers - base.arrayBuffers, sum: peak.sum - base.heapUsed - base.arrayBuffers, rss: peak.rss - base.rss } },
});
