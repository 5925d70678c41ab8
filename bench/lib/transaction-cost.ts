/**
 * The cost of a transaction, for the cost benchmark: a transactional producer over HTTP (init,
 * sends of 1 KiB records alternating between two partitions, commit), each step measured on its
 * own — the store calls of its request (sequential round trips), and everything the stores billed
 * until the replicator went quiet (write and read units, requests) — next to the same records sent
 * by an idempotent producer without a transaction, measured in the same run.
 */
import type { CapacityTotals, StoreCall } from '../../lib/storage/metering.js';
import { sequentialRoundTrips } from '../../lib/storage/metering.js';
import { createTopic } from '../../lib/cluster/topics.js';
import { fmt, usd } from './report.js';

/** What one measured piece of work cost: the stores' totals and the HTTP requests it served. */
export interface Measured<P> {
  readonly phase: P;
  readonly store: CapacityTotals;
  readonly served: readonly { readonly calls: readonly StoreCall[] }[];
}
export type Measure<P> = (work: () => Promise<void>) => Promise<Measured<P>>;
type Http = (method: 'GET' | 'POST', url: string, body?: string) => Promise<any>;

export interface TransactionCostOptions<P> {
  /** `…/v3/clusters/{id}` of the stack. */
  readonly cluster: string;
  /** The name of the topic it creates: two partitions, RF 3. */
  readonly topic: string;
  readonly http: Http;
  readonly measure: Measure<P>;
  readonly transactions: number;
  /** Records per transaction (one per send, alternating between the partitions). */
  readonly sends: number;
}

/** One kind of step: how often it ran, and its requests' round trips and billing, per step. */
export interface StepCost<P> {
  readonly step: string;
  readonly count: number;
  readonly requests: number;
  /** Median sequential round trips of one request of the step. */
  readonly roundTrips: number;
  readonly phases: readonly P[];
  readonly writeUnits: number;
  readonly readUnits: number;
  readonly storeRequests: number;
}

const KiB = 1024;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const value = (i: number) => Buffer.alloc(KiB, i % 251).toString('base64');
const storeRequests = (t: CapacityTotals) => Object.entries(t.requests).filter(([op]) => op !== 'DescribeTable').reduce((a, [, n]) => a + n, 0);

/** Runs the workload; one entry per step kind, plus the non-transactional baseline. */
export async function transactionCost<P>(o: TransactionCostOptions<P>): Promise<StepCost<P>[]> {
  await createTopic({ name: o.topic, partitions: 2, replicationFactor: 3 });
  const steps = new Map<string, Measured<P>[]>();
  const run = async (step: string, work: () => Promise<void>) => {
    const m = await o.measure(work);
    steps.set(step, [...(steps.get(step) ?? []), m]);
  };
  const records = (partition: number, sequence: number, i: number) => JSON.stringify({ partition_id: partition, sequence, value: { type: 'BINARY', data: value(i) } });
  const produced = (answer: any) => {
    if (answer?.error_code !== 200) throw new Error(`produce refused: ${JSON.stringify(answer).slice(0, 300)}`);
  };

  for (let t = 0; t < o.transactions; t++) {
    const id = `cost-txn-${t}`;
    let producer: { producer_id: number; producer_epoch: number } = { producer_id: 0, producer_epoch: 0 };
    await run('init (the id\'s producer, fencing earlier ones)', async () => {
      producer = await o.http('POST', `${o.cluster}/transactions/${id}/producer`, '{}');
    });
    const seq = [0, 0];
    for (let i = 0; i < o.sends; i++) {
      const partition = i % 2;
      const step = i < 2 ? 'send, first to its partition (adds it to the transaction)' : 'send, to a partition already in it';
      await run(step, async () => {
        const q = `acks=all&transactional_id=${id}&producer_id=${producer.producer_id}&producer_epoch=${producer.producer_epoch}`;
        produced(await o.http('POST', `${o.cluster}/topics/${o.topic}/records?${q}`, records(partition, seq[partition]!++, i)));
      });
    }
    await run('commit (markers on both partitions)', async () => {
      await o.http('POST', `${o.cluster}/transactions/${id}/end`, JSON.stringify({ producer_id: producer.producer_id, producer_epoch: producer.producer_epoch, commit: true }));
    });
  }
  // The baseline: the same records from an idempotent producer, no transaction.
  const idem = await o.http('POST', `${o.cluster}/producers`, '{}');
  const seq = [0, 0];
  for (let t = 0; t < o.transactions; t++) {
    for (let i = 0; i < o.sends; i++) {
      const partition = i % 2;
      await run('baseline: the same send without a transaction (idempotent)', async () => {
        const q = `acks=all&producer_id=${idem.producer_id}&producer_epoch=${idem.producer_epoch}`;
        produced(await o.http('POST', `${o.cluster}/topics/${o.topic}/records?${q}`, records(partition, seq[partition]!++, i)));
      });
    }
  }
  return [...steps.entries()].map(([step, ms]) => ({
    step,
    count: ms.length,
    requests: ms.reduce((n, m) => n + m.served.length, 0),
    roundTrips: median(ms.flatMap((m) => m.served.map((s) => sequentialRoundTrips(s.calls)))),
    phases: ms.map((m) => m.phase),
    writeUnits: ms.reduce((n, m) => n + m.store.billedWriteUnits, 0) / ms.length,
    readUnits: ms.reduce((n, m) => n + m.store.readUnits, 0) / ms.length,
    storeRequests: ms.reduce((n, m) => n + storeRequests(m.store), 0) / ms.length,
  }));
}

