/**
 * Idempotent producer rules (Kafka's ProducerStateManager): per partition and producer id, the
 * producer epoch and where the producer's most recent records went. A batch is appended when its
 * first sequence follows the last one; a retry of recent records is answered with their original
 * offsets; older sequences are duplicates, anything else is out of order. Pure: the stores keep
 * the state, this decides.
 *
 * The window is kept in *runs*, not batches: a run is records contiguous in both sequence and
 * offset (consecutive batches of one producer written back to back merge into one), so any
 * sub-range of a run maps to exact offsets. One request's batches for a partition go into one
 * transaction when they fit (lib/log/append.ts), so a request is one run however many batches
 * `max.message.bytes` split it into, and five runs cover Kafka's five in-flight requests.
 */
import { KafkaError } from '../protocol/errors.js';

/** How many recent runs per producer are remembered for duplicate detection (Kafka: 5 in-flight requests). */
export const RECENT_BATCHES = 5;

/** Sequences wrap after 2^31 - 1 to 0, as Kafka's do. */
const SEQ_SPACE = 2 ** 31;

/**
 * A run of records contiguous in sequence and offset. `baseOffset = -1` marks a position only
 * (left by a truncation that removed every remembered run): the producer's last sequence is known,
 * not where it is.
 */
export interface ProducerBatch {
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly baseOffset: number;
  readonly lastOffset: number;
}

export interface ProducerState {
  readonly producerId: number;
  readonly producerEpoch: number;
  /** Oldest first; all of `producerEpoch`. Empty: the epoch has no records here, its next sequence is 0. */
  readonly batches: readonly ProducerBatch[];
  /** A transactional producer: the first offset of its transaction open on this partition (what holds the last stable offset back). */
  readonly txnFirst?: number;
  /** The producer epoch of the last transaction marker written here (a marker of that epoch or older is a repeat). */
  readonly markerEpoch?: number;
  /** The last transaction a marker closed here: its first offset and the marker's (a truncation that cuts the marker opens it again). */
  readonly closed?: { readonly first: number; readonly marker: number };
}

export interface IncomingBatch {
  readonly producerId: number;
  readonly producerEpoch: number;
  readonly firstSeq: number;
  readonly recordCount: number;
  /** A transactional producer's batch: it opens the producer's transaction here if none is open. */
  readonly transactional?: boolean;
}

/** A transaction marker (a control batch) for a producer: `markerEpoch` is the epoch the coordinator bumped to when the transaction ended. */
export interface IncomingMarker {
  readonly producerId: number;
  readonly markerEpoch: number;
  readonly commit: boolean;
  /**
   * The repair of a hanging transaction (lib/orchestration/hanging-transactions.ts): written only
   * while the producer's transaction is open here (and, as every marker, holds no batch of
   * `markerEpoch` or later).
   */
  readonly repair?: boolean;
}

/** The state with only what is stored (no undefined fields). */
export function stateFields(st: ProducerState): ProducerState {
  return {
    producerId: st.producerId, producerEpoch: st.producerEpoch, batches: st.batches,
    ...(st.txnFirst !== undefined ? { txnFirst: st.txnFirst } : {}),
    ...(st.markerEpoch !== undefined ? { markerEpoch: st.markerEpoch } : {}),
    ...(st.closed !== undefined ? { closed: st.closed } : {}),
  };
}

/**
 * A replica head's unstable transactions after producer states change (undefined when they do
 * not). An open transaction is kept under its producer id (→ its first offset). A transaction a
 * marker closed stays unstable under `producerId:markerOffset` (→ its first offset) until the high
 * watermark `hw` passes the marker, as Kafka keeps a completed transaction among the unstable ones
 * until its marker is replicated: a leader that fails before then leaves a log whose marker may be
 * cut, and the last stable offset never steps back. Closed entries at or above `end` (a truncation
 * cut their marker) go, and so does every closed entry the high watermark has passed.
 */
