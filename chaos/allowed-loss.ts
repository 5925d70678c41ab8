/**
 * The loss a history's faults allow, and only that. An unclean election (a fault with `cut`) may
 * cost the old log's records at and above the new leader's log end, and the new log then holds
 * other records at those offsets; a DeleteRecords (a fault with `deletion`) may remove every record
 * below its offset from the moment it is sent. `AllowedLoss` answers, for the checker
 * (`checker.ts`) and the liveness rules (`liveness.ts`), whether a missing record or a second value
 * at an offset is such a loss; `readsBelowLogStart` finds reads of records an answered deletion
 * removed.
 */
import type { Deletion, FaultEvent, FinalReadEvent, PollEvent, ReadEvent, Rec, TP, UncleanCut } from './history.js';

const key = (topic: string, partition: number): string => `${topic}#${partition}`;

/** Loss a fault allowed: to an unclean election (its cut), or to a DeleteRecords. */
export type AllowedKind = 'unclean-loss' | 'deleted';
export const ALLOWED_KINDS: readonly AllowedKind[] = ['unclean-loss', 'deleted'];

/** What looked like an anomaly but is a loss a fault allowed, and why (naming the fault event). */
export interface Allowed {
  kind: AllowedKind;
  message: string;
  /** Ids of the events involved, the fault's among them, ascending. */
  events: number[];
}

/** Why a loss is allowed (to append to the anomaly's message), and the fault events that allowed it. */
export interface Reason {
  kind: AllowedKind;
  why: string;
  faults: number[];
}

/** An unclean election, with the id of its fault event. */
export interface Cut extends UncleanCut {
  fault: number;
}

/** A DeleteRecords sent at `start` (answered at `end` if `answered`), with the id of its fault event. */
export interface Deleted extends Deletion {
  fault: number;
  start: number;
  end: number;
}

/** When the events that observed one value at one offset ended: the earliest and the latest. */
export interface Observed {
  firstEnd: number;
  lastEnd: number;
}

/** The cuts and deletions of a history's faults, by partition (it may learn more as a history grows). */
export class AllowedLoss {
  private readonly cuts = new Map<string, Cut[]>();
  private readonly deletions = new Map<string, Deleted[]>();

  /** The cuts and deletions of `faults` (fault events without either are ignored). */
  static from(faults: Iterable<FaultEvent>): AllowedLoss {
    const loss = new AllowedLoss();
    for (const f of faults) loss.add(f);
    return loss;
  }

  /** Learns the fault's cut or deletion, if it has one. */
  add(f: FaultEvent): void {
    if (f.cut) push(this.cuts, key(f.cut.topic, f.cut.partition), { ...f.cut, fault: f.id });
    if (f.deletion) push(this.deletions, key(f.deletion.topic, f.deletion.partition), { ...f.deletion, fault: f.id, start: f.start, end: f.end });
  }

  /** Some fault deleted records. */
  get deletes(): boolean {
    return this.deletions.size > 0;
  }

  /**
   * The cut that may have cost the record acknowledged at `offset` by `ackedAt`: one on its
   * partition with `cut.offset <= offset` and `ackedAt <= cut.electedAt`.
   */
  lostToCut(topic: string, partition: number, offset: number, ackedAt: number): Cut | undefined {
    return this.cuts.get(key(topic, partition))?.find((c) => c.offset <= offset && ackedAt <= c.electedAt);
  }

  /**
   * The deletion that may have removed the record at `offset`: one on its partition with
   * `offset < deletion.offset`, sent (its fault's start) at or before `by`.
   */
  deletedBelow(topic: string, partition: number, offset: number, by = Infinity): Deleted | undefined {
    return this.deletions.get(key(topic, partition))?.find((d) => offset < d.offset && d.start <= by);
  }

  /** The record at `offset` acknowledged by `ackedAt` may be gone: lost to a cut, or deleted (sent by `by`). */
  allows(topic: string, partition: number, offset: number, ackedAt: number, by = Infinity): boolean {
    return this.lostToCut(topic, partition, offset, ackedAt) !== undefined || this.deletedBelow(topic, partition, offset, by) !== undefined;
  }

  /**
   * The answered deletion a read that started at `start` contradicts by returning `offset`: one on
   * its partition answered (its fault's end) before `start`, with `offset < deletion.offset`, and
   * no unclean election on the partition in between (a replica out of the ISR when the deletion
   * was answered need not have raised its log start, and may have been elected since).
   */
  deletedBefore(topic: string, partition: number, offset: number, start: number): Deleted | undefined {
    const cuts = this.cuts.get(key(topic, partition)) ?? [];
    return this.deletions.get(key(topic, partition))?.find((d) => d.answered && d.end < start && offset < d.offset
      && !cuts.some((c) => c.killedAt >= d.start && c.electedAt <= start));
  }

  /**
   * The cut that explains two values at `offset`: `older` (the old log's) observed only by events
   * that ended at or before its election, `newer` (the new log's) only by events that ended at or
   * after its kill, and `cut.offset <= offset`.
   */
  explainsPair(topic: string, partition: number, offset: number, older: Observed, newer: Observed): Cut | undefined {
    return this.cuts.get(key(topic, partition))?.find((c) => c.offset <= offset && older.lastEnd <= c.electedAt && newer.firstEnd >= c.killedAt);
  }

