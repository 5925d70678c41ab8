/**
 * The chaos workload, over HTTP through the gateway: producers (idempotent and not, acks=all and
 * acks=1), consumers of one group using the native group protocol and committing after
 * processing, and plain partition readers. Every operation goes to the history with its start,
 * end, outcome and values; values are unique so the checker can trace each one. The run can stop
 * the writes for a quiet phase, and the nemesis can wait for a given write to be sent or acknowledged.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of our own API, read field by field */
import type { Outcome, TP } from './history.js';
import type { Readability } from './liveness.js';
import type { Recorder } from './recorder.js';

export interface WorkloadTarget {
  /** The gateways' base URLs (the first serves everything but the producers sent elsewhere) and the cluster id. */
  readonly urls: readonly string[];
  readonly clusterId: string;
  readonly topics: readonly { readonly name: string; readonly partitions: number }[];
  readonly group: string;
}

export interface WorkloadOptions {
  /** `gateway`: which of the target's URLs the producer writes through. @default 0 */
  readonly producers: readonly { readonly name: string; readonly idempotent: boolean; readonly acks: '1' | 'all'; readonly gateway?: number }[];
  /** This share of the producers' writes goes to `tp`, where they meet in its group commit; the rest anywhere. */
  readonly hot?: { readonly tp: TP; readonly share: number };
  readonly consumers: number;
  readonly readers: number;
  readonly sessionTimeoutMs: number;
  readonly random: () => number;
  /** Per request: past it the outcome is unknown. */
  readonly requestTimeoutMs: number;
}

export interface Reply { status: number; body: any; outcome: Outcome; error?: string }

