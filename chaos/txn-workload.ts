/**
 * The transactional workload, over HTTP through the gateways, as Jepsen's Kafka transaction tests
 * run theirs: transactional producers, each with its own transactional id, writing unique values
 * to two or three partitions of one topic in each transaction, sometimes with offsets of a group,
 * then committing or aborting; and read_committed readers of that topic. Every call goes to the
 * history (txn-history.ts) for txn-checker.ts to judge.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of our own API, read field by field */
import type { Outcome, Rec } from './history.js';
import { rng, type Recorder } from './recorder.js';
import { logStartOf, request, type Reply } from './workload.js';

export interface TxnTarget {
  /** The gateways' base URLs (worker and reader i go through `urls[i % urls.length]`) and the cluster id. */
  readonly urls: readonly string[];
  readonly clusterId: string;
  /** The topic the transactions write (the run's other workloads leave it alone). */
  readonly topic: string;
  readonly partitions: number;
  /** The group whose offsets transactions send. */
  readonly group: string;
}

export interface TxnWorkloadOptions {
  /** Transactional producers, each with its own transactional id. */
  readonly workers: number;
  /** read_committed readers of every partition of the topic. */
  readonly readers: number;
  /**
   * Seeds each worker's own generator, in worker order, so that the k-th transaction of a worker
   * makes the same choices (partitions, values, offsets, commit or abort) in every run of a seed,
   * however the workers interleave. Pauses and backoffs are not drawn from it.
   */
  readonly random: () => number;
  /** Per request: past it the outcome is unknown. */
  readonly requestTimeoutMs: number;
  /**
   * Each transaction's `transaction.timeout.ms`: past it the controller aborts the transaction.
   * @default 20000
   */
  readonly transactionTimeoutMs?: number;
  /**
   * The share of transactions ended with an abort: one in every run of 1/share transactions, at
   * a random place in it (so a short run has aborts too).
   * @default 0.25
   */
  readonly abortShare?: number;
  /**
   * The share of transactions that send offsets of the group.
   * @default 0.5
   */
  readonly offsetsShare?: number;
}

/** A transactional producer's identity for its current transaction. */
interface Producer { id: number; epoch: number }

/** How a step of a transaction ended: done, refused (the transaction can still be aborted), fenced, or unknown. */
type Step = 'ok' | 'fail' | 'fenced' | 'unknown';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The Kafka error name an error answer opens its message with ("409 PRODUCER_FENCED: ..."). */
const errorName = (r: Reply): string | undefined => /^\d+ ([A-Z_]+):/.exec(r.error ?? '')?.[1];
const FENCED = new Set(['PRODUCER_FENCED', 'INVALID_PRODUCER_EPOCH', 'INVALID_PRODUCER_ID_MAPPING', 'TRANSACTIONAL_ID_NOT_FOUND']);
/** Refusals that leave the transaction as it was: worth the same call again. */
const RETRIABLE = new Set(['CONCURRENT_TRANSACTIONS', 'NOT_LEADER_OR_FOLLOWER', 'NOT_ENOUGH_REPLICAS', 'UNKNOWN_TOPIC_OR_PARTITION', 'REQUEST_TIMED_OUT']);
/**
 * The refusals of an end that say it wrote nothing. Any other error answer to an end is recorded
 * as unknown: the end may have prepared the outcome before it failed (its markers, say), and then
 * that outcome stands.
 */
const END_REFUSALS = new Set([...FENCED, 'INVALID_TXN_STATE', 'CONCURRENT_TRANSACTIONS', 'INVALID_REQUEST', 'THROTTLING_QUOTA_EXCEEDED']);

export class TxnWorkload {
  private running = true;
  private readonly loops: Promise<void>[] = [];
  private readonly randoms: (() => number)[];
  /** Where each worker's current run of transactions has its abort. */
  private readonly abortAt: number[] = [];
  /** Set during a quiet phase: no worker begins a transaction until it is cleared. */
  private paused: Promise<void> | undefined;
  private unpause: (() => void) | undefined;

  constructor(private readonly t: TxnTarget, private readonly o: TxnWorkloadOptions, private readonly h: Recorder) {
    this.randoms = Array.from({ length: o.workers }, () => rng(Math.floor(o.random() * 2 ** 32)));
  }

