/** The push subscription's rules of the chaos checker, on small hand-written histories. */
import { describe, expect, it } from 'vitest';
import { checkPush } from '../../../chaos/push-checker.js';
import type { FaultEvent, FinalReadEvent, PushFinalEvent, ReadEvent } from '../../../chaos/history.js';

const final = (partition: number, values: string[]): FinalReadEvent => ({ type: 'final-read', id: 100 + partition, topic: 't', partition, at: 10, records: values.map((value, offset) => ({ offset, value })), complete: true });
const pushed = (id: number, partition: number, from: number, values: string[]): ReadEvent => ({
  type: 'read', id, process: 'push', topic: 't', partition, fromOffset: from, start: 1, end: 2, outcome: 'ok', records: values.map((value, i) => ({ offset: from + i, value })),
});
const pushFinal = (offsets: number[], caughtUp = true): PushFinalEvent => ({ type: 'push-final', id: 200, group: 'g-push', at: 20, offsets: offsets.map((offset, partition) => ({ topic: 't', partition, offset })), caughtUp });

describe('Chaos checker: push subscriptions', () => {
  it('accepts deliveries that cover the log below the committed offsets, duplicates included', () => {
    const reads = [pushed(1, 0, 0, ['a', 'b']), pushed(2, 0, 0, ['a', 'b', 'c']), pushed(3, 1, 0, ['x'])];
    expect(checkPush(reads, [final(0, ['a', 'b', 'c']), final(1, ['x'])], pushFinal([3, 1]), [])).toEqual([]);
  });

  it('finds a record the subscription committed past without delivering it (push-skip), and a group that had not caught up (push-behind)', () => {
    const reads = [pushed(1, 0, 0, ['a']), pushed(2, 0, 2, ['c'])];
    const found = checkPush(reads, [final(0, ['a', 'b', 'c'])], pushFinal([3], false), []);
    expect(found.map((f) => f.kind).sort()).toEqual(['push-behind', 'push-skip']);
    expect(found.find((f) => f.kind === 'push-skip')?.message).toMatch(/t#0 to 3 but never delivered 1 record\(s\) below it, the first at offset 1 \("b"\)/);
  });

  it('counts a delivery of another value at an offset as not delivering the final one, except on a partition an unclean election cut', () => {
    const reads = [pushed(1, 0, 0, ['a', 'old'])];
    expect(checkPush(reads, [final(0, ['a', 'new'])], pushFinal([2]), []).map((f) => f.kind)).toEqual(['push-skip']);
    const cut: FaultEvent = { type: 'fault', id: 5, kind: 'unclean-election', target: 't-0', start: 1, end: 2, cut: { topic: 't', partition: 0 } as FaultEvent['cut'] & object };
    expect(checkPush(reads, [final(0, ['a', 'new'])], pushFinal([2]), [cut])).toEqual([]);
  });

  it('has nothing to say of a run without a push subscription', () => {
    expect(checkPush([], [final(0, ['a'])], undefined, [])).toEqual([]);
  });
});
