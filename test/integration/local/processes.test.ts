// A real run of the local stack's process supervisor: DynamoDB Local JVMs and s3rver as child processes.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateTableCommand, DynamoDBClient, ListTablesCommand, QueryCommand, TransactWriteItemsCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import {
  LocalStackError,
  ProcessSupervisor,
  assertPortFree,
  checkJava,
  freePort,
  killStale,
  type ProcessInfo,
} from '../../../local/processes.js';
import { until } from '../../support/cluster.js';
import { READY_PATH, answersHttp } from '../../../local/ports.js';
import { startGateway } from '../../../local/gateway.js';

type Probe = { status: number } | { error: string };

/** GET / with a hard timeout: { status } for any HTTP answer, { error: 'TIMEOUT' | errno code } otherwise. */
function probe(port: number, timeoutMs = 2000): Promise<Probe> {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/', method: 'GET', agent: false }, (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0 });
    });
    const timer = setTimeout(() => {
      req.destroy();
      resolve({ error: 'TIMEOUT' });
    }, timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ error: err.code ?? err.message });
    });
    req.on('close', () => clearTimeout(timer));
    req.end();
  });
}

/**
 * Probes until an HTTP answer or 20 s: "it answers" is the claim, not "it answers within one probe's
 * timeout" (a JVM just resumed or restarted on a busy machine can take a few seconds).
 */
async function answers(port: number): Promise<Probe> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const r = await probe(port);
    if ('status' in r || Date.now() > deadline) return r;
    await new Promise((res) => setTimeout(res, 100));
  }
}

// Only a guard against a hang: a JVM's first requests are slow (4–10 s measured for a cold
// CreateTable on two busy cores), and no test here is about speed.
const handler = () => new NodeHttpHandler({ connectionTimeout: 2000, requestTimeout: 20_000 });
const dynamo = (info: ProcessInfo) => new DynamoDBClient({
  endpoint: info.endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  maxAttempts: 1,
  requestHandler: handler(),
});

