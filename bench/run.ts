/**
 * `npm run bench -- [scenario ...] [--quick] [--jobs N]`: runs the named scenarios (every one when
 * none is named), each in its own Node process, and prints a header and the wall time of each.
 * Full runs go one scenario at a time (timings stay comparable); a quick run defaults to
 * QUICK_JOBS at once, each scenario's output printed whole when it ends — each scenario starts its
 * own stores (a JVM of several seconds), which one at a time would dominate a smoke test. A scenario is a script `bench/<name>.ts` that exports nothing (a file that exports is a
 * library, e.g. a price table). A failing scenario fails the run — after the others have run.
 * `--quick` (the CI smoke test, `npm run bench:quick`) runs every scenario in its reduced form and
 * writes under bench/results/quick/; each scenario then has QUICK_TIMEOUT_MS to finish.
 * Own processes because scenarios share nothing: each starts its own stack, and a scenario that
 * fails halfway cannot leave its stores or timers to the next one.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const QUICK_TIMEOUT_MS = 600_000;
const QUICK_JOBS = 3;
const args = process.argv.slice(2);
const quick = args.includes('--quick') || process.env.BENCH_QUICK === '1';
const jobsAt = args.indexOf('--jobs');
const jobs = jobsAt >= 0 ? Number(args[jobsAt + 1]) : quick ? QUICK_JOBS : 1;
if (!Number.isInteger(jobs) || jobs < 1) {
  process.stderr.write('--jobs takes a whole number ≥ 1\n');
  process.exit(2);
}
const names = args.filter((a, i) => !a.startsWith('--') && args[i - 1] !== '--jobs');
const dir = import.meta.dirname;
const all = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts' && !/^export /m.test(readFileSync(path.join(dir, f), 'utf8')))
  .map((f) => f.replace(/\.ts$/, ''))
  .sort();
const unknown = names.filter((n) => !all.includes(n));
if (unknown.length > 0) {
  process.stderr.write(`no scenario named ${unknown.join(', ')}; have: ${all.join(', ')}\n`);
  process.exit(2);
}

/** Set by Ctrl-C: no further scenario starts. */
let interrupted = false;

/**
 * Runs one scenario to its end; resolves with its exit code (a signal or a timeout counts as
 * failure) and, when `buffered`, its output (stdout and stderr interleaved as they came).
 */
function runScenario(name: string, buffered: boolean): Promise<{ code: number; why?: string; output: string }> {
  return new Promise((resolve) => {
    // Its own process group: a timeout (or Ctrl-C) ends the stores and processes it started too.
    const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', path.join(dir, `${name}.ts`), ...(quick ? ['--quick'] : [])], {
      stdio: buffered ? ['ignore', 'pipe', 'pipe'] : 'inherit', detached: true, env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', ...process.env, ...(quick ? { BENCH_QUICK: '1' } : {}) },
    });
    const chunks: Buffer[] = [];
    child.stdout?.on('data', (b: Buffer) => chunks.push(b));
    child.stderr?.on('data', (b: Buffer) => chunks.push(b));
    const killGroup = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    let why: string | undefined;
    const timer = quick ? setTimeout(() => {
      why = `timed out after ${QUICK_TIMEOUT_MS / 1000} s`;
      killGroup();
    }, QUICK_TIMEOUT_MS) : undefined;
    const interrupt = () => {
      interrupted = true;
      why = 'interrupted';
      killGroup();
    };
    process.once('SIGINT', interrupt);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      process.off('SIGINT', interrupt);
      resolve({ code: code ?? 1, why: why ?? (signal ? `killed by ${signal}` : undefined), output: Buffer.concat(chunks).toString('utf8') });
    });
  });
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const summary: { name: string; ms: number; ok: boolean; why?: string }[] = [];
const started = performance.now();
const queue = [...(names.length > 0 ? names : all)];
const buffered = jobs > 1;
const header = (name: string) => `\n=== ${name}${quick ? ' (quick)' : ''} ===\n`;
await Promise.all(Array.from({ length: Math.min(jobs, queue.length) }, async () => {
  for (let name = queue.shift(); name !== undefined && !interrupted; name = queue.shift()) {
    if (!buffered) process.stdout.write(header(name));
    const t = performance.now();
    const { code, why, output } = await runScenario(name, buffered);
    const ms = performance.now() - t;
    const ok = code === 0 && why === undefined;
    summary.push({ name, ms, ok, ...(ok ? {} : { why: why ?? `exit code ${code}` }) });
    process.stdout.write(`${buffered ? `${header(name)}${output}` : ''}=== ${name}: ${ok ? 'ok' : `FAILED (${why ?? `exit code ${code}`})`} in ${seconds(ms)} ===\n`);
  }
}));
const failed = summary.filter((s) => !s.ok);
process.stdout.write(`\n${summary.map((s) => `${s.ok ? 'ok    ' : 'FAILED'} ${s.name.padEnd(20)} ${seconds(s.ms).padStart(8)}${s.why ? `  ${s.why}` : ''}`).join('\n')}\n`);
process.stdout.write(`${summary.length} scenario(s) in ${seconds(performance.now() - started)}${jobs > 1 ? ` (${jobs} at a time)` : ''}${failed.length ? `, ${failed.length} failed: ${failed.map((s) => s.name).join(', ')}` : ''}\n`);
process.exitCode = failed.length ? 1 : 0;
