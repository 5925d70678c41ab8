/**
 * The cost and latency model: what Tributary costs in AWS per GB produced and read once,
 * per month at 1 MB/s, 10 MB/s and idle, next to Kinesis Data Streams on-demand and MSK Serverless;
 * the modelled AWS latency of each path from its counted sequential round trips; and the analytic
 * per-partition ceiling DynamoDB's 1,000 WCU/s per item imposes.
 *
 * Everything is COUNTED on the local stack (DynamoDB Local in memory, s3rver, 3 brokers, RF 3) and
 * priced with bench/lib/prices.ts:
 *   produce  requests of 1 KiB, 64 KiB and 1 MiB (1 KiB records) over HTTP with acks=all, so API
 *            requests and bytes are real; the stream replicator runs (this file's own stream poller
 *            around the real handler, so its invocations, durations and store calls are counted)
 *   fetch    everything read once over HTTP, pages of 1 MiB (Kafka's max.partition.fetch.bytes)
 *   roll     the log rolled to S3 segments (the replicator's job in AWS: lib/log/replicator.ts)
 *   transactions  a transactional producer's init, sends and commit, step by step, next to the
 *            same sends without a transaction (bench/lib/transaction-cost.ts)
 *   push     a push subscription delivering 1 KiB records to a local HTTP receiver (bench/lib/push-cost.ts)
 *   idle     10 topics × 6 partitions, no clients: the controller's scheduled passes (one a minute in
 *            AWS: lease, probes, one sweep pass), run in-process with the replicator listening and
 *            their clock a minute apart; scaled to a month
 * DynamoDB write units as DynamoDB bills them (lib/storage/capacity.ts billedWriteUnits), read units
 * as reported; S3 requests by command and PUT bytes; HTTP API requests in 512 KB steps (request +
 * response bodies); Lambda invocations and GB-seconds = measured handler time × the memory the CDK
 * construct gives each function (cdk/cluster.ts `memorySize: spec.memoryMb`, from lib/functions/catalog.ts).
 * Run: `npm run bench -- cost` (`--quick` for the smoke form); results in bench/results/cost.{json,md,svg}.
 */
import './lib/env.js';
import fs from 'node:fs';
import path from 'node:path';
import { fmt, isQuick, usd, writeResult } from './lib/report.js';
import { ALTERNATIVES, DDB_ITEM_OVERHEAD_BYTES, LATENCY, PRICE, S3_GET_TIER, S3_PUT_TIER, STAGE_GET_TIER, STAGE_PUT_TIER, pricesNote } from './lib/prices.js';
import { contendedTableOf } from './lib/contended-table.js';
import { addTotals, s3Tier, zeroTotals } from './lib/capacity.js';
import { longPollEndToEnd, pathRow, websocketEndToEnd } from './lib/latency-model.js';
import { leaderOf, rollAll, tableLog } from './lib/partition.js';
import { startQuietStack } from './lib/quiet-stack.js';
import { idleWebSocketSubscriberMonth } from './lib/websocket-cost.js';
import { matchesPattern, StreamPoller } from '../local/stream-poller.js';
import { lambdaContext } from '../local/gateway.js';
import { observeRequests, sizeOf, takeCapacity, trackCapacity, type CapacityTotals as Totals, type StoreCall } from '../lib/storage/metering.js';
import { FUNCTIONS, functionSpec, REPLICA_STREAM_PATTERN, type FunctionName } from '../lib/functions/catalog.js';
import { ROUTES, routeKey } from '../lib/http/routes.js';
import { createTopic } from '../lib/cluster/topics.js';
import { numericConfig } from '../lib/cluster/topic-configs.js';
import { listSegments } from '../lib/storage/coordination/segments.js';
import { replicaTableSpec } from '../lib/storage/tables.js';
import { topicPartitionKey } from '../lib/storage/model.js';
import { replicaStore } from '../lib/cluster/metadata.js';
import { prepareBatches } from '../lib/log/batches.js';
import { readyBatch, type AppendTarget } from '../lib/log/append-plan.js';
import { appendStaged } from '../lib/log/staged-commit.js';
import { runController } from '../lib/orchestration/controller-loop.js';
import * as replicator from '../lambdas/replicator.js';
import { changesOf, handOffToSweep } from '../lib/log/replicator.js';
import { transactionCost, transactionTable as transactionTable_ } from './lib/transaction-cost.js';
import { pushDeliveryCost, pushTable as pushTableOf } from './lib/push-cost.js';
import { partitionCeilingTable } from './lib/ceiling.js';

const quick = isQuick();
const KiB = 1024;
const GiB = 2 ** 30;
const MONTH_S = 730 * 3600;
const RETENTION_DAYS = 7;
const API_STEP = PRICE.apiGateway.meteringStepBytes.value;
const memoryGb = (fn: string) => functionSpec(fn as FunctionName).memoryMb / 1024;
// The construct sets each function's memory from the catalog; fail loudly if that ever changes.
if (!fs.readFileSync(path.join(import.meta.dirname, '..', 'cdk', 'cluster.ts'), 'utf8').includes('memorySize: spec.memoryMb')) {
  throw new Error('cdk/cluster.ts no longer sets memorySize from lib/functions/catalog.ts: read the memory sizes from where it does');
}

interface Size { label: string; records: number; requests: number }
const SIZES: Size[] = [
  { label: '1 KiB', records: 1, requests: quick ? 20 : Number(process.env.COST_REQUESTS_1K ?? 600) },
  { label: '64 KiB', records: 64, requests: quick ? 4 : Number(process.env.COST_REQUESTS_64K ?? 64) },
  { label: '1 MiB', records: 1024, requests: quick ? 1 : Number(process.env.COST_REQUESTS_1M ?? 8) },
];
const LATENCY_SAMPLES = quick ? 5 : 50;

