/**
 * The consistency checker: judges a recorded chaos history against the invariants in
 * docs/architecture.md, the way Jepsen's Kafka checker does — every anomaly names the
 * topic/partition/offset/value and the events involved. Pure and roughly linear in the history
 * (maps keyed by `topic#partition`, a few sorts), so a 100k-event history checks in well under a
 * second.
 */
import type { AssignmentEvent, CommitEvent, FaultEvent, FinalCommitsEvent, FinalReadEvent, HistoryEvent, PollEvent, ProduceEvent, PushFinalEvent, QuietEvent, ReadEvent } from './history.js';
import { checkPush } from './push-checker.js';
import { ALLOWED_KINDS, AllowedLoss, readsBelowLogStart, type Allowed, type AllowedKind } from './allowed-loss.js';
import { checkLiveness } from './liveness.js';
import { checkTransactions, type TxnCounts } from './txn-checker.js';

const KIND_ORDER = {
  'lost-write': 0, 'inconsistent-offset': 1, duplicate: 2, divergence: 3, 'read-above-hw': 4, 'read-backwards': 5,
  'read-below-log-start': 6, 'poll-skip': 7, 'commit-backwards': 8, 'double-ownership': 9, 'unreadable-after-heal': 10,
  'unreadable-in-quiet': 11, 'push-skip': 12, 'push-behind': 13, // (the push subscription's: push-checker.ts) then the transactional workload's (txn-checker.ts):
  'aborted-read': 14, 'intermediate-read': 15, 'control-record-read': 16, 'read-past-lso': 17, 'skipped-committed-read': 18, 'lost-committed-write': 19,
  'non-atomic-visibility': 20, 'txn-duplicate': 21, 'txn-inconsistent-offset': 22, 'aborted-offsets': 23, 'lost-committed-offsets': 24,
} as const;

/** The readers the cluster pushes records to (push-reader.ts, ws-reader.ts): their reads have no start of their own. */
const PUSHED_READERS = new Set(['push', 'ws']);

/** What can go wrong; the order is the order of the report. */
export type AnomalyKind = keyof typeof KIND_ORDER;

/** Every anomaly kind, in report order. */
export const ANOMALY_KINDS = Object.keys(KIND_ORDER) as readonly AnomalyKind[];

export interface Anomaly {
  kind: AnomalyKind;
  /** Names the topic/partition, offset, value and the processes involved. */
  message: string;
  /** Ids of the events involved, ascending. */
  events: number[];
}

export type { Allowed, AllowedKind } from './allowed-loss.js';

export interface CheckReport {
  /** At most `maxAnomaliesPerKind` of each kind, grouped by kind in {@link ANOMALY_KINDS} order. */
  anomalies: Anomaly[];
  /** How many anomalies of each kind were found, including those left out of `anomalies`. */
  anomalyTotals: Record<AnomalyKind, number>;
  /** What looked like anomalies but are losses a fault allowed, at most `maxAnomaliesPerKind` of each kind. */
  allowed: Allowed[];
  /** How many allowed losses of each kind were found, including those left out of `allowed`. */
  allowedTotals: Record<AllowedKind, number>;
  counts: {
    /** Client operations: produces, reads, polls and commits, and the transactional workload's. */
    operations: number;
    produced: number;
    /** Produce events with outcome 'ok' (any acks). */
    acknowledged: number;
    /** Produce events with outcome 'ok' and acks 'all'. */
    acknowledgedAll: number;
    reads: number;
    polls: number;
    commits: number;
    /** Fault events by kind. */
    faults: Record<string, number>;
    /** Quiet phases (no writes after a fault) whose liveness was judged. */
    quietPhases: number;
    /** acks=all writes missing from the final read, acknowledged before an unclean election that cut their offset. */
    uncleanLoss: number;
    /** acks=all writes missing from the final read, below a DeleteRecords' offset. */
    deleted: number;
    /** The transactional workload's transactions, sends and reads. */
    transactions: TxnCounts;
  };
}

