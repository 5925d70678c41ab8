/**
 * A push subscription among the chaos readers: the cluster delivers the first topic's records to a
 * receiver in this process, which refuses a share of the deliveries (500) so that batches are
 * retried. Each delivery it accepts goes to the history as a read (process `push`), so the checker
 * holds what push delivered to the same rules as every reader; at the end, once the subscription's
 * group has caught up (or the time is up), its committed offsets go to the history as
 * `push-final`, against which the checker looks for records committed past without being
 * delivered (push-checker.ts).
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of our own API, read field by field */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Recorder } from './recorder.js';
import { request, type WorkloadTarget } from './workload.js';

/** The share of deliveries the receiver refuses. */
const REFUSED_SHARE = 0.15;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class PushReader {
  private server: Server | undefined;
  private readonly name: string;
  private readonly group: string;
  private readonly v3: string;

  constructor(private readonly t: WorkloadTarget, private readonly h: Recorder, private readonly random: () => number) {
    this.name = `${t.group}-push`;
    this.group = `${t.group}-push`;
    this.v3 = `${t.urls[0]}/v3/clusters/${t.clusterId}`;
  }

  private get topic(): WorkloadTarget['topics'][number] {
    return this.t.topics[0]!;
  }

  /** Starts the receiver and creates the subscription (from the earliest offset), retrying until the cluster answers. */
  async start(deadline: number): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      const start = Date.now();
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (this.random() < REFUSED_SHARE) {
          res.writeHead(500).end();
          return;
        }
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { topic: string; partition: number; records: { offset: number; value: string | null }[] };
        const records = body.records.map((r) => ({ offset: r.offset, value: r.value === null ? '' : Buffer.from(r.value, 'base64').toString('utf8') }));
        this.h.add({ type: 'read', process: 'push', topic: body.topic, partition: body.partition, fromOffset: records[0]?.offset ?? 0, start, end: Date.now(), outcome: 'ok', records });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/deliveries`;
    for (;;) {
      const r = await request(`${this.v3}/subscriptions`, 'POST', {
        subscription_name: this.name, topic_name: this.topic.name, group_id: this.group, starting_position: 'earliest', endpoint: { type: 'http', url }, max_batch_records: 50,
      }, 15_000);
      if (r.status === 201 || (r.status === 400 && /already exists/.test(r.error ?? ''))) return;
      if (Date.now() > deadline) throw new Error(`could not create the push subscription: ${r.error}`);
      await sleep(1000);
    }
  }

  /**
   * Waits until the subscription's group has no lag on any partition (the faults have healed; the
   * controller's pass wakes what no produce woke) or `deadline`, then records its committed offsets
   * and whether it caught up, deletes the subscription and stops the receiver.
   */
  async finish(deadline: number): Promise<void> {
    let offsets: { topic: string; partition: number; offset: number }[] = [];
    let caughtUp = false;
    while (Date.now() < deadline) {
      const r = await request(`${this.v3}/consumer-groups/${this.group}/lags`, 'GET', undefined, 5000);
      if (r.status === 200) {
        const lags = (r.body.data as any[]).filter((l) => l.topic_name === this.topic.name);
        offsets = lags.map((l) => ({ topic: l.topic_name as string, partition: l.partition_id as number, offset: l.current_offset as number }));
        caughtUp = lags.length === this.topic.partitions && lags.every((l) => l.lag === 0);
        if (caughtUp) break;
      }
      await sleep(1000);
    }
    this.h.add({ type: 'push-final', group: this.group, at: Date.now(), offsets, caughtUp });
    await request(`${this.v3}/subscriptions/${this.name}`, 'DELETE', undefined, 5000);
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
