/**
 * The transactional part of a partition's producer state, pure: where a transaction opens, what a
 * marker closes and fences, which markers are repeats, what a truncation reopens, and the head's
 * open-transaction map the last stable offset is read from.
 */
import { describe, expect, it } from 'vitest';
import {
  applyMarker, check, checkMarker, openTxnsAfter, truncateState, truncationTouches, type ProducerState,
} from '../../../lib/log/producer-state.js';
import { lastStableOffset, type ReplicaHead } from '../../../lib/storage/model.js';

const P = 7;

function appended(state: ProducerState | undefined, firstSeq: number, count: number, baseOffset: number, epoch: number, transactional = true): ProducerState {
  const v = check(state, { producerId: P, producerEpoch: epoch, firstSeq, recordCount: count, transactional });
  if (v.kind !== 'append') throw new Error(`expected append, got ${v.kind}${v.kind === 'reject' ? ` ${v.error.kafkaName}` : ''}`);
  return v.next(baseOffset);
}
function marked(state: ProducerState | undefined, markerEpoch: number, offset: number, commit = true): ProducerState {
  const v = checkMarker(state, { producerId: P, markerEpoch, commit });
  if (v.kind !== 'append') throw new Error('expected the marker to be appended');
  return v.next(offset);
}

describe('Function: check (transactional batches)', () => {
  it('opens the transaction at the first transactional batch and keeps its first offset while it is open', () => {
    const a = appended(undefined, 0, 2, 10, 0);
    expect(a.txnFirst).toBe(10);
    const b = appended(a, 2, 3, 20, 0);
    expect(b.txnFirst).toBe(10);
  });

  it('opens nothing for an idempotent (non-transactional) batch', () => {
    expect(appended(undefined, 0, 1, 5, 0, false).txnFirst).toBeUndefined();
  });

  it('refuses a batch of the epoch a marker closed (a produce retried after its transaction ended) with INVALID_PRODUCER_EPOCH', () => {
    const closed = marked(appended(undefined, 0, 2, 10, 3), 4, 12, false);
    const v = check(closed, { producerId: P, producerEpoch: 3, firstSeq: 2, recordCount: 1, transactional: true });
    expect(v.kind === 'reject' && v.error.kafkaName).toBe('INVALID_PRODUCER_EPOCH');
  });

  it('takes the next transaction at the bumped epoch from sequence 0 and opens it at its own first offset', () => {
    const closed = marked(appended(undefined, 0, 2, 10, 3), 4, 12);
    const next = appended(closed, 0, 1, 13, 4);
    expect(next.txnFirst).toBe(13);
    expect(next.producerEpoch).toBe(4);
  });

  it('refuses a batch that reaches a partition after its transaction\'s marker landed there first (the partition was added, the produce was slow)', () => {
    const markedFirst = marked(undefined, 1, 0, false);
    expect(markedFirst.producerEpoch).toBe(1);
    const v = check(markedFirst, { producerId: P, producerEpoch: 0, firstSeq: 0, recordCount: 1, transactional: true });
    expect(v.kind === 'reject' && v.error.kafkaName).toBe('INVALID_PRODUCER_EPOCH');
  });
});

describe('Function: checkMarker and applyMarker', () => {
  it('closes the open transaction: no first offset left, the closed range named, the epoch raised and the sequences reset', () => {
    const st = marked(appended(undefined, 0, 2, 10, 3), 4, 12);
    expect(st.txnFirst).toBeUndefined();
    expect(st.closed).toEqual({ first: 10, marker: 12 });
    expect(st.producerEpoch).toBe(4);
    expect(st.markerEpoch).toBe(4);
    expect(st.batches).toEqual([]);
  });

  it('treats a marker of the same or an older epoch as a repeat, and one older than the producer\'s epoch too', () => {
    const st = marked(appended(undefined, 0, 2, 10, 3), 4, 12);
    expect(checkMarker(st, { producerId: P, markerEpoch: 4, commit: true }).kind).toBe('repeat');
    expect(checkMarker(st, { producerId: P, markerEpoch: 3, commit: false }).kind).toBe('repeat');
    const later = appended(st, 0, 1, 13, 6);
    expect(checkMarker(later, { producerId: P, markerEpoch: 5, commit: true }).kind).toBe('repeat');
    expect(checkMarker(later, { producerId: P, markerEpoch: 7, commit: true }).kind).toBe('append');
  });

  it('writes a marker on a partition the transaction added but never wrote, which fences the epoch there', () => {
    const st = applyMarker(undefined, { producerId: P, markerEpoch: 2, commit: false }, 40);
    expect(st).toMatchObject({ producerId: P, producerEpoch: 2, markerEpoch: 2, batches: [] });
    expect(st.closed).toBeUndefined();
  });
});

