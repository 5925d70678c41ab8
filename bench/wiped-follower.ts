/**
 * How long a wiped follower of a 100,000-record partition takes to rejoin the ISR, before and
 * after the tiered log, and how many bytes its snapshot copies.
 *   before  segment.bytes at its maximum: nothing rolls, the whole log is in the replica tables,
 *           and the full sync copies all of it (the behaviour before segments)
 *   after   segment.bytes 1 MiB: the log rolled to S3 segments while due (as the replicator rolls
 *           it), leaving a table tail below 1 MiB; the full sync takes the segments as they are
 *           and copies only the tail
 * The partition: 100,000 records of 100 bytes in inline batches of 500, and again in batches of
 * 10 (more items per byte, as small produce requests leave them; inline.max.bytes raised to
 * 64 KiB), RF 3. One follower is wiped (its head, batches and producer states deleted), a
 * replication run without full sync drops it from the ISR, and the clock runs from there until a
 * replication run with full sync (lib/log/full-sync.ts) has it back in the ISR.
 * Quiet stack (no stream replicator, no controllers): nothing syncs but what is timed.
 * Quick: 5,000 records, segments of 64 KiB, batches of 500 only.
 * Run: `npm run bench -- wiped-follower`; results in bench/results/wiped-follower.{md,json,svg}.
 */
import './lib/env.js';
import { barChart, sized, writeResult } from './lib/report.js';
import { appendSmallRecords, createPartition, followerOf, latestSnapshot, replicatePartition, rollAll, tableLog } from './lib/partition.js';
import { startQuietStack } from './lib/quiet-stack.js';
import { fullSync } from '../lib/log/full-sync.js';
import { deletePartition } from '../lib/storage/replica/deletion.js';
import { readHead, tailStartOf } from '../lib/storage/replica/head.js';
import { listSegments } from '../lib/storage/coordination/segments.js';

const RECORDS = sized(100_000, 5000);
const SEGMENT_BYTES = sized(2 ** 20, 2 ** 16);
const INLINE_MAX = 65_536;
const stack = await startQuietStack();
const rows: (string | number)[][] = [];
const points: Record<string, unknown>[] = [];
const mib = (n: number) => (n / 2 ** 20).toFixed(2);
let logBytes = 0;

for (const PER_BATCH of sized([500, 10], [500])) for (const [label, segmentBytes] of [['before', 2 ** 31 - 1], ['after', SEGMENT_BYTES]] as const) {
  const name = `wiped-${PER_BATCH}-${label}`;
  const p = await createPartition(name, { configs: [{ name: 'segment.bytes', value: String(segmentBytes) }, { name: 'inline.max.bytes', value: String(INLINE_MAX) }] });
  const { topicId, tp, leader } = p;
  const follower = await followerOf(p);
  logBytes = await appendSmallRecords(p, RECORDS, PER_BATCH, { inlineMaxBytes: INLINE_MAX });
  // One deadline for every replication run of the case: 10 minutes after its appends.
  const deadline = Date.now() + 600_000;
  let r = await replicatePartition(p, { deadline });
  if (r.highWatermark !== RECORDS || r.isr.length !== 3) throw new Error(`${label}: replicated to ${r.highWatermark}, ISR ${r.isr.join(',')}`);
  // Rolls while the tail is due by segment.bytes, as the replicator does (nothing, before).
  await rollAll(name, { maxSegments: 1000 });
  const segments = await listSegments(topicId, 0, { states: ['live'] });
  const { head: lHead, batches: tail } = await tableLog(leader, tp);

  await deletePartition(follower, tp);
  r = await replicatePartition(p, { deadline, shrinkOnFailure: true });
  if (r.isr.includes(follower.brokerId)) throw new Error(`${label}: the wiped follower stayed in the ISR`);
  const started = performance.now();
  for (;;) {
    r = await replicatePartition(p, { deadline, fullSync: (l, f, t) => fullSync(l, f, t) });
    if (r.isr.includes(follower.brokerId)) break;
  }
  const seconds = (performance.now() - started) / 1000;
  const fHead = (await readHead(follower, tp))!;
  const manifest = await latestSnapshot(tp);
  rows.push([PER_BATCH, label, segmentBytes, `${segments.length} (${mib(segments.reduce((n, s) => n + (s.sizeBytes ?? 0), 0))})`, `${lHead.leo - tailStartOf(lHead)} (${mib(tail.reduce((n, b) => n + b.sizeBytes, 0))})`,
    `${manifest.batches}, ${mib(manifest.bytes)}, ${manifest.parts.length}`, seconds, `${fHead.leo} / ${tailStartOf(fHead)}`]);
  points.push({ batches: `${PER_BATCH} records per batch`, case: label === 'before' ? 'before (all in the tables)' : `after (segment.bytes ${mib(segmentBytes)} MiB)`, seconds });
}
await stack.stop();
await writeResult({
  scenario: 'wiped-follower',
  title: 'A wiped follower rejoining the ISR, before and after the tiered log',
  description: `A ${RECORDS.toLocaleString('en-US')}-record partition (100-byte records in inline batches, RF 3) loses one follower's log; seconds from its removal from the ISR `
    + 'until a replication run with full sync has it back in (snapshot build + install + copy + ISR join). Before: segment.bytes at its maximum, nothing rolls and the snapshot copies the whole log. '
    + 'After: the log rolled to S3 segments while due, and the snapshot copies only the table tail. Quiet local stack (in-memory DynamoDB Local, s3rver, no stream replicator, no controllers).',
  tables: [{
    title: 'Rejoining the ISR',
    columns: ['records per batch', 'case', 'segment.bytes', 'segments (MiB)', 'leader table tail: records (MiB)', 'snapshot copied: batches, MiB, parts', 'seconds to rejoin the ISR', 'follower leo / tailStart'],
    rows,
    notes: [`The last case's log: ${mib(logBytes)} MiB of batches.`],
  }],
  charts: [{ title: 'Seconds for a wiped follower to rejoin the ISR', spec: barChart(points, { x: { field: 'batches', title: null }, y: { field: 'seconds' }, color: { field: 'case' } }) }],
  data: { records: RECORDS, segmentBytes: SEGMENT_BYTES, rows },
});
