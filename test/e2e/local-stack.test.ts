/**
 * `npm start` as a user runs it: a separate process that prints one ready line, writes its state
 * file, serves the process control API, keeps data across restarts with --data-dir, stops every
 * child on SIGTERM, and explains bad setups in one sentence.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { until } from '../support/cluster.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const started: ChildProcess[] = [];

interface Cli { child: ChildProcess; url: string; stdout: () => string }

function startCli(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Cli> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'local/main.ts', ...args], { cwd: ROOT, env: { ...env, LOG_LEVEL: 'warn', TRIBUTARY_REQUEST_TIMEOUT_MS: '1500' }, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let out = '';
  let err = '';
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /Tributary local cluster ready at (http:\/\/127\.0\.0\.1:\d+)\n/.exec(out);
      if (m) resolve({ child, url: m[1] as string, stdout: () => out });
    });
    child.stderr?.on('data', (d: Buffer) => { err += d.toString(); });
    child.on('exit', (code) => reject(new Error(`exited ${code} before ready: ${err}`)));
  });
}

function runCli(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'local/main.ts', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => { stdout += d.toString(); });
  child.stderr?.on('data', (d: Buffer) => { stderr += d.toString(); });
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
}

/** A process that exists and is not a zombie waiting to be reaped by its parent. */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
};
const json = async (url: string, init?: RequestInit) => {
  const r = await fetch(url, init);
  return { status: r.status, body: (await r.json()) as any };
};
const post = (url: string, body: unknown) => json(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const stop = (cli: Cli): Promise<number | null> => new Promise((resolve) => {
  cli.child.once('exit', (code) => resolve(code));
  cli.child.kill('SIGTERM');
});
const userErrorLines = (stderr: string) => stderr.split('\n').filter((l) => l.trim() !== '' && !/NodeDeprecationWarning|upgrade to node|a\.co\/|trace-warnings/.test(l));

afterAll(() => {
  for (const c of started) if (c.exitCode === null) c.kill('SIGKILL');
});

describe('Command: npm start', () => {
  it('runs isolated broker stores that the control API can kill, pause and restart, keeps data across restarts, and stops every child on SIGTERM', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-cli-'));
    const cli = await startCli(['--port', '0', '--brokers', '2', '--isolated-brokers', '--data-dir', dataDir]);
    expect(cli.stdout()).toMatch(/^Tributary local cluster ready at (http:\/\/127\.0\.0\.1:\d+)\n(Console: \1\/ui\/\n)?$/);
    const state = JSON.parse(fs.readFileSync(path.join(dataDir, 'local.json'), 'utf8'));
    expect(state.processes.map((p: any) => p.name).sort()).toEqual(['broker-1', 'broker-2', 'controller-1', 'controller-2', 'coordination', 's3']);
    for (const p of state.processes) expect(alive(p.pid)).toBe(true);
    expect(state.url).toBe(cli.url);

    const cluster = (await json(`${cli.url}/v3/clusters`)).body.data[0].cluster_id;
    const v3 = `${cli.url}/v3/clusters/${cluster}`;
    expect((await post(`${v3}/topics`, { topic_name: 'kept', partitions_count: 2, replication_factor: 1 })).status).toBe(201);
    const partitions = (await json(`${v3}/topics/kept/partitions`)).body.data;
    const onBroker1 = partitions.find((p: any) => p.leader_id === 1).partition_id;
    expect((await post(`${v3}/topics/kept/records`, { partition_id: onBroker1, value: { type: 'STRING', data: 'survives' } })).status).toBe(200);

    const broker1 = state.processes.find((p: any) => p.name === 'broker-1');
    // Killed right after the acknowledgement: it answers nothing from then on, its JVM ends soon
    // after, and the acknowledged write survives.
    const killed = await post(`${cli.url}/local/processes/broker-1/kill`, {});
    expect(killed.body.state).toBe('killed');
    const read = () => json(`${v3}/topics/kept/partitions/${onBroker1}/records?offset=0&format=string`);
    const whileDown = await read();
    expect(whileDown.status).toBeGreaterThanOrEqual(500);
    expect(whileDown.body.error_code).toBe(50003);
    await until('the killed store\'s JVM ends', () => !alive(broker1.pid), 10_000);
    const restarted = await post(`${cli.url}/local/processes/broker-1/restart`, {});
    expect(restarted.body).toMatchObject({ state: 'running', port: broker1.port });
    expect(restarted.body.pid).not.toBe(broker1.pid);
    expect((await read()).body.records.map((r: any) => r.value.data)).toEqual(['survives']);

    const paused = await post(`${cli.url}/local/processes/broker-2/pause`, {});
    expect(paused.body.state).toBe('paused');
    expect(fs.readFileSync(`/proc/${paused.body.pid}/stat`, 'utf8').split(' ')[2]).toBe('T');
    expect((await post(`${cli.url}/local/processes/broker-2/resume`, {})).body.state).toBe('running');
    expect((await post(`${cli.url}/local/processes/nope/kill`, {})).status).toBe(404);
    expect((await post(`${cli.url}/local/processes/coordination/restart?wipe=true`, {})).status).toBe(409);
    const listed = (await json(`${cli.url}/local/processes`)).body.processes;
    expect(listed.every((p: any) => p.state === 'running')).toBe(true);

    const pids = listed.map((p: any) => p.pid);
    expect(await stop(cli)).toBe(0);
    for (const pid of pids) expect(alive(pid)).toBe(false);

    // Same data dir again: the topic and its record are still there.
    const again = await startCli(['--port', '0', '--brokers', '2', '--isolated-brokers', '--data-dir', dataDir]);
    const v3b = `${again.url}/v3/clusters/${cluster}`;
    const back = await json(`${v3b}/topics/kept/partitions/${onBroker1}/records?offset=0&format=string`);
    expect(back.body.records.map((r: any) => r.value.data)).toEqual(['survives']);
    expect(await stop(again)).toBe(0);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('with --lambda, runs each function in environments frozen between invocations, answers an acks=0 produce only once its record is written, invokes the controller on its schedule, and stops every environment on SIGTERM', async () => {
    const cli = await startCli(['--port', '0', '--in-memory', '--lambda']);
    const cluster = (await json(`${cli.url}/v3/clusters`)).body.data[0].cluster_id as string;
    const v3 = `${cli.url}/v3/clusters/${cluster}`;
    expect((await post(`${v3}/topics`, { topic_name: 'lambda', partitions_count: 1, replication_factor: 3 })).status).toBe(201);
    const sent = await post(`${v3}/topics/lambda/records?acks=0`, { value: { type: 'STRING', data: 'zero' } });
    expect(sent.body).toMatchObject({ error_code: 202, offset: null });
    // The produce environment was frozen the moment it answered: the record is already in the log.
    const lambda = (await json(`${cli.url}/local/lambda`)).body;
    const produce = lambda.environments.filter((e: any) => e.fn === 'produce');
    expect(produce.length).toBeGreaterThan(0);
    for (const e of produce) expect(fs.readFileSync(`/proc/${e.pid}/stat`, 'utf8').split(') ')[1]?.[0]).toBe('T');
    const end = await json(`${v3}/topics/lambda/partitions/0`);
    expect(end.body.log_end_offset).toBe(1);
    // The controller function runs on its local schedule (every 2 s), not as a process.
    expect((await json(`${cli.url}/local/processes`)).body.processes.map((p: any) => p.name)).not.toContain('controller-1');
    let controller = 0;
    for (let i = 0; i < 100 && controller === 0; i++) {
      controller = (await json(`${cli.url}/local/lambda`)).body.environments.filter((e: any) => e.fn === 'controller').length;
      if (controller === 0) await new Promise((r) => setTimeout(r, 100));
    }
    expect(controller).toBeGreaterThan(0);

    const pids = (await json(`${cli.url}/local/lambda`)).body.environments.map((e: any) => e.pid);
    expect(await stop(cli)).toBe(0);
    for (const pid of pids) expect(alive(pid)).toBe(false);
  });

  it('explains a port in use, a missing Java and an unusable data dir in one sentence and exits 1', async () => {
    const holder = net.createServer().listen(0, '127.0.0.1');
    await new Promise((r) => holder.once('listening', r));
    const port = (holder.address() as net.AddressInfo).port;
    const busy = await runCli(['--port', String(port)]);
    holder.close();
    expect(busy.code).toBe(1);
    expect(userErrorLines(busy.stderr)).toEqual([`Port ${port} is already in use; stop what holds it or choose another with --port or PORT.`]);

    const noJava = await runCli(['--port', '0'], { ...process.env, PATH: path.dirname(process.execPath) === '/usr/bin' ? '/nonexistent' : path.dirname(process.execPath) });
    expect(noJava.code).toBe(1);
    expect(userErrorLines(noJava.stderr)).toEqual(['Java 17 or newer is required to run DynamoDB Local, and `java` was not found on PATH.']);

    const file = path.join(os.tmpdir(), `tributary-not-a-dir-${process.pid}`);
    fs.writeFileSync(file, 'x');
    const badDir = await runCli(['--port', '0', '--data-dir', file]);
    fs.rmSync(file);
    expect(badDir.code).toBe(1);
    expect(userErrorLines(badDir.stderr)).toHaveLength(1);
    expect(badDir.stderr).toContain(`The data directory ${file} cannot be used`);
    expect(badDir.stderr).not.toMatch(/\n\s+at /);
  });
});
