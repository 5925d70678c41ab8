/**
 * `npm test`: the shared-stack project, then the multi-process project (vitest.config.ts says why
 * they run apart), with the background work beside both at the lowest CPU priority, then a recap of
 * every failure. CI keeps only the tail of its output, and the early failures would otherwise
 * scroll out of it behind the multi-process files' logs. Every step runs even when another failed;
 * the exit code is non-zero when any did.
 *
 * The background work — the static checks (tsc, eslint), the benchmarks' smoke run, the
 * protocol models' simulation (`npm run model`, docs/model.md) and the
 * background project (BACKGROUND_FILES: CDK synths, the package build) — shares nothing with the
 * tests and has no deadline, so it runs at the lowest CPU priority (`lowPriority`) from the start,
 * on the CPU the tests leave idle, instead of a time of its own. Each one's output is printed
 * whole when it ends.
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

const works = (command: string, args: string[]): boolean => spawnSync(command, args).status === 0;
/**
 * How the checks run out of the tests' way. Best: a session of their own (`setsid`) whose autogroup
 * is at nice 19, and the SCHED_IDLE policy inside it (`chrt --idle 0`), so they run only on a core
 * nothing else wants. `nice -n 19` alone is not enough where Linux's autogroup scheduling is on: it
 * ranks only within the test runner's session, and a fault file took 76 s instead of 44 s beside
 * the checks. Without setsid and chrt, nice.
 */
const idle = works('setsid', ['true']) && works('chrt', ['--idle', '0', 'true']);
const nice = works('nice', ['-n', '19', 'true']);
const lowPriority = (npmArgs: readonly string[]): string[] => {
  const quoted = npmArgs.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  if (idle) return ['setsid', 'sh', '-c', `echo 19 > /proc/self/autogroup 2>/dev/null; exec chrt --idle 0 npm ${quoted}`];
  return [...(nice ? ['nice', '-n', '19'] : []), 'npm', ...npmArgs];
};

/** The background steps still running (each leads its own process group under setsid), ended if npm test is. */
const running = new Set<number>();
process.on('exit', () => {
  for (const pid of running) try { process.kill(-pid, 'SIGTERM'); } catch { /* already gone */ }
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));

type Step = { name: string; code: number; seconds: number };
type ProjectRun = { name: string; code: number; report?: JsonReport };

/** One npm command at the lowest CPU priority (`label` names it), its output kept until it ends. */
function background(label: string, npmArgs: readonly string[]): Promise<Step> {
  const started = Date.now();
  return new Promise((resolve) => {
    const [command = 'npm', ...args] = lowPriority(npmArgs);
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    if (child.pid !== undefined) running.add(child.pid);
    const out: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => out.push(b));
    child.on('close', (code, signal) => {
      if (child.pid !== undefined) running.delete(child.pid);
      const seconds = Math.round((Date.now() - started) / 1000);
      process.stdout.write(`\n── ${label}: ${code === 0 ? 'passed' : `FAILED (${signal ?? `exit ${code}`})`} in ${seconds} s\n${Buffer.concat(out).toString()}`);
      resolve({ name: label, code: code ?? 1, seconds });
    });
  });
}

const reportFile = (name: string): string => {
  const out = path.join(dir, `${name}.json`);
  fs.rmSync(out, { force: true });
  return out;
};
const readReport = (out: string): JsonReport | undefined =>
  fs.existsSync(out) ? (JSON.parse(fs.readFileSync(out, 'utf8')) as JsonReport) : undefined;
/** `npm test -- <files>` passes the filter to every project; a project none of whose files match passes. */
const filters = process.argv.slice(2);
const vitestArgs = (name: string, out: string): string[] =>
  ['vitest', 'run', '--project', name, ...filters, ...(filters.length > 0 ? ['--passWithNoTests'] : []), '--reporter=default', '--reporter=json', `--outputFile.json=${out}`];

/** A test project in the foreground, its output as it comes. */
function project(name: string): Promise<ProjectRun> {
  const out = reportFile(name);
  const child = spawn('npx', vitestArgs(name, out), { stdio: 'inherit' });
  return new Promise((resolve) => child.on('close', (code) => resolve({ name, code: code ?? 1, report: readReport(out) })));
}

/** A test project as background work. */
async function backgroundProject(name: string): Promise<ProjectRun> {
  const out = reportFile(name);
  const { code } = await background(`vitest --project ${name}`, ['exec', '--', ...vitestArgs(name, out)]);
  return { name, code, report: readReport(out) };
}

/** The first lines of a failure: the assertion and where it was, not the whole stack. */
const firstLines = (s: string, n = 4): string => s.split('\n').filter((l) => l.trim() !== '').slice(0, n).join('\n      ');

const checking = Promise.all(['typecheck', 'lint', 'bench:smoke', 'model'].map((name) => background(`npm run ${name}`, ['run', '--silent', name])));
const besides = backgroundProject('background');
const shared = await project('shared');
const multiProcess = await project('multi-process');
const checks = await checking;
const results = [shared, await besides, multiProcess];

console.log('\nRecap:');
for (const c of checks) console.log(`  ${c.name}: ${c.code === 0 ? 'passed' : `FAILED (exit ${c.code}); its output is above`} (${c.seconds} s)`);
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
