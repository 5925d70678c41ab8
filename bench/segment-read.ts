/**
 * Read throughput from S3 segments versus from the replica table on the local stack: a partition
 * of 1 KiB records is read end to end with `fetchRecords` (1 MiB answers, decoded) while its log is
 * in the table, then again once it is rolled into segments (cold: footer and index not cached;
 * warm: cached). The storage alone is the baseline in the same run: the same bytes with raw
 * `queryBatches` pages (DynamoDB Query) and raw 1 MiB ranged GETs of the segment objects (s3rver).
 * Run: `npm run bench -- segment-read`; results in bench/results/segment-read.{md,json,svg}.
 * `SEGMENT_READ_RECORDS` (default 20,000; quick 2,000) and `SEGMENT_READ_BATCH` (records per batch, default 1).
 */
import './lib/env.js';
import { barChart, sized, writeResult } from './lib/report.js';
import { appendKiBRecords, createPartition, replicatePartition } from './lib/partition.js';
import { startQuietStack } from './lib/quiet-stack.js';
import { fetchRecords } from '../lib/log/read.js';
import { encodeSegment } from '../lib/log/segment-format.js';
import { clearSegmentCaches } from '../lib/log/segment-reader.js';
import { putObject, readRange } from '../lib/storage/objects.js';
import { advanceTailStart } from '../lib/storage/replica/tail.js';
import { queryBatches } from '../lib/storage/replica/reads.js';
import { readHead, tailStartOf } from '../lib/storage/replica/head.js';
import { commitSegment, listSegments, registerPending, segmentObjectKey } from '../lib/storage/coordination/segments.js';

const RECORDS = Number(process.env.SEGMENT_READ_RECORDS ?? sized(20_000, 2000));
const PER_BATCH = Number(process.env.SEGMENT_READ_BATCH ?? 1);
const SEGMENT_BYTES = sized(4, 1) * 2 ** 20;
const PAGE = 2 ** 20;
const MB = 1e6;

const stack = await startQuietStack(1);
const p = await createPartition('segment-read', { replicationFactor: 1 });
const { topicId, tp, leader } = p;
await appendKiBRecords(p, RECORDS, PER_BATCH);
await replicatePartition(p, { ms: 60_000 });
const hw = (await readHead(leader, tp))!.hw;

interface Row { scenario: string; records: number; bytes: number; requests: number; seconds: number }
const rows: Row[] = [];
async function measure(scenario: string, run: () => Promise<{ records: number; bytes: number; requests: number }>) {
  const started = performance.now();
  const r = await run();
  rows.push({ scenario, ...r, seconds: (performance.now() - started) / 1000 });
}

/** The whole log through fetchRecords, 1 MiB answers; MB counts record values. */
async function fetchAll() {
  let records = 0;
  let requests = 0;
  let bytes = 0;
  for (let offset = 0; offset < hw; requests++) {
    const r = await fetchRecords({ leader, tp, partition: 0 }, { offset, maxBytes: PAGE, maxWaitMs: 0 });
    records += r.records.length;
    bytes += r.records.reduce((n, x) => n + (x.value?.length ?? 0), 0);
    offset = r.nextOffset;
  }
  return { records, bytes, requests };
}

// The table: raw Query pages, then fetch, after one untimed pass (DynamoDB Local's JIT, connections).
await fetchAll();
await measure('table: raw Query pages (queryBatches calls of 1 MiB)', async () => {
  let records = 0;
  let bytes = 0;
  let requests = 0;
  for (let offset = 0; offset < hw; requests++) {
    const batches = await queryBatches(leader, tp, { fromOffset: offset, toOffset: hw - 1, maxBytes: PAGE });
    for (const b of batches) {
      records += b.recordCount;
      bytes += b.sizeBytes;
    }
    offset = batches[batches.length - 1]!.lastOffset + 1;
  }
  return { records, bytes, requests };
});
await measure('table: fetchRecords (1 MiB answers, decoded)', fetchAll);

