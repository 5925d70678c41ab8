/**
 * What the tiered log costs per GB produced at RF 3, counted on the local
 * stack: DynamoDB write and read units (ReturnConsumedCapacity; write units by DynamoDB's billing
 * rules from item sizes) and S3 requests by command, for produce requests of 1 KiB (one 1 KiB
 * record), 64 KiB (one request of 64 records of 1 KiB) and 1 MiB (one request of 1024 records of
 * 1 KiB), in three phases:
 *   append     the leader's append (produce with acks=1: the large-batch PUT to `data/`, the table write)
 *   replicate  what acks=all adds: the ISR copy and the high-watermark updates (lib/log/commit.ts
 *              `replicate`, as the produce path's commit runs it), driven as its own call after each
 *              request so that each phase is counted apart; a cross-check line compares the sum
 *              with produce(acks=all) on the same requests
 *   roll       everything rolled to S3 segments at the end (rollPartition force): registry writes,
 *              the segment PUT, the table trims on every replica
 * priced at list prices, next to the bare DynamoDB/S3 operations the same bytes need, and the
 * storage footprint and monthly cost of 1 GB kept for 7 days, tiered versus all in the tables.
 * Quiet stack (no stream replicator, no controllers): nothing runs but what is counted.
 * Run: `npm run bench -- tiered-cost` (TIERED_COST_MB=<n> to set MiB per size; the 1 KiB size
 * defaults to 4 MiB, the others to 16 MiB); results in bench/results/tiered-cost.md.
 */
import './lib/env.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fmt, isQuick, resultsDir } from './lib/report.js';
import { addTotals as add, counted, s3Tier, zeroTotals as zero } from './lib/capacity.js';
import { createPartition, replicatePartition, rollAll, tableLog } from './lib/partition.js';
import { startQuietStack } from './lib/quiet-stack.js';
import { PRICE as LIST, PRICES_DATE, PRICES_REGION, S3_PUT_TIER, S3_GET_TIER, DDB_ITEM_OVERHEAD_BYTES } from './lib/prices.js';
import { sizeOf, takeCapacity, trackCapacity, type CapacityTotals as Totals } from '../lib/storage/metering.js';
import { produce } from '../lib/log/produce.js';
import { createTopic } from '../lib/cluster/topics.js';
import { numericConfig } from '../lib/cluster/topic-configs.js';
import { listSegments } from '../lib/storage/coordination/segments.js';

// List prices from the one dated table (bench/lib/prices.ts).
const PRICE = {
  date: PRICES_DATE, region: PRICES_REGION,
  wru: LIST.dynamodb.wru.value, rru: LIST.dynamodb.rru.value, s3Put: LIST.s3.put.value, s3Get: LIST.s3.get.value,
  ddbGbMonth: LIST.dynamodb.gbMonth.value, s3GbMonth: LIST.s3.gbMonth.value,
};
const n6 = (x: number) => Number(x.toPrecision(6));
const PRICE_NOTE = `Prices: AWS list prices, ${PRICE.region}, as of ${PRICE.date} (bench/lib/prices.ts: aws.amazon.com/dynamodb/pricing/on-demand/, aws.amazon.com/s3/pricing/): `
  + `DynamoDB on-demand $${n6(PRICE.wru * 1e6)} per million write request units, $${n6(PRICE.rru * 1e6)} per million read request units, storage $${PRICE.ddbGbMonth} per GB-month `
  + `(point-in-time recovery, $0.20 per GB-month, not included); S3 Standard PUT/COPY/POST/LIST $${n6(PRICE.s3Put * 1000)} per 1,000, GET $${n6(PRICE.s3Get * 1000)} per 1,000, `
  + `DELETE free, storage $${PRICE.s3GbMonth} per GB-month. GB = 2^30 bytes of record values produced.`;
const DDB_ITEM_OVERHEAD = DDB_ITEM_OVERHEAD_BYTES;
/** DynamoDB's largest item. */
const DDB_MAX_ITEM = 400 * 1024;
const GiB = 2 ** 30;
const KiB = 1024;

const stack = await startQuietStack();
const lines: string[] = [];
const out = (s: string) => {
  lines.push(s);
  process.stdout.write(`${s}\n`);
};

