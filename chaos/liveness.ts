/**
 * Liveness: after a fault heals and the writes stop (a quiet phase), every acknowledged record
 * becomes readable — below the high watermark, through a fetch — within a stated bound. Nothing
 * must wait for a write that never comes (docs/architecture.md, "Replication"). `checkLiveness`
 * judges a history; `Readability` tells the prober of a running quiet phase what is still unread.
 */
import { AllowedLoss } from './allowed-loss.js';
import type { FaultEvent, FinalReadEvent, HistoryEvent, PollEvent, ProduceEvent, QuietEvent, ReadEvent } from './history.js';

const key = (topic: string, partition: number): string => `${topic}#${partition}`;

/** An acknowledged record whose offset a reader may see: acks=all, or acks=1 (lost only with its leader). */
const acknowledged = (p: ProduceEvent): boolean => p.outcome === 'ok' && p.offset !== undefined && (p.acks === 'all' || p.acks === '1');

export interface LivenessViolation {
  message: string;
  events: number[];
}

/**
 * Two rules. Every record acknowledged before a quiet phase began is read by someone (a reader, a consumer,
 * the quiet phase's prober, the final read) by `start + boundMs` of the first quiet phase after
 * its acknowledgement. An acks=1 record missing from the final read was lost with its leader
 * (allowed for acks=1), so it is not held to the bound; nor is a record an unclean election may
 * have cost (at or above its cut, acknowledged by its election) or one below a DeleteRecords sent
 * by the phase's deadline (see `allowed-loss.ts`). Each record is reported once, with the
 * time waited: until it was first read, or until the quiet phase ended if it never was. And in
 * every quiet phase each partition's high watermark reaches past its acks=all records (below).
 */
export function checkLiveness(
  produces: readonly ProduceEvent[], reads: readonly ReadEvent[], polls: readonly PollEvent[], finals: readonly FinalReadEvent[],
  quiets: readonly QuietEvent[], faults: readonly FaultEvent[],
): LivenessViolation[] {
  if (quiets.length === 0) return [];
  const firstSeen = new Map<string, Map<string, { at: number; id: number }>>(); // partition → value → first read
  const saw = (topic: string, partition: number, value: string, at: number, id: number): void => {
    const k = key(topic, partition);
    let m = firstSeen.get(k);
    if (!m) firstSeen.set(k, (m = new Map()));
    const prev = m.get(value);
    if (!prev || at < prev.at) m.set(value, { at, id });
  };
  for (const r of reads) if (r.outcome === 'ok') for (const x of r.records) saw(r.topic, r.partition, x.value, r.end, r.id);
  for (const p of polls) if (p.outcome === 'ok') for (const x of p.records) saw(x.topic, x.partition, x.value, p.end, p.id);
  for (const f of finals) for (const x of f.records) saw(f.topic, f.partition, x.value, f.at, f.id);
  const lastFinal = new Map<string, Set<string>>();
  for (const f of [...finals].filter((x) => x.complete).sort((a, b) => a.at - b.at || a.id - b.id)) {
    lastFinal.set(key(f.topic, f.partition), new Set(f.records.map((x) => x.value)));
  }
  const sorted = [...quiets].sort((a, b) => a.start - b.start || a.id - b.id);
  const loss = AllowedLoss.from(faults);
  const faultById = new Map(faults.map((f) => [f.id, f]));
  const afterFault = (q: QuietEvent): string => {
    const fault = q.fault === undefined ? undefined : faultById.get(q.fault);
    return fault ? ` after ${fault.kind} of ${fault.target} (event ${fault.id})` : '';
  };
  const out: LivenessViolation[] = [];
  const reported = new Set<number>(); // ids of the produce events reported
  for (const p of produces) {
    if (!acknowledged(p)) continue;
    const q = firstAtOrAfter(sorted, p.end);
    if (!q) continue;
    const seen = firstSeen.get(key(p.topic, p.partition))?.get(p.value);
    const deadline = q.start + q.boundMs;
    if (seen && seen.at <= deadline) continue;
    if (p.acks === '1' && !lastFinal.get(key(p.topic, p.partition))?.has(p.value)) continue;
    if (loss.allows(p.topic, p.partition, p.offset!, p.end, deadline)) continue;
    const fault = q.fault === undefined ? undefined : faultById.get(q.fault);
    const after = afterFault(q);
    reported.add(p.id);
    const waited = seen
      ? `first read ${seen.at - q.start} ms after it began (event ${seen.id})`
      : `never read; waited ${q.end - q.start} ms, to the phase's end`;
    out.push({
      message: `acks=${p.acks} write "${p.value}" by ${p.process} acknowledged at ${p.topic}/${p.partition} offset ${p.offset} (event ${p.id}) ` +
        `was not readable within ${q.boundMs} ms of the quiet phase that began at ${q.start}${after}: ${waited}`,
      events: [p.id, q.id, ...(seen ? [seen.id] : []), ...(fault ? [fault.id] : [])],
    });
  }
  out.push(...checkHighWatermarks(produces, reads, sorted, loss, afterFault, reported));
  return out;
}