export function openTxnsAfter(
  open: Readonly<Record<string, number>> | undefined, states: readonly Pick<ProducerState, 'producerId' | 'txnFirst' | 'closed'>[],
  hw: number, end = Infinity,
): Record<string, number> | undefined {
  const before = open ?? {};
  const after: Record<string, number> = {};
  const unstable = (marker: number) => marker >= hw && marker < end;
  for (const [key, first] of Object.entries(before)) {
    const marker = closedMarker(key);
    if (marker === undefined || unstable(marker)) after[key] = first;
  }
  for (const st of states) {
    const id = String(st.producerId);
    if (st.txnFirst === undefined) delete after[id];
    else after[id] = st.txnFirst;
    if (st.closed !== undefined && unstable(st.closed.marker)) after[`${id}:${st.closed.marker}`] = st.closed.first;
  }
  const same = Object.keys(after).length === Object.keys(before).length && Object.entries(after).every(([k, v]) => before[k] === v);
  return same ? undefined : after;
}

/** The marker offset of an unstable-transactions key for a closed transaction (`producerId:marker`); undefined for an open one. */
export function closedMarker(key: string): number | undefined {
  const at = key.indexOf(':');
  return at < 0 ? undefined : Number(key.slice(at + 1));
}

/** The transaction fields a state keeps whatever happens to its sequences. */
const txnFields = (st: ProducerState | undefined, offset: number, transactional: boolean | undefined): Partial<ProducerState> => {
  const txnFirst = st?.txnFirst ?? (transactional ? offset : undefined);
  return {
    ...(txnFirst !== undefined ? { txnFirst } : {}),
    ...(st?.markerEpoch !== undefined ? { markerEpoch: st.markerEpoch } : {}),
    ...(st?.closed !== undefined ? { closed: st.closed } : {}),
  };
};

export type Verdict =
  | { readonly kind: 'append'; readonly next: (baseOffset: number) => ProducerState }
  | { readonly kind: 'duplicate'; readonly baseOffset: number; readonly lastOffset: number }
  | { readonly kind: 'reject'; readonly error: KafkaError };

const mod = (n: number): number => ((n % SEQ_SPACE) + SEQ_SPACE) % SEQ_SPACE;
const lastSeqOf = (first: number, count: number): number => mod(first + count - 1);
const nextSeq = (seq: number): number => mod(seq + 1);
const isPosition = (r: ProducerBatch): boolean => r.baseOffset < 0;

/** The runs after appending `count` records from `firstSeq` at `baseOffset`: merged into the last run when contiguous. */
function extend(runs: readonly ProducerBatch[], firstSeq: number, count: number, baseOffset: number): ProducerBatch[] {
  const kept = runs.filter((r) => !isPosition(r));
  const last = kept[kept.length - 1];
  const lastSeq = lastSeqOf(firstSeq, count);
  const lastOffset = baseOffset + count - 1;
  if (last && last.lastOffset + 1 === baseOffset && nextSeq(last.lastSeq) === firstSeq) {
    return [...kept.slice(0, -1), { ...last, lastSeq, lastOffset }];
  }
  return [...kept, { firstSeq, lastSeq, baseOffset, lastOffset }].slice(-RECENT_BATCHES);
}

/** The offsets of `b`'s records when one remembered run holds all of them. */
function findWritten(runs: readonly ProducerBatch[], b: IncomingBatch): { baseOffset: number; lastOffset: number } | undefined {
  for (const r of runs) {
    if (isPosition(r)) continue;
    const delta = mod(b.firstSeq - r.firstSeq);
    if (delta + b.recordCount <= r.lastOffset - r.baseOffset + 1) return { baseOffset: r.baseOffset + delta, lastOffset: r.baseOffset + delta + b.recordCount - 1 };
  }
  return undefined;
}

