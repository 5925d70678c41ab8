/**
 * The idempotent producer's rules, pure: the window of recent runs, sequence wrap, out-of-order,
 * duplicate and fenced batches with Kafka's error names, and what a truncation keeps.
 */
import { describe, expect, it } from 'vitest';
import { applyBatch, check, RECENT_BATCHES, truncateState, type ProducerState } from '../../../lib/log/producer-state.js';

const MAX_SEQ = 2 ** 31 - 1;
const P = 7;

/** Appends `count` records from `firstSeq` at `baseOffset`, failing unless the verdict is 'append'. */
function appended(state: ProducerState | undefined, firstSeq: number, count: number, baseOffset: number, epoch = 0): ProducerState {
  const v = check(state, { producerId: P, producerEpoch: epoch, firstSeq, recordCount: count });
  if (v.kind !== 'append') throw new Error(`expected append, got ${v.kind}${v.kind === 'reject' ? ` ${v.error.kafkaName}` : ''}`);
  return v.next(baseOffset);
}
const verdict = (state: ProducerState | undefined, firstSeq: number, count: number, epoch = 0) => {
  const v = check(state, { producerId: P, producerEpoch: epoch, firstSeq, recordCount: count });
  return v.kind === 'reject' ? v.error.kafkaName : v.kind === 'duplicate' ? [v.baseOffset, v.lastOffset] : 'append';
};

/** `n` requests of 2 records each, every one interleaved with another producer's record (so none merge). */
function separated(n: number): ProducerState {
  let st: ProducerState | undefined;
  for (let i = 0; i < n; i++) st = appended(st, i * 2, 2, i * 3);
  return st as ProducerState;
}

describe('Function: check', () => {
  it('accepts a new producer only from sequence 0', () => {
    expect(verdict(undefined, 0, 3)).toBe('append');
    expect(verdict(undefined, 1, 3)).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER');
  });

  it('answers a retry of any of the last five runs with its original offsets, also for a part of a run', () => {
    const st = separated(RECENT_BATCHES);
    for (let i = 0; i < RECENT_BATCHES; i++) expect(verdict(st, i * 2, 2)).toEqual([i * 3, i * 3 + 1]);
    expect(verdict(st, 9, 1)).toEqual([13, 13]);
  });

  it('remembers five runs: an older sequence is DUPLICATE_SEQUENCE_NUMBER (written, offsets unknown), never appended again', () => {
    const st = separated(RECENT_BATCHES + 1);
    expect(st.batches).toHaveLength(RECENT_BATCHES);
    expect(verdict(st, 0, 2)).toBe('DUPLICATE_SEQUENCE_NUMBER');
    expect(verdict(st, 2, 2)).toEqual([3, 4]);
  });

  it('merges batches written back to back into one run, so a request split into many batches is one entry of the window', () => {
    let st: ProducerState | undefined;
    // 20 one-record batches at consecutive offsets (one request split by max.message.bytes)...
    for (let i = 0; i < 20; i++) st = appended(st, i, 1, 100 + i);
    expect(st?.batches).toEqual([{ firstSeq: 0, lastSeq: 19, baseOffset: 100, lastOffset: 119 }]);
    // ...then four more requests, each after another producer's record.
    for (let i = 0; i < 4; i++) st = appended(st, 20 + i, 1, 121 + 2 * i);
    // A retry of the whole first request, batch by batch, gets every original offset.
    for (let i = 0; i < 20; i++) expect(verdict(st, i, 1)).toEqual([100 + i, 100 + i]);
  });

  it('refuses a gap and a sequence beyond the next with OUT_OF_ORDER_SEQUENCE_NUMBER', () => {
    const st = appended(undefined, 0, 3, 0);
    expect(verdict(st, 4, 1)).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER');
    expect(verdict(st, 3, 1)).toBe('append');
    // Overlapping the end: part written, part not.
    expect(verdict(st, 2, 2)).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER');
  });

  it('wraps sequences from 2^31 - 1 to 0 as Kafka does', () => {
    let st = appended(undefined, 0, 1, 0);
    st = { ...st, batches: [{ firstSeq: MAX_SEQ - 2, lastSeq: MAX_SEQ - 1, baseOffset: 10, lastOffset: 11 }] };
    // A batch across the wrap: MAX_SEQ, 0, 1.
    const across = appended(st, MAX_SEQ, 3, 12);
    expect(across.batches).toEqual([{ firstSeq: MAX_SEQ - 2, lastSeq: 1, baseOffset: 10, lastOffset: 14 }]);
    expect(verdict(across, 2, 1)).toBe('append');
    expect(verdict(across, 0, 2)).toEqual([13, 14]);
    expect(verdict(across, MAX_SEQ, 3)).toEqual([12, 14]);
    expect(verdict(across, 3, 1)).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER');
  });

  it('fences an older epoch with INVALID_PRODUCER_EPOCH and starts a newer one at sequence 0', () => {
    const st = appended(undefined, 0, 2, 0, 3);
    expect(verdict(st, 2, 1, 2)).toBe('INVALID_PRODUCER_EPOCH');
    expect(verdict(st, 5, 1, 4)).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER');
    const bumped = appended(st, 0, 1, 2, 4);
    expect(bumped).toEqual({ producerId: P, producerEpoch: 4, batches: [{ firstSeq: 0, lastSeq: 0, baseOffset: 2, lastOffset: 2 }] });
    expect(verdict(bumped, 0, 2, 3)).toBe('INVALID_PRODUCER_EPOCH');
  });
});

