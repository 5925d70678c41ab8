/**
 * How long a wiped follower of a 100,000-record partition takes to rejoin the ISR, before and
 * after the tiered log (issue 12's "Done when"), and how many bytes its snapshot copies.
 *   before  segment.bytes at its maximum: nothing rolls, the whole log is in the replica tables,
 *           and the full sync copies all of it (the behaviour before segments)
 *   after   segment.bytes 1 MiB: the log rolled to S3 segments while due (as the replicator rolls
 *           it), leaving a table tail below 1 MiB; the full sync takes the segments as they are
 *           and copies only the tail
 * The partition: 100,000 records of 100 bytes in inline batches of 500, and again in batches of
 * 10 (more items per byte, as small produce requests leave them; inline.max.bytes raised to
 * 64 KiB), RF 3. One follower is wiped (its head, batches and producer states deleted), a
 * replication run without full sync drops it from the ISR, and the clock runs from there until a
 * replication run with full sync (lib/log/snapshot.ts) has it back in the ISR.
 * Quiet stack (no stream replicator, no controllers): nothing syncs but what is timed.
 * Quick: 5,000 records, segments of 64 KiB, batches of 500 only.
 * Run: `npm run bench -- wiped-follower`; results in bench/results/wiped-follower.{md,json,svg}.
 */
import { barChart, sized, writeResult } from './lib/report.js';

process.env.LOG_LEVEL ??= 'warn';
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const { startLocalStack } = await import('../local/stack.js');
const { createTopic } = await import('../lib/cluster/topics.js');
const { replicaStore } = await import('../lib/cluster/metadata.js');
const { appendToLeader } = await import('../lib/log/append.js');
const { prepareBatches } = await import('../lib/log/batches.js');
const { replicate } = await import('../lib/log/commit.js');
const { rollPartition } = await import('../lib/log/roll.js');
const { fullSync } = await import('../lib/log/full-sync.js');
const { deletePartition } = await import('../lib/storage/replica/deletion.js');
const { queryBatches } = await import('../lib/storage/replica/reads.js');
const { readHead, tailStartOf } = await import('../lib/storage/replica/head.js');
const { listSegments } = await import('../lib/storage/segments.js');
const { topicPartitionKey } = await import('../lib/storage/model.js');
const { listKeys, readObject } = await import('../lib/storage/objects.js');

const RECORDS = sized(100_000, 5000);
const SEGMENT_BYTES = sized(2 ** 20, 2 ** 16);
const INLINE_MAX = 65_536;
const stack = await startLocalStack({ port: 0, brokers: 3, inMemory: true, controllers: 0, replicator: false });
const opts = { compression: 'none' as const, timestampType: 'CreateTime' as const, maxMessageBytes: 1_048_588, timestampBeforeMaxMs: Number.MAX_SAFE_INTEGER, timestampAfterMaxMs: Number.MAX_SAFE_INTEGER };
const rows: (string | number)[][] = [];
const points: Record<string, unknown>[] = [];
const mib = (n: number) => (n / 2 ** 20).toFixed(2);
let logBytes = 0;

for (const PER_BATCH of sized([500, 10], [500])) for (const [label, segmentBytes] of [['before', 2 ** 31 - 1], ['after', SEGMENT_BYTES]] as const) {
  const name = `wiped-${PER_BATCH}-${label}`;
  const perCall = Math.max(1, Math.floor(2 ** 20 / (PER_BATCH * 110)));
  const { topic, partitions } = await createTopic({
    name, partitions: 1, replicationFactor: 3,
    configs: [{ name: 'segment.bytes', value: String(segmentBytes) }, { name: 'inline.max.bytes', value: String(INLINE_MAX) }],
  });
  const p = partitions[0]!;
  const tp = topicPartitionKey(topic.topicId, 0);
  const leader = await replicaStore(p.leader);
  const follower = await replicaStore(p.replicas.find((b) => b !== p.leader)!);
  const target = { topic: name, leader, topicId: topic.topicId, partition: 0, tp, leaderEpoch: p.leaderEpoch, inlineMaxBytes: INLINE_MAX };
  for (let done = 0; done < RECORDS; done += PER_BATCH * perCall) {
    const group = Array.from({ length: Math.min(perCall, (RECORDS - done) / PER_BATCH) }, (_, j) =>
      prepareBatches(Array.from({ length: PER_BATCH }, (_, k) => ({ key: null, value: Buffer.from(`record-${done + j * PER_BATCH + k}-`.padEnd(100, 'x')), headers: [] })), opts)[0]!);
    logBytes = (done === 0 ? 0 : logBytes) + group.reduce((n, b) => n + b.bytes.length, 0);
    await appendToLeader(target, group);
  }
  const base = { deadline: Date.now() + 600_000, lagTimeMaxMs: 600_000 };
  let r = await replicate(name, topic.topicId, 0, { ...base, shrinkOnFailure: false });
  if (r.highWatermark !== RECORDS || r.isr.length !== 3) throw new Error(`${label}: replicated to ${r.highWatermark}, ISR ${r.isr.join(',')}`);
  // Rolls while the tail is due by segment.bytes, as the replicator does (nothing, before).
  for (;;) if ((await rollPartition(name, 0, { maxSegments: 1000 })).rolled === 0) break;
  const segments = await listSegments(topic.topicId, 0, { states: ['live'] });
  const lHead = (await readHead(leader, tp))!;
  const tail = await queryBatches(leader, tp, { fromOffset: tailStartOf(lHead), toOffset: lHead.leo - 1, maxBytes: Number.MAX_SAFE_INTEGER });

  await deletePartition(follower, tp);
  r = await replicate(name, topic.topicId, 0, { ...base, shrinkOnFailure: true });
  if (r.isr.includes(follower.brokerId)) throw new Error(`${label}: the wiped follower stayed in the ISR`);
  const started = performance.now();
  for (;;) {
    r = await replicate(name, topic.topicId, 0, { ...base, shrinkOnFailure: false, fullSync: (l, f, t) => fullSync(l, f, t) });
    if (r.isr.includes(follower.brokerId)) break;
  }
  const seconds = (performance.now() - started) / 1000;
  const fHead = (await readHead(follower, tp))!;
  const manifests = (await listKeys(`snapshots/${tp.replace('#', '/')}/`)).filter((k) => k.endsWith('/manifest.json')).sort();
  const manifest = JSON.parse((await readObject(manifests[manifests.length - 1]!)).toString('utf8')) as { bytes: number; batches: number; parts: unknown[] };
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
