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
 * Run: `npm run bench -- wiped-follower`; results in bench/results/wiped-follower.md.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

process.env.LOG_LEVEL ??= 'warn';
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const { startLocalStack } = await import('../lib/local/stack.js');
const { createTopic } = await import('../lib/cluster/topics.js');
const { replicaStore } = await import('../lib/cluster/metadata.js');
const { appendToLeader } = await import('../lib/log/append.js');
const { prepareBatches } = await import('../lib/log/batches.js');
const { replicate } = await import('../lib/log/replicate.js');
const { rollPartition } = await import('../lib/log/roll.js');
const { fullSync } = await import('../lib/log/snapshot.js');
const { deletePartition, queryBatches, readHead, tailStartOf } = await import('../lib/storage/replica.js');
const { listSegments } = await import('../lib/storage/segments.js');
const { topicPartitionKey } = await import('../lib/storage/model.js');
const { listKeys, readObject } = await import('../lib/storage/objects.js');

const RECORDS = 100_000;
const INLINE_MAX = 65_536;
const stack = await startLocalStack({ port: 0, brokers: 3, inMemory: true, controllers: 0, replicator: false });
const opts = { compression: 'none' as const, timestampType: 'CreateTime' as const, maxMessageBytes: 1_048_588, timestampBeforeMaxMs: Number.MAX_SAFE_INTEGER, timestampAfterMaxMs: Number.MAX_SAFE_INTEGER };
const lines: string[] = [];
const out = (s: string) => {
  lines.push(s);
  process.stdout.write(`${s}\n`);
};
const mib = (n: number) => (n / 2 ** 20).toFixed(2);
let logBytes = 0;

out('| records per batch | case | segment.bytes | segments (MiB) | leader table tail: records (MiB) | snapshot copied: batches, MiB, parts | seconds to rejoin the ISR | follower leo / tailStart |');
out('|---|---|---|---|---|---|---|---|');
for (const PER_BATCH of [500, 10]) for (const [label, segmentBytes] of [['before', 2 ** 31 - 1], ['after', 2 ** 20]] as const) {
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
  out(`| ${PER_BATCH} | ${label} | ${segmentBytes} | ${segments.length} (${mib(segments.reduce((n, s) => n + (s.sizeBytes ?? 0), 0))}) | ${lHead.leo - tailStartOf(lHead)} (${mib(tail.reduce((n, b) => n + b.sizeBytes, 0))}) | ${manifest.batches}, ${mib(manifest.bytes)}, ${manifest.parts.length} | ${seconds.toFixed(2)} | ${fHead.leo} / ${tailStartOf(fHead)} |`);
}
await stack.stop();
out('');
out(`${RECORDS} records of 100 bytes in inline batches (the last case: ${mib(logBytes)} MiB of batches), RF 3. Seconds: from the wiped follower's removal from the ISR until a replication run with full sync has it back in (snapshot build + install + copy + ISR join).`);

const header = `# wiped-follower — ${new Date().toISOString()}\n\nLocal stack (DynamoDB Local in memory, one process; s3rver; no stream replicator, no controllers), 3 brokers. Node ${process.version}, ${os.cpus().length} cores, shared with other jobs (the machine was loaded: timings are indicative).\n\n`;
fs.writeFileSync(path.join(import.meta.dirname, 'results', 'wiped-follower.md'), `${header}${lines.join('\n')}\n`);
