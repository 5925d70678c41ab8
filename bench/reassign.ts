/**
 * Moving replicas: how long moving one replica of a 100,000-record
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
import './lib/env.js';
import { barChart, sized, writeResult } from './lib/report.js';
import { appendSmallRecords, createPartition, replicatePartition, rollAll, tableLog } from './lib/partition.js';
import { startQuietStack } from './lib/quiet-stack.js';
import { replicaStore, invalidateMetadata } from '../lib/cluster/metadata.js';
import { alterClusterConfigs } from '../lib/cluster/cluster-config-admin.js';
import { startReassignment, reassigning } from '../lib/cluster/reassignment.js';
import { Controller } from '../lib/cluster/controller.js';
import { ReplicationSweep } from '../lib/orchestration/sweep.js';
import { markLagging } from '../lib/storage/coordination/lag-index.js';
import { readPartition } from '../lib/storage/coordination/partitions.js';
import { copyBatches } from '../lib/storage/replica/batches.js';
import { emptyHead, putHead, readHead, tailStartOf } from '../lib/storage/replica/head.js';
import { queryBatches } from '../lib/storage/replica/reads.js';
import { assignReplicas } from '../lib/cluster/placement.js';
import { planBalance, movesLowerBound, replicaMoves } from '../lib/cluster/balance-plan.js';

const RECORDS = sized(100_000, 5000);
const PER_BATCH = 500;
const stack = await startQuietStack(4);
const rows: (string | number)[][] = [];
const points: Record<string, unknown>[] = [];
const mib = (n: number) => (n / 2 ** 20).toFixed(2);
let t = Date.now() + 3_600_000;
const ctl = new Controller({ id: 'bench-reassign', tickMs: 1000, leaseMs: 3000, sessionTimeoutMs: 600_000, probeTimeoutMs: 15_000, clock: () => t, catchUp: async (topic, topicId, partition) => { await markLagging(topic, topicId, partition); } });

/** A 1-partition topic on brokers 1, 2, 3 holding RECORDS records, rolled to segments while due. */
async function partitionOnThree(name: string) {
  const created = await createPartition(name, { configs: [{ name: 'segment.bytes', value: String(2 ** 20) }] });
  const { replicas } = created.state;
  if ([...replicas].sort().join() !== '1,2,3') throw new Error(`placed on ${replicas.join(',')}`); // (retried by the caller)
  await appendSmallRecords(created, RECORDS, PER_BATCH);
  const r = await replicatePartition(created);
  if (r.highWatermark !== RECORDS) throw new Error(`replicated to ${r.highWatermark}`);
  await rollAll(name, { maxSegments: 1000 });
  const p = (await readPartition(name, 0))!;
  return { topicId: created.topicId, tp: created.tp, leader: created.leader, p };
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
  const { head: lHead, batches: tail } = await tableLog(leader, tp);
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
