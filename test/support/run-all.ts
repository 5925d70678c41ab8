/**
 * `npm test`: the static checks and the benchmarks' smoke run side by side, then the shared-stack
 * project, then the multi-process project (vitest.config.ts says why they run apart), then a recap
 * of every failure. CI keeps only the tail of its output, and the early failures would otherwise
 * scroll out of it behind the multi-process files' logs. Every step runs even when an earlier one
 * failed; the exit code is non-zero when any did.
 *
 * The first step's three commands share nothing with the tests or each other (tsc and eslint read
 * the sources; bench:smoke starts its own stores and has no thresholds), so they overlap on two
 * cores instead of taking turns; their output is printed whole as each ends.
 */
import { spawn, spawnSync } from 'node:child_process';
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

/** One npm script, its output kept until it ends. */
function script(name: string): Promise<{ name: string; code: number; seconds: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', '--silent', name], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => out.push(b));
    child.on('close', (code, signal) => {
      const seconds = Math.round((Date.now() - started) / 1000);
      process.stdout.write(`\n── npm run ${name}: ${code === 0 ? 'passed' : `FAILED (${signal ?? `exit ${code}`})`} in ${seconds} s\n${Buffer.concat(out).toString()}`);
      resolve({ name, code: code ?? 1, seconds });
    });
  });
}

function project(name: string): { code: number; report?: JsonReport } {
  const out = path.join(dir, `${name}.json`);
  fs.rmSync(out, { force: true });
  const r = spawnSync('npx', ['vitest', 'run', '--project', name, ...process.argv.slice(2), '--reporter=default', '--reporter=json', `--outputFile.json=${out}`], { stdio: 'inherit' });
  const report = fs.existsSync(out) ? (JSON.parse(fs.readFileSync(out, 'utf8')) as JsonReport) : undefined;
  return { code: r.status ?? 1, report };
}

/** The first lines of a failure: the assertion and where it was, not the whole stack. */
const firstLines = (s: string, n = 4): string => s.split('\n').filter((l) => l.trim() !== '').slice(0, n).join('\n      ');

const checks = await Promise.all(['typecheck', 'lint', 'bench:smoke'].map(script));
const results = ['shared', 'multi-process'].map((name) => ({ name, ...project(name) }));

console.log('\nRecap:');
for (const c of checks) console.log(`  npm run ${c.name}: ${c.code === 0 ? 'passed' : `FAILED (exit ${c.code}); its output is above`} (${c.seconds} s)`);
for (const { name, code, report } of results) {
  const tests = report?.testResults.flatMap((f) => f.assertionResults) ?? [];
  console.log(`  ${name}: ${code === 0 ? 'passed' : `FAILED (exit ${code})`}, ${tests.filter((t) => t.status === 'passed').length} of ${tests.length} tests passed`);
  for (const f of report?.testResults ?? []) {
    const file = path.relative(process.cwd(), f.name);
    const bad = f.assertionResults.filter((t) => t.status === 'failed');
    if (bad.length === 0 && f.message) console.log(`    ✗ ${file}: ${firstLines(f.message)}`);
    for (const t of bad) console.log(`    ✗ ${file} › ${t.fullName}\n      ${firstLines(t.failureMessages.join('\n'))}`);
  }
}
process.exit([...checks, ...results].some((r) => r.code !== 0) ? 1 : 0);