const dollars = (t: Totals) => t.billedWriteUnits * PRICE.wru + t.readUnits * PRICE.rru + s3Tier(t, S3_PUT_TIER) * PRICE.s3Put + s3Tier(t, S3_GET_TIER) * PRICE.s3Get;
const ddbRequests = (t: Totals) => Object.values(t.requests).reduce((a, b) => a + b, 0);
const usd = (n: number) => `$${n < 0.01 ? n.toFixed(4) : n.toFixed(2)}`;

interface Size { label: string; records: number; mib: number }
// (--quick: a quarter MiB per size and 20 cross-check requests, a smoke test of the counting)
const envMib = process.env.TIERED_COST_MB === undefined ? (isQuick() ? 0.25 : undefined) : Number(process.env.TIERED_COST_MB);
const SIZES: Size[] = [
  { label: '1 KiB', records: 1, mib: envMib ?? 4 },
  { label: '64 KiB', records: 64, mib: envMib ?? 16 },
  { label: '1 MiB', records: 1024, mib: envMib ?? 16 },
];

interface Measured {
  size: Size;
  requests: number;
  payload: number;
  phases: Record<'append' | 'replicate' | 'roll', Totals>;
  segments: number;
  segmentBytes: number;
  /** Table item bytes (with DynamoDB's per-item overhead) per byte of batch the leader's table held before the roll. */
  itemBytesPerBatchByte: number;
  /** Table item bytes on one replica per byte of record value, before the roll. */
  itemBytesPerPayloadByte: number;
  /** S3 bytes (data/ objects and segments) per byte of record value after the roll. */
  s3BytesPerPayloadByte: number;
  /** data/ object bytes per byte of record value (large batches: in S3 before tiering too). */
  dataBytesPerPayloadByte: number;
  defaultSegmentBytes: number;
}

const records = (n: number, seed: number) => Array.from({ length: n }, (_, i) => ({ partition: 0, key: null, value: Buffer.alloc(KiB, (seed + i) % 251), headers: [] }));

async function measure(size: Size): Promise<Measured> {
  const name = `tiered-cost-${size.records}`;
  const p = await createPartition(name);
  const { topic, tp, leader } = p;
  const requests = Math.max(1, Math.round((size.mib * 1024) / size.records));
  const phases = { append: zero(), replicate: zero(), roll: zero() };
  trackCapacity(true);
  takeCapacity();
  for (let i = 0; i < requests; i++) {
    const [r] = await produce(name, records(size.records, i), { acks: 1 });
    add(phases.append, takeCapacity());
    if (!r?.ok) throw new Error(`request ${i} failed: ${r?.error.message}`);
    const end = r.offset + size.records;
    const result = await replicatePartition(p, { ms: 60_000, until: end, leaderEpoch: p.state.leaderEpoch, shrinkOnFailure: true });
    if (result.highWatermark < end || result.isr.length !== 3) throw new Error(`replication of request ${i} stopped at ${result.highWatermark} (ISR ${result.isr.join(',')})`);
    add(phases.replicate, takeCapacity());
  }
  trackCapacity(false);
  // What the tables hold before the roll (one replica; the others hold the same items).
  const { head, batches } = await tableLog(leader, tp, 0);
  const itemBytes = batches.reduce((n, b) => n + sizeOf({ tp, off: b.lastOffset, ...b }) + DDB_ITEM_OVERHEAD, 0);
  const batchBytes = batches.reduce((n, b) => n + b.sizeBytes, 0);
  const payload = requests * size.records * KiB;

  add(phases.roll, await counted(() => rollAll(name, { force: true, maxSegments: 64 })));
  const segments = await listSegments(topic.topicId, 0, { states: ['live'] });
  const segmentBytes = segments.reduce((n, s) => n + (s.sizeBytes ?? 0), 0);
  const rolledTo = segments[segments.length - 1]?.endOffset ?? 0;
  if (rolledTo !== head.leo) throw new Error(`rolled to ${rolledTo}, log end ${head.leo}`);
  const dataBytes = phases.append.s3PutBytes;
  return {
    size, requests, payload, phases, segments: segments.length, segmentBytes,
    itemBytesPerBatchByte: itemBytes / batchBytes,
    itemBytesPerPayloadByte: itemBytes / payload,
    s3BytesPerPayloadByte: (dataBytes + segmentBytes) / payload,
    dataBytesPerPayloadByte: dataBytes / payload,
    defaultSegmentBytes: numericConfig(topic.configs, 'segment.bytes'),
  };
}