const stack = await startQuietStack();
const C = `${stack.url}/v3/clusters/${stack.clusterId}`;

// --- What every phase counts ----------------------------------------------------------------------

interface Invocations { invocations: number; ms: number; billedMs: number }
interface Phase {
  store: Totals;
  api: { requests: number; metered: number; requestBytes: number; responseBytes: number };
  lambda: Record<string, Invocations>;
  /** Stream records (INSERT/MODIFY) the replicator was given. */
  streamRecords: number;
}
const newPhase = (): Phase => ({ store: zeroTotals(), api: { requests: 0, metered: 0, requestBytes: 0, responseBytes: 0 }, lambda: {}, streamRecords: 0 });
let current = newPhase();
const invoked = (fn: string, ms: number) => {
  const l = (current.lambda[fn] ??= { invocations: 0, ms: 0, billedMs: 0 });
  l.invocations++;
  l.ms += ms;
  l.billedMs += Math.max(1, Math.ceil(ms));
};
/** Ends the current phase: store totals since its start, once the replicator has gone quiet. */
async function endPhase(): Promise<Phase> {
  await quiet();
  const p = current;
  addTotals(p.store, takeCapacity());
  current = newPhase();
  return p;
}

// HTTP requests as the gateway served them: the function, its store calls and its time.
interface Served { route: string; fn: string; calls: readonly StoreCall[]; ms: number }
let served: Served[] = [];
const fnOfRoute = new Map(ROUTES.map((r) => [routeKey(r), r.fn]));
observeRequests((route, calls, ms) => {
  const fn = fnOfRoute.get(route) ?? 'admin';
  served.push({ route, fn, calls, ms });
  invoked(fn, ms);
});

// The replicator as Lambda's event source mapping runs it: records filtered as the CDK's filter
// criteria say (REPLICA_STREAM_PATTERN), one invocation per delivered batch.
let lastDelivery = performance.now();
const poller = new StreamPoller({
  tables: [1, 2, 3].map((id) => ({ table: replicaTableSpec(id).name, endpoint: stack.env.AWS_ENDPOINT_URL_DYNAMODB as string })),
  deliver: async (event) => {
    const records = event.Records.filter((r) => matchesPattern(REPLICA_STREAM_PATTERN, r));
    lastDelivery = performance.now();
    if (records.length === 0) return;
    const started = performance.now();
    const out = await replicator.handler({ Records: records }, lambdaContext('replicator'));
    invoked('replicator', performance.now() - started);
    current.streamRecords += records.length;
    lastDelivery = performance.now();
    if (out && out.batchItemFailures.length > 0) throw new Error(`replication failed for ${out.batchItemFailures.length} partitions`);
  },
  onFailure: (event) => handOffToSweep(changesOf(event.Records)),
});
await poller.start();
/** Waits until the replicator has had nothing to do for a while (its poll backs off to 250 ms). */
async function quiet(ms = quick ? 400 : 1200): Promise<void> {
  while (performance.now() - lastDelivery < ms) await new Promise((r) => setTimeout(r, 100));
}