  start(): void {
    for (let i = 0; i < this.o.workers; i++) this.loops.push(this.worker(i));
    for (let i = 0; i < this.o.readers; i++) this.loops.push(this.reader(`txn-reader-${i}`, i));
  }

  /** Workers finish the transaction they are in and stop; one left unresolved is aborted by a last init. */
  async stop(): Promise<void> {
    this.running = false;
    this.resume();
    await Promise.all(this.loops);
  }

  /** No transaction begins until `resume` (those open go on to their end; the readers read on). */
  pause(): void {
    this.paused ??= new Promise((r) => (this.unpause = r));
  }

  resume(): void {
    this.unpause?.();
    this.paused = undefined;
    this.unpause = undefined;
  }

  private v3(i: number): string {
    return `${this.t.urls[i % this.t.urls.length]}/v3/clusters/${this.t.clusterId}`;
  }

  private async worker(i: number): Promise<void> {
    const process = `txn-${i}`;
    const transactionalId = `chaos-txn-${i}`;
    const v3 = this.v3(i);
    const init = async (): Promise<Producer | undefined> => {
      const start = Date.now();
      const r = await request(`${v3}/transactions/${transactionalId}/producer`, 'POST', { transaction_timeout_ms: this.o.transactionTimeoutMs ?? 20_000 }, this.o.requestTimeoutMs);
      const p = r.outcome === 'ok' ? { id: r.body.producer_id as number, epoch: r.body.producer_epoch as number } : undefined;
      this.h.add({ type: 'txn-init', process, transactionalId, start, end: Date.now(), outcome: r.outcome, ...(p ? { producerId: p.id, producerEpoch: p.epoch } : {}), ...(r.error ? { error: r.error } : {}) });
      return p;
    };
    let producer: Producer | undefined;
    for (let n = 0; this.running;) {
      while (this.paused) await this.paused;
      if (!this.running) break;
      producer ??= await init();
      if (!producer) {
        await sleep(300);
        continue;
      }
      producer = await this.transaction({ process, transactionalId, worker: i, v3 }, n++, producer);
      await sleep(500 + Math.random() * 1000); // (on a small machine, room for the other workloads)
    }
    // What the last transaction left unresolved (open, or its end unknown) is finished by an init.
    for (const until = Date.now() + 30_000; !producer && Date.now() < until; await sleep(500)) producer = await init();
  }