export interface CheckOptions {
  /**
   * Anomalies of one kind kept in the report (all are counted in `anomalyTotals`).
   * @default 100
   */
  maxAnomaliesPerKind?: number;
}

const key = (topic: string, partition: number): string => `${topic}#${partition}`;
const FINAL_READER = 'final-read';
/** Event ids kept per observed value at an offset: enough to name the culprits, bounded memory. */
const MAX_IDS = 8;
/** Distinct readers kept per observed value at an offset: two suffice to tell divergence apart. */
const MAX_READERS = 3;

/** Entries by kind: at most `max` of each kept, all counted. */
class Found<K extends string = AnomalyKind> {
  readonly byKind = new Map<K, { kind: K; message: string; events: number[] }[]>();
  readonly totals: Record<K, number>;
  constructor(private readonly kinds: readonly K[], private readonly max: number) {
    this.totals = Object.fromEntries(kinds.map((k) => [k, 0])) as Record<K, number>;
  }

  add(kind: K, message: string, events: Iterable<number>): void {
    this.totals[kind]++;
    let list = this.byKind.get(kind);
    if (!list) this.byKind.set(kind, (list = []));
    if (list.length < this.max) list.push({ kind, message, events: [...new Set(events)].sort((a, b) => a - b) });
  }

  list(): { kind: K; message: string; events: number[] }[] {
    return this.kinds.flatMap((k) => this.byKind.get(k) ?? []);
  }
}

/** One value observed at one offset, and when its observers ended (first, last); `other` chains further values seen there. */
interface Seen { value: string; ids: number[]; readers: string[]; acked: boolean; firstEnd: number; lastEnd: number; other: Seen | undefined }
interface Part { topic: string; partition: number; cells: Map<number, Seen> }
/** Where an idempotent producer's value was seen, and when its last observer there ended; `other` chains further offsets. */
interface Loc { part: Part; offset: number; ids: number[]; lastEnd: number; other: Loc | undefined }

const pushId = (ids: number[], id: number): void => {
  if (ids.length < MAX_IDS && ids[ids.length - 1] !== id) ids.push(id);
};
const name = (p: { topic: string; partition: number }): string => `${p.topic}/${p.partition}`;

/**
 * Judges a history. Rules (docs/architecture.md, "Invariants"), each anomaly naming the events
 * involved:
 * - lost-write: an acks=all acknowledged value missing from the complete final read of its partition.
 * - inconsistent-offset / divergence: one offset seen with two values among acks=all acknowledgements,
 *   reads, polls and final reads — 'divergence' when two different reader processes disagree. An
 *   offset claimed only by an acks=1 acknowledgement may later hold another value (truncated away).
 * - duplicate: an idempotent producer's value at two offsets.
 * - read-above-hw, read-backwards: a fetch returning an offset at or above its high watermark, below
 *   its fetch offset, or out of order (high watermark decreases are allowed: leaders change).
 * - read-below-log-start: a fetch, poll or final read that started after a DeleteRecords was
 *   answered and returned a record below its offset.
 * - poll-skip / read-backwards: a member that keeps a partition (same member id and epoch, the
 *   partition in its assignment throughout, no failed or unknown poll) must receive contiguous offsets.
 *   Tributary's logs have no gaps (no compaction, no transaction markers), so any gap is a skip.
 * - commit-backwards: a successful commit lower than one that ended before it started; final
 *   committed offsets lower than the highest successful commit.
 * - double-ownership: two members owning one partition at once in the same group epoch.
 * - unreadable-after-heal: a final read that could not read everything.
 * - unreadable-in-quiet: an acknowledged record not read within the bound of the first quiet phase
 *   after its acknowledgement (see `liveness.ts`).
 * - the transactional workload's rules (aborted-read and the kinds after it): `txn-checker.ts`.
 * Not anomalies but losses a fault allowed (`allowed-loss.ts`), listed apart in `allowed`: a lost
 * write an unclean election cut (`cut.offset <= offset`, acknowledged by `cut.electedAt`) or below a
 * DeleteRecords sent before the final read; an offset's values unclean elections explain (each one's
 * observers ended by a cut's election, the next one's at or after its kill); an idempotent value all
 * of whose locations but one are in some cut's old log.
 */
