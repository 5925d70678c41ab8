/**
 * The history of a chaos run as data: one event per operation (with its start, end, outcome and the
 * values involved), per fault, and the final reads after the faults healed. Stored as JSON Lines
 * (`history.jsonl`), one event per line, and judged afterwards by the checker (`checker.ts`).
 * The transactional workload's events are in `txn-history.ts`.
 */
import type { Field, Outcome, Rec, Shape } from './history-fields.js';
import { TXN_SHAPES, type TxnEvent } from './txn-history.js';

/** A partition of a topic. */
export interface TP {
  topic: string;
  partition: number;
}

export type { Field, Outcome, Rec, Shape } from './history-fields.js';

/** A producer's write of one value to one partition (each retry of the same value is its own event). */
export interface ProduceEvent {
  type: 'produce';
  id: number;
  process: string;
  /** Written with a producer id and sequence: retries must not create duplicates. */
  idempotent: boolean;
  acks: '0' | '1' | 'all';
  topic: string;
  partition: number;
  value: string;
  start: number;
  end: number;
  outcome: Outcome;
  /** The acknowledged offset: present when outcome is 'ok' and acks is not '0'. */
  offset?: number;
  error?: string;
}

/** A plain partition reader's fetch from `fromOffset`; records come back in offset order. */
export interface ReadEvent {
  type: 'read';
  id: number;
  process: string;
  topic: string;
  partition: number;
  fromOffset: number;
  start: number;
  end: number;
  outcome: Outcome;
  records: Rec[];
  /** The high watermark in the fetch response. */
  highWatermark?: number;
  error?: string;
}

/** One poll of a group member (REST v2 consumer or native consumer); may span partitions. */
export interface PollEvent {
  type: 'poll';
  id: number;
  process: string;
  group: string;
  memberId: string;
  memberEpoch?: number;
  start: number;
  end: number;
  outcome: Outcome;
  records: (Rec & TP)[];
  error?: string;
}

/** A group offset commit (offsets are the next offset to consume, as in Kafka). */
export interface CommitEvent {
  type: 'commit';
  id: number;
  process: string;
  group: string;
  memberId: string;
  start: number;
  end: number;
  outcome: Outcome;
  offsets: (TP & { offset: number })[];
  error?: string;
}

/**
 * A native consumer's heartbeat response: from `at` until the member's next assignment event (or
 * until its process stops) the member may read `partitions`.
 */
export interface AssignmentEvent {
  type: 'assignment';
  id: number;
  process: string;
  group: string;
  memberId: string;
  memberEpoch: number;
  groupEpoch: number;
  at: number;
  partitions: TP[];
}

/**
 * An unclean election the nemesis caused: the partition's whole ISR was killed at `killedAt`, and
 * an out-of-sync replica was seen leading under `leaderEpoch` at `electedAt`. `offset` is the new
 * leader's log end at its election (where its epoch begins): the old log's records at and above it
 * may be gone — the loss `unclean.leader.election.enable` allows, and only that.
 */
export interface UncleanCut extends TP {
  offset: number;
  leaderEpoch: number;
  killedAt: number;
  electedAt: number;
}

/**
 * A DeleteRecords the nemesis sent: the records below `offset` may be gone from `start` on. When
 * `answered` (the low watermark came back at `end`), no read that starts after `end` may return one.
 */
export interface Deletion extends TP {
  offset: number;
  answered: boolean;
}

/** A fault the nemesis injected (`kind` e.g. 'kill', 'pause', 'partition'; `target` a process or link). */
export interface FaultEvent {
  type: 'fault';
  id: number;
  kind: string;
  target: string;
  start: number;
  end: number;
  detail?: string;
  /** unclean-election: the records it may have cost. */
  cut?: UncleanCut;
  /** delete-records: the records it deleted. */
  deletion?: Deletion;
}

/**
 * A quiet phase after a fault (the fault healed): the workload stopped writing at `pausedAt`, and
 * from `start` no write was in flight. Every record acknowledged before `start` must be readable
 * (below the high watermark, through a fetch) by `start + boundMs` — the liveness rule. `fault` is
 * the id of the fault event it follows.
 */
export interface QuietEvent {
  type: 'quiet';
  id: number;
  fault?: number;
  pausedAt: number;
  start: number;
  end: number;
  boundMs: number;
}

/** Every fault has been healed at `at`. */
export interface HealEvent {
  type: 'heal';
  id: number;
  at: number;
}

/** A full read of one partition after the faults healed; `complete` is false if it could not read everything. */
export interface FinalReadEvent {
  type: 'final-read';
  id: number;
  topic: string;
  partition: number;
  at: number;
  records: Rec[];
  complete: boolean;
}

/** The committed offsets of a group at the end of the run. */
export interface FinalCommitsEvent {
  type: 'final-commits';
  id: number;
  group: string;
  at: number;
  offsets: (TP & { offset: number })[];
}

/** The push subscription's group at the end of the run (push-reader.ts): its committed offsets, and whether it had caught up. */
export interface PushFinalEvent {
  type: 'push-final';
  id: number;
  group: string;
  at: number;
  offsets: (TP & { offset: number })[];
  caughtUp: boolean;
}

/** One line of `history.jsonl`. */
export type HistoryEvent =
  | ProduceEvent
  | ReadEvent
  | PollEvent
  | CommitEvent
  | AssignmentEvent
  | FaultEvent
  | QuietEvent
  | HealEvent
  | FinalReadEvent
  | FinalCommitsEvent
  | PushFinalEvent
  | TxnEvent;

