/**
 * Scaling: (1) produce throughput, acks=all RF 3, one sequential writer per partition, as
 * partitions grow 1 → 4 → 16 → 64 (`--quick`: 1, 4); (2) what one fetch costs — DynamoDB requests,
 * read units, S3 requests, sequential round trips, latency — as one partition's log grows
 * 1,000 → 10,000 → 100,000 → 1,000,000 records (`--quick`: 1,000 and 3,000). Cost should stay
 * flat: a fetch reads from where it is asked, whatever lies before it.
 * The log is filled fast with lib/ calls (produce acks=all, 1,000 records of 100 bytes per request:
 * each batch over inline.max.bytes, so in S3 with a pointer in the tables) and rolled into S3
 * segments as segment.bytes says (rollPartition, as the controller's maintenance runs it), so
 * fetches from old offsets read segments and fetches at the tail read the table.
 * Run: `npm run bench -- scaling [--quick]`.
 */
import './lib/env.js';
import { isQuick, writeResult, type Table } from './lib/report.js';
import { KIB_VALUE, RequestRecorder, STACK_NOTE, formatCalls, http, pct, runWriters, startBenchStack, summarize, type LoadRun } from './lib/load.js';
import { counted } from './lib/capacity.js';
import { createPartition, rollAll } from './lib/partition.js';
import { createTopic } from '../lib/cluster/topics.js';
import { produce } from '../lib/log/produce.js';
import { listSegments } from '../lib/storage/coordination/segments.js';
import { readHead, tailStartOf } from '../lib/storage/replica/head.js';

const quick = isQuick();
const PARTITIONS = quick ? [1, 4] : [1, 4, 16, 64];
const SECONDS = quick ? 1 : 6;
const LOG_SIZES = quick ? [1_000, 3_000] : [1_000, 10_000, 100_000, 1_000_000];
const FILL_BATCH = 5_000;
/** Records each fetch returns: the last ones of a batch (the whole batch is read; the answer holds these). */
const FETCH_RECORDS = 100;
const FILL_VALUE_BYTES = 100;
const FETCHES = quick ? 8 : 25;

const stack = await startBenchStack();
const C = `${stack.url}/v3/clusters/${stack.clusterId}`;
const recorder = new RequestRecorder();
const started = performance.now();

// 1. Throughput as partitions grow.
interface Width { partitions: number; run: LoadRun; trips: ReturnType<typeof summarize> }
const widths: Width[] = [];
for (const n of PARTITIONS) {
  const topic = `scale-${n}`;
  await createTopic({ name: topic, partitions: n, replicationFactor: 3 });
  const one = async (w: number) => {
    const r = await http(`${C}/topics/${topic}/records?acks=all`, 'POST', { partition_id: w, value: KIB_VALUE });
    if (r.error_code !== 200) throw new Error(`produce: ${JSON.stringify(r)}`);
    return 1;
  };
  // The first request to a new topic's partition fills caches: not measured.
  await Promise.all(Array.from({ length: n }, (_, w) => one(w)));
  const run = await recorder.during(topic, () => runWriters(n, SECONDS, one));
  widths.push({ partitions: n, run, trips: summarize((recorder.byLabel.get(topic) ?? []).slice(run.warmupOps)) });
  process.stdout.write(`  ${n} partition(s): ${Math.round(run.recordsPerSec)} records/s, p50 ${run.p50.toFixed(1)} ms\n`);
}

