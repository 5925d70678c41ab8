/**
 * Writers on one partition, in the local stack's two modes: the handlers in one process, and
 * Lambda-fidelity mode, where each concurrent request is its own execution environment with its
 * own caches (docs/architecture.md, "Lambda-fidelity mode"). Closed-loop writers (each sends its
 * next 1-record produce when the last is answered) for a fixed time per point; acknowledged
 * records per second, latency percentiles and failed requests. Afterwards every partition is read
 * back whole: each acknowledged record must be there once, at the offset it was answered with, and
 * the offsets must run without a gap. The baseline is the same load in one process, where
 * concurrent requests share one lane and one commit. Run: `npm run bench -- lambda-concurrency`.
 */
import { startLocalStack } from '../local/stack.js';
import { replicaTableSpec, DEFAULT_TABLE_PREFIX } from '../lib/storage/tables.js';
import { barChart, isQuick, writersFromEnv, writeResult } from './lib/report.js';
import { storeCeiling } from './lib/store-ceiling.js';
import { lambdaStats, warmEnvironments } from './lib/lambda-warmup.js';

// (the quick form, a smoke test in `npm test`, runs the smallest points only)
const WRITERS = isQuick() ? [1, 4] : writersFromEnv([1, 4, 16, 64]);
const SECONDS = isQuick() ? 1 : 10;
const MODES = ['one process', 'Lambda'] as const;

interface Point {
  mode: typeof MODES[number]; acks: 'all' | '1'; writers: number;
  perSecond: number; p50: number; p99: number; failed: number; acked: number;
  /** Lambda: records/s the store itself takes for the operations the path needs (bench/lib/store-ceiling.ts). */
  ceiling?: number;
  /** Lambda: execution environments started during the point (any function). */
  coldStarts?: number;
}

interface Check { mode: string; acks: string; acked: number; found: number; missing: number; duplicates: number; misplaced: number; gaps: number; end: number }

const percentile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor(q * s.length))] as number;
};

async function measure(mode: typeof MODES[number]): Promise<{ points: Point[]; checks: Check[] }> {
  const lambda = mode === 'Lambda';
  const s = await startLocalStack({ port: 0, inMemory: true, controllers: 0, controllerScheduleMs: 0, lambda: lambda ? { concurrency: 2 * Math.max(...WRITERS) + 20 } : false });
  const points: Point[] = [];
  const checks: Check[] = [];
  try {
    const v3 = `${s.url}/v3/clusters/${s.clusterId}`;
    const call = (method: string, p: string, b?: unknown) => fetch(`${v3}${p}`, { method, headers: { 'content-type': 'application/json' }, ...(b === undefined ? {} : { body: JSON.stringify(b) }) })
      .then(async (r) => ({ status: r.status, text: await r.text() }));
    for (const acks of (['1', 'all'] as const).filter((a) => !process.env.BENCH_ACKS || a === process.env.BENCH_ACKS)) {
      const topic = `contention-${acks}`;
      await call('POST', '/topics', { topic_name: topic, partitions_count: 1, replication_factor: 3 });
      const answered = new Map<string, number>();
      // Warm-up: every environment the largest point needs (bench/lib/lambda-warmup.ts).
      let sent = 0;
      const wave = (n: number) => Promise.all(Array.from({ length: n }, () => {
        const value = `warm-${sent++}`;
        return call('POST', `/topics/${topic}/records?acks=${acks}`, { partition_id: 0, value: { type: 'STRING', data: value } })
          .then((r) => { if (r.status === 200) answered.set(value, JSON.parse(r.text).offset); });
      })).then(() => undefined);
      if (lambda) await warmEnvironments(s.url, 'produce', Math.max(...WRITERS), wave);
      else await wave(Math.max(...WRITERS));
      for (const writers of WRITERS) {
        const coldBefore = lambda ? (await lambdaStats(s.url)).coldStarts : 0;
        const started = performance.now();
        const latencies: number[] = [];
        let failed = 0;
        await Promise.all(Array.from({ length: writers }, async (_, w) => {
          for (let i = 0; performance.now() - started < SECONDS * 1000; i++) {
            const value = `${writers}-${w}-${i}`;
            const sent = performance.now();
            const r = await call('POST', `/topics/${topic}/records?acks=${acks}`, { partition_id: 0, value: { type: 'STRING', data: value } });
            if (r.status === 200) {
              latencies.push(performance.now() - sent);
              answered.set(value, JSON.parse(r.text).offset);
            } else {
              failed++;
              if (process.env.BENCH_SHOW_FAILURES) console.log(r.status, r.text);
            }
          }
        }));
        const seconds = (performance.now() - started) / 1000;
        const coldStarts = lambda ? (await lambdaStats(s.url)).coldStarts - coldBefore : undefined;
        // (the same store, right after: the direct path for one writer, else a round of every writer)
        const ceiling = lambda ? await storeCeiling({ env: s.env, table: replicaTableSpec(1, DEFAULT_TABLE_PREFIX).name, workers: writers, acks, round: writers, seconds: SECONDS / 2 }) : undefined;
        points.push({ mode, acks, writers, perSecond: latencies.length / seconds, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), failed, acked: latencies.length, ...(ceiling !== undefined ? { ceiling } : {}), ...(coldStarts !== undefined ? { coldStarts } : {}) });
        console.log(JSON.stringify(points[points.length - 1]));
      }
      checks.push(await readBack(call, mode, acks, topic, answered));
    }
  } finally {
    await s.stop();
  }
  return { points, checks };
}

