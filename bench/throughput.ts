/**
 * Throughput against the physical limit: in ONE run, on DynamoDB Local on disk, 1 KiB records,
 * one sequential writer (or reader) per partition, at 1, 4 and 16 partitions (`--quick`: 1,
 * briefly), Tributary over HTTP next to the raw DynamoDB operations it needs:
 *   raw append      one conditional 2-item TransactWriteItems (the batch item + the head guarding its
 *                   offset, `leo = :expected`) on a raw table in the leader broker's store
 *   raw RF 3        that transaction on the leader's table, then on both followers' tables in
 *                   parallel (each in its own DynamoDB Local process), then one UpdateItem of the
 *                   leader head's high watermark: 3 sequential round trips, 4 writes
 *   raw Query       the strongly consistent Query of 100 of those 1-record batches
 *   acks=1, acks=all (RF 3), fetch of 100 × 1 KiB: through the local gateway, as a client sends them.
 * Also: each Tributary request's sequential store round trips and store calls (the gateway's
 * request observer), where a request's latency went (store calls on the critical path, handler,
 * gateway and HTTP), and a CPU profile of this process by category next to the DynamoDB Local
 * JVMs' CPU seconds. Run: `npm run bench -- throughput [--quick]`.
 */
import './lib/env.js';
import { Session } from 'node:inspector/promises';
import { PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { isQuick, writeResult, type Table } from './lib/report.js';
import {
  HttpFailure, KIB_VALUE, RequestRecorder, STACK_NOTE, cpuDelta, cpuSnapshot, formatCalls, http, mean, runWriters, startBenchStack, summarize, type LoadRun,
} from './lib/load.js';
import { leaderOf } from './lib/partition.js';
import { createTopic } from '../lib/cluster/topics.js';
import { replicaStore } from '../lib/cluster/metadata.js';
import { ensureTable } from '../lib/storage/admin.js';
import { dynamo } from '../lib/storage/clients.js';
import { queryBatches } from '../lib/storage/replica/reads.js';
import { encodeBatch } from '../lib/protocol/record-batch.js';
import { produce } from '../lib/log/produce.js';

const quick = isQuick();
const PARTITIONS = quick ? [1] : [1, 4, 16];
const SECONDS = quick ? 1 : 6;
const PROFILE_PARTITIONS = Math.min(4, Math.max(...PARTITIONS));
const PROFILE_SECONDS = quick ? 1 : 5;
const FETCH_RECORDS = 100;

const stack = await startBenchStack();
const C = `${stack.url}/v3/clusters/${stack.clusterId}`;
const recorder = new RequestRecorder();

// --- The raw baseline: its own tables, same key schema and stream as a replica table, in each broker's store.
interface RawStore { endpoint: string | undefined; table: string }
const rawStores = new Map<number, RawStore>();
for (const id of [1, 2, 3]) {
  const ref = await replicaStore(id);
  const table = `bench-raw-${id}`;
  await ensureTable({ name: table, partitionKey: { name: 'tp', type: 'S' }, sortKey: { name: 'off', type: 'N' }, stream: 'NEW_IMAGE' }, ref.endpoint);
  rawStores.set(id, { endpoint: ref.endpoint, table });
}
/** One 1 KiB record as a RecordBatch v2, the bytes a raw batch item holds (Tributary's item holds the same). */
const RAW_BATCH = encodeBatch({ baseOffset: 0, records: [{ timestamp: Date.now(), key: null, value: Buffer.alloc(1024, 7) }] });

const rawHead = (s: RawStore, tp: string) => dynamo(s.endpoint).send(new PutCommand({ TableName: s.table, Item: { tp, off: -1, leo: 0, hw: 0 } }));
/** The conditional 2-item append: batch at `leo`, head `leo → leo + 1` on condition `leo = :expected`. */
const rawAppend = (s: RawStore, tp: string, leo: number) => dynamo(s.endpoint).send(new TransactWriteCommand({
  TransactItems: [
    { Update: { TableName: s.table, Key: { tp, off: -1 }, UpdateExpression: 'SET leo = :next', ConditionExpression: 'leo = :expected', ExpressionAttributeValues: { ':expected': leo, ':next': leo + 1 } } },
    {
      Put: {
        TableName: s.table,
        Item: { tp, off: leo, baseOffset: leo, lastOffset: leo, leaderEpoch: 0, maxTimestamp: Date.now(), recordCount: 1, sizeBytes: RAW_BATCH.length, data: RAW_BATCH },
        ConditionExpression: 'attribute_not_exists(off)',
      },
    },
  ],
}));
const rawHighWatermark = (s: RawStore, tp: string, hw: number) => dynamo(s.endpoint).send(new UpdateCommand({
  TableName: s.table, Key: { tp, off: -1 }, UpdateExpression: 'SET hw = :hw', ConditionExpression: 'hw < :hw', ExpressionAttributeValues: { ':hw': hw },
}));
const rawQuery = async (s: RawStore, tp: string, from: number) => {
  const out = await dynamo(s.endpoint).send(new QueryCommand({
    TableName: s.table, KeyConditionExpression: 'tp = :tp AND off BETWEEN :from AND :to', ExpressionAttributeValues: { ':tp': tp, ':from': from, ':to': from + FETCH_RECORDS - 1 }, ConsistentRead: true,
  }));
  return out.Items?.length ?? 0;
};

// --- One partition count: every path, in the same run.
type PathName = 'raw append' | 'acks=1' | 'raw RF 3' | 'acks=all' | 'raw Query' | 'fetch';
const PATHS: PathName[] = ['raw append', 'acks=1', 'raw RF 3', 'acks=all', 'raw Query', 'fetch'];
interface PathResult { run: LoadRun; jvmCpuMsPerOp: number; cpu: Record<string, number> }
interface Level { partitions: number; paths: Record<PathName, PathResult>; batchBytes: number }

const jvmCpu = (cpu: Record<string, number>) => Object.entries(cpu).filter(([k]) => k.includes('JVM')).reduce((n, [, v]) => n + v, 0);

async function measured(label: PathName, n: number, op: (w: number, i: number) => Promise<number>): Promise<PathResult> {
  const before = cpuSnapshot(stack);
  const run = await recorder.during(`${label}@${n}`, () => runWriters(n, SECONDS, op));
  const cpu = cpuDelta(before, cpuSnapshot(stack));
  process.stdout.write(`  ${n} partition(s) · ${label}: ${Math.round(run.recordsPerSec)} records/s, p50 ${run.p50.toFixed(1)} ms, p99 ${run.p99.toFixed(1)} ms\n`);
  return { run, cpu, jvmCpuMsPerOp: (jvmCpu(cpu) * 1000) / Math.max(1, run.ops) };
}

const produceOne = async (topic: string, acks: string, partition: number) => {
  const r = await http(`${C}/topics/${topic}/records?acks=${acks}`, 'POST', { partition_id: partition, value: KIB_VALUE });
  if (r.error_code !== 200) throw new HttpFailure(`produce: ${JSON.stringify(r)}`);
  return 1;
};

/** Offsets to fetch from: spread over what the partition holds, one fetch's worth below its end. */
const fetchFrom = (end: number, i: number, w: number) => ((i * 7919 + w * 104_729) % Math.max(1, end - FETCH_RECORDS + 1));

/**
 * What the reads read, filled once before any measurement: a topic of one-record batches (as the
 * produce paths above write them) in as many partitions as the widest level, and its raw twin —
 * the same number of raw batch items per partition in the same leader's store. RF 1: a fetch
 * reads the leader only, and RF 1 fills the log fastest (lib/ produce, acks=all, one record per call).
 */
const FETCH_TOPIC = 'tput-fetch';
const FETCH_FILL = quick ? FETCH_RECORDS : FETCH_RECORDS + 50;
const widest = Math.max(...PARTITIONS);
const fetchTopic = await createTopic({ name: FETCH_TOPIC, partitions: widest, replicationFactor: 1 });
const fetchLeader = (p: number) => rawStores.get(fetchTopic.partitions[p]!.leader)!;
const oneRecord = [{ partition: 0, key: null, value: Buffer.alloc(1024, 7), headers: [] }];
await Promise.all(Array.from({ length: widest }, async (_, p) => {
  await rawHead(fetchLeader(p), `q-${p}`);
  for (let i = 0; i < FETCH_FILL; i++) {
    await rawAppend(fetchLeader(p), `q-${p}`, i);
    const [r] = await produce(FETCH_TOPIC, [{ ...oneRecord[0]!, partition: p }], { acks: 'all' });
    if (!r?.ok) throw new Error(`fill of ${FETCH_TOPIC}/${p}: ${r?.ok === false ? r.error.message : 'no outcome'}`);
  }
}));
const fetchPartition0 = await leaderOf(fetchTopic);
const batchBytes = (await queryBatches(fetchPartition0.leader, fetchPartition0.tp, { fromOffset: 0, toOffset: 0, maxBytes: 1 }))[0]?.sizeBytes ?? RAW_BATCH.length;
const tributaryFetch = async (w: number, i: number) => {
  const r = await http(`${C}/topics/${FETCH_TOPIC}/partitions/${w}/records?offset=${fetchFrom(FETCH_FILL, i, w)}&max_bytes=${FETCH_RECORDS * batchBytes}`);
  return (r.records as unknown[]).length;
};

async function level(n: number): Promise<Level> {
  const all = `tput-all-${n}`;
  const one = `tput-one-${n}`;
  const { partitions } = await createTopic({ name: all, partitions: n, replicationFactor: 3 });
  await createTopic({ name: one, partitions: n, replicationFactor: 3 });
  // The raw baseline uses the same placement as the topic: partition p's leader and followers.
  const leaderOf = (p: number) => rawStores.get(partitions[p]!.leader)!;
  const followersOf = (p: number) => partitions[p]!.replicas.filter((b) => b !== partitions[p]!.leader).map((b) => rawStores.get(b)!);
  const rawTp = (kind: string, p: number) => `${kind}-${n}-${p}`;
  for (let p = 0; p < n; p++) {
    await rawHead(leaderOf(p), rawTp('a', p));
    for (const s of [leaderOf(p), ...followersOf(p)]) await rawHead(s, rawTp('r', p));
  }
  // The first request to a new topic's partition fills caches: not measured.
  await Promise.all(Array.from({ length: n }, async (_, w) => Promise.all([produceOne(one, '1', w), produceOne(all, 'all', w)])));
  const appended = new Array<number>(n).fill(0);
  const replicated = new Array<number>(n).fill(0);

  const paths = {} as Record<PathName, PathResult>;
  paths['raw append'] = await measured('raw append', n, async (w) => {
    await rawAppend(leaderOf(w), rawTp('a', w), appended[w]!);
    appended[w]!++;
    return 1;
  });
  paths['acks=1'] = await measured('acks=1', n, (w) => produceOne(one, '1', w));
  paths['raw RF 3'] = await measured('raw RF 3', n, async (w) => {
    const leo = replicated[w]!;
    await rawAppend(leaderOf(w), rawTp('r', w), leo);
    await Promise.all(followersOf(w).map((s) => rawAppend(s, rawTp('r', w), leo)));
    await rawHighWatermark(leaderOf(w), rawTp('r', w), leo + 1);
    replicated[w]!++;
    return 1;
  });
  paths['acks=all'] = await measured('acks=all', n, (w) => produceOne(all, 'all', w));
  paths['raw Query'] = await measured('raw Query', n, (w, i) => rawQuery(fetchLeader(w), `q-${w}`, fetchFrom(FETCH_FILL, i, w)));
  paths.fetch = await measured('fetch', n, tributaryFetch);
  return { partitions: n, paths, batchBytes };
}

// --- Where the CPU went: an in-process profile by category.
interface ProfileNode { id: number; callFrame: { functionName: string; url: string }; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples?: number[]; timeDeltas?: number[] }

/** V8 does not show JSON.parse/stringify as frames (their time goes to the caller); base64 shows as Buffer work. */
const BASE64 = /^(base64Slice|base64Write|base64ByteLength|btoa|atob)$/;
/** A frame of code we can name: the innermost such frame on a sample's stack decides its category. */
function named(url: string): string | undefined {
  if (/node_modules\/(@aws-sdk|@smithy|@aws-crypto|fast-xml-parser|bowser)\//.test(url)) return 'AWS SDK (@aws-sdk, @smithy)';
  if (url.includes('/lib/protocol/')) return 'record codec (lib/protocol)';
  if (url.includes('/local/gateway')) return 'gateway / HTTP server';
  if (url.includes('undici') || url.includes('/bench/')) return 'bench client (fetch/undici, driver)';
  if (/\/(lib|lambdas)\//.test(url) && !url.includes('node_modules')) return 'Tributary logic (lib/, handlers, with zod, middy, pino)';
  return undefined;
}
/** Node's own modules, when no frame above names the work: the HTTP client side belongs to the SDK, the server side to the gateway. */
function nodeInternal(url: string): string | undefined {
  if (/node:_http_client|node:_http_agent/.test(url)) return 'AWS SDK (@aws-sdk, @smithy)';
  if (/node:_http_server|node:_http_incoming/.test(url)) return 'gateway / HTTP server';
  return undefined;
}

function categorize(profile: Profile): Record<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const memo = new Map<number, string>();
  const categoryOf = (id: number): string => {
    const hit = memo.get(id);
    if (hit) return hit;
    const self = byId.get(id)!.callFrame;
    let category: string | undefined;
    if (self.functionName === '(idle)') category = 'idle';
    else if (self.functionName === '(garbage collector)') category = 'garbage collection';
    else if (self.functionName === '(program)') category = 'other (V8, Node internals)';
    else if ((self.url === '' && BASE64.test(self.functionName)) || self.url === 'node:buffer' || self.url === 'node:internal/buffer') category = 'Buffer: base64 and copies';
    for (let at: number | undefined = id; !category && at !== undefined; at = parent.get(at)) category = named(byId.get(at)!.callFrame.url);
    for (let at: number | undefined = id; !category && at !== undefined; at = parent.get(at)) category = nodeInternal(byId.get(at)!.callFrame.url);
    category ??= 'other (V8, Node internals)';
    memo.set(id, category);
    return category;
  };
  const out: Record<string, number> = {};
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    const c = categoryOf(samples[i]!);
    out[c] = (out[c] ?? 0) + (deltas[i] ?? 0) / 1e6;
  }
  return out;
}

async function profiled(fn: () => Promise<unknown>): Promise<{ categories: Record<string, number>; cpu: Record<string, number>; wall: number }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 500 });
  const before = cpuSnapshot(stack);
  const t = performance.now();
  await session.post('Profiler.start');
  await fn();
  const { profile } = await session.post('Profiler.stop') as { profile: Profile };
  const wall = (performance.now() - t) / 1000;
  const cpu = cpuDelta(before, cpuSnapshot(stack));
  session.disconnect();
  return { categories: categorize(profile), cpu, wall };
}

