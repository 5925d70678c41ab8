/**
 * The controller's cost and the failover time. (1) DynamoDB requests and capacity units of one
 * steady-state tick, and of a takeover tick (which walks every partition), with 10 and with 1,000
 * partitions. (2) Failover with the default settings (broker.session.timeout.ms 9000, tick 1000 ms,
 * two controller processes, one DynamoDB Local per broker): from SIGKILL of the leader's store to
 * the first successful acks=all produce. Run: `npm run bench -- controller`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

process.env.LOG_LEVEL ??= 'warn';
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const { startLocalStack } = await import('../lib/local/stack.js');
const { takeCapacity, trackCapacity } = await import('../lib/storage/capacity.js');
const { createTopic } = await import('../lib/cluster/topics.js');
const { Controller } = await import('../lib/cluster/controller.js');

const lines: string[] = [];
const out = (s: string) => {
  lines.push(s);
  process.stdout.write(`${s}\n`);
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// 1. Tick cost.
const stack = await startLocalStack({ port: 0, brokers: 3, inMemory: true, controllers: 0 });
out('| partitions | tick | requests | by operation | read units | write units |');
out('|---|---|---|---|---|---|');
let made = 0;
for (const total of [10, 1000]) {
  while (made < total) {
    const n = Math.min(100, total - made);
    await createTopic({ name: `t-${made}`, partitions: n, replicationFactor: 3 });
    made += n;
  }
  const c = new Controller({ id: `bench-${total}`, tickMs: 1000, leaseMs: 60_000, sessionTimeoutMs: 60_000 });
  trackCapacity(true);
  takeCapacity();
  const t0 = Date.now() + total * 1000; // take over from the previous bench controller
  await c.tick(t0);
  const takeover = takeCapacity();
  await c.tick(t0 + 1000);
  await c.tick(t0 + 2000);
  const steady = takeCapacity();
  trackCapacity(false);
  const row = (what: string, x: typeof steady, ticks: number) => {
    const reqs = Object.values(x.requests).reduce((a, b) => a + b, 0) / ticks;
    const ops = Object.entries(x.requests).map(([k, v]) => `${k} ${v / ticks}`).join(', ');
    out(`| ${total} | ${what} | ${reqs} | ${ops} | ${(x.readUnits / ticks).toFixed(1)} | ${(x.writeUnits / ticks).toFixed(1)} |`);
  };
  row('takeover (walks every partition)', takeover, 1);
  row('steady state', steady, 2);
}
await stack.stop();

// 2. Failover with default settings.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-bench-'));
const cluster = await startLocalStack({ port: 0, brokers: 3, isolatedBrokers: true, dataDir: dir });
const C = `${cluster.url}/v3/clusters/${cluster.clusterId}`;
const post = (p: string, body: unknown) => fetch(`${cluster.url}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
await post(`/v3/clusters/${cluster.clusterId}/topics`, { topic_name: 'failover', partitions_count: 1, replication_factor: 3 });
await sleep(2000);
const leader = ((await (await fetch(`${C}/topics/failover/partitions/0`)).json()) as any).leader_id as number;
for (let i = 0; i < 20; i++) await post(`/v3/clusters/${cluster.clusterId}/topics/failover/records`, { value: { type: 'STRING', data: `before-${i}` } });
const killedAt = Date.now();
await post(`/local/processes/broker-${leader}/kill`, {});
let firstOk = 0;
let failed = 0;
for (let i = 0; !firstOk; i++) {
  const r = await post(`/v3/clusters/${cluster.clusterId}/topics/failover/records`, { value: { type: 'STRING', data: `after-${i}` } });
  if (r.status === 200) firstOk = Date.now();
  else failed++;
  await r.text();
}
const elected = ((await (await fetch(`${C}/topics/failover/partitions/0`)).json()) as any);
await cluster.stop();
fs.rmSync(dir, { recursive: true, force: true });
out('');
out(`failover (session timeout 9000 ms, tick 1000 ms): first acks=all produce succeeded ${firstOk - killedAt} ms after SIGKILL of the leader's store; ` +
  `${failed} requests failed meanwhile; leader ${leader} → ${elected.leader_id}, epoch ${elected.leader_epoch}`);

const header = `# controller — ${new Date().toISOString()}\n\nNode ${process.version}, ${os.cpus().length} cores. Tick cost on an in-memory DynamoDB Local with 3 brokers (RF 3 topics); failover on one DynamoDB Local process per broker.\n\n`;
fs.writeFileSync(path.join(import.meta.dirname, 'results', 'controller.md'), `${header}${lines.join('\n')}\n`);
