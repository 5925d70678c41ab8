/**
 * Produce and fetch over HTTP against the embedded local stack: requests per second and latency
 * percentiles for single-record produce at several concurrencies, batched produce, and fetch.
 * Prints a table and keeps it in bench/results/produce-fetch.md. Run: `npm run bench -- produce-fetch`.
 */
import fs from 'node:fs';
import path from 'node:path';

process.env.LOG_LEVEL ??= 'warn';
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const { startLocalStack } = await import('../lib/local/stack.js');

const stack = await startLocalStack({ port: 0, brokers: 3, inMemory: true });
const U = stack.url;
const C = `${U}/v3/clusters/${stack.clusterId}`;
const post = async (url: string, body: unknown) => {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (r.status >= 300) throw new Error(`${r.status} ${await r.text()}`);
  return r.json() as Promise<any>;
};
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? 0;

interface Row { scenario: string; requests: number; records: number; seconds: number; reqPerSec: number; recPerSec: number; p50: number; p99: number }
const rows: Row[] = [];

/** Runs `one` `requests` times with `concurrency` in flight; `one` returns how many records it moved. */
async function run(scenario: string, requests: number, concurrency: number, one: (i: number) => Promise<number>) {
  const latencies: number[] = [];
  let next = 0;
  let records = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < requests) {
      const i = next++;
      const t = performance.now();
      const moved = await one(i);
      records += moved;
      latencies.push(performance.now() - t);
    }
  }));
  const seconds = (performance.now() - started) / 1000;
  rows.push({ scenario, requests, records, seconds, reqPerSec: requests / seconds, recPerSec: records / seconds, p50: pct(latencies, 0.5), p99: pct(latencies, 0.99) });
}

const value = { type: 'BINARY', data: Buffer.alloc(100, 1).toString('base64') };
await post(`${C}/topics`, { topic_name: 'bench', partitions_count: 6, replication_factor: 3 });
const one = (body: unknown) => post(`${C}/topics/bench/records`, body).then(() => 1);
await run('produce 1 record, 1 in flight', 300, 1, (i) => one({ key: { type: 'STRING', data: `k${i}` }, value }));
await run('produce 1 record, 8 in flight', 1000, 8, (i) => one({ key: { type: 'STRING', data: `k${i}` }, value }));
await run('produce 1 record, 8 in flight, 1 partition', 500, 8, () => one({ partition_id: 0, value }));
await run('records:batch of 500, 2 in flight', 40, 2, async (i) => (await post(`${C}/topics/bench/records:batch`, {
  entries: Array.from({ length: 500 }, (_, j) => ({ id: String(j), key: { type: 'STRING', data: `k${i}-${j}` }, value })),
})).successes.length);
const end = (await (await fetch(`${C}/topics/bench/partitions/1/offsets`)).json() as any).end_offset as number;
let offset = 0;
await run('fetch 64 KiB pages, 1 in flight', 60, 1, async () => {
  const r = await (await fetch(`${C}/topics/bench/partitions/1/records?offset=${offset}&max_bytes=65536`)).json() as any;
  offset = r.next_offset >= end ? 0 : r.next_offset;
  return r.records.length as number;
});
await stack.stop();

const table = [
  '| scenario | requests | records | s | req/s | records/s | p50 ms | p99 ms |',
  '|---|---|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.scenario} | ${r.requests} | ${r.records} | ${r.seconds.toFixed(1)} | ${r.reqPerSec.toFixed(0)} | ${r.recPerSec.toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} |`),
].join('\n');
const header = `# produce-fetch — ${new Date().toISOString()}\n\nLocal stack (DynamoDB Local in memory, one process; s3rver), 3 brokers, topic with 6 partitions, RF 3, 100-byte values, over HTTP through the local gateway. Node ${process.version}, ${(await import('node:os')).cpus().length} cores.\n\n`;
process.stdout.write(`${table}\n`);
fs.writeFileSync(path.join(import.meta.dirname, 'results', 'produce-fetch.md'), `${header}${table}\n`);