export function check(events: readonly HistoryEvent[], opts: CheckOptions = {}): CheckReport {
  const found = new Found(ANOMALY_KINDS, opts.maxAnomaliesPerKind ?? 100);
  const allowed = new Found(ALLOWED_KINDS, opts.maxAnomaliesPerKind ?? 100);
  const produces: ProduceEvent[] = [];
  const reads: ReadEvent[] = [];
  const polls: PollEvent[] = [];
  const commits: CommitEvent[] = [];
  const assignments: AssignmentEvent[] = [];
  const finals: FinalReadEvent[] = [];
  const finalCommits: FinalCommitsEvent[] = [];
  const faults: Record<string, number> = {};
  const faultEvents: FaultEvent[] = [];
  const quiets: QuietEvent[] = [];
  let pushFinal: PushFinalEvent | undefined;
  for (const e of events) {
    switch (e.type) {
      case 'produce': produces.push(e); break;
      case 'read': reads.push(e); break;
      case 'poll': polls.push(e); break;
      case 'commit': commits.push(e); break;
      case 'assignment': assignments.push(e); break;
      case 'final-read': finals.push(e); break;
      case 'final-commits': finalCommits.push(e); break;
      case 'push-final': pushFinal = e; break;
      case 'fault': faults[e.kind] = (faults[e.kind] ?? 0) + 1; faultEvents.push(e); break;
      case 'quiet': quiets.push(e); break;
      case 'heal': break;
    }
  }

  const loss = AllowedLoss.from(faultEvents);
  checkOffsets(produces, reads, polls, finals, loss, found, allowed);
  const lost = checkLostWrites(produces, finals, loss, found, allowed);
  checkReads(reads, found);
  // (what the cluster pushed is left out: when its deliverer read a batch, the receiver cannot know)
  for (const v of readsBelowLogStart(loss, reads.filter((r) => !PUSHED_READERS.has(r.process)), polls, finals)) found.add('read-below-log-start', v.message, v.events);
  checkPolls(polls, assignments, found);
  checkCommits(commits, finalCommits, found);
  checkOwnership(assignments, polls, commits, found);
  for (const f of finals) {
    if (!f.complete) found.add('unreadable-after-heal', `final read of ${name(f)} could not read everything after the heal (got ${f.records.length} records; last offset ${f.records.at(-1)?.offset ?? 'none'})`, [f.id]);
  }
  for (const v of checkLiveness(produces, reads, polls, finals, quiets, faultEvents)) found.add('unreadable-in-quiet', v.message, v.events);
  const txn = checkTransactions(events);
  for (const a of txn.anomalies) found.add(a.kind, a.message, a.events);
  for (const a of checkPush(reads, finals, pushFinal, faultEvents)) found.add(a.kind, a.message, a.events);

  const acked = produces.filter((p) => p.outcome === 'ok');
  return {
    anomalies: found.list(),
    anomalyTotals: found.totals,
    allowed: allowed.list(),
    allowedTotals: allowed.totals,
    counts: {
      operations: produces.length + reads.length + polls.length + commits.length + txn.counts.operations,
      produced: produces.length, acknowledged: acked.length, acknowledgedAll: acked.filter((p) => p.acks === 'all').length,
      reads: reads.length, polls: polls.length, commits: commits.length, faults, quietPhases: quiets.length, ...lost, transactions: txn.counts,
    },
  };
}

