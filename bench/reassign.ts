/**
 * Moving replicas (issue 15's "Done when"): how long moving one replica of a 100,000-record
 * partition takes, throttled at the default `follower.replication.throttled.rate` (10 MiB/s) and
 * unthrottled, against the raw work the same move needs (reading the leader's table tail and
 * writing it to the new broker's table, timed in the same run); and how many replicas the balancer
 * moves going from 3 to 4 brokers with 48 partitions of RF 3, against the fewest possible.
 * The partition: 100-byte records in inline batches of 500, RF 3, segment.bytes 1 MiB (the log
 * rolled to S3 segments; the move copies the segment list and the table tail). Quiet stack with
 * 4 brokers: the sweep and the controller are run by hand, so nothing else runs while it is timed.
 * Quick: 5,000 records.
 * Run: `npm run bench -- reassign`; results in bench/results/reassign.{md,json,svg}.
 */
import { barChart, sized, writeResult } from './lib/report.js';

process.env.LOG_LEVEL ??= 'warn';
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const { startLocalStack } = await import('../local/stack.js');
const { createTopic } = await import('../lib/cluster/topics.js');
const { replicaStore, invalidateMetadata } = await import('../lib/cluster/metadata.js');
const { alterClusterConfigs } = await import('../lib/cluster/cluster-config-admin.js');
const { startReassignment, reassigning } = await import('../lib/cluster/reassignment.js');
const { Controller } = await import('../lib/cluster/controller.js');
const { appendToLeader } = await import('../lib/log/append.js');
const { prepareBatches } = await import('../lib/log/batches.js');
const { replicate } = await import('../lib/log/commit.js');
const { rollPartition } = await import('../lib/log/roll.js');
const { ReplicationSweep } = await import('../lib/orchestration/sweep.js');
const { markLagging } = await import('../lib/storage/coordination/lag-index.js');
const { readPartition } = await import('../lib/storage/coordination/partitions.js');
const { copyBatches } = await import('../lib/storage/replica/batches.js');
const { emptyHead, putHead, readHead, tailStartOf } = await import('../lib/storage/replica/head.js');
const { queryBatches } = await import('../lib/storage/replica/reads.js');
const { topicPartitionKey } = await import('../lib/storage/model.js');
const { assignReplicas } = await import('../lib/cluster/placement.js');
const { planBalance, movesLowerBound, replicaMoves } = await import('../lib/cluster/balance-plan.js');

const RECORDS = sized(100_000, 5000);
const PER_BATCH = 500;
const stack = await startLocalStack({ port: 0, brokers: 4, inMemory: true, controllers: 0, replicator: false });
const opts = { compression: 'none' as const, timestampType: 'CreateTime' as const, maxMessageBytes: 1_048_588, timestampBeforeMaxMs: Number.MAX_SAFE_INTEGER, timestampAfterMaxMs: Number.MAX_SAFE_INTEGER };
const rows: (string | number)[][] = [];
const points: Record<string, unknown>[] = [];
const mib = (n: number) => (n / 2 ** 20).toFixed(2);
let t = Date.now() + 3_600_000;
const ctl = new Controller({ id: 'bench-reassign', tickMs: 1000, leaseMs: 3000, sessionTimeoutMs: 600_000, probeTimeoutMs: 15_000, clock: () => t, catchUp: async (topic, topicId, partition) => { await markLagging(topic, topicId, partition); } });

/** A 1-partition topic on brokers 1, 2, 3 holding RECORDS records, rolled to segments while due. */
async function partitionOnThree(name: string) {
  const { topic } = await createTopic({ name, partitions: 1, replicationFactor: 3, configs: [{ name: 'segment.bytes', value: String(2 ** 20) }] });
  let p = (await readPartition(name, 0))!;
  if ([...p.replicas].sort().join() !== '1,2,3') throw new Error(`placed on ${p.replicas.join(',')}`); // (retried by the caller)
  const tp = topicPartitionKey(topic.topicId, 0);
  const leader = await replicaStore(p.leader);
  const target = { topic: name, leader, topicId: topic.topicId, partition: 0, tp, leaderEpoch: p.leaderEpoch, inlineMaxBytes: 8192 };
  const perCall = Math.max(1, Math.floor(2 ** 20 / (PER_BATCH * 110)));
  for (let done = 0; done < RECORDS; done += PER_BATCH * perCall) {
    const group = Array.from({ length: Math.min(perCall, (RECORDS - done) / PER_BATCH) }, (_, j) =>
      prepareBatches(Array.from({ length: PER_BATCH }, (_, k) => ({ key: null, value: Buffer.from(`record-${done + j * PER_BATCH + k}-`.padEnd(100, 'x')), headers: [] })), opts)[0]!);
    await appendToLeader(target, group);
  }
  const r = await replicate(name, topic.topicId, 0, { deadline: Date.now() + 600_000, lagTimeMaxMs: 600_000, shrinkOnFailure: false });
  if (r.highWatermark !== RECORDS) throw new Error(`replicated to ${r.highWatermark}`);
  for (;;) if ((await rollPartition(name, 0, { maxSegments: 1000 })).rolled === 0) break;
  p = (await readPartition(name, 0))!;
  return { topicId: topic.topicId, tp, leader, p };
}

let n = 0;
async function newPartition() {
  for (;;) {
    try {
      return { name: `move-${n}`, ...(await partitionOnThree(`move-${n++}`)) };
    } catch (err) {
      if (!(err as Error).message.startsWith('placed on')) throw err;
    }
  }
}