// --- Run.
const started = performance.now();
const levels: Level[] = [];
for (const n of PARTITIONS) levels.push(await level(n));

// The profile runs apart from the measurements (sampling slows the process a little).
const pTopic = `tput-profile-${PROFILE_PARTITIONS}`;
await createTopic({ name: pTopic, partitions: PROFILE_PARTITIONS, replicationFactor: 3 });
await Promise.all(Array.from({ length: PROFILE_PARTITIONS }, (_, w) => produceOne(pTopic, 'all', w)));
const profileAll = await profiled(() => runWriters(PROFILE_PARTITIONS, PROFILE_SECONDS, (w) => produceOne(pTopic, 'all', w), 0));
const profileFetch = await profiled(() => runWriters(PROFILE_PARTITIONS, PROFILE_SECONDS, tributaryFetch, 0));

/**
 * JSON and base64 per request, timed apart on the real bodies (the profile cannot show them: V8
 * charges JSON.parse/stringify to their caller): the client's and the handler's stringify and
 * parse of each body, and the base64 of each record value on either side.
 */
function perCall(fn: () => unknown): number {
  const until = performance.now() + 300;
  let n = 0;
  while (performance.now() < until) {
    fn();
    n++;
  }
  return 300 / n;
}
const fetchText = await (await fetch(`${C}/topics/${FETCH_TOPIC}/partitions/0/records?offset=0&max_bytes=${FETCH_RECORDS * batchBytes}`)).text();
const fetchBody = JSON.parse(fetchText) as { records: { value: { data: string } }[] };
const produceBody = { partition_id: 0, value: KIB_VALUE };
const produceText = JSON.stringify(produceBody);
const produceReply = await (await fetch(`${C}/topics/${pTopic}/records?acks=1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: produceText })).text();
const valueBytes = Buffer.alloc(1024, 7);
const jsonCost = {
  fetch: {
    json: perCall(() => JSON.parse(JSON.stringify(fetchBody))),
    base64: perCall(() => fetchBody.records.forEach((r) => Buffer.from(r.value.data, 'base64').toString('base64'))),
  },
  produce: {
    json: perCall(() => JSON.parse(JSON.stringify(JSON.parse(produceText))) && JSON.parse(JSON.stringify(JSON.parse(produceReply)))),
    base64: perCall(() => Buffer.from(valueBytes.toString('base64'), 'base64')),
  },
};
recorder.stop();
await stack.stop();
const seconds = (performance.now() - started) / 1000;

// --- Tables.
const rate = (l: Level, p: PathName) => (p === 'raw Query' || p === 'fetch' ? l.paths[p].run.opsPerSec : l.paths[p].run.recordsPerSec);
const ratio = (a: number, b: number) => `${Math.round((100 * a) / b)} %`;
const throughputTable: Table = {
  title: 'Throughput: Tributary against the raw DynamoDB operations it needs (same run)',
  columns: ['partitions = writers', 'raw append rec/s', 'acks=1 rec/s', 'acks=1 / raw append', 'raw RF 3 rec/s', 'acks=all rec/s', 'acks=all / raw RF 3', 'acks=all / raw append', 'raw Query fetches/s', 'fetch fetches/s', 'fetch / raw Query'],
  rows: levels.map((l) => [
    l.partitions,
    Math.round(rate(l, 'raw append')), Math.round(rate(l, 'acks=1')), ratio(rate(l, 'acks=1'), rate(l, 'raw append')),
    Math.round(rate(l, 'raw RF 3')), Math.round(rate(l, 'acks=all')), ratio(rate(l, 'acks=all'), rate(l, 'raw RF 3')), ratio(rate(l, 'acks=all'), rate(l, 'raw append')),
    Math.round(rate(l, 'raw Query')), Math.round(rate(l, 'fetch')), ratio(rate(l, 'fetch'), rate(l, 'raw Query')),
  ]),
  notes: [
    `Records per read: fetch ${levels.map((l) => (l.paths.fetch.run.records / Math.max(1, l.paths.fetch.run.ops)).toFixed(1)).join(' / ')}, raw Query ${levels.map((l) => (l.paths['raw Query'].run.records / Math.max(1, l.paths['raw Query'].run.ops)).toFixed(1)).join(' / ')} (by partition count); errors: ${levels.map((l) => PATHS.map((p) => l.paths[p].run.errors).reduce((a, b) => a + b, 0)).join(' / ')}.`,
    'Targets: acks=1 ≥ 70 % of the raw append; acks=all ≥ 70 % of the raw RF 3 append; fetch ≥ 50 % of the raw Query.',
    `A fetch is ${FETCH_RECORDS} records of 1 KiB (${FETCH_RECORDS} one-record batches, as the produce paths write them) from a topic filled beforehand (RF 1: a fetch reads the leader only); the raw Query reads as many same-sized items from the same leader's store.`,
  ],
};
const latencyTable: Table = {
  title: 'Latency per request, ms (p50 / p99)',
  columns: ['partitions', ...PATHS],
  rows: levels.map((l) => [l.partitions, ...PATHS.map((p) => `${l.paths[p].run.p50.toFixed(1)} / ${l.paths[p].run.p99.toFixed(1)}`)]),
};
const TRIBUTARY: PathName[] = ['acks=1', 'acks=all', 'fetch'];
const trips = levels.flatMap((l) => TRIBUTARY.map((p) => ({ l, p, s: summarize((recorder.byLabel.get(`${p}@${l.partitions}`) ?? []).slice(l.paths[p].run.warmupOps)) })));
const roundTripTable: Table = {
  title: 'Sequential store round trips and store calls per request (counted by an SDK middleware)',
  columns: ['path', 'partitions', 'requests', 'round trips p50', 'round trips max', 'store calls per request, by op'],
  rows: trips.map(({ l, p, s }) => [p, l.partitions, s.requests, s.p50, s.max, formatCalls(s.callsByOp)]),
  notes: ['Targets: acks=1 1, acks=all ≤ 3, fetch 1 (leader cached). The raw paths make 1 (append), 3 (RF 3) and 1 (Query) by construction.'],
};
const splitRows = trips.filter(({ p }) => p !== 'acks=1').map(({ l, p, s }) => {
  const client = mean(l.paths[p].run.latencies);
  return [p, l.partitions, client, s.storeMs, s.handlerMs - s.storeMs, client - s.handlerMs, `${Math.round((100 * s.storeMs) / client)} %`, l.paths[p].jvmCpuMsPerOp, l.paths[p === 'fetch' ? 'raw Query' : 'raw RF 3'].jvmCpuMsPerOp];
});
const splitTable: Table = {
  title: 'Where a request\'s time went (means, ms)',
  columns: ['path', 'partitions', 'client latency', 'store calls on the critical path', 'handler, in-process', 'gateway + HTTP + client', 'store share', 'DynamoDB Local CPU ms per request', 'same for the raw baseline'],
  rows: splitRows,
  notes: ['Store time is the union of the request\'s store-call intervals (time with at least one call in flight); handler time is what the gateway measured around the handler; the rest is the HTTP hop, the gateway\'s event building and the bench\'s client, all in this process.'],
};
const categories = [...new Set([...Object.keys(profileAll.categories), ...Object.keys(profileFetch.categories)])].filter((c) => c !== 'idle').sort();
const busy = (c: Record<string, number>) => Object.entries(c).filter(([k]) => k !== 'idle').reduce((n, [, v]) => n + v, 0);
const processes = Object.keys(profileAll.cpu).filter((k) => !k.startsWith('bench process'));
const cpuTable: Table = {
  title: `CPU by category (${PROFILE_PARTITIONS} partitions, ${PROFILE_SECONDS} s each; CPU seconds and share)`,
  columns: ['where', 'acks=all CPU s', 'acks=all share', 'fetch CPU s', 'fetch share'],
  rows: [
    ...categories.map((c) => [`Node: ${c}`, profileAll.categories[c] ?? 0, ratio(profileAll.categories[c] ?? 0, busy(profileAll.categories)), profileFetch.categories[c] ?? 0, ratio(profileFetch.categories[c] ?? 0, busy(profileFetch.categories))]),
    ['Node process, busy (profile)', busy(profileAll.categories), '100 %', busy(profileFetch.categories), '100 %'],
    ...processes.map((k) => [k, profileAll.cpu[k] ?? NaN, '', profileFetch.cpu[k] ?? NaN, '']),
    ['wall seconds', profileAll.wall, '', profileFetch.wall, ''],
  ],
  notes: [
    'Node categories: a sample goes to the innermost frame of code we can name (SDK, codec, gateway, bench client, lib/); Buffer work (base64, copies) goes to its own row wherever it is called from; Node\'s HTTP client internals count to the SDK, its server internals to the gateway.',
    `JSON and base64, timed apart on real bodies (both sides: stringify + parse, encode + decode) — per fetch of ${FETCH_RECORDS} records: JSON ${jsonCost.fetch.json.toFixed(2)} ms, base64 ${jsonCost.fetch.base64.toFixed(2)} ms; `
      + `per produce of one 1 KiB record: JSON ${jsonCost.produce.json.toFixed(3)} ms, base64 ${jsonCost.produce.base64.toFixed(3)} ms. V8 charges JSON.parse/stringify to their callers, so in the profile they sit inside the other categories.`,
    'The JVM and s3rver rows are CPU seconds from /proc/<pid>/stat over the same interval. The machine has 2 cores.',
  ],
};