describe('Function: applyBatch', () => {
  it('builds on a follower the same state the leader decided, run for run', () => {
    let leader: ProducerState | undefined;
    let follower: ProducerState | undefined;
    const writes = [[0, 2, 0], [2, 1, 2], [3, 4, 5], [7, 1, 9], [8, 1, 11], [9, 1, 13], [10, 2, 20]] as const;
    for (const [seq, n, off] of writes) {
      leader = appended(leader, seq, n, off);
      follower = applyBatch(follower, { producerId: P, producerEpoch: 0, firstSeq: seq, recordCount: n, baseOffset: off });
    }
    expect(follower).toEqual(leader);
  });
});

describe('Function: truncateState', () => {
  it('keeps the runs below the offset and cuts a run the offset falls in', () => {
    const st = separated(3); // runs at 0-1, 3-4, 6-7 (sequences 0-1, 2-3, 4-5)
    expect(truncateState(st, 4)?.batches).toEqual([
      { firstSeq: 0, lastSeq: 1, baseOffset: 0, lastOffset: 1 },
      { firstSeq: 2, lastSeq: 2, baseOffset: 3, lastOffset: 3 },
    ]);
    const cut = truncateState(st, 4) as ProducerState;
    expect(verdict(cut, 3, 3)).toBe('append');
    expect(verdict(cut, 2, 1)).toEqual([3, 3]);
  });

  it('where every remembered run is truncated away, still knows the epoch and the last sequence before them', () => {
    // Six requests of two records, each after another producer's record: the window holds
    // sequences 2..11 (offsets 3..16); truncating to offset 2 leaves sequences 0..1 in the log.
    let st: ProducerState | undefined;
    for (let i = 0; i < 6; i++) st = appended(st, i * 2, 2, i * 3, 5);
    const truncated = truncateState(st as ProducerState, 2) as ProducerState;
    expect(truncated.producerEpoch).toBe(5);
    // A zombie of an older epoch is still fenced, and sequence 0 is not accepted as a new start.
    expect(verdict(truncated, 0, 1, 4)).toBe('INVALID_PRODUCER_EPOCH');
    expect(verdict(truncated, 0, 2, 5)).toBe('DUPLICATE_SEQUENCE_NUMBER');
    // The producer's retry of its first truncated request goes in; a gap does not.
    expect(verdict(truncated, 2, 2, 5)).toBe('append');
    expect(verdict(truncated, 4, 2, 5)).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER');
    // Appending after the position forgets it; truncating twice keeps it.
    expect(appended(truncated, 2, 2, 2, 5).batches).toEqual([{ firstSeq: 2, lastSeq: 3, baseOffset: 2, lastOffset: 3 }]);
    expect(truncateState(truncated, 1)).toEqual(truncated);
  });

  it('where the truncated runs began the epoch, the epoch stays and starts again at sequence 0', () => {
    const st = appended(appended(undefined, 0, 3, 0, 1), 0, 2, 10, 2);
    const truncated = truncateState(st, 10) as ProducerState;
    expect(truncated).toEqual({ producerId: P, producerEpoch: 2, batches: [] });
    expect(verdict(truncated, 0, 2, 1)).toBe('INVALID_PRODUCER_EPOCH');
    expect(verdict(truncated, 2, 1, 2)).toBe('OUT_OF_ORDER_SEQUENCE_NUMBER');
    expect(verdict(truncated, 0, 2, 2)).toBe('append');
  });
});
