/**
 * The transaction checker, in the spirit of Jepsen's Kafka transaction tests: judges the
 * transactional workload's events (txn-history.ts) for what read_committed and atomic commits
 * promise (docs/architecture.md "Transactions"). Pure and roughly linear in the history; checker.ts
 * calls it and reports its anomalies with the rest.
 */
import type { FinalCommitsEvent, HistoryEvent, Rec } from './history.js';
import type { TxnEndEvent, TxnFinalReadEvent, TxnOffsetsEvent, TxnReadEvent, TxnSendEvent } from './txn-history.js';

/** The kinds this checker reports, in report order (checker.ts's KIND_ORDER lists them too). */
export const TXN_ANOMALY_KINDS = [
  'aborted-read', 'intermediate-read', 'control-record-read', 'read-past-lso', 'skipped-committed-read', 'lost-committed-write',
  'non-atomic-visibility', 'txn-duplicate', 'txn-inconsistent-offset', 'aborted-offsets', 'lost-committed-offsets',
] as const;

/** Its own kinds, and the liveness kind it shares with checker.ts (a final read stuck behind an open transaction). */
export type TxnAnomalyKind = (typeof TXN_ANOMALY_KINDS)[number] | 'unreadable-after-heal';

export interface TxnAnomaly { kind: TxnAnomalyKind; message: string; events: number[] }

export interface TxnCounts {
  /** Transactions begun. */
  transactions: number;
  /** Their commit acknowledged. */
  committed: number;
  /** Never committed: an abort acknowledged, a commit refused, or no commit asked (the producer re-inited). */
  aborted: number;
  /** Of `aborted`, those whose abort was acknowledged. */
  abortsAcknowledged: number;
  /** A commit asked whose answer was lost: all of the transaction or none of it may be visible. */
  unknown: number;
  /** Send attempts, and the values acknowledged. */
  sends: number;
  acknowledgedSends: number;
  /** read_committed fetches during the run. */
  reads: number;
  /** Inits, sends, offsets, ends and reads. */
  operations: number;
}

export interface TxnReport { anomalies: TxnAnomaly[]; counts: TxnCounts }

type Fate = 'committed' | 'aborted' | 'unknown';

interface Txn {
  name: string;
  transactionalId: string;
  /** Send attempts, offsets and end requests, in history order. */
  sends: TxnSendEvent[];
  offsets: TxnOffsetsEvent[];
  ends: TxnEndEvent[];
  fate: Fate;
  /** Why it counts as aborted (for messages). */
  why: string;
  /** When its first commit was asked (Infinity: never). */
  commitAsked: number;
  /** Committed, or its outcome unknown but a read_committed read during the run returned one of its values (so it committed). */
  committed: boolean;
}

/** Where a value was acknowledged or read. */
interface Seen { topic: string; partition: number; offset: number; ids: number[] }

const MAX_IDS = 8;
const tpKey = (topic: string, partition: number): string => `${topic}#${partition}`;
const tpName = (p: { topic: string; partition: number }): string => `${p.topic}/${p.partition}`;
const label = (t: Txn): string => `transaction ${t.name} of ${t.transactionalId}`;
const push = (ids: number[], id: number): void => {
  if (ids.length < MAX_IDS && !ids.includes(id)) ids.push(id);
};

/** What a transaction came to: committed if a commit was acknowledged; unknown if a commit's answer was lost; aborted otherwise. */
function fateOf(t: Pick<Txn, 'ends'>): { fate: Fate; why: string } {
  if (t.ends.some((e) => e.commit && e.outcome === 'ok')) return { fate: 'committed', why: 'committed' };
  if (t.ends.some((e) => !e.commit && e.outcome === 'ok')) return { fate: 'aborted', why: 'was aborted (abort acknowledged)' };
  if (t.ends.some((e) => e.commit && e.outcome === 'unknown')) return { fate: 'unknown', why: 'has an unknown outcome' };
  if (t.ends.some((e) => e.commit)) return { fate: 'aborted', why: 'never committed (its commit was refused)' };
  return { fate: 'aborted', why: 'never committed (no commit was asked)' };
}

