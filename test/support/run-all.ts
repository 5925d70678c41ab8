/**
 * `npm run test:all`: the shared-stack project, then the multi-process project (vitest.config.ts
 * says why they run apart), then a recap of every failed test from both runs. CI keeps only the
 * tail of its output, and the shared project's failures would otherwise scroll out of it behind
 * the multi-process files' logs. Exits non-zero when either run failed.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

interface JsonReport {
  readonly testResults: {
    readonly name: string;
    readonly message?: string;
    readonly assertionResults: { readonly fullName: string; readonly status: string; readonly failureMessages: string[] }[];
  }[];
}

const dir = path.resolve('.tributary/test-results');
fs.mkdirSync(dir, { recursive: true });

function run(project: string): { code: number; report?: JsonReport } {
  const out = path.join(dir, `${project}.json`);
  fs.rmSync(out, { force: true });
  const r = spawnSync('npx', ['vitest', 'run', '--project', project, ...process.argv.slice(2), '--reporter=default', '--reporter=json', `--outputFile.json=${out}`], { stdio: 'inherit' });
  const report = fs.existsSync(out) ? (JSON.parse(fs.readFileSync(out, 'utf8')) as JsonReport) : undefined;
  return { code: r.status ?? 1, report };
}

/** The first lines of a failure: the assertion and where it was, not the whole stack. */
const firstLines = (s: string, n = 4): string => s.split('\n').filter((l) => l.trim() !== '').slice(0, n).join('\n      ');

const results = ['shared', 'multi-process'].map((project) => ({ project, ...run(project) }));
const failed = results.filter((r) => r.code !== 0);
console.log('\nRecap of both projects:');
for (const { project, code, report } of results) {
  const tests = report?.testResults.flatMap((f) => f.assertionResults) ?? [];
  console.log(`  ${project}: ${code === 0 ? 'passed' : `FAILED (exit ${code})`}, ${tests.filter((t) => t.status === 'passed').length} of ${tests.length} tests passed`);
  for (const f of report?.testResults ?? []) {
    const file = path.relative(process.cwd(), f.name);
    const bad = f.assertionResults.filter((t) => t.status === 'failed');
    if (bad.length === 0 && f.message) console.log(`    ✗ ${file}: ${firstLines(f.message)}`);
    for (const t of bad) console.log(`    ✗ ${file} › ${t.fullName}\n      ${firstLines(t.failureMessages.join('\n'))}`);
  }
}
process.exit(failed.length > 0 ? 1 : 0);