describe('Function: truncateState (transactions)', () => {
  it('forgets an open transaction that began at or above the cut', () => {
    const open = appended(undefined, 0, 2, 10, 0);
    const cut = truncateState(open, 10);
    expect(cut?.txnFirst).toBeUndefined();
    expect(truncationTouches(open, 10)).toBe(true);
  });

  it('keeps an open transaction that began below the cut', () => {
    const open = appended(appended(undefined, 0, 2, 10, 0), 2, 2, 20, 0);
    expect(truncateState(open, 21)?.txnFirst).toBe(10);
  });

  it('opens a transaction again when the cut takes its marker but not its first batch', () => {
    const closed = marked(appended(undefined, 0, 2, 10, 3), 4, 12);
    const cut = truncateState(closed, 12);
    expect(cut?.txnFirst).toBe(10);
    expect(cut?.closed).toBeUndefined();
    expect(cut?.markerEpoch).toBeUndefined();
    expect(truncationTouches(closed, 12)).toBe(true);
  });

  it('forgets a transaction whose batches and marker are both cut, and leaves one wholly below the cut closed', () => {
    const closed = marked(appended(undefined, 0, 2, 10, 3), 4, 12);
    expect(truncateState(closed, 10)?.txnFirst).toBeUndefined();
    expect(truncateState(closed, 13)).toMatchObject({ closed: { first: 10, marker: 12 }, markerEpoch: 4 });
    expect(truncationTouches(closed, 13)).toBe(false);
  });
});

describe('Function: openTxnsAfter', () => {
  it('adds, moves and removes producers\' open transactions, and answers undefined when nothing changed', () => {
    expect(openTxnsAfter(undefined, [{ producerId: 1, txnFirst: 5 }], 0)).toEqual({ 1: 5 });
    expect(openTxnsAfter({ 1: 5 }, [{ producerId: 1, txnFirst: 5 }], 0)).toBeUndefined();
    expect(openTxnsAfter({ 1: 5, 2: 8 }, [{ producerId: 1 }], 0)).toEqual({ 2: 8 });
    expect(openTxnsAfter({ 1: 5 }, [{ producerId: 2 }], 0)).toBeUndefined();
    expect(openTxnsAfter({ 1: 5 }, [{ producerId: 1, txnFirst: 9 }, { producerId: 3, txnFirst: 2 }], 0)).toEqual({ 1: 9, 3: 2 });
  });

  it('keeps a transaction a marker closed unstable until the high watermark passes the marker', () => {
    const closed = { producerId: 1, closed: { first: 5, marker: 9 } };
    expect(openTxnsAfter({ 1: 5 }, [closed], 7)).toEqual({ '1:9': 5 });
    expect(openTxnsAfter({ 1: 5 }, [closed], 9)).toEqual({ '1:9': 5 });
    expect(openTxnsAfter({ 1: 5 }, [closed], 10)).toEqual({});
    // a later change of another producer drops the entry the high watermark has passed
    expect(openTxnsAfter({ '1:9': 5 }, [{ producerId: 2, txnFirst: 12 }], 10)).toEqual({ 2: 12 });
    expect(openTxnsAfter({ '1:9': 5 }, [{ producerId: 2, txnFirst: 12 }], 8)).toEqual({ '1:9': 5, 2: 12 });
  });

  it('drops a closed entry whose marker a truncation cut (the producer\'s transaction opens again)', () => {
    expect(openTxnsAfter({ '1:9': 5, '2:4': 3 }, [{ producerId: 1, txnFirst: 5 }], 2, 8)).toEqual({ 1: 5, '2:4': 3 });
  });
});

describe('Function: lastStableOffset', () => {
  const head = (hw: number, openTxns?: Record<string, number>) => ({ hw, ...(openTxns ? { openTxns } : {}) }) as unknown as ReplicaHead;
  it('is the high watermark with nothing open, and the first offset of the oldest open transaction below it', () => {
    expect(lastStableOffset(head(10))).toBe(10);
    expect(lastStableOffset(head(10, {}))).toBe(10);
    expect(lastStableOffset(head(10, { 1: 7, 2: 4 }))).toBe(4);
    expect(lastStableOffset(head(10, { 1: 12 }))).toBe(10);
  });

  it('holds at a closed transaction\'s first offset while its marker is at or above the high watermark, and not once it is below', () => {
    expect(lastStableOffset(head(10, { '1:10': 4 }))).toBe(4);
    expect(lastStableOffset(head(11, { '1:10': 4 }))).toBe(11);
    expect(lastStableOffset(head(11, { '1:10': 4, 2: 8 }))).toBe(8);
  });
});