/**
 * The cost bench's table of a transaction: each step, then a transaction of `sends` sends and its
 * commit next to the same sends without one. `price` is a phase's dollars.
 */
export function transactionTable<P>(steps: readonly StepCost<P>[], sends: number, price: (p: P) => number) {
  const stepDollars = (t: StepCost<P>) => t.phases.reduce((a, p) => a + price(p), 0) / t.count;
  const total = (pick: (step: string) => boolean, times: (t: StepCost<P>) => number) =>
    steps.filter((t) => pick(t.step)).reduce((a, t) => ({
      wu: a.wu + t.writeUnits * times(t), ru: a.ru + t.readUnits * times(t), usd: a.usd + stepDollars(t) * times(t), rt: a.rt + t.roundTrips * times(t),
    }), { wu: 0, ru: 0, usd: 0, rt: 0 });
  // Per transaction: two first sends (one per partition), the rest to partitions already in it, one commit.
  const perTransaction = total((s) => !s.startsWith('baseline') && !s.startsWith('init'), (t) => (t.step.startsWith('commit') ? 1 : t.step.includes('first') ? 2 : sends - 2));
  const baseline = total((s) => s.startsWith('baseline'), () => sends);
  const table = {
    title: `A transaction's cost: ${sends} sends of one 1 KiB record over two partitions (acks=all, RF 3), then a commit`,
    columns: ['step', 'times measured', 'sequential round trips (median)', 'DynamoDB requests', 'write units', 'read units', '$ per million'],
    rows: [
      ...steps.map((t) => [t.step, t.count, t.roundTrips, fmt(t.storeRequests, 1), fmt(t.writeUnits, 1), fmt(t.readUnits, 1), usd(stepDollars(t) * 1e6)]),
      [`a transaction of ${sends} sends and its commit (init once per producer, not in it)`, '', fmt(perTransaction.rt, 0), '', fmt(perTransaction.wu, 1), fmt(perTransaction.ru, 1), usd(perTransaction.usd * 1e6)],
      [`the same ${sends} sends without a transaction`, '', fmt(baseline.rt, 0), '', fmt(baseline.wu, 1), fmt(baseline.ru, 1), usd(baseline.usd * 1e6)],
    ],
    notes: [
      'Each step is one HTTP request; its units are everything the stores billed until the replicator went quiet after it (its follower copies and reads included). $ per million: DynamoDB, S3, Lambda and HTTP API, priced as the tables above.',
      `Overhead of the transaction over the same sends: ${fmt(perTransaction.wu - baseline.wu, 1)} write units and ${fmt(perTransaction.rt - baseline.rt, 0)} sequential round trips per transaction (the adds, the commit's compare-and-sets, one marker per partition).`,
    ],
  };
  return { table, perTransaction, baseline };
}