/**
 * In every quiet phase, the high watermark of each partition, as fetches during the phase saw it,
 * reaches past every acks=all record acknowledged before the phase began — even one read earlier
 * (a new leader's high watermark must catch up with no new write) — except the records a fault
 * allowed to be lost (an unclean election's new leader may end below them). Reported with the
 * first record left below it, once per record (a partition stuck on one record is one anomaly).
 */
function checkHighWatermarks(
  produces: readonly ProduceEvent[], reads: readonly ReadEvent[], quiets: readonly QuietEvent[], loss: AllowedLoss,
  afterFault: (q: QuietEvent) => string, reported: Set<number>,
): LivenessViolation[] {
  const byPartition = new Map<string, ProduceEvent[]>();
  for (const p of produces) {
    if (p.acks !== 'all' || !acknowledged(p)) continue;
    const k = key(p.topic, p.partition);
    let list = byPartition.get(k);
    if (!list) byPartition.set(k, (list = []));
    list.push(p);
  }
  const readsOf = new Map<string, ReadEvent[]>();
  for (const r of reads) {
    if (r.outcome !== 'ok' || r.highWatermark === undefined) continue;
    const k = key(r.topic, r.partition);
    let list = readsOf.get(k);
    if (!list) readsOf.set(k, (list = []));
    list.push(r);
  }
  const out: LivenessViolation[] = [];
  for (const q of quiets) {
    const deadline = q.start + q.boundMs;
    for (const [k, acked] of byPartition) {
      const before = acked.filter((p) => p.end <= q.start && !loss.allows(p.topic, p.partition, p.offset!, p.end, deadline));
      if (before.length === 0) continue;
      const need = Math.max(...before.map((p) => p.offset! + 1));
      let best: ReadEvent | undefined;
      for (const r of readsOf.get(k) ?? []) {
        if (r.start >= q.start && r.end <= deadline && (!best || r.highWatermark! > best.highWatermark!)) best = r;
      }
      const hw = best?.highWatermark ?? -1;
      if (hw >= need) continue;
      const first = before.filter((p) => p.offset! >= hw).sort((a, b) => a.offset! - b.offset!)[0]!;
      if (reported.has(first.id)) continue;
      reported.add(first.id);
      out.push({
        message: `${first.topic}/${first.partition}: acks=all write "${first.value}" by ${first.process} acknowledged at offset ${first.offset} (event ${first.id}) ` +
          `was not below the high watermark within ${q.boundMs} ms of the quiet phase that began at ${q.start}${afterFault(q)}: ` +
          `${best ? `the highest high watermark fetched in time was ${hw} (event ${best.id})` : 'no fetch of the partition succeeded in time'}; waited ${q.end - q.start} ms, to the phase's end`,
        events: [first.id, q.id, ...(best ? [best.id] : [])],
      });
    }
  }
  return out;
}

/** The first quiet phase starting at or after `t` (sorted by start). */
function firstAtOrAfter(sorted: readonly QuietEvent[], t: number): QuietEvent | undefined {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]!.start < t) lo = mid + 1;
    else hi = mid;
  }
  return sorted[lo];
}

interface Unread { value: string; acks: string; end: number }

/**
 * The acknowledged records nobody has read yet, kept up to date from the growing history. An acks=1
 * record whose offset is read holding another value was truncated away (allowed): it is unread no
 * more; nor is a record an unclean election or a DeleteRecords (a fault event) may have cost.
 */
export class Readability {
  private scanned = 0;
  private readonly loss = new AllowedLoss();
  private readonly unread = new Map<string, { topic: string; partition: number; byOffset: Map<number, Unread> }>();
  private readonly seen = new Set<string>(); // partition#value, read before its acknowledgement came back
  /** Per partition, the acks=all acknowledgements: (end, offset + 1), for the high watermark they need. */
  private readonly ends = new Map<string, { topic: string; partition: number; acks: { end: number; next: number }[] }>();