/** Reads the partition whole and checks every acknowledged record against it. */
async function readBack(call: (m: string, p: string) => Promise<{ status: number; text: string }>, mode: string, acks: string, topic: string, answered: Map<string, number>): Promise<Check> {
  const at = new Map<string, number[]>();
  let end = 0;
  let gaps = 0;
  // (acks=1: the high watermark follows the replicator; a few seconds at most)
  for (let from = 0, tries = 0; tries < 100;) {
    const r = await call('GET', `/topics/${topic}/partitions/0/records?offset=${from}&format=string&max_bytes=4000000`);
    const body = JSON.parse(r.text);
    for (const rec of body.records as { offset: number; value: { data: string } }[]) {
      if (rec.offset !== from) gaps++;
      from = rec.offset + 1;
      at.set(rec.value.data, [...(at.get(rec.value.data) ?? []), rec.offset]);
    }
    end = body.high_watermark;
    if (from >= body.high_watermark && body.high_watermark >= Math.max(0, ...answered.values()) + 1) break;
    if ((body.records as unknown[]).length === 0) {
      tries++;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  let missing = 0;
  let duplicates = 0;
  let misplaced = 0;
  for (const [value, offset] of answered) {
    const offsets = at.get(value) ?? [];
    if (offsets.length === 0) missing++;
    if (offsets.length > 1) duplicates++;
    if (offsets.length > 0 && !offsets.includes(offset)) misplaced++;
  }
  return { mode, acks, acked: answered.size, found: [...at.values()].reduce((n, o) => n + o.length, 0), missing, duplicates, misplaced, gaps, end };
}

const runs = [];
// (when tuning: BENCH_MODE=Lambda or 'one process' measures one mode alone, BENCH_ACKS=1 or all one
// acks level, BENCH_WRITERS=16,64 those writer counts)
for (const mode of MODES.filter((m) => !process.env.BENCH_MODE || m === process.env.BENCH_MODE)) runs.push(await measure(mode));
const points = runs.flatMap((r) => r.points);
const checks = runs.flatMap((r) => r.checks);
const find = (mode: Point['mode'], acks: Point['acks'], writers: number) => points.find((p) => p.mode === mode && p.acks === acks && p.writers === writers);
const ms = (x: number) => (Number.isNaN(x) ? '—' : x < 1000 ? `${x.toFixed(0)} ms` : `${(x / 1000).toFixed(2)} s`);
await writeResult({
  scenario: 'lambda-concurrency',
  title: 'Concurrent writers on one partition: one process vs Lambda',
  description: `Closed-loop writers of 1-record produce requests to one RF 3 partition, ${SECONDS} s per point after a warm-up that starts every environment. In Lambda-fidelity mode every concurrent request is its own environment; the baseline is the same load on the handlers in one process.`,
  tables: [
    {
      title: 'Acknowledged records per second, latency and failed requests',
      columns: ['acks', 'writers', 'mode', 'records/s', 'vs 1 writer', 'p50', 'p99', 'failed', 'store ceiling, records/s', 'cold starts'],
      rows: (['1', 'all'] as const).flatMap((acks) => MODES.flatMap((mode) => WRITERS.map((w) => {
        const p = find(mode, acks, w);
        const one = find(mode, acks, 1);
        return [acks, String(w), mode, p ? p.perSecond.toFixed(1) : '—', p && one ? `${(p.perSecond / one.perSecond).toFixed(2)} ×` : '—', p ? ms(p.p50) : '—', p ? ms(p.p99) : '—', p ? String(p.failed) : '—', p?.ceiling !== undefined ? p.ceiling.toFixed(0) : '—', p?.coldStarts !== undefined ? String(p.coldStarts) : '—'];
      }))),
      notes: [
        'A writer that loses the race for the partition\'s head stages its batch and joins a group commit (docs/architecture.md, "Group commit"): concurrent requests on different environments combine into shared appends.',
        'In one process, concurrent requests share one lane and one commit; in Lambda each environment appends alone until it loses a race or the partition\'s head shows a recent commit that combined writers, then stages.',
        'Cold starts: execution environments started during the point. The warm-up starts every environment the largest point needs first (bench/lib/lambda-warmup.ts): on this machine a cold start takes a second or two of CPU from every running environment, which in AWS it does not.',
        'Store ceiling: the records per second DynamoDB Local itself takes, measured right after each Lambda point, when as many workers send through the SDK only the operations each record of the path needs, none waiting for a commit (bench/lib/store-ceiling.ts): the direct path for one writer; for more, a stage PUT and a read of the rounds per record, and one round (a read of the rounds, a LIST, the GETs, the round object\'s PUT, a transaction, the DELETE) of every writer\'s record (the path\'s best case). Its transactions cost DynamoDB Local time per item written.',
      ],
    },
    {
      title: 'Read back',
      columns: ['mode', 'acks', 'acknowledged', 'records in the log', 'missing', 'duplicated', 'at another offset', 'offset gaps'],
      rows: checks.map((c) => [c.mode, c.acks, String(c.acked), String(c.found), String(c.missing), String(c.duplicates), String(c.misplaced), String(c.gaps)]),
    },
  ],
  charts: [{ title: 'acks=all, records/s by writers', spec: barChart(points.filter((p) => p.acks === 'all').map((p) => ({ writers: String(p.writers), mode: p.mode, perSecond: p.perSecond })), { x: { field: 'writers', type: 'ordinal' }, y: { field: 'perSecond', type: 'quantitative' }, color: { field: 'mode', type: 'nominal' } }) }],
  data: { points, checks, seconds: SECONDS },
});
const bad = checks.filter((c) => c.missing + c.duplicates + c.misplaced + c.gaps > 0);
if (bad.length > 0) {
  console.error('read back found anomalies:', JSON.stringify(bad));
  process.exitCode = 1;
}