/** inconsistent-offset, divergence and duplicate: every offset holds one value, every idempotent value one offset. */
function checkOffsets(produces: ProduceEvent[], reads: ReadEvent[], polls: PollEvent[], finals: FinalReadEvent[], loss: AllowedLoss, found: Found, allowed: Found<AllowedKind>): void {
  const parts = new Map<string, Part>();
  const part = (topic: string, partition: number): Part => {
    const k = key(topic, partition);
    let p = parts.get(k);
    if (!p) parts.set(k, (p = { topic, partition, cells: new Map() }));
    return p;
  };
  const producer = new Map<string, ProduceEvent>(); // value → an idempotent produce of it
  for (const p of produces) if (p.idempotent && !producer.has(p.value)) producer.set(p.value, p);
  const locs = new Map<string, Loc>();

  const locate = (p: Part, offset: number, value: string, id: number, end: number): void => {
    if (!producer.has(value)) return;
    let l = locs.get(value);
    if (!l) locs.set(value, (l = { part: p, offset, ids: [], lastEnd: end, other: undefined }));
    while (l.part !== p || l.offset !== offset) l = l.other ??= { part: p, offset, ids: [], lastEnd: end, other: undefined };
    pushId(l.ids, id);
    l.lastEnd = Math.max(l.lastEnd, end);
  };
  const observe = (p: Part, offset: number, value: string, id: number, reader: string | undefined, end: number): void => {
    let s = p.cells.get(offset);
    if (!s) p.cells.set(offset, (s = { value, ids: [], readers: [], acked: false, firstEnd: end, lastEnd: end, other: undefined }));
    while (s.value !== value) s = s.other ??= { value, ids: [], readers: [], acked: false, firstEnd: end, lastEnd: end, other: undefined };
    pushId(s.ids, id);
    s.firstEnd = Math.min(s.firstEnd, end);
    s.lastEnd = Math.max(s.lastEnd, end);
    if (reader === undefined) s.acked = true;
    else if (s.readers.length < MAX_READERS && !s.readers.includes(reader)) s.readers.push(reader);
    locate(p, offset, value, id, end);
  };

  const acks1: ProduceEvent[] = [];
  for (const e of produces) {
    if (e.outcome !== 'ok' || e.offset === undefined) continue;
    if (e.acks === 'all') observe(part(e.topic, e.partition), e.offset, e.value, e.id, undefined, e.end);
    else if (e.acks === '1') acks1.push(e);
  }
  for (const r of reads) for (const rec of r.records) observe(part(r.topic, r.partition), rec.offset, rec.value, r.id, r.process, r.end);
  for (const e of polls) for (const rec of e.records) observe(part(rec.topic, rec.partition), rec.offset, rec.value, e.id, e.process, e.end);
  for (const f of finals) for (const rec of f.records) observe(part(f.topic, f.partition), rec.offset, rec.value, f.id, FINAL_READER, f.at);
  // An acks=1 acknowledgement is evidence of a location only if nothing stronger contradicts it.
  for (const e of acks1) {
    const p = part(e.topic, e.partition);
    const s = p.cells.get(e.offset!);
    if (!s || (s.value === e.value && !s.other)) locate(p, e.offset!, e.value, e.id, e.end);
  }

  for (const p of parts.values()) {
    for (const [offset, first] of p.cells) {
      if (!first.other) continue;
      const seen: Seen[] = [];
      for (let s: Seen | undefined = first; s; s = s.other) seen.push(s);
      const kind = divergent(seen) ? 'divergence' : 'inconsistent-offset';
      const what = seen.map((s) => `"${s.value}" (${[...(s.acked ? ['acknowledged to its producer'] : []), ...(s.readers.length ? [`seen by ${s.readers.join(', ')}`] : [])].join('; ')}; events ${s.ids.join(', ')})`);
      const message = `${name(p)} offset ${offset} holds ${seen.length} values: ${what.join(' vs ')}`;
      const reason = loss.offsetValues(p.topic, p.partition, offset, seen);
      if (reason) allowed.add(reason.kind, `${message}: ${reason.why}`, [...seen.flatMap((s) => s.ids), ...reason.faults]);
      else found.add(kind, message, seen.flatMap((s) => s.ids));
    }
  }
  for (const [value, first] of locs) {
    if (!first.other) continue;
    const at: Loc[] = [];
    for (let l: Loc | undefined = first; l; l = l.other) at.push(l);
    const prod = producer.get(value)!;
    const where = at.map((l) => `${name(l.part)} offset ${l.offset} (events ${l.ids.join(', ')})`).join(', ');
    const message = `idempotent value "${value}" of ${prod.process} (event ${prod.id}) is at ${at.length} offsets: ${where}`;
    const reason = loss.duplicate(at.map((l) => ({ ...l, topic: l.part.topic, partition: l.part.partition })));
    if (reason) allowed.add(reason.kind, `${message}: ${reason.why}`, [prod.id, ...at.flatMap((l) => l.ids), ...reason.faults]);
    else found.add('duplicate', message, [prod.id, ...at.flatMap((l) => l.ids)]);
  }
}