/**
 * Judges the transactional events of a history. Rules, each anomaly naming the transactional id,
 * the partition, offset and value, and the events involved:
 * - aborted-read: a read_committed read (during the run or the final one) returned a value of a
 *   transaction that never committed: its abort was acknowledged, its commit refused, or no commit
 *   was asked for it.
 * - intermediate-read: a read_committed read that ended before its transaction's commit was asked
 *   returned one of its values.
 * - control-record-read: a read_committed read returned a value no transactional send wrote (a
 *   commit or abort marker, say).
 * - read-past-lso: a read returned an offset at or above the last stable offset it answered with.
 * - skipped-committed-read: a read moved past (from its fetch offset to its next offset) the offset
 *   of an acknowledged send of a committed transaction without returning it.
 * - lost-committed-write: an acknowledged send of a committed transaction is missing from the
 *   complete final read of its partition.
 *   (For these two, a transaction whose commit answer was lost counts as committed once a read
 *   during the run returned one of its values.)
 * - non-atomic-visibility: the final reads hold some but not all of a transaction's acknowledged
 *   sends (judged over partitions whose final read is complete).
 * - txn-duplicate / txn-inconsistent-offset: a value at two offsets; an offset with two values
 *   (among acknowledgements and reads).
 * - aborted-offsets: a group's final committed offset was sent only in transactions that never
 *   committed, or in none (offsets are unique to their transaction).
 * - lost-committed-offsets: a group's final committed offset of a partition is missing or below an
 *   offset a committed transaction sent for it (committed offsets never go backwards).
 * - unreadable-after-heal: a final read_committed read that could not get to the high watermark with
 *   nothing open.
 */