// Only the timed move moves anything: the balancer stays out.
await alterClusterConfigs([{ name: 'tributary.balancer.enable', value: 'false' }, { name: 'auto.leader.rebalance.enable', value: 'false' }]);
for (const [label, rate] of [['throttled (10 MiB/s, the default)', undefined], ['unthrottled', 2 ** 40]] as const) {
  await alterClusterConfigs([{ name: 'follower.replication.throttled.rate', value: rate === undefined ? null : String(rate) }, { name: 'leader.replication.throttled.rate', value: rate === undefined ? null : String(rate) }]);
  invalidateMetadata();
  const { name, tp, leader, p } = await newPartition();
  const lHead = (await readHead(leader, tp))!;
  const tail = await queryBatches(leader, tp, { fromOffset: tailStartOf(lHead), toOffset: lHead.leo - 1, maxBytes: Number.MAX_SAFE_INTEGER });
  const tailBytes = tail.reduce((s, b) => s + b.sizeBytes, 0);

  // Baseline: the raw work of a move: read the leader's table tail, write it to broker 4's table.
  const b4 = await replicaStore(4);
  const scratch = `${tp}-baseline-${label.length}`;
  const base0 = performance.now();
  const read = await queryBatches(leader, tp, { fromOffset: tailStartOf(lHead), toOffset: lHead.leo - 1, maxBytes: Number.MAX_SAFE_INTEGER });
  await putHead(b4, { ...emptyHead(scratch, 'follower', p.leaderEpoch), leo: read[0]?.baseOffset ?? 0, logStartOffset: read[0]?.baseOffset ?? 0 }, 'ifAbsent');
  for (let i = 0; i < read.length; i += 50) {
    const chunk = read.slice(i, i + 50);
    await copyBatches(b4, scratch, { expectLeo: chunk[0]!.baseOffset, leaderEpoch: p.leaderEpoch, batches: chunk, hw: 0, epochEntries: [], producers: [] });
  }
  const baseline = (performance.now() - base0) / 1000;

  // The move: the follower 3 → broker 4, driven as the controller and the sweep drive it.
  const sweep = new ReplicationSweep({ lagTimeMaxMs: 600_000, runBudgetMs: 600_000 });
  const started = performance.now();
  await startReassignment(name, 0, p.replicas.map((r) => (r === 3 ? 4 : r)));
  for (;;) {
    t += 1500;
    await ctl.tick(t);
    await sweep.sweep();
    const now = (await readPartition(name, 0))!;
    if (!reassigning(now) && !now.purging) break;
  }
  const seconds = (performance.now() - started) / 1000;
  const h4 = await readHead(b4, tp);
  if (h4?.leo !== RECORDS) throw new Error(`moved replica holds ${h4?.leo}: ${JSON.stringify(await readPartition(name, 0))}`);
  rows.push([label, RECORDS, `${lHead.leo - tailStartOf(lHead)} (${mib(tailBytes)})`, baseline.toFixed(2), seconds.toFixed(2), (seconds / baseline).toFixed(1)]);
  points.push({ case: label, what: 'raw read + write of the tail', seconds: baseline });
  points.push({ case: label, what: 'the move (start → purged)', seconds });
}

// 3 → 4 brokers, 48 partitions of RF 3, placed as creation places them: the balancer's plan.
const three = [1, 2, 3].map((brokerId) => ({ brokerId, rack: null }));
const placed = assignReplicas(three, 48, 3, 0).map((replicas, partition) => ({ topic: 't', partition, replicas, bytes: 0 }));
const brokers4 = [1, 2, 3, 4].map((brokerId) => ({ brokerId, rack: null, state: 'alive' as const }));
const plan = planBalance(brokers4, placed);
const planned = plan.reduce((s, m) => s + replicaMoves(m.from, m.to), 0);
const lower = movesLowerBound(brokers4, placed);
await stack.stop();
await writeResult({
  scenario: 'reassign',
  title: 'Moving replicas: one replica of a 100,000-record partition, and 3 → 4 brokers',
  description: `A ${RECORDS.toLocaleString('en-US')}-record partition (100-byte records in inline batches of ${PER_BATCH}, RF 3, segment.bytes 1 MiB: the log rolled to S3 segments) has its replica on broker 3 moved to broker 4: `
    + 'seconds from the reassignment starting until the old copy is purged (the new replica syncs from the leader\'s snapshot, joins the ISR, the controller completes the move and deletes the old copy), '
    + 'against the raw work of copying the table tail (read from the leader, written to broker 4) timed in the same run. Quiet local stack (in-memory DynamoDB Local, s3rver), sweep and controller driven by hand.',
  tables: [
    {
      title: 'Moving one replica',
      columns: ['throttle', 'records', 'leader table tail: records (MiB)', 'raw copy of the tail (s)', 'the move (s)', 'move / raw'],
      rows,
    },
    {
      title: '3 → 4 brokers, 48 partitions of RF 3 (placed as creation places them)',
      columns: ['replicas moved by the plan', 'fewest possible', 'partitions changed'],
      rows: [[planned, lower, plan.length]],
    },
  ],
  charts: [{ title: 'Seconds to move one replica', spec: barChart(points, { x: { field: 'case', title: null }, y: { field: 'seconds' }, color: { field: 'what' } }) }],
  data: { records: RECORDS, rows, planned, lower },
});