/** Two different reader processes saw different values at the offset. */
function divergent(seen: readonly Seen[]): boolean {
  for (let i = 0; i < seen.length; i++) {
    for (let j = i + 1; j < seen.length; j++) {
      for (const r of seen[i]!.readers) for (const q of seen[j]!.readers) if (r !== q) return true;
    }
  }
  return false;
}

/** lost-write: judged against the last complete final read of each partition; returns the losses faults allowed. */
function checkLostWrites(produces: ProduceEvent[], finals: FinalReadEvent[], loss: AllowedLoss, found: Found, allowed: Found<AllowedKind>): { uncleanLoss: number; deleted: number } {
  const counts = { uncleanLoss: 0, deleted: 0 };
  const last = new Map<string, FinalReadEvent>();
  for (const f of finals) {
    if (!f.complete) continue;
    const k = key(f.topic, f.partition);
    const prev = last.get(k);
    if (!prev || f.at > prev.at || (f.at === prev.at && f.id > prev.id)) last.set(k, f);
  }
  const values = new Map<string, Set<string>>();
  for (const e of produces) {
    if (e.acks !== 'all' || e.outcome !== 'ok') continue;
    const k = key(e.topic, e.partition);
    const f = last.get(k);
    if (!f) continue;
    let set = values.get(k);
    if (!set) values.set(k, (set = new Set(f.records.map((r) => r.value))));
    if (set.has(e.value)) continue;
    const message = `acks=all write "${e.value}" by ${e.process} acknowledged at ${name(e)} offset ${e.offset ?? '?'} is missing from the final read (${f.records.length} records)`;
    const reason = e.offset === undefined ? undefined : loss.lostWrite(e.topic, e.partition, e.offset, e.end, f.at);
    if (reason) counts[reason.kind === 'deleted' ? 'deleted' : 'uncleanLoss']++;
    if (reason) allowed.add(reason.kind, `${message}: ${reason.why}`, [e.id, f.id, ...reason.faults]);
    else found.add('lost-write', message, [e.id, f.id]);
  }
  return counts;
}

/** read-above-hw and read-backwards within one fetch. */
function checkReads(reads: ReadEvent[], found: Found): void {
  for (const r of reads) {
    const recs = r.records;
    const hw = r.highWatermark;
    if (hw !== undefined) {
      const above = recs.find((x) => x.offset >= hw);
      if (above) found.add('read-above-hw', `${r.process} read ${name(r)} offset ${above.offset} ("${above.value}") at or above the high watermark ${hw} of the same response`, [r.id]);
    }
    const first = recs[0];
    if (first && first.offset < r.fromOffset) {
      found.add('read-backwards', `${r.process} fetched ${name(r)} from offset ${r.fromOffset} but got offset ${first.offset} ("${first.value}") first`, [r.id]);
      continue;
    }
    for (let i = 1; i < recs.length; i++) {
      if (recs[i]!.offset <= recs[i - 1]!.offset) {
        found.add('read-backwards', `${r.process} read ${name(r)} out of order: offset ${recs[i]!.offset} ("${recs[i]!.value}") after ${recs[i - 1]!.offset}`, [r.id]);
        break;
      }
    }
  }
}

type Step = { at: number; e: PollEvent | AssignmentEvent };
const byTime = (a: Step, b: Step): number => a.at - b.at || a.e.id - b.e.id;

