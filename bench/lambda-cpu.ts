/**
 * Where the CPU of a request goes in Lambda-fidelity mode: closed-loop writers of 1-record
 * `acks=1` produce requests (RF 3) for a fixed time, and the CPU time (user + system, from
 * /proc/<pid>/stat) each process of the local stack spent meanwhile, per acknowledged request —
 * the gateway's process (API Gateway, the Lambda service and the stream pollers, emulated), each
 * function's execution environments, the DynamoDB Local JVMs and S3. CPU time, not wall time: it
 * does not change when other work shares the machine. The load comes from a process of its own, so
 * its HTTP client is not counted with the gateway. Linux only. Run: `npm run bench -- lambda-cpu`.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { startLocalStack } from '../local/stack.js';
import { isQuick, writersFromEnv, writeResult } from './lib/report.js';
import { warmEnvironments } from './lib/lambda-warmup.js';

// (BENCH_WRITERS=0,1,16 measures those writer counts; 0 is the idle stack)
const WRITERS = isQuick() ? [0, 1, 4] : writersFromEnv([0, 1, 16, 64]);
const SECONDS = isQuick() ? 2 : Number(process.env.BENCH_SECONDS ?? 15);
const TICK_MS = 1000 / 100; // USER_HZ: Linux reports CPU times in 1/100 s

/** user + system CPU time of `pid`'s threads, ms; undefined when it is gone. */
function cpuMs(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * TICK_MS;
  } catch {
    return undefined;
  }
}

/** The closed-loop load, in a process of its own: prints the number of answered requests. */
const LOAD = `
const [url, writers, seconds] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3])];
const started = performance.now();
let ok = 0, failed = 0;
await Promise.all(Array.from({ length: writers }, async (_, w) => {
  for (let i = 0; performance.now() - started < seconds * 1000; i++) {
    const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ partition_id: 0, value: { type: 'STRING', data: w + '-' + i } }) });
    await r.text();
    if (r.status === 200) ok++; else failed++;
  }
}));
process.stdout.write(JSON.stringify({ ok, failed, seconds: (performance.now() - started) / 1000 }));
`;

function load(url: string, writers: number, seconds: number): Promise<{ ok: number; failed: number; seconds: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', LOAD, url, String(writers), String(seconds)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => { out += b.toString(); });
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`the load exited with ${code}`))));
  });
}

interface Row { writers: number; requests: number; failed: number; perSecond: number; ms: Record<string, number>; cpuPerSecond: Record<string, number>; invocations: Record<string, number> }