// 2. Fetch cost as one partition's log grows.
const LOG = 'scale-log';
const { topic, leader: logLeader, tp } = await createPartition(LOG);
const records = (seed: number, count: number) => Array.from({ length: count }, (_, i) => ({ partition: 0, key: null, value: Buffer.alloc(FILL_VALUE_BYTES, (seed + i) % 251), headers: [] }));
type Position = 'oldest' | 'middle' | 'tail';
const POSITIONS: Position[] = ['oldest', 'middle', 'tail'];
interface FetchCost {
  size: number; position: Position; fetches: number; recordsPerFetch: number; p50: number; p99: number;
  ddbRequests: number; readUnits: number; s3Gets: number; tripsP50: number; tripsMax: number; calls: string;
}
interface Growth { size: number; fillSeconds: number; segments: number; tailStart: number; costs: FetchCost[] }
const growth: Growth[] = [];
let filled = 0;
/** Each batch's first offset and record count, in offset order. */
const batches: { start: number; count: number }[] = [];
for (const size of LOG_SIZES) {
  const t = performance.now();
  while (filled < size) {
    const count = Math.min(FILL_BATCH, size - filled);
    const [r] = await produce(LOG, records(filled, count), { acks: 'all' });
    if (!r?.ok) throw new Error(`fill at ${filled}: ${r?.ok === false ? r.error.message : 'no outcome'}`);
    batches.push({ start: filled, count });
    filled += count;
    // Roll as the controller would, as segments come due (not forced: the tail stays in the tables).
    if (filled % 100_000 === 0) await rollAll(LOG, { maxSegments: 8 });
  }
  await rollAll(LOG, { maxSegments: 8 });
  const fillSeconds = (performance.now() - t) / 1000;
  const segments = await listSegments(topic.topicId, 0, { states: ['live'] });
  const leaderHead = await readHead(logLeader, tp);
  const costs: FetchCost[] = [];
  for (const position of POSITIONS) {
    const pick = (i: number) => batches[position === 'oldest' ? 0 : position === 'tail' ? batches.length - 1 : Math.floor(batches.length / 2) + (i % Math.max(1, Math.floor(batches.length / 4)))]!;
    const batchAt = (i: number) => {
      const b = pick(i);
      return b.start + Math.max(0, b.count - FETCH_RECORDS);
    };
    const label = `fetch ${position} @${size}`;
    const latencies: number[] = [];
    let got = 0;
    const cap = await counted(() => recorder.during(label, async () => {
      for (let i = 0; i < FETCHES; i++) {
        const at = performance.now();
        const r = await http(`${C}/topics/${LOG}/partitions/0/records?offset=${batchAt(i)}&max_bytes=1`);
        latencies.push(performance.now() - at);
        got += (r.records as unknown[]).length;
      }
    }));
    const s = summarize(recorder.byLabel.get(label) ?? []);
    costs.push({
      size, position, fetches: FETCHES, recordsPerFetch: got / FETCHES, p50: pct(latencies, 0.5), p99: pct(latencies, 0.99),
      ddbRequests: Object.values(cap.requests).reduce((a, b) => a + b, 0) / FETCHES, readUnits: cap.readUnits / FETCHES,
      s3Gets: (cap.s3Requests.GetObject ?? 0) / FETCHES, tripsP50: s.p50, tripsMax: s.max, calls: formatCalls(s.callsByOp),
    });
  }
  growth.push({ size, fillSeconds, segments: segments.length, tailStart: leaderHead ? tailStartOf(leaderHead) : NaN, costs });
  process.stdout.write(`  log of ${size.toLocaleString('en-US')} records: filled in ${fillSeconds.toFixed(1)} s, ${segments.length} segment(s); tail fetch p50 ${costs[2]!.p50.toFixed(1)} ms\n`);
}
recorder.stop();
await stack.stop();
const seconds = (performance.now() - started) / 1000;