/** One HTTP request with a deadline; its outcome as the history records it. */
export async function request(url: string, method: string, body: unknown, timeoutMs: number): Promise<Reply> {
  try {
    const r = await fetch(url, {
      method, signal: AbortSignal.timeout(timeoutMs),
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    const text = await r.text();
    let parsed: any;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    // A 5xx may or may not have happened (a store timed out after the write, say); a 4xx did not.
    const outcome: Outcome = r.status < 300 ? 'ok' : r.status >= 500 ? 'unknown' : 'fail';
    return { status: r.status, body: parsed, outcome, ...(r.status >= 300 ? { error: `${r.status} ${parsed?.message ?? ''}` } : {}) };
  } catch (err) {
    return { status: 0, body: undefined, outcome: 'unknown', error: (err as Error).message };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const key = (tp: TP) => `${tp.topic}#${tp.partition}`;

/** The partition's log start offset (a DeleteRecords or retention raises it), or undefined when it could not be read. */
export async function logStartOf(v3: string, tp: TP): Promise<number | undefined> {
  const r = await request(`${v3}/topics/${tp.topic}/partitions/${tp.partition}`, 'GET', undefined, 5000);
  return typeof r.body?.log_start_offset === 'number' ? r.body.log_start_offset : undefined;
}

/**
 * Where a reader whose fetch from `from` was out of range goes on: at the log start when it is
 * below it (auto.offset.reset=earliest); else (past the log end: an unclean election cut the log
 * back) it stays, and reads on once the log has grown past it. Undefined: the partition could not be read.
 */
async function resetPosition(v3: string, tp: TP, from: number): Promise<number | undefined> {
  const start = await logStartOf(v3, tp);
  return start === undefined ? undefined : Math.max(from, start);
}

interface WriteWatch { phase: 'sent' | 'acked'; tp: TP; gateway?: number; resolve: (w: { value: string; offset?: number }) => void }

export class Workload {
  private running = true;
  private readonly loops: Promise<void>[] = [];
  private readonly v3: string;
  /** Set during a quiet phase: producers send nothing (not even retries) until it is cleared. */
  private paused: Promise<void> | undefined;
  private unpause: (() => void) | undefined;
  private inFlight = 0;
  private watches: WriteWatch[] = [];

  constructor(private readonly t: WorkloadTarget, private readonly o: WorkloadOptions, private readonly h: Recorder) {
    this.v3 = `${t.urls[0]}/v3/clusters/${t.clusterId}`;
  }

  /**
   * Stops the writes: no producer sends a request from now on. Resolves once the writes in flight
   * have returned (or after `maxWaitMs`), with whether they all had.
   */
  async pauseWrites(maxWaitMs: number): Promise<boolean> {
    this.paused ??= new Promise((r) => (this.unpause = r));
    const until = Date.now() + maxWaitMs;
    while (this.inFlight > 0 && Date.now() < until) await sleep(20);
    return this.inFlight === 0;
  }

  resumeWrites(): void {
    this.unpause?.();
    this.paused = undefined;
    this.unpause = undefined;
  }

  /** The next acks=all write to `tp` sent or acknowledged (through gateway `gateway`, if given); undefined after `timeoutMs`. */
  nextWrite(w: { phase: 'sent' | 'acked'; tp: TP; gateway?: number }, timeoutMs: number): Promise<{ value: string; offset?: number } | undefined> {
    return new Promise((resolve) => {
      const watch: WriteWatch = { ...w, resolve };
      this.watches.push(watch);
      setTimeout(() => {
        if (!this.watches.includes(watch)) return;
        this.watches = this.watches.filter((x) => x !== watch);
        resolve(undefined);
      }, timeoutMs).unref();
    });
  }

  private notify(phase: 'sent' | 'acked', tp: TP, gateway: number, value: string, offset?: number): void {
    for (const w of this.watches) {
      if (w.phase !== phase || key(w.tp) !== key(tp) || (w.gateway !== undefined && w.gateway !== gateway)) continue;
      this.watches = this.watches.filter((x) => x !== w);
      w.resolve({ value, ...(offset === undefined ? {} : { offset }) });
    }
  }

  /** A producer's request: waits out a quiet phase, counts itself in flight, tells the watchers. */
  private async write(gateway: number, tp: TP, acks: string, value: string | undefined, send: () => Promise<Reply>): Promise<Reply> {
    while (this.paused) await this.paused;
    this.inFlight++;
    try {
      if (value !== undefined && acks === 'all') this.notify('sent', tp, gateway, value);
      const r = await send();
      if (value !== undefined && acks === 'all' && r.outcome === 'ok') this.notify('acked', tp, gateway, value, r.body?.offset);
      return r;
    } finally {
      this.inFlight--;
    }
  }

  start(): void {
    for (const p of this.o.producers) this.loops.push(this.producer(p));
    for (let i = 0; i < this.o.consumers; i++) this.loops.push(this.consumer(`consumer-${i}`));
    for (let i = 0; i < this.o.readers; i++) this.loops.push(this.reader(`reader-${i}`, i));
  }

  async stop(): Promise<void> {
    this.running = false;
    this.resumeWrites();
    await Promise.all(this.loops);
  }

  private pick(): TP {
    if (this.o.hot && this.o.random() < this.o.hot.share) return this.o.hot.tp;
    const topic = this.t.topics[Math.floor(this.o.random() * this.t.topics.length)] ?? this.t.topics[0]!;
    return { topic: topic.name, partition: Math.floor(this.o.random() * topic.partitions) };
  }

  private async producer(p: WorkloadOptions['producers'][number]): Promise<void> {
    const gateway = p.gateway ?? 0;
    const v3 = `${this.t.urls[gateway] ?? this.t.urls[0]}/v3/clusters/${this.t.clusterId}`;
    let n = 0;
    let producer: { producer_id: number; producer_epoch: number } | undefined;
    const sequences = new Map<string, number>();
    while (this.running) {
      const tp = this.pick();
      const value = `${p.name}-${n++}`;
      if (!p.idempotent) {
        const start = Date.now();
        const r = await this.write(gateway, tp, p.acks, value, () =>
          request(`${v3}/topics/${tp.topic}/records?acks=${p.acks}`, 'POST', { partition_id: tp.partition, value: { type: 'STRING', data: value } }, this.o.requestTimeoutMs));
        this.h.add({ type: 'produce', process: p.name, idempotent: false, acks: p.acks, ...tp, value, start, end: Date.now(), outcome: r.outcome, ...(r.outcome === 'ok' ? { offset: r.body.offset } : {}), ...(r.error ? { error: r.error } : {}) });
        if (r.outcome !== 'ok') await sleep(100); // a client backs off instead of spinning on a dead gateway
        continue;
      }
      // Idempotent: retry the same record (same sequence) until it is acknowledged, or start a new epoch.
      let retryUntil = Date.now() + 20_000;
      for (;;) {
        if (this.paused) {
          const waited = Date.now();
          while (this.paused) await this.paused;
          retryUntil += Date.now() - waited; // a quiet phase is not the producer's failure
        }
        if (!producer) {
          const init = await this.write(gateway, tp, 'all', undefined, () => request(`${v3}/producers`, 'POST', {}, this.o.requestTimeoutMs));
          if (init.outcome !== 'ok') {
            await sleep(200);
            if (!this.running) return;
            continue;
          }
          producer = init.body;
          sequences.clear();
        }
        const seq = sequences.get(key(tp)) ?? 0;
        const start = Date.now();
        const r = await this.write(gateway, tp, 'all', value, () => request(`${v3}/topics/${tp.topic}/records?acks=all&producer_id=${producer!.producer_id}&producer_epoch=${producer!.producer_epoch}`, 'POST',
          { partition_id: tp.partition, sequence: seq, value: { type: 'STRING', data: value } }, this.o.requestTimeoutMs));
        this.h.add({ type: 'produce', process: p.name, idempotent: true, acks: 'all', ...tp, value, start, end: Date.now(), outcome: r.outcome, ...(r.outcome === 'ok' ? { offset: r.body.offset } : {}), ...(r.error ? { error: r.error } : {}) });
        if (r.outcome === 'ok') {
          sequences.set(key(tp), seq + 1);
          break;
        }
        const fatal = /OUT_OF_ORDER_SEQUENCE_NUMBER|INVALID_PRODUCER_EPOCH|UNKNOWN_PRODUCER_ID/.test(r.error ?? '');
        if (fatal || Date.now() > retryUntil || !this.running) {
          producer = undefined; // a new producer identity: its sequences start again
          break;
        }
        await sleep(100);
      }
    }
  }

  private async consumer(name: string): Promise<void> {
    let memberId: string | undefined;
    let memberEpoch = 0;
    let held: TP[] = [];
    let lastOk = 0;
    let lastBeat = 0;
    const positions = new Map<string, number>();
    while (this.running) {
      const now = Date.now();
      if (now - lastBeat >= Math.min(1000, this.o.sessionTimeoutMs / 4)) {
        lastBeat = now;
        const r = await request(`${this.v3}/consumer-groups/${this.t.group}/heartbeat`, 'POST', {
          ...(memberId ? { member_id: memberId } : {}), member_epoch: memberEpoch,
          ...(memberEpoch === 0 ? { subscribed_topic_names: this.t.topics.map((x) => x.name), session_timeout_ms: this.o.sessionTimeoutMs } : {}),
          owned_partitions: held,
        }, this.o.requestTimeoutMs);
        if (r.outcome === 'ok') {
          memberId = r.body.member_id;
          memberEpoch = r.body.member_epoch;
          lastOk = now;
          const before = new Set(held.map(key));
          held = r.body.assignment as TP[];
          for (const tp of held) if (!before.has(key(tp))) positions.delete(key(tp)); // newly ours: start at the committed offset
          this.h.add({ type: 'assignment', process: name, group: this.t.group, memberId: memberId!, memberEpoch, groupEpoch: r.body.group_epoch, at: now, partitions: held });
        } else if (/UNKNOWN_MEMBER_ID|FENCED_MEMBER_EPOCH/.test(r.error ?? '')) {
          memberEpoch = 0;
          held = [];
          positions.clear();
        }
      }
      // The client side of the session: without a heartbeat for the session timeout, stop reading.
      if (Date.now() - lastOk > this.o.sessionTimeoutMs * 0.8 && held.length > 0) {
        held = [];
        positions.clear();
        this.h.add({ type: 'assignment', process: name, group: this.t.group, memberId: memberId ?? '', memberEpoch, groupEpoch: -1, at: Date.now(), partitions: [] });
      }
      for (const tp of held) {
        if (!this.running) break;
        if (!positions.has(key(tp))) {
          const c = await request(`${this.v3}/consumer-groups/${this.t.group}/offsets`, 'GET', undefined, this.o.requestTimeoutMs);
          if (c.outcome !== 'ok') continue;
          const found = (c.body.data as any[]).find((o) => o.topic_name === tp.topic && o.partition_id === tp.partition);
          positions.set(key(tp), found?.offset ?? 0);
        }
        const start = Date.now();
        const r = await request(`${this.v3}/topics/${tp.topic}/partitions/${tp.partition}/records?offset=${positions.get(key(tp))}&format=string&max_bytes=65536`, 'GET', undefined, this.o.requestTimeoutMs);
        const records = r.outcome === 'ok' ? (r.body.records as any[]).map((x) => ({ ...tp, offset: x.offset, value: x.value.data })) : [];
        this.h.add({ type: 'poll', process: name, group: this.t.group, memberId: memberId ?? '', memberEpoch, start, end: Date.now(), outcome: r.outcome, records, ...(r.error ? { error: r.error } : {}) });
        if (r.outcome === 'ok') positions.set(key(tp), r.body.next_offset);
        else if (/OFFSET_OUT_OF_RANGE/.test(r.error ?? '')) {
          // Below the log start: on from there; past the log end: from the committed offset again.
          const from = positions.get(key(tp))!;
          const to = await resetPosition(this.v3, tp, from);
          if (to !== undefined && to > from) positions.set(key(tp), to);
          else positions.delete(key(tp));
        }
      }
      // Commit after processing.
      const offsets = held.filter((tp) => positions.has(key(tp))).map((tp) => ({ ...tp, offset: positions.get(key(tp)) as number }));
      if (offsets.length > 0 && memberId) {
        const start = Date.now();
        const r = await request(`${this.v3}/consumer-groups/${this.t.group}/offsets:commit`, 'POST', { member_id: memberId, member_epoch: memberEpoch, offsets }, this.o.requestTimeoutMs);
        // Offsets the server kept because they were behind are not a commit of that offset.
        const kept = new Set(((r.body?.kept ?? []) as TP[]).map(key));
        this.h.add({ type: 'commit', process: name, group: this.t.group, memberId, start, end: Date.now(), outcome: r.outcome, offsets: offsets.filter((o) => !kept.has(key(o))), ...(r.error ? { error: r.error } : {}) });
      }
      await sleep(200);
    }
    if (memberId) await request(`${this.v3}/consumer-groups/${this.t.group}/heartbeat`, 'POST', { member_id: memberId, member_epoch: -1 }, this.o.requestTimeoutMs);
  }

  private async reader(name: string, index: number): Promise<void> {
    const all = this.t.topics.flatMap((t) => Array.from({ length: t.partitions }, (_, p) => ({ topic: t.name, partition: p })));
    const positions = new Map<string, number>();
    for (let i = index; this.running; i++) {
      const tp = all[i % all.length]!;
      const from = positions.get(key(tp)) ?? 0;
      const start = Date.now();
      const r = await request(`${this.v3}/topics/${tp.topic}/partitions/${tp.partition}/records?offset=${from}&format=string&max_bytes=65536`, 'GET', undefined, this.o.requestTimeoutMs);
      const records = r.outcome === 'ok' ? (r.body.records as any[]).map((x) => ({ offset: x.offset, value: x.value.data })) : [];
      this.h.add({ type: 'read', process: name, ...tp, fromOffset: from, start, end: Date.now(), outcome: r.outcome, records, ...(r.outcome === 'ok' ? { highWatermark: r.body.high_watermark } : {}), ...(r.error ? { error: r.error } : {}) });
      if (r.outcome === 'ok') positions.set(key(tp), r.body.next_offset);
      else if (/OFFSET_OUT_OF_RANGE/.test(r.error ?? '')) positions.set(key(tp), (await resetPosition(this.v3, tp, from)) ?? from);
      await sleep(50);
    }
  }
}

/** Reads every partition whole once the faults healed; `complete` says whether it got to the high watermark. */
export async function finalReads(t: WorkloadTarget, h: Recorder, deadline: number): Promise<void> {
  const v3 = `${t.urls[0]}/v3/clusters/${t.clusterId}`;
  for (const topic of t.topics) {
    for (let partition = 0; partition < topic.partitions; partition++) {
      const records: { offset: number; value: string }[] = [];
      let complete = false;
      for (let from = 0; Date.now() < deadline;) {
        const r = await request(`${v3}/topics/${topic.name}/partitions/${partition}/records?offset=${from}&format=string&max_bytes=4000000`, 'GET', undefined, 15_000);
        if (r.outcome !== 'ok') {
          if (/OFFSET_OUT_OF_RANGE/.test(r.error ?? '')) from = (await resetPosition(v3, { topic: topic.name, partition }, from)) ?? from;
          await sleep(500);
          continue;
        }
        records.push(...(r.body.records as any[]).map((x) => ({ offset: x.offset, value: x.value.data })));
        from = r.body.next_offset;
        if (from >= r.body.high_watermark) {
          complete = true;
          break;
        }
      }
      h.add({ type: 'final-read', topic: topic.name, partition, at: Date.now(), records, complete });
    }
  }
  const c = await request(`${v3}/consumer-groups/${t.group}/offsets`, 'GET', undefined, 15_000);
  if (c.outcome === 'ok') {
    h.add({ type: 'final-commits', group: t.group, at: Date.now(), offsets: (c.body.data as any[]).map((o) => ({ topic: o.topic_name, partition: o.partition_id, offset: o.offset })) });
  }
}

/**
 * The quiet phase's prober: fetches every partition from its lowest acknowledged-but-unread offset
 * up to the high watermark — or, with nothing unread, just below the high watermark its acks=all
 * records need — again every 250 ms, until nothing acknowledged by `start` is unread and every
 * partition's high watermark has been seen past its acks=all records, or `start + boundMs` has
 * passed. Its fetches go to the history as reads of process `liveness`. Returns how many records
 * and partitions were still waited for.
 */
export async function probeReadable(t: WorkloadTarget, h: Recorder, unread: Readability, start: number, boundMs: number): Promise<number> {
  const v3 = `${t.urls[0]}/v3/clusters/${t.clusterId}`;
  const deadline = start + boundMs;
  const hwSeen = new Map<string, number>();
  const fetchFrom = async (tp: TP, from: number, maxBytes: number): Promise<Reply> => {
    const begun = Date.now();
    const r = await request(`${v3}/topics/${tp.topic}/partitions/${tp.partition}/records?offset=${from}&format=string&max_bytes=${maxBytes}`, 'GET', undefined, Math.max(1000, Math.min(5000, deadline - begun)));
    const records = r.outcome === 'ok' ? (r.body.records as any[]).map((x) => ({ offset: x.offset, value: x.value.data })) : [];
    h.add({ type: 'read', process: 'liveness', topic: tp.topic, partition: tp.partition, fromOffset: from, start: begun, end: Date.now(), outcome: r.outcome, records, ...(r.outcome === 'ok' ? { highWatermark: r.body.high_watermark } : {}), ...(r.error ? { error: r.error } : {}) });
    if (r.outcome === 'ok') hwSeen.set(key(tp), Math.max(hwSeen.get(key(tp)) ?? -1, r.body.high_watermark));
    return r;
  };
  for (;;) {
    unread.update(h.events);
    const pending = unread.pending(start);
    const short = unread.needed(start).filter((n) => (hwSeen.get(key(n)) ?? -1) < n.hw && !pending.some((p) => key(p) === key(n)));
    const left = pending.reduce((n, p) => n + p.count, 0) + short.length;
    if (left === 0 || Date.now() >= deadline) return left;
    for (const p of pending) {
      for (let from = p.from; Date.now() < deadline;) {
        const r = await fetchFrom(p, from, 1_000_000);
        if (r.outcome !== 'ok' || r.body.records.length === 0 || r.body.next_offset >= r.body.high_watermark) break;
        from = r.body.next_offset;
      }
      // An acks=1 record above the leader's log end was truncated away: no point waiting for it.
      const leo = (await request(`${v3}/topics/${p.topic}/partitions/${p.partition}`, 'GET', undefined, 2000)).body?.log_end_offset;
      if (typeof leo === 'number') unread.truncated(p.topic, p.partition, leo);
    }
    for (const n of short) {
      if (Date.now() >= deadline) break;
      // Past the log end a fetch fails: then from the log start, for its high watermark only.
      const r = await fetchFrom(n, n.hw - 1, 1024);
      if (r.outcome === 'fail' && Date.now() < deadline) await fetchFrom(n, (await logStartOf(v3, n)) ?? 0, 1024);
    }
    await sleep(250);
  }
}
