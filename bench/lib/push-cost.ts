/**
 * The cost of push delivery, for the cost benchmark: 1 KiB records on one RF 3 partition delivered
 * by a push subscription to a local HTTP receiver that answers 204, in batches of
 * `max_batch_records`. The delivery runs in this process (deliverPush, as the websocket function
 * runs it) so its store calls are counted; the subscription is created over HTTP. Each batch is
 * priced as one invocation of the function that delivers (a wake per batch, the worst case of
 * records arriving one produce batch at a time), at the handler time measured per batch.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTopic } from '../../lib/cluster/topics.js';
import { ENVIRONMENT } from '../../lib/config.js';
import { deliverPush, SUBSCRIPTIONS_TTL_MS } from '../../lib/orchestration/push-delivery.js';
import { fmt, usd } from './report.js';
import type { Measured } from './transaction-cost.js';

type Http = (method: 'GET' | 'POST', url: string, body?: string) => Promise<any>;

export interface PushCostOptions<P> {
  /** `…/v3/clusters/{id}` of the stack. */
  readonly cluster: string;
  readonly topic: string;
  readonly http: Http;
  /** Measures `work`; `batches` and `ms` say how many invocations it stands for and how long it ran. */
  readonly measure: (work: () => Promise<{ batches: number }>) => Promise<Measured<P>>;
  readonly records: number;
  readonly batchRecords: number;
}

export interface PushCost<P> {
  readonly batchRecords: number;
  readonly records: number;
  readonly bytes: number;
  readonly batches: number;
  readonly measured: Measured<P>;
}

const KiB = 1024;

/** Produces the records (not measured), then measures their delivery; resolves once every record reached the receiver. */
export async function pushDeliveryCost<P>(o: PushCostOptions<P>): Promise<PushCost<P>> {
  const created = await createTopic({ name: o.topic, partitions: 1, replicationFactor: 3 });
  let received = 0;
  let bytes = 0;
  let batches = 0;
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { records: { value: string }[] };
      received += body.records.length;
      bytes += body.records.reduce((n, r) => n + Buffer.from(r.value, 'base64').length, 0);
      batches++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  // (no wakes: the measured delivery below is the only one)
  const wakes = process.env[ENVIRONMENT.websocketFunction];
  delete process.env[ENVIRONMENT.websocketFunction];
  try {
    for (let i = 0; i < o.records; i += 100) {
      const entries = Array.from({ length: Math.min(100, o.records - i) }, (_, j) => ({ id: String(j), partition_id: 0, value: { type: 'BINARY', data: Buffer.alloc(KiB, (i + j) % 251).toString('base64') } }));
      await o.http('POST', `${o.cluster}/topics/${o.topic}/records:batch`, JSON.stringify({ entries }));
    }
    await o.http('POST', `${o.cluster}/subscriptions`, JSON.stringify({
      subscription_name: `${o.topic}-push`, topic_name: o.topic, group_id: `${o.topic}-push`, starting_position: 'earliest',
      endpoint: { type: 'http', url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook` }, max_batch_records: o.batchRecords,
    }));
    // (this process's list of subscriptions is cached for SUBSCRIPTIONS_TTL_MS: let it see the new one)
    await new Promise((r) => setTimeout(r, SUBSCRIPTIONS_TTL_MS));
    if (received > 0) throw new Error('a delivery ran before the measured one');
    const measured = await o.measure(async () => {
      await deliverPush(created.topic.topicId, 0, Date.now() + 600_000);
      return { batches };
    });
    if (received !== o.records) throw new Error(`push delivery delivered ${received} of ${o.records} records`);
    return { batchRecords: o.batchRecords, records: received, bytes, batches, measured };
  } finally {
    if (wakes !== undefined) process.env[ENVIRONMENT.websocketFunction] = wakes;
    receiver.close();
  }
}

interface PhaseLike {
  readonly store: { readonly requests: Readonly<Record<string, number>>; readonly billedWriteUnits: number; readonly readUnits: number };
  readonly lambda: Readonly<Record<string, { readonly ms: number }>>;
}

/** The cost table's rows for push delivery, per GB delivered; `dollars` prices a phase as the rest of the benchmark does. */
export function pushTable<P extends PhaseLike, D extends Record<string, number>>(
  push: PushCost<P>, dollars: (p: P) => D, components: readonly { key: keyof D; label: string }[], sum: (d: D) => number,
) {
  const phase = push.measured.phase;
  const perGb = Object.fromEntries(Object.entries(dollars(phase)).map(([k, v]) => [k, v * (2 ** 30 / push.bytes)])) as D;
  const requests = Object.entries(phase.store.requests).filter(([op]) => op !== 'DescribeTable').reduce((a, [, b]) => a + b, 0);
  const table = {
    title: `Push delivery of 1 KiB records to an HTTP endpoint, batches of ${push.batchRecords}, per GB delivered`,
    columns: ['records', 'batches', ...components.map((c) => c.label), 'total', 'per batch: DynamoDB requests', 'write units', 'read units', 'handler ms'],
    rows: [[fmt(push.records), fmt(push.batches), ...components.map((c) => usd(perGb[c.key] as number)), `**${usd(sum(perGb))}**`,
      fmt(requests / push.batches, 1), fmt(phase.store.billedWriteUnits / push.batches, 1), fmt(phase.store.readUnits / push.batches, 1), fmt((phase.lambda.websocket?.ms ?? 0) / push.batches, 1)]],
    notes: [
      'On top of producing the records. Counted: the deliveries (the partition\'s lease, the group\'s committed offset, the read of the batch, the commit, the release) run as the websocket function runs them, one invocation per batch (a wake per batch: the worst case, records arriving one produce batch at a time), its time measured here × 512 MB.',
      'Not included: data transfer out of AWS to the endpoint ($0.09/GB to the internet), the receiver\'s own cost, and the controller pass\'s wakes (one invocation per subscribed partition a minute, ~$0.01 a partition-month).',
    ],
  };
  return { table, perGb };
}