/** poll-skip and read-backwards for members that keep a partition without interruption. */
function checkPolls(polls: PollEvent[], assignments: AssignmentEvent[], found: Found): void {
  const steps = new Map<string, Step[]>(); // process#group → its polls and assignments
  const add = (e: PollEvent | AssignmentEvent, at: number): void => {
    const k = `${e.process}#${e.group}`;
    let list = steps.get(k);
    if (!list) steps.set(k, (list = []));
    list.push({ at, e });
  };
  for (const p of polls) add(p, p.start);
  for (const a of assignments) add(a, a.at);

  for (const list of steps.values()) {
    list.sort(byTime);
    let memberId: string | undefined;
    let epoch: number | undefined;
    let owned = new Set<string>();
    const last = new Map<string, { offset: number; id: number }>(); // partition → last offset received
    for (const { e } of list) {
      if (e.memberId !== memberId) last.clear();
      memberId = e.memberId;
      if (e.type === 'assignment') {
        const now = new Set(e.partitions.map((tp) => key(tp.topic, tp.partition)));
        if (e.memberEpoch !== epoch) last.clear();
        else for (const k of last.keys()) if (!owned.has(k) || !now.has(k)) last.delete(k);
        epoch = e.memberEpoch;
        owned = now;
        continue;
      }
      if (e.memberEpoch !== undefined) {
        if (epoch !== undefined && e.memberEpoch !== epoch) last.clear();
        epoch = e.memberEpoch;
      }
      if (e.outcome !== 'ok') {
        last.clear(); // it may have received records we never saw
        continue;
      }
      for (const r of e.records) {
        const k = key(r.topic, r.partition);
        const prev = last.get(k);
        last.set(k, { offset: r.offset, id: e.id });
        if (!prev || r.offset === prev.offset + 1) continue;
        const who = `${e.process} (member ${e.memberId}) of group ${e.group}`;
        if (r.offset <= prev.offset) found.add('read-backwards', `${who} went back on ${name(r)}: offset ${r.offset} ("${r.value}") after ${prev.offset}`, [prev.id, e.id]);
        else found.add('poll-skip', `${who} skipped ${name(r)} offsets ${prev.offset + 1}..${r.offset - 1}: got ${r.offset} ("${r.value}") after ${prev.offset}`, [prev.id, e.id]);
      }
    }
  }
}

interface Committed { offset: number; start: number; end: number; id: number }

/** commit-backwards: per group and partition, successful commits never go below an earlier one. */
function checkCommits(commits: CommitEvent[], finalCommits: FinalCommitsEvent[], found: Found): void {
  const per = new Map<string, { group: string; topic: string; partition: number; list: Committed[] }>(); // group#topic#partition
  for (const c of commits) {
    if (c.outcome !== 'ok') continue;
    for (const o of c.offsets) {
      const k = `${c.group}#${key(o.topic, o.partition)}`;
      let entry = per.get(k);
      if (!entry) per.set(k, (entry = { group: c.group, topic: o.topic, partition: o.partition, list: [] }));
      entry.list.push({ offset: o.offset, start: c.start, end: c.end, id: c.id });
    }
  }
  const highest = new Map<string, Committed>();
  for (const [k, { group, topic, partition, list }] of per) {
    const byEnd = [...list].sort((a, b) => a.end - b.end || a.id - b.id);
    list.sort((a, b) => a.start - b.start || a.id - b.id);
    let best: Committed | undefined; // the highest commit that ended before the current one started
    let j = 0;
    for (const c of list) {
      for (; j < byEnd.length && byEnd[j]!.end < c.start; j++) if (!best || byEnd[j]!.offset > best.offset) best = byEnd[j]!;
      if (best && c.offset < best.offset) {
        found.add('commit-backwards', `group ${group} committed ${topic}/${partition} offset ${c.offset} after a commit of ${best.offset} had completed`, [best.id, c.id]);
      }
    }
    highest.set(k, byEnd.reduce((a, b) => (b.offset > a.offset ? b : a)));
  }
  for (const f of finalCommits) {
    for (const o of f.offsets) {
      const h = highest.get(`${f.group}#${key(o.topic, o.partition)}`);
      if (h && o.offset < h.offset) {
        found.add('commit-backwards', `group ${f.group}'s final committed offset of ${name(o)} is ${o.offset}, below the acknowledged commit of ${h.offset}`, [h.id, f.id]);
      }
    }
  }
}