/** produce(acks=all) on the same kind of requests: its units should match append + replicate. */
async function crossCheck(size: Size, requests: number): Promise<Totals> {
  const name = `tiered-check-${size.records}`;
  await createTopic({ name, partitions: 1, replicationFactor: 3 });
  return counted(async () => {
    for (let i = 0; i < requests; i++) await produce(name, records(size.records, i), { acks: 'all' });
  });
}

const started = performance.now();
const results: Measured[] = [];
for (const size of SIZES) results.push(await measure(size));
const CHECK_REQUESTS = isQuick() ? 20 : 200;
const check = { size: SIZES[0]!, requests: CHECK_REQUESTS, totals: await crossCheck(SIZES[0]!, CHECK_REQUESTS) };
const seconds = (performance.now() - started) / 1000;
await stack.stop();

// 1. Requests and dollars per GB produced, per phase.
out('### Per GB produced (RF 3, acks=all), by phase');
out('');
out('| request | phase | DynamoDB requests / GB | write units / GB | read units / GB | S3 PUT / GB | S3 GET / GB | S3 other / GB | $ / GB |');
out('|---|---|---|---|---|---|---|---|---|');
for (const m of results) {
  const perGb = GiB / m.payload;
  const total = zero();
  for (const phase of ['append', 'replicate', 'roll'] as const) {
    const t = m.phases[phase];
    add(total, t);
    const other = Object.entries(t.s3Requests).filter(([k]) => !S3_PUT_TIER.has(k) && !S3_GET_TIER.has(k)).reduce((n, [, v]) => n + v, 0);
    out(`| ${m.size.label} | ${phase} | ${fmt(ddbRequests(t) * perGb)} | ${fmt(t.billedWriteUnits * perGb)} | ${fmt(t.readUnits * perGb)} | ${fmt(s3Tier(t, S3_PUT_TIER) * perGb)} | ${fmt(s3Tier(t, S3_GET_TIER) * perGb)} | ${fmt(other * perGb)} | ${usd(dollars(t) * perGb)} |`);
  }
  const other = Object.entries(total.s3Requests).filter(([k]) => !S3_PUT_TIER.has(k) && !S3_GET_TIER.has(k)).reduce((n, [, v]) => n + v, 0);
  out(`| ${m.size.label} | **total** | ${fmt(ddbRequests(total) * perGb)} | ${fmt(total.billedWriteUnits * perGb)} | ${fmt(total.readUnits * perGb)} | ${fmt(s3Tier(total, S3_PUT_TIER) * perGb)} | ${fmt(s3Tier(total, S3_GET_TIER) * perGb)} | ${fmt(other * perGb)} | **${usd(dollars(total) * perGb)}** |`);
}
out('');
for (const m of results) {
  const describe = (t: Totals) => [...Object.entries(t.requests), ...Object.entries(t.s3Requests).map(([k, v]) => [`S3 ${k}`, v] as const)].map(([k, v]) => `${k} ${fmt(Number(v) / m.requests, 2)}`).join(', ');
  out(`- ${m.size.label}: ${m.requests} requests, ${fmt(m.payload / 2 ** 20, 1)} MiB of values, rolled into ${m.segments} segment(s) of ${fmt(m.segmentBytes / m.segments / 2 ** 20, 2)} MiB on average (default segment.bytes ${m.defaultSegmentBytes / 2 ** 20} MiB); `
    + `per request: append ${fmt(m.phases.append.billedWriteUnits / m.requests, 2)} WRU (${describe(m.phases.append)}); replicate ${fmt(m.phases.replicate.billedWriteUnits / m.requests, 2)} WRU (${describe(m.phases.replicate)}); `
    + `roll ${fmt(m.phases.roll.billedWriteUnits / m.requests, 2)} WRU (${describe(m.phases.roll)})`);
}
const c = results.find((m) => m.size === check.size)!;
out(`- cross-check: produce(acks=all) of ${check.requests} ${check.size.label} requests billed ${fmt(check.totals.billedWriteUnits / check.requests, 2)} WRU and ${fmt(check.totals.readUnits / check.requests, 2)} RRU per request; `
  + `append + replicate above: ${fmt((c.phases.append.billedWriteUnits + c.phases.replicate.billedWriteUnits) / c.requests, 2)} WRU and ${fmt((c.phases.append.readUnits + c.phases.replicate.readUnits) / c.requests, 2)} RRU`);