async function http(method: 'GET' | 'POST', url: string, body?: string, type = 'application/json'): Promise<any> {
  const r = await fetch(url, { method, ...(body === undefined ? {} : { headers: { 'content-type': type }, body }) });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${url}: ${r.status} ${text.slice(0, 300)}`);
  const requestBytes = body === undefined ? 0 : Buffer.byteLength(body);
  const responseBytes = Buffer.byteLength(text);
  current.api.requests++;
  current.api.requestBytes += requestBytes;
  current.api.responseBytes += responseBytes;
  current.api.metered += Math.max(1, Math.ceil((requestBytes + responseBytes) / API_STEP));
  return JSON.parse(text);
}
const V2_BINARY = 'application/vnd.kafka.binary.v2+json';
const recordsBody = (n: number, seed: number) => JSON.stringify({ records: Array.from({ length: n }, (_, i) => ({ value: Buffer.alloc(KiB, (seed + i) % 251).toString('base64') })) });
const produceOnce = (topic: string, n: number, seed: number, acks: '1' | 'all') =>
  http('POST', `${stack.url}/topics/${topic}/partitions/0?acks=${acks}`, recordsBody(n, seed), V2_BINARY);
const fetchPage = (topic: string, offset: number, extra = '') =>
  http('GET', `${C}/topics/${topic}/partitions/0/records?offset=${offset}&max_bytes=1048576${extra}`);

// --- The workload, per request size ---------------------------------------------------------------

interface SizeRun {
  size: Size;
  payload: number;
  phases: { produce: Phase; fetch: Phase; roll: Phase };
  produceServed: Served[];
  fetchServed: Served[];
  headBytes: number;
  batchItemBytes: number;
  batchesPerRequest: number;
  segmentBytes: number;
  /** Bytes put to S3 over all phases: data/ objects of large batches, then segments (which index those objects rather than copy them). */
  s3Bytes: number;
  segmentBytesSetting: number;
}

async function runSize(size: Size): Promise<SizeRun> {
  const topic = `cost-${size.records}`;
  const created = await createTopic({ name: topic, partitions: 1, replicationFactor: 3 });
  await quiet();
  trackCapacity(true);
  takeCapacity();
  current = newPhase();
  served = [];
  for (let i = 0; i < size.requests; i++) await produceOnce(topic, size.records, i, 'all');
  const produceServed = served;
  const produce = await endPhase();

  served = [];
  const end = size.requests * size.records;
  for (let offset = 0; offset < end;) offset = (await fetchPage(topic, offset)).next_offset as number;
  const fetchServed = served;
  const fetchPhase = await endPhase();

  // What the table holds, before the roll moves it (not counted).
  trackCapacity(false);
  const { tp, leader } = await leaderOf(created);
  const { head, batches } = await tableLog(leader, tp, 0);
  const batchItemBytes = batches.reduce((n, b) => n + sizeOf({ tp, off: b.lastOffset, ...b }), 0) / Math.max(1, batches.length);
  trackCapacity(true);
  takeCapacity();

  const started = performance.now();
  await rollAll(topic, { force: true, maxSegments: 64 });
  // In AWS the replicator rolls a tail that reached segment.bytes, inside an invocation it already had.
  const rollMs = performance.now() - started;
  const roll = await endPhase();
  (roll.lambda.replicator ??= { invocations: 0, ms: 0, billedMs: 0 }).ms += rollMs;
  roll.lambda.replicator.billedMs += Math.ceil(rollMs);
  trackCapacity(false);
  const segments = await listSegments(created.topic.topicId, 0, { states: ['live'] });
  return {
    size, payload: end * KiB, phases: { produce, fetch: fetchPhase, roll }, produceServed, fetchServed,
    headBytes: sizeOf({ off: -1, ...head }), batchItemBytes, batchesPerRequest: batches.length / size.requests,
    segmentBytes: segments.reduce((n, s) => n + (s.sizeBytes ?? 0), 0),
    s3Bytes: produce.store.s3PutBytes + fetchPhase.store.s3PutBytes + roll.store.s3PutBytes,
    segmentBytesSetting: numericConfig(created.topic.configs, 'segment.bytes'),
  };
}
const started = performance.now();
const runs: SizeRun[] = [];
for (const size of SIZES) runs.push(await runSize(size));

// --- 1 KiB requests from 16 concurrent writers, through the group commit --------------------------
// In one process appends share a lane; these writers call the group commit (lib/log/staged-commit.ts)
// directly, as 16 Lambda instances would, acks=all. The store's units for the produce (the leader's
// stage and commits, the holder's fast commit to the followers, the replicator's reads) are counted.
const CONTENDED_WRITERS = 16;
const CONTENDED_REQUESTS = quick ? 32 : 480;
async function runContended(): Promise<{ phase: Phase; payload: number; records: number }> {
  const created = await createTopic({ name: 'cost-contended', partitions: 1, replicationFactor: 3 });
  await quiet();
  const state = created.partitions[0]!;
  const target: AppendTarget = {
    topic: 'cost-contended', leader: await replicaStore(state.leader), topicId: created.topic.topicId, partition: 0,
    tp: topicPartitionKey(created.topic.topicId, 0), leaderEpoch: state.leaderEpoch, inlineMaxBytes: numericConfig(created.topic.configs, 'inline.max.bytes'),
    minIsr: numericConfig(created.topic.configs, 'min.insync.replicas'), stateIsr: state.isr,
  };
  trackCapacity(true);
  takeCapacity();
  current = newPhase();
  await Promise.all(Array.from({ length: CONTENDED_WRITERS }, async (_, w) => {
    for (let i = w; i < CONTENDED_REQUESTS; i += CONTENDED_WRITERS) {
      const [batch] = prepareBatches([{ key: null, value: Buffer.alloc(KiB, i % 251), headers: [] }], CONTENDED_BATCH_OPTIONS, Date.now());
      const [r] = await appendStaged(target, [readyBatch(batch!)], Date.now() + 10_000);
      if (!r || r instanceof Error) throw new Error(`group commit failed: ${String(r)}`);
    }
  }));
  const phase = await endPhase();
  trackCapacity(false);
  return { phase, payload: CONTENDED_REQUESTS * KiB, records: CONTENDED_REQUESTS };
}
const CONTENDED_BATCH_OPTIONS = { compression: 'none' as const, timestampType: 'CreateTime' as const, maxMessageBytes: 1_048_588, timestampBeforeMaxMs: Number.MAX_SAFE_INTEGER, timestampAfterMaxMs: Number.MAX_SAFE_INTEGER };
const contended = await runContended();

// --- A transaction's cost, step by step, next to the same sends without one -----------------------

const TXN_SENDS = quick ? 4 : 10;
/** Runs `work` as one measured phase (`counted` adds what the phase stands for before it ends): the stores' totals once the replicator is quiet, and the HTTP requests it served. */
async function measured<T>(work: () => Promise<T>, counted?: (out: T, ms: number) => void): Promise<{ phase: Phase; store: Totals; served: Served[] }> {
  await quiet();
  trackCapacity(true);
  takeCapacity();
  [current, served] = [newPhase(), []];
  const t0 = performance.now();
  const out = await work();
  counted?.(out, performance.now() - t0);
  const taken = served;
  const phase = await endPhase();
  trackCapacity(false);
  return { phase, store: phase.store, served: taken };
}
const txnSteps = await transactionCost<Phase>({ cluster: C, topic: 'cost-txn', http, transactions: quick ? 1 : 5, sends: TXN_SENDS, measure: (work) => measured(work) });

// --- Push delivery: 1 KiB records delivered to an HTTP receiver, per GB --------------------------

const push = await pushDeliveryCost<Phase>({
  cluster: C, topic: 'cost-push', http, records: quick ? 200 : 2000, batchRecords: 100,
  measure: (work) => measured(work, ({ batches }, ms) => Array.from({ length: batches }, () => invoked('websocket', ms / batches))),
});

// --- Latency samples: acks=1 and acks=all of 1 KiB, a waiting long poll -----------------------------

await createTopic({ name: 'cost-latency', partitions: 1, replicationFactor: 3 });
await quiet();
current = newPhase();
served = [];
for (let i = 0; i < LATENCY_SAMPLES; i++) await produceOnce('cost-latency', 1, i, '1');
const acks1Served = served;
served = [];
for (let i = 0; i < LATENCY_SAMPLES; i++) await produceOnce('cost-latency', 1, i, 'all');
const acksAllServed = served;
served = [];
const latencyEnd = 2 * LATENCY_SAMPLES;
for (let i = 0; i < LATENCY_SAMPLES; i++) await fetchPage('cost-latency', latencyEnd - 1);
const tailFetchServed = served;
// A consumer waiting at the log end: how often the long poll re-reads the head.
served = [];
const WAIT_MS = quick ? 1000 : 3000;
await fetchPage('cost-latency', latencyEnd, `&timeout=${WAIT_MS}`);
const waitCalls = served[0]?.calls ?? [];
// Calls sent together (a head read and a Query in parallel) are one poll.
const headPolls = waitCalls.filter((c) => c.service === 'dynamodb').sort((a, b) => a.start - b.start)
  .filter((c, i, all) => i === 0 || c.start - all[i - 1]!.start > 2);
const pollGaps = headPolls.slice(1).map((c, i) => c.start - headPolls[i]!.start);
// The re-read interval once the poll's backoff has settled: the mean of the later half of the gaps.
const settled = pollGaps.slice(Math.floor(pollGaps.length / 2));
const steadyGap = settled.length > 0 ? settled.reduce((a, b) => a + b, 0) / settled.length : 0;
const waitMs = served[0]?.ms ?? WAIT_MS;
await quiet();
current = newPhase();

// --- Idle: scheduled controller passes over a quiet cluster -----------------------------------------

// The idle cluster a month is priced for: 10 topics of 6 partitions, no clients. In AWS a schedule invokes the
// controller every minute and each invocation is one pass (lambdas/controller.ts: tick while there is
// work, one sweep pass, return). Here each pass is that same loop, its clock moved a minute on
// (TRIBUTARY_CLOCK_SKEW_MS), so the lease and the brokers' sessions see the gap a schedule leaves.
// The sweep keeps a partition that was just written in its lag index until it has been idle for
// sweep.idle.clear.ms (30 s by default): a short setting lets the workload's marks clear in the
// warm-up passes, so the counted passes are the steady idle state a month is made of.
process.env.TRIBUTARY_SWEEP_IDLE_CLEAR_MS ??= '1000';
for (let i = 0; i < 10; i++) await createTopic({ name: `cost-idle-${i}`, partitions: 6, replicationFactor: 3 });
trackCapacity(true);
const PASSES = quick ? 3 : 20;
let clockSkew = 0;
let lastMarked = -1;
let idleTicks = 0;
const passMs: number[] = [];
async function controllerPass(): Promise<void> {
  clockSkew += 60_000;
  process.env.TRIBUTARY_CLOCK_SKEW_MS = String(clockSkew);
  const t0 = performance.now();
  idleTicks += await runController({ untilIdle: true, until: () => performance.now() - t0 > 67_000, onSweep: (r) => { lastMarked = r.marked; } });
  passMs.push(performance.now() - t0);
}
for (let i = 0; i < 20 && lastMarked !== 0; i++) {
  await controllerPass(); // the first takes the lease and walks every partition; then the lag marks clear
  await new Promise((r) => setTimeout(r, 1100));
}
takeCapacity();
current = newPhase();
passMs.length = 0;
idleTicks = 0;
const idleStarted = performance.now();
for (let i = 0; i < PASSES; i++) await controllerPass();
const idleMs = performance.now() - idleStarted;
const idle = current;
addTotals(idle.store, takeCapacity());
delete process.env.TRIBUTARY_CLOCK_SKEW_MS;
trackCapacity(false);
observeRequests();
await poller.stop();
await stack.stop();
const seconds = (performance.now() - started) / 1000;

// --- Pricing -------------------------------------------------------------------------------------

type Dollars = { ddbWrite: number; ddbRead: number; s3: number; lambdaRequests: number; lambdaCompute: number; api: number };
const COMPONENTS: { key: keyof Dollars; label: string }[] = [
  { key: 'ddbWrite', label: 'DynamoDB writes' }, { key: 'ddbRead', label: 'DynamoDB reads' }, { key: 's3', label: 'S3 requests' },
  { key: 'lambdaRequests', label: 'Lambda requests' }, { key: 'lambdaCompute', label: 'Lambda GB-s' }, { key: 'api', label: 'HTTP API' },
];
const sum = (d: Dollars) => Object.values(d).reduce((a, b) => a + b, 0);
function dollars(p: Phase): Dollars {
  const lambda = Object.entries(p.lambda);
  return {
    ddbWrite: p.store.billedWriteUnits * PRICE.dynamodb.wru.value,
    ddbRead: p.store.readUnits * PRICE.dynamodb.rru.value,
    s3: s3Tier(p.store, S3_PUT_TIER) * PRICE.s3.put.value + s3Tier(p.store, S3_GET_TIER) * PRICE.s3.get.value
      // (the stage: S3 Express requests, and every byte staged uploaded once and read back once)
      + s3Tier(p.store, STAGE_PUT_TIER) * PRICE.s3Express.put.value + s3Tier(p.store, STAGE_GET_TIER) * PRICE.s3Express.get.value
      + (p.store.stagePutBytes / GiB) * (PRICE.s3Express.uploadGb.value + PRICE.s3Express.retrievalGb.value),
    lambdaRequests: lambda.reduce((n, [, l]) => n + l.invocations, 0) * PRICE.lambda.request.value,
    lambdaCompute: lambda.reduce((n, [fn, l]) => n + (l.billedMs / 1000) * memoryGb(fn), 0) * PRICE.lambda.gbSecond.value,
    api: p.api.metered * PRICE.apiGateway.httpRequest.value,
  };
}
const scale = (d: Dollars, k: number): Dollars => Object.fromEntries(Object.entries(d).map(([a, v]) => [a, v * k])) as unknown as Dollars;
const plus = (a: Dollars, b: Dollars): Dollars => Object.fromEntries(Object.entries(a).map(([k, v]) => [k, v + b[k as keyof Dollars]])) as unknown as Dollars;

// Per GB produced and read once.
const perGb = runs.map((r) => {
  const k = GiB / r.payload;
  const phases = { produce: scale(dollars(r.phases.produce), k), fetch: scale(dollars(r.phases.fetch), k), roll: scale(dollars(r.phases.roll), k) };
  return { run: r, k, phases, total: plus(plus(phases.produce, phases.fetch), phases.roll) };
});
const kinesisPerGb = (recordBytes: number) => ALTERNATIVES.kinesisOnDemand.gbIn.value * Math.ceil(recordBytes / KiB) * KiB / recordBytes + ALTERNATIVES.kinesisOnDemand.gbOut.value;
const mskPerGb = ALTERNATIVES.mskServerless.gbIn.value + ALTERNATIVES.mskServerless.gbOut.value;

// Idle, per month: one controller pass a minute — what the counted passes read and wrote (and the
// replicator invocations their head writes caused), scaled, plus the controller function's own
// requests and GB-seconds for passes as long as the measured ones.
const PASSES_PER_MONTH = MONTH_S / 60;
const idleScale = PASSES_PER_MONTH / PASSES;
const idleCounted = scale(dollars({ ...idle, lambda: Object.fromEntries(Object.entries(idle.lambda).filter(([fn]) => fn !== 'controller')) }), idleScale);
const controllerSpec = functionSpec('controller');
const passMeanMs = passMs.reduce((a, b) => a + b, 0) / Math.max(1, passMs.length);
const controllerMonth: Dollars = {
  ddbWrite: 0, ddbRead: 0, s3: 0, api: 0,
  lambdaRequests: PASSES_PER_MONTH * PRICE.lambda.request.value,
  lambdaCompute: PASSES_PER_MONTH * (Math.ceil(passMeanMs) / 1000) * memoryGb('controller') * PRICE.lambda.gbSecond.value,
};
const idleMonth = plus(idleCounted, controllerMonth);
// One consumer long-polling an idle partition: its fetch function is busy the whole wait, and re-reads the head.
const waitingHeadReadsPerS = headPolls.length / (waitMs / 1000);
// One WebSocket subscriber waiting there instead: API Gateway holds the connection.
const idleSubscriber = idleWebSocketSubscriberMonth();
const waitingConsumerMonth = MONTH_S * (memoryGb('fetch') * PRICE.lambda.gbSecond.value + waitingHeadReadsPerS * PRICE.dynamodb.rru.value)
  + (MONTH_S / (waitMs / 1000)) * (PRICE.lambda.request.value + PRICE.apiGateway.httpRequest.value);

// Sustained rates: variable cost per GB (the replicator's invocations as the event source mapping would
// batch them: each table's stream polled ~4 times a second, up to 100 records per invocation), fixed
// idle cost, and 7 days of retention (S3 segments once; each partition's table tail on 3 replicas).
const RATES = [{ label: '1 MB/s', bytesPerS: 1e6, partitions: 6 }, { label: '10 MB/s', bytesPerS: 1e7, partitions: 60 }];
function monthly(g: typeof perGb[number], rate: typeof RATES[number]) {
  const gbMonth = (rate.bytesPerS * MONTH_S) / GiB;
  const r = g.run;
  const allPhases = [r.phases.produce, r.phases.fetch, r.phases.roll];
  const records = allPhases.reduce((n, p) => n + p.streamRecords, 0) * g.k * gbMonth / MONTH_S / 3; // per table per second
  const measuredInvocations = allPhases.reduce((n, p) => n + (p.lambda.replicator?.invocations ?? 0), 0) * g.k * gbMonth;
  const modelledInvocations = 3 * MONTH_S * (records <= 4 ? records : Math.max(4, records / 100));
  const variable = scale(g.total, gbMonth);
  variable.lambdaRequests += (modelledInvocations - measuredInvocations) * PRICE.lambda.request.value;
  // Its compute: the modelled invocations at the mean billed time measured per invocation (an
  // invocation copies each changed partition once, however many of its records it was given).
  const replicatorMs = allPhases.reduce((n, p) => n + (p.lambda.replicator?.billedMs ?? 0), 0);
  const replicatorInvocations = allPhases.reduce((n, p) => n + (p.lambda.replicator?.invocations ?? 0), 0);
  if (replicatorInvocations > 0) {
    const measuredGbs = replicatorMs / 1000 * memoryGb('replicator') * g.k * gbMonth;
    const modelledGbs = modelledInvocations * (replicatorMs / replicatorInvocations / 1000) * memoryGb('replicator');
    variable.lambdaCompute += (modelledGbs - measuredGbs) * PRICE.lambda.gbSecond.value;
  }
  const retainedGb = (rate.bytesPerS * RETENTION_DAYS * 86400) / GiB;
  const s3Gb = retainedGb * (r.s3Bytes / r.payload);
  const tailGb = (rate.partitions * 3 * (r.segmentBytesSetting / 2) * ((r.batchItemBytes + DDB_ITEM_OVERHEAD_BYTES) / (r.size.records * KiB / r.batchesPerRequest))) / GiB;
  const storage = s3Gb * PRICE.s3.gbMonth.value + tailGb * PRICE.dynamodb.gbMonth.value;
  const total = sum(variable) + sum(idleMonth) + storage;
  const kinesis = gbMonth * kinesisPerGb(KiB) + 730 * ALTERNATIVES.kinesisOnDemand.streamHour.value
    + retainedGb * ((RETENTION_DAYS - 1) / RETENTION_DAYS) * ALTERNATIVES.kinesisOnDemand.extendedRetentionGbMonth.value;
  const msk = gbMonth * mskPerGb + 730 * (ALTERNATIVES.mskServerless.clusterHour.value + rate.partitions * ALTERNATIVES.mskServerless.partitionHour.value)
    + retainedGb * ALTERNATIVES.mskServerless.storageGbMonth.value;
  return { gbMonth, variable, storage, total, kinesis, msk, s3Gb, tailGb, modelledInvocations };
}

// --- Latency model -------------------------------------------------------------------------------

const paths = [
  pathRow('produce acks=1, 1 KiB', acks1Served),
  pathRow('produce acks=all, 1 KiB', acksAllServed),
  ...runs.slice(1).map((r) => pathRow(`produce acks=all, ${r.size.label}`, r.produceServed)),
  pathRow('fetch at the tail (1 record)', tailFetchServed),
  pathRow('fetch 1 MiB page (1 KiB records)', runs[0]!.fetchServed),
];
const acksAll = paths[1]!;
const { model: e2e, high: e2eHigh } = longPollEndToEnd(acksAll, steadyGap);
const wsE2e = websocketEndToEnd(acksAll, paths[paths.length - 2]!);

// --- Report --------------------------------------------------------------------------------------

const sizeLabels = runs.map((r) => r.size.label);
const costTable = {
  title: 'Cost per GB produced and read once (RF 3, acks=all), by component',
  columns: ['request', ...COMPONENTS.map((c) => c.label), 'total $/GB', 'Kinesis on-demand $/GB', 'MSK Serverless $/GB'],
  rows: perGb.map((g) => [g.run.size.label, ...COMPONENTS.map((c) => usd(g.total[c.key])), `**${usd(sum(g.total))}**`, usd(kinesisPerGb(KiB)), usd(mskPerGb)]),
  notes: [
    'Tributary: everything counted for the produce, the fetch of everything once, and the roll to S3 segments, scaled to 2^30 bytes of record values. Storage is not in this table (see the monthly table).',
    'Kinesis: 1 KiB records (each rounded up to 1 KB) in at $0.08/GB, out at $0.04/GB, whatever the request size; MSK Serverless: $0.10/GB in + $0.05/GB out. Their hourly charges are in the monthly table.',
  ],
};
const phaseTable = {
  title: 'What was counted, per request, by phase',
  columns: ['request', 'phase', 'HTTP API requests (512 KB steps)', 'Lambda invocations', 'Lambda GB-s', 'DynamoDB requests', 'write units', 'read units', 'S3 PUT', 'S3 GET', 'stream records', '$ per million requests'],
  rows: runs.flatMap((r) => (['produce', 'fetch', 'roll'] as const).map((ph) => {
    const p = r.phases[ph];
    const n = r.size.requests;
    const inv = Object.values(p.lambda).reduce((a, l) => a + l.invocations, 0);
    const gbs = Object.entries(p.lambda).reduce((a, [fn, l]) => a + (l.billedMs / 1000) * memoryGb(fn), 0);
    const ddb = Object.entries(p.store.requests).filter(([op]) => op !== 'DescribeTable').reduce((a, [, b]) => a + b, 0);
    return [r.size.label, ph, fmt(p.api.metered / n, 2), fmt(inv / n, 2), fmt(gbs / n, 4), fmt(ddb / n, 2), fmt(p.store.billedWriteUnits / n, 1), fmt(p.store.readUnits / n, 1),
      fmt(s3Tier(p.store, S3_PUT_TIER) / n, 2), fmt(s3Tier(p.store, S3_GET_TIER) / n, 2), fmt(p.streamRecords / n, 1), usd((sum(dollars(p)) / n) * 1e6)];
  })),
  notes: [
    ...runs.map((r) => `${r.size.label}: ${r.size.requests} requests of ${r.size.records} record(s); Lambda time by function: ${(['produce', 'fetch', 'roll'] as const).map((ph) => `${ph} ${Object.entries(r.phases[ph].lambda).map(([fn, l]) => `${fn} ${l.invocations}× ${fmt(l.ms / Math.max(1, l.invocations), 1)} ms`).join(', ') || '-'}`).join('; ')}; `
      + `DynamoDB: ${(['produce', 'fetch', 'roll'] as const).map((ph) => `${ph} ${Object.entries(r.phases[ph].store.requests).filter(([op]) => op !== 'DescribeTable').map(([op, v]) => `${op} ${fmt(v / r.size.requests, 2)}`).join(', ')}`).join('; ')}; `
      + `S3: ${(['produce', 'fetch', 'roll'] as const).map((ph) => `${ph} ${Object.entries(r.phases[ph].store.s3Requests).map(([op, v]) => `${op} ${v}`).join(', ') || '-'}`).join('; ')}; `
      + `HTTP bytes per request: produce ${fmt(r.phases.produce.api.requestBytes / r.size.requests)} in, fetch pages ${fmt(r.phases.fetch.api.responseBytes / Math.max(1, r.phases.fetch.api.requests))} out`),
    'DynamoDB requests leave out DescribeTable: the local stream poller\'s shard discovery (Lambda\'s event source mapping does it for free in AWS; it bills no units).',
    `Lambda GB-s = handler time measured here (rounded up to 1 ms per invocation) × the function's memory (lib/functions/catalog.ts, deployed by cdk/cluster.ts): ${FUNCTIONS.map((f) => `${f.name} ${f.memoryMb} MB`).join(', ')}. Time here is DynamoDB Local on 2 shared cores, not AWS: it is the uncertain part of the Lambda line.`,
  ],
};
const monthRows = perGb.flatMap((g) => RATES.map((rate) => {
  const m = monthly(g, rate);
  return [`${rate.label}, ${g.run.size.label} requests`, fmt(m.gbMonth), usd(sum(m.variable)), usd(sum(idleMonth)), usd(m.storage), `**${usd(m.total)}**`, usd(m.kinesis), usd(m.msk)];
}));
const kinesisIdle = 730 * ALTERNATIVES.kinesisOnDemand.streamHour.value;
const mskIdle = 730 * (ALTERNATIVES.mskServerless.clusterHour.value + RATES[0]!.partitions * ALTERNATIVES.mskServerless.partitionHour.value);
const monthTable = {
  title: 'Per month: sustained 1 MB/s and 10 MB/s (produced and read once), and idle',
  columns: ['workload', 'GB produced / month', 'Tributary traffic', 'Tributary fixed (idle)', `storage (${RETENTION_DAYS} days retained)`, 'Tributary total', 'Kinesis on-demand', 'MSK Serverless'],
  rows: [...monthRows, ['idle 3-broker cluster, nothing stored', '0', '$0', usd(sum(idleMonth)), '$0', `**${usd(sum(idleMonth))}**`, usd(kinesisIdle), usd(mskIdle)]],
  notes: [
    `Month = 730 h; MB = 10^6 bytes, GB = 2^30. Partitions: 6 at 1 MB/s, 60 at 10 MB/s (MSK bills partition-hours; Tributary keeps a table tail per partition). Retention ${RETENTION_DAYS} days (Kafka's retention.ms default): Tributary stores S3 segments once (+ a tail of up to segment.bytes per partition on each replica, half on average); Kinesis's first 24 h are included, the rest is extended retention; MSK Serverless bills GB-months stored.`,
    `Tributary fixed (10 topics × 6 partitions, 3 brokers, no clients): one controller pass a minute, the schedule's (${controllerSpec.memoryMb} MB; ${PASSES} passes measured, ${fmt(idleTicks / PASSES, 1)} ticks and ${fmt(passMeanMs, 0)} ms each on this machine: ${usd(sum(controllerMonth))} of Lambda), plus what each pass read and wrote, scaled to ${fmt(PASSES_PER_MONTH)} passes (${usd(sum(idleCounted))}: per pass ${Object.entries(idle.store.requests).filter(([op]) => op !== 'DescribeTable').map(([op, v]) => `${op} ${fmt(v / PASSES, 1)}`).join(', ')}; S3 ${Object.entries(idle.store.s3Requests).map(([op, v]) => `${op} ${v}`).join(', ') || 'none'}; replicator invocations ${idle.lambda.replicator?.invocations ?? 0}).`,
    `Replicator at sustained rates: invocations modelled as the event source mapping batches them (each table's stream polled ~4×/s, ≤ 100 records an invocation), each at the mean billed time measured here. The per-GB table above is what this run did at a low rate (about one invocation per stream record batch the local poller saw), so its replicator line is higher than at sustained rates.`,
    `Not included: CloudWatch Logs ingestion and alarms, data transfer out of AWS, point-in-time recovery ($0.20/GB-month on the tables), the free tiers. One long-polling consumer waiting on an idle partition costs about ${usd(waitingConsumerMonth)} a month (a ${memoryGb('fetch') * 1024} MB fetch function busy for the whole wait, re-reading the head ${fmt(waitingHeadReadsPerS, 1)}×/s); one WebSocket subscriber waiting there costs about ${usd(idleSubscriber.dollarsPerMonth)} a month (no function runs while it waits: ${fmt(idleSubscriber.connectionMinutes)} connection-minutes, ${fmt(idleSubscriber.keepalives)} keepalives and ${fmt(idleSubscriber.reconnects)} reconnects at API Gateway's 2-hour lifetime, and the controller's check once a minute that it is not left behind, priced from the code path's requests: bench/lib/websocket-cost.ts).`,
  ],
};
const latencyTable = {
  title: 'Modelled AWS latency per path (p50), from the counted store calls',
  columns: ['path', 'sequential round trips', 'store calls', 'critical path', 'modelled p50 ms', 'pessimistic ms', 'compute here ms (median)', 'measured here ms (median)'],
  rows: [
    ...paths.map((p) => [p.name, p.roundTrips, p.calls, p.chain, fmt(p.model, 0), fmt(p.high, 0), fmt(p.compute, 1), fmt(p.local, 1)]),
    ['end to end (acks=all 1 KiB → long-polling consumer)', '', '', `produce acks=all + half the long poll's head re-read interval (${fmt(steadyGap, 0)} ms measured) + Query`, fmt(e2e, 0), fmt(e2eHigh, 0), '', ''],
    ['end to end (acks=all 1 KiB → WebSocket subscriber)', '', '', 'produce\'s store calls → async invoke → Query → tail read beside UpdateItem → post', fmt(wsE2e.model, 0), fmt(wsE2e.high, 0), '', ''],
    ['goal', '', '', '', 'acks=all ≤ 30, end to end ≤ 60', '', '', ''],
    ['WarpStream (published)', '', '', 'S3 Standard / S3 Express One Zone', `${ALTERNATIVES.warpStream.produceP50S3StandardMs.value} / ${ALTERNATIVES.warpStream.produceP50S3ExpressMs.value}`, '', '', ''],
  ],
  notes: [
    'Model: every store call takes its published p50 (bench/lib/prices.ts LATENCY: DynamoDB read 4 ms, write 5 ms, transaction 10 ms; S3 PUT/GET 100 ms) and waits for every call that had answered before it was sent here; calls in flight together overlap. Plus HTTP API overhead 5 ms and a warm Lambda invoke 2 ms. "Pessimistic": DynamoDB at 9 ms a call (18 ms a transaction), S3 200 ms, gateway 15 ms, invoke 10 ms.',
    'Compute (JSON, base64, the record codec) is shown as measured here and is NOT in the modelled figure: on a 1,024 MB Lambda (about 0.6 vCPU) expect it to be similar or larger.',
    `Sources: ${Object.entries(LATENCY).map(([k, f]) => `${k}: ${f.source}`).join(' · ')}`,
  ],
};
const ceilingTable = partitionCeilingTable(runs);