// Roll everything into segments of SEGMENT_BYTES (the roll's steps: encode, register, PUT, commit, trim).
const rollStarted = performance.now();
for (;;) {
  const base = tailStartOf((await readHead(leader, tp))!);
  if (base >= hw) break;
  const batches = await queryBatches(leader, tp, { fromOffset: base, toOffset: hw - 1, maxBytes: SEGMENT_BYTES });
  const end = batches[batches.length - 1]!.lastOffset + 1;
  const encoded = encodeSegment(batches.map((b) => ({
    baseOffset: b.baseOffset, lastOffset: b.lastOffset, leaderEpoch: b.leaderEpoch, maxTimestamp: b.maxTimestamp, recordCount: b.recordCount,
    sizeBytes: b.sizeBytes, ...(b.data ? { bytes: b.data } : {}), ...(b.s3 ? { external: b.s3 } : {}),
  })));
  const range = { topicId, partition: 0, baseOffset: base, endOffset: end, key: segmentObjectKey(topicId, 0, base) };
  await registerPending({ ...range, createdAt: Date.now() });
  await putObject(range.key, encoded.body);
  const f = encoded.footer;
  await commitSegment(range, { sizeBytes: encoded.body.length, recordCount: f.recordCount, batchCount: f.batchCount, minTimestamp: f.minTimestamp, maxTimestamp: f.maxTimestamp });
  await advanceTailStart(leader, tp, end);
}
const rollSeconds = (performance.now() - rollStarted) / 1000;
const segments = await listSegments(topicId, 0);

// The segments: raw ranged GETs, then fetch cold and warm.
await measure('segments: raw ranged GETs (1 MiB)', async () => {
  let bytes = 0;
  let requests = 0;
  for (const s of segments) {
    for (let at = 0; at < s.sizeBytes!; at += PAGE, requests++) bytes += (await readRange(s.key, at, Math.min(PAGE, s.sizeBytes! - at))).length;
  }
  return { records: segments.reduce((n, s) => n + s.recordCount!, 0), bytes, requests };
});
clearSegmentCaches();
await measure('segments: fetchRecords, cold (footer + index read)', fetchAll);
await measure('segments: fetchRecords, warm (index cached)', fetchAll);
await stack.stop();

const notes = [
  `${segments.length} segments of ≤ ${SEGMENT_BYTES / 2 ** 20} MiB (rolled in ${rollSeconds.toFixed(1)} s).`,
  'MB: batch bytes for the raw rows, record values for fetchRecords.',
];
await writeResult({
  scenario: `segment-read${PER_BATCH === 1 ? '' : `-batch${PER_BATCH}`}`,
  title: 'Reading from S3 segments versus the replica table',
  description: `Local stack (DynamoDB Local in memory, one process; s3rver on local disk), 1 broker, ${RECORDS.toLocaleString('en-US')} records of 1 KiB, ${PER_BATCH} per batch, `
    + 'read end to end with fetchRecords (1 MiB answers, decoded) from the replica table, then from S3 segments (cold: footer and index not cached; warm: cached). '
    + 'The baseline in the same run: raw DynamoDB Query pages and raw 1 MiB ranged GETs of the same bytes.',
  tables: [{
    title: 'Reading the whole log',
    columns: ['scenario', 'records', 'MB', 'requests', 's', 'records/s', 'MB/s'],
    rows: rows.map((r) => [r.scenario, r.records, r.bytes / MB, r.requests, r.seconds, Math.round(r.records / r.seconds), r.bytes / MB / r.seconds]),
    notes,
  }],
  charts: [{ title: 'Read throughput (MB/s)', spec: barChart(rows.map((r) => ({ scenario: r.scenario, mbps: r.bytes / MB / r.seconds })), { x: { field: 'scenario', title: null }, y: { field: 'mbps', title: 'MB/s' } }) }],
  data: { records: RECORDS, perBatch: PER_BATCH, segmentBytes: SEGMENT_BYTES, segments: segments.length, rollSeconds, rows },
});