  update(events: readonly HistoryEvent[]): void {
    for (; this.scanned < events.length; this.scanned++) {
      const e = events[this.scanned]!;
      if (e.type === 'produce' && acknowledged(e)) {
        if (this.loss.allows(e.topic, e.partition, e.offset!, e.end)) continue;
        if (e.acks === 'all') {
          const k = key(e.topic, e.partition);
          let a = this.ends.get(k);
          if (!a) this.ends.set(k, (a = { topic: e.topic, partition: e.partition, acks: [] }));
          a.acks.push({ end: e.end, next: e.offset! + 1 });
        }
        if (this.seen.has(`${key(e.topic, e.partition)}#${e.value}`)) continue;
        const k = key(e.topic, e.partition);
        let u = this.unread.get(k);
        if (!u) this.unread.set(k, (u = { topic: e.topic, partition: e.partition, byOffset: new Map() }));
        u.byOffset.set(e.offset!, { value: e.value, acks: e.acks, end: e.end });
      } else if (e.type === 'read' && e.outcome === 'ok') {
        for (const x of e.records) this.read(e.topic, e.partition, x.offset, x.value);
      } else if (e.type === 'poll' && e.outcome === 'ok') {
        for (const x of e.records) this.read(x.topic, x.partition, x.offset, x.value);
      } else if (e.type === 'fault' && (e.cut || e.deletion)) {
        this.loss.add(e);
        for (const tp of [e.cut, e.deletion]) if (tp) this.drop(tp.topic, tp.partition);
      }
    }
  }

  /** Stops waiting for the partition's records a fault may have cost. */
  private drop(topic: string, partition: number): void {
    const k = key(topic, partition);
    const u = this.unread.get(k)?.byOffset;
    for (const [offset, r] of u ?? []) if (this.loss.allows(topic, partition, offset, r.end)) u!.delete(offset);
    const a = this.ends.get(k);
    if (a) a.acks = a.acks.filter((x) => !this.loss.allows(topic, partition, x.next - 1, x.end));
  }

  private read(topic: string, partition: number, offset: number, value: string): void {
    const k = key(topic, partition);
    this.seen.add(`${k}#${value}`);
    const u = this.unread.get(k)?.byOffset;
    const r = u?.get(offset);
    if (r && (r.value === value || r.acks === '1')) u!.delete(offset);
  }

  /**
   * Stops waiting for the acks=1 records at or above the leader's log end offset `leo`: truncated
   * away with their leader (allowed), they can never be read.
   */
  truncated(topic: string, partition: number, leo: number): void {
    const u = this.unread.get(key(topic, partition))?.byOffset;
    for (const [offset, r] of u ?? []) if (offset >= leo && r.acks === '1') u!.delete(offset);
  }

  /**
   * Stops waiting for the records acknowledged by `at`: a quiet phase waited its bound for them, and
   * the checker reports them; the next phases wait only for newer ones.
   */
  forget(at: number): void {
    for (const u of this.unread.values()) for (const [offset, r] of u.byOffset) if (r.end <= at) u.byOffset.delete(offset);
  }

  /** Per partition, the records acknowledged by `at` still unread and the lowest offset among them. */
  pending(at: number): { topic: string; partition: number; from: number; count: number }[] {
    const out: { topic: string; partition: number; from: number; count: number }[] = [];
    for (const u of this.unread.values()) {
      let from = Infinity;
      let count = 0;
      for (const [offset, r] of u.byOffset) {
        if (r.end > at) continue;
        count++;
        if (offset < from) from = offset;
      }
      if (count > 0) out.push({ topic: u.topic, partition: u.partition, from, count });
    }
    return out;
  }

  /** Per partition, the high watermark that puts every acks=all record acknowledged by `at` below it. */
  needed(at: number): { topic: string; partition: number; hw: number }[] {
    const out: { topic: string; partition: number; hw: number }[] = [];
    for (const a of this.ends.values()) {
      let hw = 0;
      for (const x of a.acks) if (x.end <= at && x.next > hw) hw = x.next;
      if (hw > 0) out.push({ topic: a.topic, partition: a.partition, hw });
    }
    return out;
  }
}