// The group commit's units and requests per record, next to the same 1 KiB requests one at a time.
const oneKRecords = runs[0]!.size.requests * runs[0]!.size.records;
const contendedTable = contendedTableOf({
  writers: CONTENDED_WRITERS, contended: { ...contended, perGb: scale(dollars(contended.phase), GiB / contended.payload) },
  single: { produce: runs[0]!.phases.produce.store, records: oneKRecords, perGbProduce: perGb[0]!.phases.produce, perGbTotal: sum(perGb[0]!.total) },
});

const { table: pushTable, perGb: pushPerGb } = pushTableOf(push, dollars, COMPONENTS, sum);
const { table: transactionTable, perTransaction: perTxn, baseline: baselineTxn } = transactionTable_(txnSteps, TXN_SENDS, (p) => sum(dollars(p)));

// Biggest drivers, from the numbers.
const oneK = perGb[0]!;
const driverRows = perGb.map((g) => {
  const top = COMPONENTS.map((c) => ({ c, v: g.total[c.key] })).sort((a, b) => b.v - a.v)[0]!;
  return `${g.run.size.label}: ${top.c.label} (${usd(top.v)} of ${usd(sum(g.total))} per GB, ${fmt((100 * top.v) / sum(g.total))} %)`;
});
const slowest = [...paths].sort((a, b) => b.model - a.model)[0]!;
const notes = [
  `**Biggest cost driver** — per GB: ${driverRows.join('; ')}. At idle: the controller's scheduled passes (${usd(sum(controllerMonth))} of Lambda and ${usd(sum(idleCounted))} of requests, ${usd(sum(idleMonth))} a month).`,
  `**Biggest latency driver** — acks=all 1 KiB is modelled at ${fmt(acksAll.model, 0)} ms with ${acksAll.roundTrips} sequential round trips (${acksAll.chain}); the slowest path, ${slowest.name}, at ${fmt(slowest.model, 0)} ms (${slowest.chain}): ${/S3/.test(slowest.chain) ? 'an S3 PUT on the produce path (batches over inline.max.bytes) costs ~100 ms by itself' : 'its sequential DynamoDB calls'}. End to end adds the long poll's head re-read interval (${fmt(steadyGap, 0)} ms between re-reads, so ${fmt(steadyGap / 2, 0)} ms on average).`,
  `The 1 KiB request costs ${usd(sum(oneK.total))} per GB against Kinesis's ${usd(kinesisPerGb(KiB))}: per-request charges (API, Lambda, DynamoDB's per-KB write units on ${3} replicas, doubled in transactions) dominate small requests; batching requests is the lever.`,
  pricesNote(),
  `Counted on the local stack (DynamoDB Local in memory, s3rver, 3 brokers, RF 3, stream replicator on, controllers only in the idle phase); the run took ${fmt(seconds, 0)} s.`,
];