  /** A worker's `n`-th transaction; returns the producer for the next one, or undefined when the worker must init again. */
  private async transaction(w: { process: string; transactionalId: string; worker: number; v3: string }, n: number, p: Producer): Promise<Producer | undefined> {
    const { process, transactionalId, worker, v3 } = w;
    const txn = `${transactionalId}:${n}`;
    this.h.add({ type: 'txn-begin', process, transactionalId, txn, producerId: p.id, producerEpoch: p.epoch, at: Date.now() });
    // (offsets unique to the transaction: worker i's n-th sends n·workers + i + 1)
    const offset = n * this.o.workers + worker + 1;
    const random = this.randoms[worker]!;
    const share = this.o.abortShare ?? 0.25;
    const run = share > 0 ? Math.max(1, Math.round(1 / share)) : Infinity;
    if (n % run === 0) this.abortAt[worker] = Math.floor(random() * run);
    const commit = n % run !== this.abortAt[worker];
    const withOffsets = random() < (this.o.offsetsShare ?? 0.5);
    const all = Array.from({ length: this.t.partitions }, (_, k) => k);
    for (let k = all.length - 1; k > 0; k--) {
      const j = Math.floor(random() * (k + 1));
      [all[k], all[j]] = [all[j]!, all[k]!];
    }
    // Two partitions, or three in one transaction in four; a second value on a partition in one in four.
    const chosen = all.slice(0, Math.min(all.length, random() < 0.25 ? 3 : 2));
    const plan = chosen.map((partition, c) => ({ partition, values: Array.from({ length: random() < 0.25 ? 2 : 1 }, (_, v) => `${txn}:${c}.${v}`) }));
    const q = `acks=all&transactional_id=${encodeURIComponent(transactionalId)}&producer_id=${p.id}&producer_epoch=${p.epoch}`;
    const base = { process, transactionalId, txn };
    // Each partition's values in order (sequences from 0 in the epoch); the partitions in parallel.
    const chains = await Promise.all(plan.map(async ({ partition, values }) => {
      for (const [sequence, value] of values.entries()) {
        const step = await this.attempts(async () => {
          const start = Date.now();
          const r = await request(`${v3}/topics/${this.t.topic}/records?${q}`, 'POST', { partition_id: partition, sequence, value: { type: 'STRING', data: value } }, this.o.requestTimeoutMs);
          this.h.add({ type: 'txn-send', ...base, topic: this.t.topic, partition, value, sequence, start, end: Date.now(), outcome: r.outcome, ...(r.outcome === 'ok' ? { offset: r.body.offset } : {}), ...(r.error ? { error: r.error } : {}) });
          return r;
        });
        if (step !== 'ok') return step;
      }
      return 'ok' as Step;
    }));
    let step: Step = chains.find((s) => s === 'unknown' || s === 'fenced') ?? chains.find((s) => s === 'fail') ?? 'ok';
    if (step === 'ok' && withOffsets) {
      const offsets = [{ topic: this.t.topic, partition: worker % this.t.partitions, offset }];
      step = await this.attempts(async () => {
        const start = Date.now();
        const r = await request(`${v3}/transactions/${transactionalId}/offsets`, 'POST', {
          producer_id: p.id, producer_epoch: p.epoch, group_id: this.t.group,
          offsets: offsets.map((o) => ({ topic_name: o.topic, partition_id: o.partition, offset: o.offset })),
        }, this.o.requestTimeoutMs);
        this.h.add({ type: 'txn-offsets', ...base, group: this.t.group, start, end: Date.now(), outcome: r.outcome, offsets, ...(r.error ? { error: r.error } : {}) });
        return r;
      });
    }
    if (step === 'unknown' || step === 'fenced') return undefined;
    // A moment with the transaction open, so the readers meet it.
    await sleep(Math.random() * 200);
    return this.end(base, v3, p, step === 'ok' && commit);
  }

  /** Ends the transaction; undefined when the worker must init again. */
  private async end(base: { process: string; transactionalId: string; txn: string }, v3: string, p: Producer, commit: boolean): Promise<Producer | undefined> {
    let next: Producer | undefined;
    const step = await this.attempts(async () => {
      const start = Date.now();
      const r = await request(`${v3}/transactions/${base.transactionalId}/end`, 'POST', { producer_id: p.id, producer_epoch: p.epoch, commit }, this.o.requestTimeoutMs);
      const name = errorName(r);
      const outcome: Outcome = r.outcome === 'fail' && !(name && END_REFUSALS.has(name)) && r.status !== 400 ? 'unknown' : r.outcome;
      this.h.add({ type: 'txn-end', ...base, commit, start, end: Date.now(), outcome, ...(r.error ? { error: r.error } : {}) });
      if (r.outcome === 'ok') next = { id: r.body.producer_id, epoch: r.body.producer_epoch };
      return { ...r, outcome };
    });
    return step === 'ok' ? next : undefined;
  }

  /**
   * Runs a call up to three times: again after an unknown answer or a retriable refusal (a retried
   * send keeps its sequence, so it is written once; a retried end gets the first one's answer).
   */
  private async attempts(call: () => Promise<Reply>): Promise<Step> {
    let unknown = false;
    for (let attempt = 1; ; attempt++) {
      const r = await call();
      if (r.outcome === 'ok') return 'ok';
      const name = errorName(r);
      if (name && FENCED.has(name)) return 'fenced';
      unknown ||= r.outcome === 'unknown';
      if ((r.outcome !== 'unknown' && !(name && RETRIABLE.has(name))) || attempt >= 3) return unknown ? 'unknown' : 'fail';
      await sleep(100 + Math.random() * 200);
    }
  }