// 2. The bare operations the same bytes need.
out('');
out('### Baseline: the bare operations the same bytes need, per GB');
out('');
out('| request | DynamoDB only: PutItem per request per replica ×3 (WRU / GB) | $ / GB | S3 only: one PUT per request (PUT / GB) | $ / GB | S3 batched: one PUT per MiB | $ / GB |');
out('|---|---|---|---|---|---|---|');
for (const m of results) {
  const bytes = m.size.records * KiB;
  const requestsPerGb = GiB / bytes;
  // (a minimal key — partition and offset, ~24 bytes — makes a 1 KiB value a 2-unit item; over 400 KB, several items)
  const items = Math.ceil(bytes / DDB_MAX_ITEM);
  const wru = items * Math.ceil((bytes / items + 24) / KiB) * 3 * requestsPerGb;
  out(`| ${m.size.label} | ${fmt(wru)} | ${usd(wru * PRICE.wru)} | ${fmt(requestsPerGb)} | ${usd(requestsPerGb * PRICE.s3Put)} | ${fmt(GiB / 2 ** 20)} | ${usd((GiB / 2 ** 20) * PRICE.s3Put)} |`);
}

// 3. Storage: 1 GB kept for 7 days (the steady state of a partition that retains 1 GB).
out('');
out('### Storage: 1 GB of record values retained (one partition, RF 3)');
out('');
out('| request | tiered: DynamoDB (tail ×3) GB | tiered: S3 GB | tiered $ / month | tiered $ / 7 days | all in tables (×3, large batches in data/) DynamoDB GB | S3 GB | $ / month | $ / 7 days |');
out('|---|---|---|---|---|---|---|---|---|');
for (const m of results) {
  // Tiered: at most a full tail of segment.bytes in each replica's table (just before it rolls), the rest in S3 once.
  const tailGb = (m.defaultSegmentBytes * m.itemBytesPerBatchByte * 3) / GiB;
  const s3Gb = m.s3BytesPerPayloadByte;
  const tieredMonth = tailGb * PRICE.ddbGbMonth + s3Gb * PRICE.s3GbMonth;
  // Before: every batch item on every replica, forever; batches above inline.max.bytes in data/ once.
  const allGb = m.itemBytesPerPayloadByte * 3;
  const dataGb = m.dataBytesPerPayloadByte;
  const beforeMonth = allGb * PRICE.ddbGbMonth + dataGb * PRICE.s3GbMonth;
  out(`| ${m.size.label} | ${fmt(tailGb, 3)} | ${fmt(s3Gb, 3)} | ${usd(tieredMonth)} | ${usd((tieredMonth * 7) / 30.4)} | ${fmt(allGb, 3)} | ${fmt(dataGb, 3)} | ${usd(beforeMonth)} | ${usd((beforeMonth * 7) / 30.4)} |`);
}
out('');
out('Storage sizes are computed from the measured items (DynamoDB item size + 100 bytes each) and objects (data/ objects and segments as PUT). '
  + 'The tiered table share is an upper bound: a full tail of the default segment.bytes on each replica, just before it rolls (half that on average); it is per partition, so P partitions hold P tails.');
out('');
out(PRICE_NOTE);
out(`Units: DynamoDB write units billed by item size (lib/storage/capacity.ts billedWriteUnits), read units as DynamoDB Local reports them (ReturnConsumedCapacity), S3 requests counted per command by an SDK middleware; per-GB figures scale the measured run linearly. Run took ${fmt(seconds, 0)} s.`);

const header = `# tiered-cost — ${new Date().toISOString()}\n\nLocal stack (DynamoDB Local in memory, one process; s3rver; no stream replicator, no controllers), 3 brokers, RF 3. Node ${process.version}, ${os.cpus().length} cores, shared with other jobs (timings are not the point here; counts are).\n\n`;
fs.mkdirSync(resultsDir(), { recursive: true });
fs.writeFileSync(path.join(resultsDir(), 'tiered-cost.md'), `${header}${lines.join('\n')}\n`);
