/**
 * `npm run model`: the protocol models (spec/*.qnt, docs/model.md) under Quint's simulator, each
 * with every invariant, a fixed seed and a sample budget, so a run is repeatable and cheap enough
 * for every `npm test` (about a minute of one core in all). Exits 1 on a violation and prints the command that
 * reproduces it.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');
interface Run {
  /** What the run explores. */
  readonly what: string;
  readonly spec: string;
  /** The module of the protocol as the code runs it. */
  readonly main: string;
  readonly invariants: readonly string[];
  readonly step: string;
  readonly seed: number;
  readonly samples: number;
  readonly steps: number;
}

// One run per spec, as the simulator is cheapest that way (each run parses the spec again): the
// scoped steps of the experiments (docs/model.md) are reachable from `step` too.
const RUNS: readonly Run[] = [
  {
    what: 'the replication protocol', spec: 'spec/replication.qnt', main: 'checked', step: 'step', seed: 20261203, samples: 1200, steps: 40,
    invariants: ['noAckedLoss', 'noReadTruncated', 'replicasAgree', 'hwMonotonic', 'oneLeaderPerEpoch', 'logStartMonotonic'],
  },
  {
    what: 'the group commit protocol (rounds)', spec: 'spec/rounds.qnt', main: 'checkedRounds', step: 'step', seed: 20261203, samples: 1000, steps: 40,
    invariants: ['ackedOnce', 'sequenceOrder', 'requestOnce', 'roundsConsistent', 'logWellFormed'],
  },
  {
    what: 'the transaction protocol', spec: 'spec/transactions.qnt', main: 'checkedTransactions', step: 'step', seed: 20261203, samples: 1000, steps: 40,
    invariants: ['noAbortedRead', 'atomicVisibility', 'noZombieWrite', 'offsetsOnlyOnCommit', 'stableOffsets', 'noHangingTxn'],
  },
];

let failed = false;
for (const r of RUNS) {
  const args = ['run', r.spec, '--main', r.main, '--step', r.step, '--backend', 'typescript', '--invariants', ...r.invariants,
    '--max-samples', String(r.samples), '--max-steps', String(r.steps), '--seed', String(r.seed)];
  const started = performance.now();
  const out = spawnSync(path.join(ROOT, 'node_modules', '.bin', 'quint'), args, { cwd: ROOT, encoding: 'utf8' });
  const seconds = ((performance.now() - started) / 1000).toFixed(0);
  const text = `${out.stdout}${out.stderr}`;
  const verdict = /\[ok\][^\n]*/.exec(text)?.[0] ?? /\[violation\][^\n]*/.exec(text)?.[0] ?? `quint exited ${out.status}`;
  console.log(`model: ${r.what} (${r.step}, seed ${r.seed}, ${r.samples} samples of ${r.steps} steps): ${verdict} in ${seconds} s`);
  if (out.status !== 0) {
    failed = true;
    console.log(text.split('\n').slice(-60).join('\n'));
    console.log(`reproduce: npx quint ${args.join(' ')} --verbosity 3`);
  }
}
process.exit(failed ? 1 : 0);