  private async reader(process: string, index: number): Promise<void> {
    const v3 = this.v3(index); // (the readers on different gateways: each function instance keeps its own cache of aborted transactions)
    const positions = new Map<number, number>();
    for (let i = index; this.running; i++) {
      const partition = i % this.t.partitions;
      const from = positions.get(partition) ?? 0;
      const start = Date.now();
      const r = await readCommitted(v3, this.t.topic, partition, from, 65_536, this.o.requestTimeoutMs);
      const records = r.outcome === 'ok' ? recordsOf(r) : [];
      this.h.add({
        type: 'txn-read', process, topic: this.t.topic, partition, fromOffset: from, start, end: Date.now(), outcome: r.outcome, records,
        ...(r.outcome === 'ok' ? { nextOffset: r.body.next_offset, highWatermark: r.body.high_watermark, lastStableOffset: r.body.last_stable_offset } : {}),
        ...(r.error ? { error: r.error } : {}),
      });
      if (r.outcome === 'ok') positions.set(partition, r.body.next_offset);
      else if (/OFFSET_OUT_OF_RANGE/.test(r.error ?? '')) positions.set(partition, Math.max(from, (await logStartOf(v3, { topic: this.t.topic, partition })) ?? from));
      await sleep(200); // (enough to meet open transactions, little enough to leave the machine to the other workloads)
    }
  }
}

function readCommitted(v3: string, topic: string, partition: number, from: number, maxBytes: number, timeoutMs: number): Promise<Reply> {
  return request(`${v3}/topics/${topic}/partitions/${partition}/records?offset=${from}&format=string&max_bytes=${maxBytes}&isolation_level=read_committed`, 'GET', undefined, timeoutMs);
}

/** The records of a v3 answer; a record without a value (none should come) is recorded as such, for the checker to see. */
const recordsOf = (r: Reply): Rec[] => (r.body.records as any[]).map((x) => ({ offset: x.offset, value: x.value === null ? '<no value>' : String(x.value.data) }));

/**
 * After the faults healed: reads every partition of the topic read_committed from its log start
 * until it gets to the high watermark with no transaction open (waiting while one holds the last
 * stable offset), then the group's stable committed offsets.
 */
export async function finalTxnReads(t: TxnTarget, h: Recorder, deadline: number): Promise<void> {
  const v3 = `${t.urls[0]}/v3/clusters/${t.clusterId}`;
  for (let partition = 0; partition < t.partitions; partition++) {
    const records: Rec[] = [];
    let complete = false;
    let last: { hw?: number; lso?: number } = {};
    for (let from = 0; Date.now() < deadline;) {
      const r = await readCommitted(v3, t.topic, partition, from, 4_000_000, 15_000);
      if (r.outcome !== 'ok') {
        if (/OFFSET_OUT_OF_RANGE/.test(r.error ?? '')) from = Math.max(from, (await logStartOf(v3, { topic: t.topic, partition })) ?? from);
        await sleep(500);
        continue;
      }
      records.push(...recordsOf(r));
      from = r.body.next_offset;
      last = { hw: r.body.high_watermark, lso: r.body.last_stable_offset };
      if (from >= r.body.high_watermark && r.body.last_stable_offset >= r.body.high_watermark) {
        complete = true;
        break;
      }
      if (r.body.records.length === 0) await sleep(500); // an open transaction holds the last stable offset
    }
    h.add({ type: 'txn-final-read', topic: t.topic, partition, at: Date.now(), records, complete, ...(last.hw === undefined ? {} : { highWatermark: last.hw }), ...(last.lso === undefined ? {} : { lastStableOffset: last.lso }) });
  }
  // Stable offsets: answered once no transaction holds the group's offsets.
  while (Date.now() < deadline) {
    const c = await request(`${v3}/consumer-groups/${t.group}/offsets?require_stable=true`, 'GET', undefined, 15_000);
    if (c.outcome === 'ok' || c.status === 404) {
      const offsets = c.outcome === 'ok' ? (c.body.data as any[]).map((o) => ({ topic: o.topic_name as string, partition: o.partition_id as number, offset: o.offset as number })) : [];
      h.add({ type: 'final-commits', group: t.group, at: Date.now(), offsets });
      return;
    }
    await sleep(500);
  }
}
