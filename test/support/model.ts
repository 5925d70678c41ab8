/**
 * `npm run model`: the replication model (spec/replication.qnt, docs/model.md) under Quint's
 * simulator, one run per configuration with every invariant, each with a fixed seed and sample
 * budget, so a run is repeatable and the whole stays near two minutes. Exits 1 on a violation and
 * prints the command that reproduces it.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SPEC = 'spec/replication.qnt';
const INVARIANTS = ['noAckedLoss', 'noReadTruncated', 'replicasAgree', 'hwMonotonic', 'oneLeaderPerEpoch', 'logStartMonotonic'];

interface Run {
  /** What the run explores. */
  readonly what: string;
  readonly step: string;
  readonly seed: number;
  readonly samples: number;
  readonly steps: number;
}

const RUNS: readonly Run[] = [
  { what: 'every action', step: 'step', seed: 20261203, samples: 1500, steps: 40 },
  { what: 'joins, role pushes and the fast commit', step: 'stepIsr', seed: 7, samples: 2000, steps: 25 },
  { what: 'elections, crashes and the tiers', step: 'stepTiers', seed: 11, samples: 1500, steps: 40 },
];

let failed = false;
for (const r of RUNS) {
  const args = ['run', SPEC, '--main', 'checked', '--step', r.step, '--backend', 'typescript', '--invariants', ...INVARIANTS,
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
