/**
 * `npm run chaos -- [--duration 10m] [--seed N] [--dir DIR] [--faults kill-broker,net-drop,...] [--quiet-bound 20s] [--segment-bytes 32768] [--producers 16] [--transactions 2]`:
 * a chaos run on the local stack, then its summary; exits 1 when the checker found anomalies.
 * `npm run chaos -- --check DIR/history.jsonl` judges a recorded history again, with no cluster.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';

const USAGE = `Usage: npm run chaos -- [options]
  --duration 2m          how long faults are injected (90s, 10m, 1h; default 2m)
  --seed N               replay a run's fault schedule and workload (default: random, printed)
  --dir DIR              where the history and logs go (default .tributary/chaos/<time>-seed-<N>)
  --faults a,b,...       fault kinds to draw from (default: all):
                           kill-broker, wipe-broker, pause-broker, pause-controller, kill-gateway,
                           net-delay, net-drop, net-reset, kill-leader-after-ack, pause-copier,
                           drop-stream-batch, and the cluster reshaped under load:
                           add-broker     add a broker (the balancer moves replicas to it), then remove it
                           remove-broker  remove a broker for good (a replacement first where RF needs it)
                           reassign       move a partition's replica to another broker; complete or cancel
                         and: unclean-election, delete-records,
                           kill-instance       SIGKILL busy produce function instances (most wait
                                               in a group commit, between staging and commit)
                           lose-commit-answer  a store's answers to group commits are lost
                                               after they were applied
  --quiet-bound 20s      how long acknowledged records have to become readable in a quiet phase
  --segment-bytes N      segment.bytes of the run's topics
  --producers N          concurrent producers, most of them on one partition (default 16)
  --transactions N       transactional producers on the topic chaos-txn, each with its own
                         transactional id, beside two read_committed readers (default 2; 0: none).
                         Each transaction writes 2-3 partitions, sends the offsets of a group in
                         half of them, and aborts in one of four
  --check FILE           judge a recorded history.jsonl again (no cluster is started)
  --help                 show this help`;
let values: { duration?: string; seed?: string; dir?: string; faults?: string; 'quiet-bound'?: string; 'segment-bytes'?: string; producers?: string; transactions?: string; check?: string; help?: boolean };
try {
  ({ values } = parseArgs({ options: { duration: { type: 'string' }, seed: { type: 'string' }, dir: { type: 'string' }, faults: { type: 'string' }, 'quiet-bound': { type: 'string' }, 'segment-bytes': { type: 'string' }, producers: { type: 'string' }, transactions: { type: 'string' }, check: { type: 'string' }, help: { type: 'boolean' } } }));
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
  process.exit(2);
}
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
if (values.check) {
  const fs = await import('node:fs');
  const { parseHistory } = await import('./history.js');
  const { check } = await import('./checker.js');
  const report = check(parseHistory(fs.readFileSync(values.check, 'utf8')));
  const t = report.counts.transactions;
  const lines = [
    `${values.check}: ${report.anomalies.length} anomalies`,
    ...(t.transactions ? [`  transactions: ${t.transactions} (${t.committed} committed, ${t.aborted} aborted, ${t.unknown} unknown)`] : []),
    ...report.anomalies.slice(0, 20).map((a) => `  ${a.kind}: ${a.message} [events ${a.events.join(', ')}]`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  process.exit(report.anomalies.length > 0 ? 1 : 0);
}
const seed = values.seed ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
const dir = path.resolve(values.dir ?? path.join('.tributary', 'chaos', `${new Date().toISOString().replace(/[:.]/g, '-')}-seed-${seed}`));

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
// Faults make the cluster log warnings by design: every process logs to a file in the run's data
// directory (this one to chaos.log), and the console shows the summary.
process.env.LOG_LEVEL ??= 'info';
process.env.LOG_FILE ??= path.join(dir, 'data', 'logs', 'chaos.log');
const { runChaos } = await import('./run.js');
const { FAULT_KINDS } = await import('./faults.js');

function duration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text);
  if (!m) throw new Error(`--duration must look like 90s, 10m or 1h, got "${text}"`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
}

if (values.transactions !== undefined && !/^\d+$/.test(values.transactions)) throw new Error(`--transactions takes a number of transactional producers, got "${values.transactions}"`);
const kinds = values.faults ? values.faults.split(',').map((k) => k.trim()) : [...FAULT_KINDS];
for (const k of kinds) if (!(FAULT_KINDS as readonly string[]).includes(k)) throw new Error(`unknown fault ${k}; have ${FAULT_KINDS.join(', ')}`);
const s = await runChaos({
  durationMs: duration(values.duration ?? '2m'), seed, dir, kinds: kinds as (typeof FAULT_KINDS)[number][],
  ...(values['quiet-bound'] === undefined ? {} : { quietBoundMs: duration(values['quiet-bound']) }),
  ...(values['segment-bytes'] === undefined ? {} : { segmentBytes: Number(values['segment-bytes']) }),
  ...(values.producers === undefined ? {} : { producers: Number(values.producers) }),
  ...(values.transactions === undefined ? {} : { transactions: Number(values.transactions) }),
});
const t = s.transactions;
const lines = [
  `chaos run: seed ${s.seed}, ${(s.durationMs / 1000).toFixed(0)} s of faults, history in ${dir}`,
  `operations          ${s.operations}`,
  `acknowledged writes ${s.acknowledgedWrites}`,
  `transactions        ${t.transactions ? `${t.transactions}: ${t.committed} committed, ${t.aborted} aborted (${t.abortsAcknowledged} by an acknowledged abort), ${t.unknown} unknown; ${t.acknowledgedSends} sends acknowledged, ${t.reads} read_committed reads` : 'none'}`,
  `faults injected     ${Object.entries(s.faults).map(([k, v]) => `${k} ${v}${(s.faultsApplied[k] ?? 0) < v ? ` (${s.faultsApplied[k] ?? 0} applied)` : ''}`).join(', ') || 'none'}`,
  `failovers           ${s.failovers}`,
  `quiet phases        ${s.quietPhases ? `${s.quietPhases}, each giving acknowledged records ${(s.quietBoundMs / 1000).toFixed(1)} s to become readable` : 'none'}`,
  `dropped deliveries  ${s.droppedDeliveries}`,
  `recovery after heal ${s.recoveryMs < 0 ? 'did not recover' : `${(s.recoveryMs / 1000).toFixed(1)} s`}`,
  `allowed losses      ${s.report.counts.uncleanLoss} acks=all records to unclean elections, ${s.report.counts.deleted} to DeleteRecords`,
  `anomalies           ${s.anomalies}${s.anomalies ? ` (${Object.entries(s.anomalyKinds).map(([k, v]) => `${k} ${v}`).join(', ')})` : ''}`,
  ...s.report.anomalies.slice(0, 20).map((a) => `  ${a.kind}: ${a.message} [events ${a.events.join(', ')}]`),
];
process.stdout.write(`${lines.join('\n')}\n`);
process.exit(s.anomalies > 0 || s.recoveryMs < 0 ? 1 : 0);