const chartValues = perGb.flatMap((g) => [
  { request: g.run.size.label, system: 'Tributary (RF 3, acks=all)', usd: sum(g.total) },
  { request: g.run.size.label, system: 'Kinesis on-demand', usd: kinesisPerGb(KiB) },
  { request: g.run.size.label, system: 'MSK Serverless', usd: mskPerGb },
]);
await writeResult({
  scenario: 'cost',
  title: 'Cost and latency model: Tributary in AWS, per GB and per month, next to Kinesis and MSK Serverless',
  description: 'Counted on the local stack and priced at AWS list prices (bench/lib/prices.ts): produce over HTTP at RF 3, acks=all, requests of 1 KiB, 64 KiB and 1 MiB of 1 KiB records; everything read once with fetch (1 MiB pages); the log rolled to S3 segments; an idle period with the controller running. '
    + 'DynamoDB write units as billed (item sizes, ×2 in transactions), read units as reported, S3 requests by type, HTTP API requests in 512 KB steps, Lambda invocations and GB-seconds (measured handler time × the memory each function is deployed with). '
    + 'The latency model turns the store calls each request made into AWS latency with published per-service figures; the per-partition ceiling is analytic.',
  tables: [costTable, contendedTable, transactionTable, pushTable, monthTable, latencyTable, ceilingTable, phaseTable],
  charts: [{
    title: '$ per GB produced and read once, by request size (log scale; traffic only, no hourly or storage charges)',
    spec: {
      width: 420, height: 260,
      data: { values: chartValues },
      mark: 'bar',
      encoding: {
        x: { field: 'request', type: 'nominal', sort: sizeLabels, title: 'produce request (1 KiB records)', axis: { labelAngle: 0 } },
        xOffset: { field: 'system', type: 'nominal' },
        y: { field: 'usd', type: 'quantitative', title: '$ per GB', scale: { type: 'log' } },
        color: { field: 'system', type: 'nominal', title: null, legend: { orient: 'bottom' } },
      },
    },
  }],
  data: {
    contended: { writers: CONTENDED_WRITERS, requests: CONTENDED_REQUESTS, store: contended.phase.store },
    transactions: { sends: TXN_SENDS, steps: txnSteps.map(({ phases: _p, ...t }) => t), perTransaction: perTxn, baseline: baselineTxn },
    runs: runs.map((r) => ({ size: r.size, payload: r.payload, phases: r.phases, headBytes: r.headBytes, batchItemBytes: r.batchItemBytes, batchesPerRequest: r.batchesPerRequest, segmentBytes: r.segmentBytes })),
    perGb: perGb.map((g) => ({ size: g.run.size.label, ...g.total, total: sum(g.total) })),
    idle: { ms: idleMs, passes: PASSES, passMeanMs, ticks: idleTicks, counted: idle, perMonth: idleMonth, controllerPerMonth: controllerMonth },
    paths, e2e: { model: e2e, high: e2eHigh, longPollGapMs: steadyGap, pollGaps, websocket: wsE2e },
    waitingConsumerMonth,
    waitingWebSocketSubscriberMonth: idleSubscriber,
    push: { records: push.records, bytes: push.bytes, batches: push.batches, store: push.measured.phase.store, lambda: push.measured.phase.lambda, perGb: pushPerGb, totalPerGb: sum(pushPerGb) },
  },
  notes,
});
process.stdout.write(`\n${notes.join('\n')}\n`);