interface Owned { topic: string; partition: number; memberId: string; memberEpoch: number; groupEpoch: number; from: number; to: number; id: number }

/** double-ownership: per group, partition and group epoch, no two members' ownership intervals overlap. */
function checkOwnership(assignments: AssignmentEvent[], polls: PollEvent[], commits: CommitEvent[], found: Found): void {
  const byMember = new Map<string, AssignmentEvent[]>(); // group#memberId
  const lastSeen = new Map<string, number>();
  const seen = (group: string, memberId: string, at: number): void => {
    const k = `${group}#${memberId}`;
    if (at > (lastSeen.get(k) ?? -Infinity)) lastSeen.set(k, at);
  };
  for (const a of assignments) {
    const k = `${a.group}#${a.memberId}`;
    let list = byMember.get(k);
    if (!list) byMember.set(k, (list = []));
    list.push(a);
    seen(a.group, a.memberId, a.at);
  }
  for (const p of polls) seen(p.group, p.memberId, p.end);
  for (const c of commits) seen(c.group, c.memberId, c.end);

  const intervals = new Map<string, { group: string; topic: string; partition: number; groupEpoch: number; list: Owned[] }>(); // group#topic#partition#groupEpoch
  for (const [m, list] of byMember) {
    list.sort((a, b) => a.at - b.at || a.id - b.id);
    const open = new Map<string, Owned>(); // one member's partitions, merged across identical heartbeats
    const group = list[0]!.group;
    const close = (o: Owned, to: number): void => {
      o.to = to;
      const ik = `${group}#${key(o.topic, o.partition)}#${o.groupEpoch}`;
      let entry = intervals.get(ik);
      if (!entry) intervals.set(ik, (entry = { group, topic: o.topic, partition: o.partition, groupEpoch: o.groupEpoch, list: [] }));
      entry.list.push(o);
    };
    for (const a of list) {
      const now = new Set<string>();
      for (const tp of a.partitions) {
        const k = key(tp.topic, tp.partition);
        now.add(k);
        const o = open.get(k);
        if (o && o.groupEpoch === a.groupEpoch) continue;
        if (o) close(o, a.at);
        open.set(k, { topic: tp.topic, partition: tp.partition, memberId: a.memberId, memberEpoch: a.memberEpoch, groupEpoch: a.groupEpoch, from: a.at, to: a.at, id: a.id });
      }
      for (const [k, o] of open) {
        if (now.has(k)) continue;
        close(o, a.at);
        open.delete(k);
      }
    }
    const end = lastSeen.get(m) ?? -Infinity;
    for (const o of open.values()) close(o, Math.max(o.from, end));
  }

  for (const { group, topic, partition, groupEpoch, list } of intervals.values()) {
    list.sort((a, b) => a.from - b.from || a.id - b.id);
    // The interval reaching furthest, and the one reaching furthest among the other members.
    let best: Owned | undefined;
    let bestOther: Owned | undefined;
    for (const x of list) {
      const rival = best && x.memberId !== best.memberId ? best : bestOther;
      if (rival && x.from < rival.to && x.from < x.to) {
        found.add('double-ownership', `group ${group} partition ${topic}/${partition} had two owners in group epoch ${groupEpoch}: ` +
          `${rival.memberId} (member epoch ${rival.memberEpoch}, from ${rival.from} to ${rival.to}) and ${x.memberId} (member epoch ${x.memberEpoch}, from ${x.from} to ${x.to}); ` +
          `overlap ${x.from}..${Math.min(rival.to, x.to)}`, [rival.id, x.id]);
      }
      if (!best || x.to > best.to) {
        if (best && x.memberId !== best.memberId) bestOther = best;
        best = x;
      } else if (x.memberId !== best.memberId && (!bestOther || x.to > bestOther.to)) {
        bestOther = x;
      }
    }
  }
}