export function checkTransactions(events: readonly HistoryEvent[]): TxnReport {
  const anomalies: TxnAnomaly[] = [];
  const add = (kind: TxnAnomalyKind, message: string, ids: Iterable<number>): void =>
    void anomalies.push({ kind, message, events: [...new Set(ids)].sort((a, b) => a - b) });
  const txns = new Map<string, Txn>();
  const txnOf = (name: string, transactionalId: string): Txn => {
    let t = txns.get(name);
    if (!t) txns.set(name, (t = { name, transactionalId, sends: [], offsets: [], ends: [], fate: 'aborted', why: '', commitAsked: Infinity, committed: false }));
    return t;
  };
  const reads: TxnReadEvent[] = [];
  const finals: TxnFinalReadEvent[] = [];
  const finalCommits: FinalCommitsEvent[] = [];
  let inits = 0;
  let begun = 0;
  for (const e of events) {
    switch (e.type) {
      case 'txn-init': inits++; break;
      case 'txn-begin': begun++; txnOf(e.txn, e.transactionalId); break;
      case 'txn-send': txnOf(e.txn, e.transactionalId).sends.push(e); break;
      case 'txn-offsets': txnOf(e.txn, e.transactionalId).offsets.push(e); break;
      case 'txn-end': txnOf(e.txn, e.transactionalId).ends.push(e); break;
      case 'txn-read': reads.push(e); break;
      case 'txn-final-read': finals.push(e); break;
      case 'final-commits': finalCommits.push(e); break;
      default: break;
    }
  }
  const valueTxn = new Map<string, Txn>();
  const acked = new Map<string, TxnSendEvent>(); // value → its acknowledged send
  for (const t of txns.values()) {
    Object.assign(t, fateOf(t));
    t.commitAsked = Math.min(Infinity, ...t.ends.filter((e) => e.commit).map((e) => e.start));
    for (const s of t.sends) {
      valueTxn.set(s.value, t);
      if (s.outcome === 'ok' && s.offset !== undefined && !acked.has(s.value)) acked.set(s.value, s);
    }
  }
  const endIds = (t: Txn): number[] => t.ends.map((e) => e.id);
  const sendIds = (t: Txn, values: Iterable<string>): number[] => {
    const wanted = new Set(values);
    return t.sends.filter((s) => wanted.has(s.value)).map((s) => s.id);
  };

  // What every read returned, value by value: aborted, intermediate and control-record reads.
  const judgeRead = (who: string, id: number, topic: string, partition: number, records: readonly Rec[], end: number | undefined): void => {
    const byTxn = new Map<Txn, Rec[]>();
    for (const r of records) {
      const t = valueTxn.get(r.value);
      if (!t) {
        add('control-record-read', `${who} of ${tpName({ topic, partition })} returned offset ${r.offset} with value "${r.value}", which no transactional send wrote`, [id]);
        continue;
      }
      let list = byTxn.get(t);
      if (!list) byTxn.set(t, (list = []));
      list.push(r);
    }
    for (const [t, recs] of byTxn) {
      const what = recs.map((r) => `"${r.value}" at offset ${r.offset}`).join(', ');
      if (t.fate === 'aborted') {
        add('aborted-read', `${who} of ${tpName({ topic, partition })} returned ${what} of ${label(t)}, which ${t.why}`, [id, ...sendIds(t, recs.map((r) => r.value)), ...endIds(t)]);
      } else if (end !== undefined && end < t.commitAsked) {
        add('intermediate-read', `${who} of ${tpName({ topic, partition })} ended at ${end}, before the commit of ${label(t)} was asked at ${t.commitAsked}, and returned ${what}`,
          [id, ...sendIds(t, recs.map((r) => r.value)), ...endIds(t)]);
      }
    }
  };

  for (const t of txns.values()) t.committed = t.fate === 'committed';
  for (const r of reads) {
    if (r.outcome !== 'ok') continue;
    for (const x of r.records) {
      const t = valueTxn.get(x.value);
      if (t?.fate === 'unknown') t.committed = true;
    }
  }
  // Committed acknowledged sends per partition, by offset: what a read moving past must have returned.
  const committedAt = new Map<string, Map<number, TxnSendEvent>>();
  for (const s of acked.values()) {
    if (!valueTxn.get(s.value)?.committed) continue;
    const k = tpKey(s.topic, s.partition);
    let m = committedAt.get(k);
    if (!m) committedAt.set(k, (m = new Map()));
    m.set(s.offset!, s);
  }

  for (const r of reads) {
    if (r.outcome !== 'ok') continue;
    const who = `${r.process}'s read_committed fetch from offset ${r.fromOffset}`;
    judgeRead(who, r.id, r.topic, r.partition, r.records, r.end);
    const lso = r.lastStableOffset;
    const past = lso === undefined ? undefined : r.records.find((x) => x.offset >= lso);
    const of = (value: string): string => (valueTxn.has(value) ? ` of ${label(valueTxn.get(value)!)}` : '');
    if (past) add('read-past-lso', `${who} of ${tpName(r)} returned offset ${past.offset} ("${past.value}"${of(past.value)}) at or above the last stable offset ${lso} of the same answer`, [r.id]);
    const next = r.nextOffset;
    const committed = committedAt.get(tpKey(r.topic, r.partition));
    if (next === undefined || !committed) continue;
    const got = new Set(r.records.map((x) => x.value));
    for (const [offset, s] of committed) {
      if (offset < r.fromOffset || offset >= next || got.has(s.value)) continue;
      const t = valueTxn.get(s.value)!;
      add('skipped-committed-read', `${who} of ${tpName(r)} moved on to offset ${next} without returning "${s.value}" at offset ${offset}, an acknowledged send of ${label(t)}`, [r.id, s.id, ...endIds(t)]);
    }
  }

  // The last complete final read of each partition.
  const last = new Map<string, TxnFinalReadEvent>();
  for (const f of finals) {
    judgeRead('the final read_committed read', f.id, f.topic, f.partition, f.records, undefined);
    if (!f.complete) {
      add('unreadable-after-heal', `the final read_committed read of ${tpName(f)} could not get to the high watermark ${f.highWatermark ?? '?'} with nothing open after the heal (last stable offset ${f.lastStableOffset ?? '?'}; got ${f.records.length} records)`, [f.id]);
      continue;
    }
    const prev = last.get(tpKey(f.topic, f.partition));
    if (!prev || f.at > prev.at || (f.at === prev.at && f.id > prev.id)) last.set(tpKey(f.topic, f.partition), f);
  }
  const finalValues = new Map<string, Set<string>>();
  for (const [k, f] of last) finalValues.set(k, new Set(f.records.map((r) => r.value)));

  // Committed writes present, and every transaction all or nothing.
  for (const t of txns.values()) {
    const present: string[] = [];
    const missing: string[] = [];
    const at = new Map<string, string>(); // value → where it was acknowledged
    const finalIds = new Set<number>();
    for (const s of t.sends) {
      if (acked.get(s.value) !== s) continue;
      const f = last.get(tpKey(s.topic, s.partition));
      if (!f) continue;
      finalIds.add(f.id);
      at.set(s.value, `"${s.value}" (${tpName(s)} offset ${s.offset})`);
      (finalValues.get(tpKey(s.topic, s.partition))!.has(s.value) ? present : missing).push(s.value);
      if (t.committed && !finalValues.get(tpKey(s.topic, s.partition))!.has(s.value)) {
        add('lost-committed-write', `"${s.value}" of ${label(t)}${t.fate === 'committed' ? '' : ' (its commit answer was lost, but a read returned its values)'}, acknowledged at ${tpName(s)} offset ${s.offset}, is missing from the final read_committed read (${f.records.length} records)`, [s.id, f.id, ...endIds(t)]);
      }
    }
    if (present.length > 0 && missing.length > 0) {
      add('non-atomic-visibility', `the final reads hold ${present.length} of the ${present.length + missing.length} acknowledged sends of ${label(t)} (${t.fate}): present ${present.map((v) => at.get(v)).join(', ')}; missing ${missing.map((v) => at.get(v)).join(', ')}`,
        [...sendIds(t, [...present, ...missing]), ...endIds(t), ...finalIds]);
    }
  }

  // Each value at one offset, each offset one value: acknowledgements, reads and final reads.
  const where = new Map<string, Seen[]>(); // value → locations
  const at = new Map<string, Map<string, number[]>>(); // topic#partition#offset → value → ids
  const observe = (topic: string, partition: number, offset: number, value: string, id: number): void => {
    let locs = where.get(value);
    if (!locs) where.set(value, (locs = []));
    let l = locs.find((x) => x.topic === topic && x.partition === partition && x.offset === offset);
    if (!l) locs.push((l = { topic, partition, offset, ids: [] }));
    push(l.ids, id);
    const k = `${tpKey(topic, partition)}#${offset}`;
    let values = at.get(k);
    if (!values) at.set(k, (values = new Map()));
    let ids = values.get(value);
    if (!ids) values.set(value, (ids = []));
    push(ids, id);
  };
  for (const s of acked.values()) observe(s.topic, s.partition, s.offset!, s.value, s.id);
  for (const r of reads) if (r.outcome === 'ok') for (const x of r.records) observe(r.topic, r.partition, x.offset, x.value, r.id);
  for (const f of finals) for (const x of f.records) observe(f.topic, f.partition, x.offset, x.value, f.id);
  for (const [value, locs] of where) {
    if (locs.length < 2) continue;
    const t = valueTxn.get(value);
    add('txn-duplicate', `"${value}"${t ? ` of ${label(t)}` : ''} is at ${locs.length} offsets: ${locs.map((l) => `${tpName(l)} offset ${l.offset} (events ${l.ids.join(', ')})`).join(', ')}`,
      locs.flatMap((l) => l.ids));
  }
  for (const [k, values] of at) {
    if (values.size < 2) continue;
    const [topic, partition, offset] = k.split('#');
    const of = (v: string): string => (valueTxn.has(v) ? ` of ${label(valueTxn.get(v)!)}` : '');
    add('txn-inconsistent-offset', `${topic}/${partition} offset ${offset} holds ${values.size} values: ${[...values].map(([v, ids]) => `"${v}"${of(v)} (events ${ids.join(', ')})`).join(' vs ')}`,
      [...values.values()].flat());
  }

  checkOffsets(txns, finalCommits, add);

  const counts: TxnCounts = {
    transactions: begun, committed: 0, aborted: 0, abortsAcknowledged: 0, unknown: 0,
    sends: 0, acknowledgedSends: acked.size, reads: reads.length, operations: inits + reads.length,
  };
  for (const t of txns.values()) {
    counts[t.fate]++;
    if (t.ends.some((e) => !e.commit && e.outcome === 'ok')) counts.abortsAcknowledged++;
    counts.sends += t.sends.length;
    counts.operations += t.sends.length + t.offsets.length + t.ends.length;
  }
  return { anomalies, counts };
}