  /**
   * The cuts that explain every value seen at `offset`: ordered by their last observation, each
   * consecutive pair explained by some cut ({@link explainsPair}). Undefined if some pair is not.
   */
  explainsValues(topic: string, partition: number, offset: number, values: readonly Observed[]): Cut[] | undefined {
    const sorted = [...values].sort((a, b) => a.lastEnd - b.lastEnd || a.firstEnd - b.firstEnd);
    const cuts: Cut[] = [];
    for (let i = 1; i < sorted.length; i++) {
      const c = this.explainsPair(topic, partition, offset, sorted[i - 1]!, sorted[i]!);
      if (!c) return undefined;
      if (!cuts.includes(c)) cuts.push(c);
    }
    return cuts;
  }

  /**
   * The cut whose old log a location belongs to: `offset >= cut.offset`, and every event that
   * observed the value there ended (the last at `lastEnd`) at or before its election.
   */
  oldLog(topic: string, partition: number, offset: number, lastEnd: number): Cut | undefined {
    return this.cuts.get(key(topic, partition))?.find((c) => c.offset <= offset && lastEnd <= c.electedAt);
  }

  /**
   * Why an acks=all write acknowledged at `offset` by `ackedAt` may be missing from a final read at
   * `finalAt`: a cut ({@link lostToCut}), else a deletion sent by then ({@link deletedBelow}).
   */
  lostWrite(topic: string, partition: number, offset: number, ackedAt: number, finalAt: number): Reason | undefined {
    const cut = this.lostToCut(topic, partition, offset, ackedAt);
    if (cut) return { kind: 'unclean-loss', why: `acknowledged at ${ackedAt}, before ${describe([cut])}`, faults: [cut.fault] };
    const d = this.deletedBelow(topic, partition, offset, finalAt);
    if (d) return { kind: 'deleted', why: `below offset ${d.offset}, deleted from ${d.start} by the DeleteRecords of event ${d.fault}`, faults: [d.fault] };
    return undefined;
  }

  /** Why the values seen at `offset` may differ ({@link explainsValues}). */
  offsetValues(topic: string, partition: number, offset: number, values: readonly Observed[]): Reason | undefined {
    const cuts = this.explainsValues(topic, partition, offset, values);
    return cuts && { kind: 'unclean-loss', why: `the old and the new log across ${describe(cuts)}`, faults: cuts.map((c) => c.fault) };
  }

  /**
   * Why an idempotent value may be at several locations: all of them but one are in the old log of
   * some cut ({@link oldLog}) — a write whose answer was lost, read in the old log and retried into the new.
   */
  duplicate(locations: readonly { topic: string; partition: number; offset: number; lastEnd: number }[]): Reason | undefined {
    const olds = locations.flatMap((l) => this.oldLog(l.topic, l.partition, l.offset, l.lastEnd) ?? []);
    if (olds.length < locations.length - 1) return undefined;
    const cuts = [...new Set(olds)];
    return { kind: 'unclean-loss', why: `${olds.length} of them in the old log of ${describe(cuts)}`, faults: cuts.map((c) => c.fault) };
  }
}

const describe = (cuts: readonly Cut[]): string =>
  cuts.map((c) => `the unclean election of event ${c.fault} (new log from offset ${c.offset}; ISR killed at ${c.killedAt}, elected at ${c.electedAt})`).join(' and ');

function push<T>(map: Map<string, T[]>, k: string, v: T): void {
  let list = map.get(k);
  if (!list) map.set(k, (list = []));
  list.push(v);
}

/**
 * read-below-log-start: a fetch, a poll or a final read (its `at` as its start) that started after
 * an answered deletion's end and returned a record of its partition below the deletion's offset.
 * Reported once per event, with the first such record.
 */
export function readsBelowLogStart(
  loss: AllowedLoss, reads: readonly ReadEvent[], polls: readonly PollEvent[], finals: readonly FinalReadEvent[],
): { message: string; events: number[] }[] {
  const out: { message: string; events: number[] }[] = [];
  if (!loss.deletes) return out;
  const judge = <R extends Rec>(id: number, who: () => string, start: number, records: readonly R[], tp: (r: R) => TP): void => {
    for (const r of records) {
      const { topic, partition } = tp(r);
      const d = loss.deletedBefore(topic, partition, r.offset, start);
      if (!d) continue;
      out.push({
        message: `${who()} started at ${start} returned ${topic}/${partition} offset ${r.offset} ("${r.value}"), below the log start ${d.offset} ` +
          `a DeleteRecords had set by ${d.end} (event ${d.fault})`,
        events: [d.fault, id],
      });
      return;
    }
  };
  for (const e of reads) judge(e.id, () => `a fetch by ${e.process}`, e.start, e.records, () => e);
  for (const e of polls) judge(e.id, () => `a poll by ${e.process} (member ${e.memberId}) of group ${e.group}`, e.start, e.records, (r) => r);
  for (const e of finals) judge(e.id, () => 'the final read', e.at, e.records, () => e);
  return out;
}