// ---- Validation: a small field table per event type; extra fields are allowed (newer writers).


const SHAPES: Readonly<Record<HistoryEvent['type'], Shape>> = {
  produce: {
    required: { id: 'int', process: 'string', idempotent: 'boolean', acks: 'acks', topic: 'string', partition: 'int', value: 'string', start: 'number', end: 'number', outcome: 'outcome' },
    optional: { offset: 'int', error: 'string' },
  },
  read: {
    required: { id: 'int', process: 'string', topic: 'string', partition: 'int', fromOffset: 'int', start: 'number', end: 'number', outcome: 'outcome', records: 'recs' },
    optional: { highWatermark: 'int', error: 'string' },
  },
  poll: {
    required: { id: 'int', process: 'string', group: 'string', memberId: 'string', start: 'number', end: 'number', outcome: 'outcome', records: 'tpRecs' },
    optional: { memberEpoch: 'int', error: 'string' },
  },
  commit: {
    required: { id: 'int', process: 'string', group: 'string', memberId: 'string', start: 'number', end: 'number', outcome: 'outcome', offsets: 'tpOffsets' },
    optional: { error: 'string' },
  },
  assignment: {
    required: { id: 'int', process: 'string', group: 'string', memberId: 'string', memberEpoch: 'int', groupEpoch: 'int', at: 'number', partitions: 'tps' },
  },
  fault: { required: { id: 'int', kind: 'string', target: 'string', start: 'number', end: 'number' }, optional: { detail: 'string', cut: 'cut', deletion: 'deletion' } },
  quiet: { required: { id: 'int', pausedAt: 'number', start: 'number', end: 'number', boundMs: 'number' }, optional: { fault: 'int' } },
  heal: { required: { id: 'int', at: 'number' } },
  'final-read': { required: { id: 'int', topic: 'string', partition: 'int', at: 'number', records: 'recs', complete: 'boolean' } },
  'final-commits': { required: { id: 'int', group: 'string', at: 'number', offsets: 'tpOffsets' } },
  'push-final': { required: { id: 'int', group: 'string', at: 'number', offsets: 'tpOffsets', caughtUp: 'boolean' } },
  ...TXN_SHAPES,
};

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInt = (v: unknown): boolean => Number.isSafeInteger(v);
const isTp = (v: Obj): boolean => typeof v.topic === 'string' && isInt(v.partition);
const isRec = (v: Obj): boolean => isInt(v.offset) && typeof v.value === 'string';
const every = (v: unknown, ok: (x: Obj) => boolean): boolean => Array.isArray(v) && v.every((x) => isObj(x) && ok(x));

function valid(kind: Field, v: unknown): boolean {
  switch (kind) {
    case 'string': return typeof v === 'string';
    case 'int': return isInt(v);
    case 'number': return typeof v === 'number' && Number.isFinite(v);
    case 'boolean': return typeof v === 'boolean';
    case 'outcome': return v === 'ok' || v === 'fail' || v === 'unknown';
    case 'acks': return v === '0' || v === '1' || v === 'all';
    case 'recs': return every(v, isRec);
    case 'tpRecs': return every(v, (x) => isRec(x) && isTp(x));
    case 'tps': return every(v, isTp);
    case 'tpOffsets': return every(v, (x) => isTp(x) && isInt(x.offset));
    case 'cut': return isObj(v) && isTp(v) && isInt(v.offset) && isInt(v.leaderEpoch) && valid('number', v.killedAt) && valid('number', v.electedAt);
    case 'deletion': return isObj(v) && isTp(v) && isInt(v.offset) && typeof v.answered === 'boolean';
  }
}

/** Why `v` is not a history event, or undefined if it is one. */
function problem(v: unknown): string | undefined {
  if (!isObj(v)) return 'not a JSON object';
  const shape = typeof v.type === 'string' && Object.hasOwn(SHAPES, v.type) ? SHAPES[v.type as HistoryEvent['type']] : undefined;
  if (!shape) return `unknown event type ${JSON.stringify(v.type)}`;
  for (const [name, kind] of Object.entries(shape.required)) {
    if (!valid(kind, v[name])) return `${v.type}: field '${name}' must be ${kind}, got ${JSON.stringify(v[name])}`;
  }
  for (const [name, kind] of Object.entries(shape.optional ?? {})) {
    if (v[name] !== undefined && !valid(kind, v[name])) return `${v.type}: field '${name}' must be ${kind}, got ${JSON.stringify(v[name])}`;
  }
  return undefined;
}

/**
 * Parses a `history.jsonl`. Blank lines are skipped. A last line without its newline that is not
 * valid JSON is a torn write (the run was killed mid-line) and is dropped; anything else malformed —
 * bad JSON elsewhere, an unknown type, a missing or mistyped field — throws with the line number.
 */
export function parseHistory(jsonl: string): HistoryEvent[] {
  const lines = jsonl.split('\n');
  const events: HistoryEvent[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.trim() === '') continue;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (err) {
      if (i === lines.length - 1) break; // torn last line: no newline after it
      throw new Error(`history line ${i + 1}: invalid JSON (${(err as Error).message})`, { cause: err });
    }
    const why = problem(v);
    if (why) throw new Error(`history line ${i + 1}: ${why}`);
    events.push(v as HistoryEvent);
  }
  return events;
}

/** Serializes events as JSON Lines, each line ending in a newline (the empty string for no events). */
export function toJsonl(events: readonly HistoryEvent[]): string {
  let out = '';
  for (const e of events) out += `${JSON.stringify(e)}\n`;
  return out;
}