/** aborted-offsets and lost-committed-offsets, for the groups transactions sent offsets to. */
function checkOffsets(txns: ReadonlyMap<string, Txn>, finalCommits: readonly FinalCommitsEvent[], add: (kind: TxnAnomalyKind, message: string, ids: Iterable<number>) => void): void {
  const sentBy = new Map<string, { txn: Txn; event: TxnOffsetsEvent }[]>(); // group#topic#partition#offset → its senders
  const highest = new Map<string, { offset: number; txn: Txn; event: TxnOffsetsEvent }>(); // group#topic#partition → highest committed
  for (const t of txns.values()) {
    for (const e of t.offsets) {
      for (const o of e.offsets) {
        const k = `${e.group}#${tpKey(o.topic, o.partition)}`;
        let list = sentBy.get(`${k}#${o.offset}`);
        if (!list) sentBy.set(`${k}#${o.offset}`, (list = []));
        list.push({ txn: t, event: e });
        const h = highest.get(k);
        if (t.fate === 'committed' && e.outcome === 'ok' && (!h || o.offset > h.offset)) highest.set(k, { offset: o.offset, txn: t, event: e });
      }
    }
  }
  const groups = new Set([...txns.values()].flatMap((t) => t.offsets.map((e) => e.group)));
  for (const f of finalCommits) {
    if (!groups.has(f.group)) continue;
    const finalAt = new Map(f.offsets.map((o) => [tpKey(o.topic, o.partition), o.offset]));
    for (const o of f.offsets) {
      const senders = sentBy.get(`${f.group}#${tpKey(o.topic, o.partition)}#${o.offset}`) ?? [];
      if (senders.some((s) => s.txn.fate !== 'aborted')) continue;
      const why = senders.length === 0 ? 'no transaction sent it' : `it was sent only in ${senders.map((s) => `${label(s.txn)}, which ${s.txn.why}`).join('; ')}`;
      add('aborted-offsets', `group ${f.group}'s final committed offset of ${tpName(o)} is ${o.offset}, but ${why}`, [f.id, ...senders.flatMap((s) => [s.event.id, ...s.txn.ends.map((e) => e.id)])]);
    }
    for (const [k, h] of highest) {
      if (!k.startsWith(`${f.group}#`)) continue;
      const offset = finalAt.get(k.slice(f.group.length + 1));
      if (offset !== undefined && offset >= h.offset) continue;
      add('lost-committed-offsets', `group ${f.group}'s final committed offset of ${k.slice(f.group.length + 1).replace('#', '/')} is ${offset ?? 'missing'}, below ${h.offset}, sent by ${label(h.txn)}, which committed`,
        [f.id, h.event.id, ...h.txn.ends.map((e) => e.id)]);
    }
  }
}
