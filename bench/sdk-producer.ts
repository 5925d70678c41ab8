/**
 * The SDK producer's throughput with batching on (its defaults: linger.ms 5, batch.size 1 MiB,
 * one `records:batch` request per topic carrying every partition's records) and off (batch.size 0:
 * one request per record, 5 in flight), on the local stack: records/s, MB/s of values, and HTTP
 * requests per 10,000 records. 1 KiB values, a 4-partition topic, RF 3, acks=all, idempotent.
 * Run: `npm run bench -- sdk-producer [--quick]`.
 */
import './lib/env.js';
import { isQuick, sized, writeResult, type Table } from './lib/report.js';
import { STACK_NOTE, startBenchStack } from './lib/load.js';
import { startQuietStack } from './lib/quiet-stack.js';
import { Tributary } from '../client/index.js';

const quick = isQuick();
const VALUE_BYTES = 1024;
const PARTITIONS = 4;
const SEND_SIZE = 100;
const started = Date.now();
// Quick: one in-memory store process (the whole run stays well under 15 s); full: the bench stack on disk.
const stack = quick ? await startQuietStack() : await startBenchStack();

interface Mode { name: string; records: number; config: Parameters<Tributary['producer']>[0] }
const MODES: Mode[] = [
  { name: 'batching on (defaults)', records: sized(50_000, 3_000), config: {} },
  { name: 'batching off (batch.size 0)', records: sized(1_000, 100), config: { batchSize: 0, lingerMs: 0 } },
];

const value = 'v'.repeat(VALUE_BYTES);
const results: { mode: string; records: number; seconds: number; recordsPerSec: number; mbPerSec: number; requestsPer10k: number }[] = [];
for (const [i, mode] of MODES.entries()) {
  const t = new Tributary({ url: stack.url });
  const admin = t.admin();
  const topic = `bench-sdk-${i}-${Date.now()}`;
  await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 3 }] });
  const producer = t.producer(mode.config);
  await producer.connect();
  // Warm-up: the first requests pay for connections and caches.
  await producer.send({ topic, messages: Array.from({ length: 20 }, (_, k) => ({ key: `w${k}`, value })) });
  const before = t.requestCount;
  const t0 = performance.now();
  const sends: Promise<unknown>[] = [];
  for (let n = 0; n < mode.records; n += SEND_SIZE) {
    sends.push(producer.send({ topic, messages: Array.from({ length: Math.min(SEND_SIZE, mode.records - n) }, (_, k) => ({ key: `k${n + k}`, value })) }));
  }
  await Promise.all(sends);
  await producer.flush();
  const seconds = (performance.now() - t0) / 1000;
  const requests = t.requestCount - before;
  results.push({
    mode: mode.name, records: mode.records, seconds,
    recordsPerSec: mode.records / seconds, mbPerSec: (mode.records * VALUE_BYTES) / seconds / 1e6, requestsPer10k: (requests * 10_000) / mode.records,
  });
  await producer.disconnect();
}
await stack.stop();

const table: Table = {
  title: 'SDK producer: batching on and off',
  columns: ['mode', 'records', 'seconds', 'records/s', 'MB/s (values)', 'requests per 10,000 records'],
  rows: results.map((r) => [r.mode, r.records, r.seconds, Math.round(r.recordsPerSec), r.mbPerSec, Math.round(r.requestsPer10k)]),
  notes: [
    'Batching on: sends of 100 records each, all issued at once; the producer gathers them per topic into requests of up to 10,000 records (2 MiB), one in flight per partition, and what arrives meanwhile waits for the next.',
    'Batching off: the same sends, one record per request; up to 5 requests in flight, each for another partition (4 here).',
    'The server has no request spanning topics: a producer writing to T topics sends at least T requests per linger window.',
  ],
};
await writeResult({
  scenario: 'sdk-producer',
  title: 'SDK producer throughput, batching on and off',
  description: `${quick ? 'Quick run: 3 brokers on one in-memory DynamoDB Local, in-process gateway. ' : STACK_NOTE} `
    + `${VALUE_BYTES}-byte values, keyed, a ${PARTITIONS}-partition topic with RF 3, acks=all, idempotent producer (the SDK's defaults).`,
  tables: [table],
  data: { results },
  notes: [`Run took ${Math.round((Date.now() - started) / 1000)} s.`],
});