async function tableNames(info: ProcessInfo): Promise<string[]> {
  const client = dynamo(info);
  try {
    return (await client.send(new ListTablesCommand({}))).TableNames ?? [];
  } finally {
    client.destroy();
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

describe('ProcessSupervisor with real DynamoDB Local and s3rver', () => {
  let dir: string;
  const states: string[] = [];
  let sup: ProcessSupervisor;
  const everyPid = new Set<number>();
  const remember = (info: ProcessInfo): ProcessInfo => {
    if (info.pid !== null) everyPid.add(info.pid);
    return info;
  };

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-processes-'));
    sup = new ProcessSupervisor({
      onChange: (list) => states.push(list.map((p) => `${p.name}:${p.state}`).join(',')),
    });
    // started in parallel, as the real stack does
    const infos = await Promise.all([
      sup.start({ name: 'mem', role: 'in-memory store', kind: 'dynamodb', dataDir: null }),
      sup.start({ name: 'disk', role: 'on-disk store', kind: 'dynamodb', dataDir: path.join(dir, 'disk'), logFile: path.join(dir, 'logs', 'disk.log') }),
      sup.start({ name: 's3', role: 'S3', kind: 's3', dataDir: path.join(dir, 's3'), bucket: 'tributary-test' }),
    ]);
    infos.forEach(remember);
  }, 60_000);

  afterAll(async () => {
    await sup?.stopAll();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }, 20_000);

  it('checkJava finds Java 17 or newer', async () => {
    expect((await checkJava()).version).toBeGreaterThanOrEqual(17);
  });

  it('starts every store and each answers HTTP on its own port', async () => {
    const list = sup.list();
    expect(list.map((p) => p.name).sort()).toEqual(['disk', 'mem', 's3']);
    for (const p of list) {
      expect(p.state).toBe('running');
      expect(p.endpoint).toBe(`http://127.0.0.1:${p.port}`);
      expect(p.pid).toBeGreaterThan(0);
      expect(p.startedAt).not.toBeNull();
      expect(await answers(p.port)).toHaveProperty('status');
    }
    expect(new Set(list.map((p) => p.port)).size).toBe(3);
    expect(states.some((s) => s.includes('mem:starting'))).toBe(true);
    expect(fs.readFileSync(path.join(dir, 'logs', 'disk.log'), 'utf8')).toContain('DynamoDBLocal.jar');
    // Started from the class data archive (lib/local/dynamodb-archive.ts), mapped, not ignored.
    for (const name of ['disk', 'mem']) {
      if (fs.existsSync('/proc/self/maps')) expect(fs.readFileSync(`/proc/${sup.get(name)!.pid}/maps`, 'utf8'), name).toMatch(/tributary-dynamodb\/\w+\/dynamodb\.jsa/);
    }
    expect(fs.readFileSync(path.join(dir, 'logs', 'disk.log'), 'utf8')).not.toMatch(/Unable to use shared archive/);

    const s3 = sup.get('s3')!;
    const client = new S3Client({
      endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, maxAttempts: 1, requestHandler: handler(),
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    try {
      const buckets = await client.send(new ListBucketsCommand({}));
      expect(buckets.Buckets?.map((b) => b.Name)).toContain('tributary-test');
    } finally {
      client.destroy();
    }
  });

  it('pause stops answers while keeping the port open (every thread stopped when it answers); resume brings them back', async () => {
    const before = sup.get('mem')!;
    expect(sup.pause('mem').state).toBe('paused');
    // (SIGSTOP is delivered asynchronously: "paused" must mean every thread is stopped already)
    const states = fs.readdirSync(`/proc/${before.pid}/task`).map((tid) => {
      const stat = fs.readFileSync(`/proc/${before.pid}/task/${tid}/stat`, 'utf8');
      return stat.charAt(stat.lastIndexOf(')') + 2);
    });
    expect(states.filter((st) => st !== 'T' && st !== 't')).toEqual([]);
    expect(await probe(before.port, 500)).toEqual({ error: 'TIMEOUT' });
    expect(() => sup.pause('mem')).toThrow(LocalStackError);
    expect(sup.resume('mem').state).toBe('running');
    expect(await answers(before.port)).toHaveProperty('status');
    expect(() => sup.resume('mem')).toThrow(/is not paused/);
  });

  it('kill refuses connections at once; restart comes back on the same port with a new pid', async () => {
    const before = sup.get('mem')!;
    const killed = sup.kill('mem');
    expect(killed.state).toBe('killed');
    expect(await probe(before.port)).toEqual({ error: 'ECONNREFUSED' });
    expect(() => sup.kill('mem')).toThrow(LocalStackError);
    expect(() => sup.pause('mem')).toThrow(/is not running/);

    const after = remember(await sup.restart('mem'));
    expect(after.state).toBe('running');
    expect(after.port).toBe(before.port);
    expect(after.pid).not.toBe(before.pid);
    expect(await answers(after.port)).toHaveProperty('status');
  }, 30_000);

  it('restart of a paused store works too', async () => {
    const before = sup.get('mem')!;
    sup.pause('mem');
    const after = remember(await sup.restart('mem'));
    expect(after.state).toBe('running');
    expect(after.pid).not.toBe(before.pid);
    expect(await answers(after.port)).toHaveProperty('status');
  }, 30_000);

  it('a -dbPath store keeps its tables across restart; restart with wipe empties it', async () => {
    const disk = sup.get('disk')!;
    const client = dynamo(disk);
    try {
      await client.send(new CreateTableCommand({
        TableName: 'kept-table',
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }));
    } finally {
      client.destroy();
    }
    const restarted = remember(await sup.restart('disk'));
    expect(restarted.port).toBe(disk.port);
    expect(await tableNames(restarted)).toContain('kept-table');

    const wiped = remember(await sup.restart('disk', { wipe: true }));
    expect(await tableNames(wiped)).toEqual([]);
  }, 30_000);

  it('a -dbPath store killed or restarted in the middle of transactions keeps every one it acknowledged', async () => {
    // DynamoDB Local answers a TransactWriteItems a few ms before the write survives a SIGKILL
    // (measured: one acknowledged transaction lost in 1 to 3 of every 10 kills); kill() must not.
    const table = 'acked-writes';
    const put = (round: number) => {
      const c = dynamo(sup.get('disk')!);
      return { client: c, write: (writer: number, i: number) => c.send(new TransactWriteItemsCommand({
        TransactItems: ['a', 'b'].map((side) => ({ Put: { TableName: table, Item: { pk: { S: `${side}#${round}` }, sk: { N: String(writer * 100_000 + i) }, pad: { S: 'x'.repeat(8_000) } } } })),
      })) };
    };
    const create = dynamo(sup.get('disk')!);
    try {
      await create.send(new CreateTableCommand({
        TableName: table, BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }, { AttributeName: 'sk', AttributeType: 'N' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }, { AttributeName: 'sk', KeyType: 'RANGE' }],
      }));
    } finally {
      create.destroy();
    }
    const lost: string[] = [];
    let acknowledged = 0;
    for (let round = 0; round < 10; round++) {
      const { client, write } = put(round);
      const acked: number[] = [];
      let stop = false;
      const writers = [0, 1, 2, 3].map(async (w) => {
        for (let i = 0; !stop; i++) {
          try {
            await write(w, i);
            acked.push(w * 100_000 + i);
          } catch {
            return; // refused or cut off by the kill: not acknowledged
          }
        }
      });
      await until('40 transactions acknowledged', () => acked.length >= 40, 20_000);
      // even rounds kill, then restart; odd rounds restart the running store (a crash and a start)
      const restarting = round % 2 === 1 ? sup.restart('disk') : (sup.kill('disk'), null);
      stop = true;
      await Promise.all(writers);
      client.destroy();
      const back = remember(await (restarting ?? sup.restart('disk')));
      const reader = dynamo(back);
      try {
        for (const side of ['a', 'b']) {
          const kept = new Set<number>();
          let from: Record<string, AttributeValue> | undefined;
          do {
            const page = await reader.send(new QueryCommand({
              TableName: table, KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': { S: `${side}#${round}` } },
              ProjectionExpression: 'sk', ...(from ? { ExclusiveStartKey: from } : {}),
            }));
            for (const item of page.Items ?? []) kept.add(Number(item.sk?.N));
            from = page.LastEvaluatedKey;
          } while (from);
          lost.push(...acked.filter((sk) => !kept.has(sk)).map((sk) => `round ${round} ${side} ${sk}`));
        }
      } finally {
        reader.destroy();
      }
      acknowledged += acked.length;
    }
    expect(acknowledged).toBeGreaterThan(10 * 40);
    expect(lost).toEqual([]);
  }, 180_000);

  it('unknown names are a LocalStackError naming the process', () => {
    expect(() => sup.kill('nope')).toThrow(new LocalStackError('No local process named "nope"'));
    expect(() => sup.resume('nope')).toThrow(LocalStackError);
    expect(sup.get('nope')).toBeUndefined();
    return expect(sup.restart('nope')).rejects.toThrow(LocalStackError);
  });

  it('assertPortFree rejects a port in use and accepts a free one', async () => {
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    try {
      await expect(assertPortFree(port, 'set another port.')).rejects.toThrow(
        new LocalStackError(`Port ${port} is already in use; set another port.`),
      );
    } finally {
      await new Promise((r) => server.close(r));
    }
    await expect(assertPortFree(port, 'x')).resolves.toBeUndefined();
    // a port a running store holds is in use too (DynamoDB Local binds all interfaces)
    await expect(assertPortFree(sup.get('mem')!.port, 'x')).rejects.toThrow(LocalStackError);
    expect(await freePort()).toBeGreaterThan(0);
  });

  it('killStale leaves unrelated processes alone and kills a stale DynamoDB Local', async () => {
    const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
    const other = new ProcessSupervisor();
    try {
      await new Promise((r) => sleeper.once('spawn', r));
      expect(killStale([sleeper.pid!, process.pid, 999_999_999])).toEqual([]);
      expect(isAlive(sleeper.pid!)).toBe(true);

      const stale = await other.start({ name: 'stale', role: 'stale store', kind: 'dynamodb', dataDir: null });
      expect(killStale([stale.pid!])).toEqual([stale.pid]);
      // the supervisor that owned it sees an unexpected exit
      await until('the supervisor to see the stale store exit', () => other.get('stale')?.state === 'exited', { ms: 5000, everyMs: 25, retry: false });
      expect(isAlive(stale.pid!)).toBe(false);
      expect(await probe(stale.port)).toEqual({ error: 'ECONNREFUSED' });
    } finally {
      sleeper.kill('SIGKILL');
      await other.stopAll();
    }
  }, 30_000);

  it('stopAll ends every child, including a paused one', async () => {
    sup.pause('s3');
    const pids = sup.list().map((p) => p.pid!);
    pids.forEach((pid) => everyPid.add(pid));
    await sup.stopAll();
    expect(sup.list().map((p) => p.state)).toEqual(['stopped', 'stopped', 'stopped']);
    for (const pid of everyPid) expect(isAlive(pid), `pid ${pid}`).toBe(false);
    expect(() => sup.kill('mem')).toThrow(LocalStackError);
  }, 20_000);
});