const s = await startLocalStack({ port: 0, inMemory: true, controllers: 0, controllerScheduleMs: 0, lambda: { concurrency: 2 * Math.max(...WRITERS) + 20 } });
const rows: Row[] = [];
try {
  const v3 = `${s.url}/v3/clusters/${s.clusterId}`;
  await fetch(`${v3}/topics`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ topic_name: 'cpu', partitions_count: 1, replication_factor: 3 }) });
  const records = `${v3}/topics/cpu/records?acks=1`;
  // Warm-up: every environment the largest point needs (bench/lib/lambda-warmup.ts).
  let sent = 0;
  await warmEnvironments(s.url, 'produce', Math.max(1, ...WRITERS), (n) => Promise.all(Array.from({ length: n }, () => fetch(records, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ partition_id: 0, value: { type: 'STRING', data: `warm-${sent++}` } }),
  }).then((r) => r.text()))).then(() => undefined));
  const lambda = async () => (await (await fetch(`${s.url}/local/lambda`)).json()) as { invocations: number; environments: { fn: string; pid: number; invocations: number }[] };
  for (const writers of WRITERS) {
    const envsBefore = (await lambda()).environments;
    const pids = new Map<number, string>([[process.pid, 'gateway'], ...s.supervisor.list().filter((p) => p.pid !== null && p.state === 'running').map((p) => [p.pid as number, p.name] as const), ...envsBefore.map((e) => [e.pid, `λ ${e.fn}`] as const)]);
    const before = new Map([...pids.keys()].map((pid) => [pid, cpuMs(pid)]));
    const r = writers === 0
      ? await new Promise<{ ok: number; failed: number; seconds: number }>((resolve) => setTimeout(() => resolve({ ok: 0, failed: 0, seconds: SECONDS }), SECONDS * 1000))
      : await load(records, writers, SECONDS);
    const envsAfter = (await lambda()).environments;
    // (an environment started during the point counts from zero)
    for (const e of envsAfter) if (!pids.has(e.pid)) { pids.set(e.pid, `λ ${e.fn}`); before.set(e.pid, 0); }
    const ms: Record<string, number> = {};
    const perSecond: Record<string, number> = {};
    for (const [pid, name] of pids) {
      const used = (cpuMs(pid) ?? before.get(pid) ?? 0) - (before.get(pid) ?? 0);
      ms[name] = (ms[name] ?? 0) + (r.ok > 0 ? used / r.ok : 0);
      perSecond[name] = (perSecond[name] ?? 0) + used / r.seconds;
    }
    const invocations: Record<string, number> = {};
    for (const e of envsAfter) invocations[e.fn] = (invocations[e.fn] ?? 0) + e.invocations - (envsBefore.find((b) => b.pid === e.pid)?.invocations ?? 0);
    rows.push({ writers, requests: r.ok, failed: r.failed, perSecond: r.ok / r.seconds, ms, cpuPerSecond: perSecond, invocations });
    console.log(JSON.stringify(rows[rows.length - 1]));
  }
} finally {
  await s.stop();
}

const loaded = rows.filter((r) => r.writers > 0);
const names = [...new Set(rows.flatMap((r) => Object.keys(r.ms)))].sort((a, b) => (loaded[0]?.ms[b] ?? 0) - (loaded[0]?.ms[a] ?? 0));
const sum = (xs: Record<string, number>) => Object.values(xs).reduce((a, b) => a + b, 0);
const writersLabel = (n: number) => (n === 0 ? 'idle' : `${n} writer${n === 1 ? '' : 's'}`);
await writeResult({
  scenario: 'lambda-cpu',
  title: 'CPU per request in Lambda-fidelity mode',
  description: `Closed-loop writers of 1-record acks=1 produce requests to one RF 3 partition, ${SECONDS} s per point after a warm-up, and the same time with no load; CPU time (user + system) of each process of the local stack over the point.`,
  tables: [
    {
      title: 'CPU ms per acknowledged request, by process',
      columns: ['process', ...loaded.map((r) => writersLabel(r.writers))],
      rows: [
        ...names.map((n) => [n, ...loaded.map((r) => (r.ms[n] ?? 0).toFixed(2))]),
        ['total', ...loaded.map((r) => sum(r.ms).toFixed(2))],
        ['requests/s', ...loaded.map((r) => r.perSecond.toFixed(1))],
        ['replicator invocations per request', ...loaded.map((r) => ((r.invocations.replicator ?? 0) / r.requests).toFixed(2))],
        ['failed', ...loaded.map((r) => String(r.failed))],
      ],
      notes: [
        'gateway: the stack\'s own process — API Gateway, the Lambda service (freezing and thawing environments) and the event source mappings (stream pollers), emulated; in AWS none of it is the user\'s CPU. λ <function>: its execution environments together (what Lambda bills). CPU times are counted in 10 ms ticks.',
        'Per request includes the load-independent part (the idle column below) spread over the point\'s requests.',
      ],
    },
    {
      title: 'CPU ms per second, by process',
      columns: ['process', ...rows.map((r) => writersLabel(r.writers))],
      rows: [...names.map((n) => [n, ...rows.map((r) => (r.cpuPerSecond[n] ?? 0).toFixed(0))]), ['total', ...rows.map((r) => sum(r.cpuPerSecond).toFixed(0))]],
    },
  ],
  data: { rows, seconds: SECONDS },
});