const widthTable: Table = {
  title: 'Produce throughput as partitions grow (acks=all, RF 3, one writer per partition)',
  columns: ['partitions = writers', 'records/s', 'records/s per partition', 'p50 ms', 'p99 ms', 'round trips p50', 'round trips max'],
  rows: widths.map((w) => [w.partitions, Math.round(w.run.recordsPerSec), w.run.recordsPerSec / w.partitions, w.run.p50, w.run.p99, w.trips.p50, w.trips.max]),
  notes: ['1 KiB records, one per request, over HTTP. All partitions share 3 DynamoDB Local processes and 2 cores: the total, not the per-partition rate, is what this machine can show.'],
};
const fetchTable: Table = {
  title: 'One fetch as the log grows (means per fetch)',
  columns: ['log records', 'live segments', 'table tail from', 'fetch from', 'records', 'p50 ms', 'p99 ms', 'DynamoDB requests', 'read units', 'S3 GETs', 'round trips p50 / max', 'store calls by op'],
  rows: growth.flatMap((g) => g.costs.map((c) => [
    g.size, g.segments, g.tailStart, c.position, Math.round(c.recordsPerFetch), c.p50, c.p99, c.ddbRequests, c.readUnits, c.s3Gets, `${c.tripsP50} / ${c.tripsMax}`, c.calls,
  ])),
  notes: [
    `Each fetch asks for the last ${FETCH_RECORDS} records of one batch of up to ${FILL_BATCH.toLocaleString('en-US')} records of ${FILL_VALUE_BYTES} bytes (max_bytes=1: one batch; the whole batch is read from S3, the answer holds ${FETCH_RECORDS}). "oldest": the first batch; "middle": batches from the middle of the log; "tail": the last batch.`,
    'Read units as DynamoDB Local reports them (ReturnConsumedCapacity); S3 GETs counted by an SDK middleware. A segment\'s index and the live segment list may be cached in the process between fetches.',
  ],
};
const fillTable: Table = {
  title: `Filling the log (lib/ produce, acks=all, ${FILL_BATCH.toLocaleString('en-US')} × ${FILL_VALUE_BYTES} B per request, rolls included)`,
  columns: ['log records', 'records added', 'seconds', 'records/s', 'MB/s of values'],
  rows: growth.map((g, i) => {
    const added = g.size - (growth[i - 1]?.size ?? 0);
    return [g.size, added, g.fillSeconds, Math.round(added / g.fillSeconds), (added * FILL_VALUE_BYTES) / 1e6 / g.fillSeconds];
  }),
};
await writeResult({
  scenario: 'scaling',
  title: 'Scaling: partitions, and a partition\'s log length',
  description: `${STACK_NOTE} Part 1 produces over HTTP for ${SECONDS} s per partition count. Part 2 fills one RF 3 partition with lib/ produce calls (acks=all, `
    + `${FILL_BATCH.toLocaleString('en-US')} records of ${FILL_VALUE_BYTES} bytes per request), rolls it into S3 segments as segment.bytes (default 16 MiB) says, and fetches ${FETCHES} times over HTTP at each position.`,
  tables: [widthTable, fetchTable, fillTable],
  charts: [
    {
      title: 'acks=all records/s vs partitions (one writer per partition)',
      spec: {
        width: 420, height: 260, data: { values: widths.map((w) => ({ partitions: w.partitions, 'records/s': Math.round(w.run.recordsPerSec) })) },
        mark: { type: 'line', point: true },
        encoding: { x: { field: 'partitions', type: 'quantitative', scale: { type: 'log', base: 2 }, axis: { values: PARTITIONS } }, y: { field: 'records/s', type: 'quantitative' } },
      },
    },
    {
      title: 'Fetch p50 latency vs log length',
      spec: {
        width: 420, height: 260, data: { values: growth.flatMap((g) => g.costs.map((c) => ({ 'log records': g.size, position: c.position, 'p50 ms': c.p50, 'DynamoDB requests': c.ddbRequests }))) },
        mark: { type: 'line', point: true },
        encoding: {
          x: { field: 'log records', type: 'quantitative', scale: { type: 'log' }, axis: { values: LOG_SIZES } },
          y: { field: 'p50 ms', type: 'quantitative' },
          color: { field: 'position', type: 'nominal', sort: POSITIONS },
        },
      },
    },
  ],
  data: { widths: widths.map((w) => ({ partitions: w.partitions, ...w.run, latencies: undefined, trips: w.trips })), growth },
  notes: [`Run took ${Math.round(seconds)} s.`],
});