describe('ProcessSupervisor readiness of node processes', () => {
  it('a node process is ready once it answers the readiness path, though GET / never answers', async () => {
    const sup = new ProcessSupervisor({ readyTimeoutMs: 5_000 });
    try {
      const info = await sup.start({ name: 'slow', role: 'slow gateway', kind: 'node', dataDir: null, script: 'test/fixtures/local/slow-root-server.ts' });
      expect(info.state).toBe('running');
      expect(await answersHttp(info.port, 1000)).toBe(false); // GET / hangs: probing it would never pass
      expect(await answersHttp(info.port, 1000, READY_PATH)).toBe(true);
      const again = await sup.restart('slow');
      expect(again.state).toBe('running');
    } finally {
      await sup.stopAll();
    }
  }, 30_000);

  it('a process group that never gets ready is killed whole: no child of it outlives the failed start', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-never-ready-'));
    const pidFile = path.join(dir, 'child.pid');
    const sup = new ProcessSupervisor({ readyTimeoutMs: 3_000 });
    try {
      await expect(sup.start({
        name: 'never', role: 'never-ready gateway', kind: 'node', dataDir: null, group: true,
        script: 'test/fixtures/local/never-ready-with-child.ts', args: ['--pid-file', pidFile],
      })).rejects.toThrow(LocalStackError);
      const child = Number(fs.readFileSync(pidFile, 'utf8'));
      await until('the never-ready process group\'s child is gone', () => !isAlive(child), 2_000);
    } finally {
      await sup.stopAll();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);

  it('the gateway answers the readiness path itself, while its functions hang', async () => {
    const hang = () => new Promise<never>(() => {});
    const gateway = await startGateway({ host: '127.0.0.1', port: 0, maxRequestBytes: 1024, functions: new Proxy({}, { get: () => hang }) as never });
    try {
      expect(await answersHttp(gateway.port, 1000, READY_PATH)).toBe(true);
      expect(await answersHttp(gateway.port, 500)).toBe(false);
    } finally {
      await gateway.close();
    }
  });
});