export function check(state: ProducerState | undefined, b: IncomingBatch): Verdict {
  const append = (kept: readonly ProducerBatch[]): Verdict => ({
    kind: 'append',
    next: (baseOffset) => ({
      producerId: b.producerId, producerEpoch: b.producerEpoch, batches: extend(kept, b.firstSeq, b.recordCount, baseOffset), ...txnFields(state, baseOffset, b.transactional),
    }),
  });
  const reject = (name: 'OUT_OF_ORDER_SEQUENCE_NUMBER' | 'DUPLICATE_SEQUENCE_NUMBER' | 'INVALID_PRODUCER_EPOCH', message: string): Verdict =>
    ({ kind: 'reject', error: new KafkaError(name, `${name}: ${message}`, { producerId: b.producerId }) });

  if (!state) {
    return b.firstSeq === 0 ? append([]) : reject('OUT_OF_ORDER_SEQUENCE_NUMBER', `producer ${b.producerId} is new here, so its first sequence must be 0, not ${b.firstSeq}.`);
  }
  if (b.producerEpoch < state.producerEpoch) {
    return reject('INVALID_PRODUCER_EPOCH', `producer ${b.producerId} epoch ${b.producerEpoch} is older than ${state.producerEpoch}.`);
  }
  if (b.producerEpoch > state.producerEpoch) {
    return b.firstSeq === 0 ? append([]) : reject('OUT_OF_ORDER_SEQUENCE_NUMBER', `a new producer epoch must start at sequence 0, not ${b.firstSeq}.`);
  }
  const written = findWritten(state.batches, b);
  if (written) return { kind: 'duplicate', ...written };
  const last = state.batches[state.batches.length - 1];
  const expected = last ? nextSeq(last.lastSeq) : 0;
  if (b.firstSeq === expected) return append(state.batches);
  // Behind the last sequence (by less than half the sequence space, so a wrap reads as ahead):
  // written already, but before the remembered runs, so its offsets are unknown.
  if (last && mod(last.lastSeq - lastSeqOf(b.firstSeq, b.recordCount)) < SEQ_SPACE / 2) {
    return reject('DUPLICATE_SEQUENCE_NUMBER', `sequences ${b.firstSeq}..${lastSeqOf(b.firstSeq, b.recordCount)} of producer ${b.producerId} were written before its last ${RECENT_BATCHES} remembered runs; their offsets are no longer known.`);
  }
  return reject('OUT_OF_ORDER_SEQUENCE_NUMBER', `expected sequence ${expected} from producer ${b.producerId}, got ${b.firstSeq}.`);
}

/** The state after a batch the leader accepted (a follower mirrors the leader's decisions, run for run). */
export function applyBatch(state: ProducerState | undefined, b: IncomingBatch & { readonly baseOffset: number }): ProducerState {
  const kept = state && state.producerEpoch === b.producerEpoch ? state.batches : [];
  return { producerId: b.producerId, producerEpoch: b.producerEpoch, batches: extend(kept, b.firstSeq, b.recordCount, b.baseOffset), ...txnFields(state, b.baseOffset, b.transactional) };
}

/**
 * A transaction marker's verdict: a repeat (a marker of this epoch or a later one is here already,
 * or the producer has moved past it) writes nothing; otherwise the marker closes the producer's
 * open transaction here, fences its older epochs, and — an abort — names the aborted range.
 *
 * A marker never closes a batch of its own epoch or later: that batch is the producer's next
 * transaction's, not decided yet (an unclean election cut the first marker, the producer's next
 * transaction landed a batch, and then another finisher's marker of the same transaction came,
 * late; or the repair's). It writes nothing then, and the next transaction's marker closes both.
 * A first marker never meets one: the next transaction cannot add a partition before this one
 * is complete (spec/transactions.qnt, FIX_MARKER_GUARD).
 */
export function checkMarker(state: ProducerState | undefined, m: IncomingMarker): { readonly kind: 'repeat' } | { readonly kind: 'append'; readonly next: (offset: number) => ProducerState } {
  if (state && ((state.markerEpoch !== undefined && m.markerEpoch <= state.markerEpoch) || m.markerEpoch < state.producerEpoch)) return { kind: 'repeat' };
  if (state?.txnFirst !== undefined && newestBatchEpoch(state) >= m.markerEpoch) return { kind: 'repeat' };
  if (m.repair && state?.txnFirst === undefined) return { kind: 'repeat' };
  return { kind: 'append', next: (offset) => applyMarker(state, m, offset) };
}