const chartValues = levels.flatMap((l) => PATHS.map((p) => ({ partitions: l.partitions, path: p, kind: p.startsWith('raw') ? 'raw DynamoDB' : 'Tributary over HTTP', 'records/s': Math.round(l.paths[p].run.recordsPerSec) })));
await writeResult({
  scenario: 'throughput',
  title: 'Throughput against raw DynamoDB baselines',
  description: `${STACK_NOTE} 1 KiB records (REST Proxy v3 binary values), one request per record, one sequential writer per partition (readers likewise), `
    + `${SECONDS} s per path and partition count after 0.5 s of warm-up; every path in the same run. Raw baselines: their own tables (same key schema and stream as a replica table) `
    + 'in the same DynamoDB Local processes, the topic\'s own leader and followers, written through the same SDK clients.',
  tables: [throughputTable, latencyTable, roundTripTable, splitTable, cpuTable],
  charts: [{
    title: 'records/s vs partitions (one writer per partition; fetch: 100 records per request)',
    spec: {
      width: 480, height: 300, data: { values: chartValues }, mark: { type: 'line', point: true },
      encoding: {
        x: { field: 'partitions', type: 'quantitative', scale: { type: 'log', base: 2 }, axis: { values: PARTITIONS } },
        y: { field: 'records/s', type: 'quantitative', scale: { type: 'log' } },
        color: { field: 'path', type: 'nominal', sort: PATHS },
        strokeDash: { field: 'kind', type: 'nominal', title: 'measured' },
      },
    },
  }],
  data: {
    levels: levels.map((l) => ({ partitions: l.partitions, batchBytes: l.batchBytes, paths: Object.fromEntries(PATHS.map((p) => [p, { ...l.paths[p].run, latencies: undefined, cpu: l.paths[p].cpu }])) })),
    roundTrips: trips.map(({ l, p, s }) => ({ path: p, partitions: l.partitions, ...s })),
    profile: { acksAll: profileAll, fetch: profileFetch }, jsonCost,
  },
  notes: [`Run took ${Math.round(seconds)} s.`],
});