/**
 * The newest epoch a batch of the producer here can have: the state's epoch when it holds a run of
 * it, else the one before (a marker raised the epoch past every batch).
 */
export const newestBatchEpoch = (st: ProducerState): number => (st.batches.length > 0 ? st.producerEpoch : st.producerEpoch - 1);

/** The state after a marker at `offset` (a follower mirrors the leader's markers as they are). */
export function applyMarker(state: ProducerState | undefined, m: IncomingMarker, offset: number): ProducerState {
  const sameEpoch = state !== undefined && state.producerEpoch >= m.markerEpoch;
  const closed = state?.txnFirst !== undefined ? { first: state.txnFirst, marker: offset } : state?.closed;
  return {
    producerId: m.producerId, producerEpoch: Math.max(state?.producerEpoch ?? 0, m.markerEpoch), batches: sameEpoch ? state.batches : [],
    markerEpoch: m.markerEpoch, ...(closed ? { closed } : {}),
  };
}

/**
 * The state after truncating the log to `offset` (records at or above it are gone). The epoch is
 * never forgotten (an older epoch stays fenced) and neither is the last sequence: a run cut by
 * the truncation keeps its part below `offset`, and when every remembered run is gone, a position
 * one before the oldest of them remains (within an epoch the producer's records run on without
 * gaps, so that is its last sequence below the removed runs). Records older than the window were
 * acknowledged long ago (at most five requests are in flight), so a retry of them stays refused
 * as a duplicate. Never undefined; the type stays optional for callers written against the old rule.
 */
export function truncateState(state: ProducerState, offset: number): ProducerState | undefined {
  const txn = truncateTxn(state, offset);
  const out = truncateRuns(state, offset);
  return out && { ...stateFields({ ...out, txnFirst: undefined, markerEpoch: undefined, closed: undefined }), ...txn };
}

/**
 * The transaction fields after a truncation at `offset`: an open transaction that began at or
 * above it is gone; a marker cut away opens its transaction again when the transaction began below.
 */
function truncateTxn(state: ProducerState, offset: number): Partial<ProducerState> {
  let { txnFirst, markerEpoch, closed } = state;
  if (txnFirst !== undefined && txnFirst >= offset) txnFirst = undefined;
  if (closed && closed.marker >= offset) {
    if (closed.first < offset) txnFirst = closed.first;
    closed = undefined;
    markerEpoch = undefined;
  }
  return { ...(txnFirst !== undefined ? { txnFirst } : {}), ...(markerEpoch !== undefined ? { markerEpoch } : {}), ...(closed ? { closed } : {}) };
}

/** Whether a truncation at `offset` changes the state. */
export const truncationTouches = (st: ProducerState, offset: number): boolean =>
  st.batches.some((b) => b.lastOffset >= offset) || (st.txnFirst !== undefined && st.txnFirst >= offset) || (st.closed !== undefined && st.closed.marker >= offset);

function truncateRuns(state: ProducerState, offset: number): ProducerState | undefined {
  const kept: ProducerBatch[] = [];
  for (const r of state.batches) {
    if (isPosition(r) || r.lastOffset < offset) kept.push(r);
    else if (r.baseOffset < offset) kept.push({ ...r, lastOffset: offset - 1, lastSeq: lastSeqOf(r.firstSeq, offset - r.baseOffset) });
  }
  if (kept.length > 0) return { ...state, batches: kept };
  const oldest = state.batches[0];
  if (!oldest || oldest.firstSeq === 0) return { ...state, batches: [] };
  const seq = mod(oldest.firstSeq - 1);
  return { ...state, batches: [{ firstSeq: seq, lastSeq: seq, baseOffset: -1, lastOffset: -1 }] };
}
