import { describe, expect, it } from 'vitest';
import { check } from '../../../chaos/checker.js';
import type { HistoryEvent } from '../../../chaos/history.js';
import { Readability } from '../../../chaos/liveness.js';

type Draft = HistoryEvent extends infer E ? (E extends HistoryEvent ? Omit<E, 'id'> : never) : never;
const history = (...drafts: Draft[]): HistoryEvent[] => drafts.map((d, i) => ({ ...d, id: i + 1 }) as HistoryEvent);

const TP = { topic: 'orders', partition: 0 };
const ack = (value: string, offset: number, end: number, acks: 'all' | '1' = 'all'): Draft =>
  ({ type: 'produce', process: 'p', idempotent: false, acks, ...TP, value, start: end - 5, end, outcome: 'ok', offset });
const read = (end: number, records: { offset: number; value: string }[], hw: number): Draft =>
  ({ type: 'read', process: 'liveness', ...TP, fromOffset: records[0]?.offset ?? 0, start: end - 5, end, outcome: 'ok', records, highWatermark: hw });
const fault: Draft = { type: 'fault', kind: 'kill-leader-after-ack', target: 'broker-2', start: 900, end: 990 };
const quiet = (start: number, end: number, fault = 3, boundMs = 1000): Draft => ({ type: 'quiet', fault, pausedAt: start - 10, start, end, boundMs });
const final = (at: number, values: string[]): Draft =>
  ({ type: 'final-read', ...TP, at, records: values.map((value, offset) => ({ offset, value })), complete: true });
/** An unclean election: the ISR killed at `killedAt`, a replica whose log ends at `offset` elected at `electedAt`. */
const cut = (offset: number, killedAt: number, electedAt: number): Draft =>
  ({ type: 'fault', kind: 'unclean-election', target: 'orders/0', start: killedAt - 5, end: electedAt + 5, cut: { ...TP, offset, leaderEpoch: 2, killedAt, electedAt } });
const deletion = (offset: number, start: number, answered = true): Draft =>
  ({ type: 'fault', kind: 'delete-records', target: 'orders/0', start, end: start + 10, deletion: { ...TP, offset, answered } });

describe('Function: check (liveness)', () => {
  it('reports an acks=all record never readable in a quiet phase, with the record and the time waited', () => {
    // Prepare: acknowledged at 800; the quiet phase starts at 1000 and ends at its bound; nobody reads offset 1.
    const h = history(ack('a', 0, 700), ack('b', 1, 800), fault, quiet(1000, 2000), read(1500, [{ offset: 0, value: 'a' }], 1));
    // Act
    const r = check(h);
    // Assess
    expect(r.anomalies).toEqual([{
      kind: 'unreadable-in-quiet',
      message: 'acks=all write "b" by p acknowledged at orders/0 offset 1 (event 2) was not readable within 1000 ms of the quiet phase that began at 1000 ' +
        'after kill-leader-after-ack of broker-2 (event 3): never read; waited 1000 ms, to the phase\'s end',
      events: [2, 3, 4],
    }]);
    expect(r.counts.quietPhases).toBe(1);
  });

  it('finds nothing when every acknowledged record is read within the bound', () => {
    // Prepare: one record read before the phase, one during it.
    const h = history(ack('a', 0, 700), ack('b', 1, 800), fault, read(850, [{ offset: 0, value: 'a' }], 1), quiet(1000, 1300),
      read(1290, [{ offset: 1, value: 'b' }], 2), final(3000, ['a', 'b']));
    // Act / assess
    expect(check(h).anomalies).toEqual([]);
  });

  it('reports a record first read after the bound, with how long it took', () => {
    const h = history(ack('a', 0, 700), fault, quiet(1000, 2000, 2), final(4500, ['a']));
    const [a] = check(h).anomalies;
    expect(a?.kind).toBe('unreadable-in-quiet');
    expect(a?.message).toContain('after kill-leader-after-ack of broker-2 (event 2): first read 3500 ms after it began (event 4)');
    expect(a?.events).toEqual([1, 2, 3, 4]);
  });

  it('holds a record only to the first quiet phase after its acknowledgement, and reports it once', () => {
    // 'a' is acknowledged during the first phase (so only the second one binds it), and never read.
    const h = history(quiet(1000, 2000), ack('a', 0, 1500), fault, quiet(3000, 4000), quiet(5000, 6000));
    const r = check(h);
    expect(r.anomalies).toHaveLength(1);
    expect(r.anomalies[0]!.events).toEqual([2, 3, 4]);
  });

  it('lets an acks=1 record lost with its leader stay unread, but not one that survived', () => {
    const lost = history(ack('a', 0, 700, '1'), fault, quiet(1000, 2000), final(3000, []));
    expect(check(lost).anomalies).toEqual([]);
    const survived = history(ack('a', 0, 700, '1'), fault, quiet(1000, 2000), final(3000, ['a']));
    expect(check(survived).anomalies.map((x) => x.kind)).toEqual(['unreadable-in-quiet']);
  });

  it('reports a high watermark that stays below an acks=all record read before the phase (a new leader behind)', () => {
    // Prepare: 'b' was read before the phase; during it every fetch says the high watermark is 1.
    const h = history(ack('a', 0, 700), ack('b', 1, 800), read(850, [{ offset: 0, value: 'a' }, { offset: 1, value: 'b' }], 2), fault,
      quiet(1000, 2000, 4), read(1500, [], 1), read(1900, [], 1), final(3000, ['a', 'b']));
    // Act
    const r = check(h);
    // Assess
    expect(r.anomalies).toEqual([{
      kind: 'unreadable-in-quiet',
      message: 'orders/0: acks=all write "b" by p acknowledged at offset 1 (event 2) was not below the high watermark within 1000 ms of the quiet phase that began at 1000 ' +
        'after kill-leader-after-ack of broker-2 (event 4): the highest high watermark fetched in time was 1 (event 6); waited 1000 ms, to the phase\'s end',
      events: [2, 5, 6],
    }]);
  });

  it('does not hold a record an unclean election cut to the bound, nor to the high watermark', () => {
    // Prepare: 'b' (offset 1) acknowledged at 800, before the election at 900 of a replica whose log ends at 1; its high watermark stays 1.
    const h = history(ack('a', 0, 700), ack('b', 1, 800), cut(1, 850, 900), quiet(1000, 2000), read(1500, [{ offset: 0, value: 'a' }], 1), final(3000, ['a']));
    // Act
    const r = check(h);
    // Assess
    expect(r.anomalies).toEqual([]);
    expect(r.counts.uncleanLoss).toBe(1);
  });

  it('still holds a record below the cut to the bound, and one acknowledged after the election', () => {
    // 'b' (offset 1) is below a cut at 2: it is first read at 4500, after the bound.
    const below = history(ack('a', 0, 700), ack('b', 1, 800), cut(2, 850, 900), quiet(1000, 2000), read(1500, [{ offset: 0, value: 'a' }], 2), final(4500, ['a', 'b']));
    const [a] = check(below).anomalies;
    expect(check(below).anomalies).toHaveLength(1);
    expect(a?.kind).toBe('unreadable-in-quiet');
    expect(a?.message).toContain('acks=all write "b" by p acknowledged at orders/0 offset 1 (event 2)');
    // 'c' (offset 1) was acknowledged by the new leader at 950, after the election.
    const after = history(ack('a', 0, 700), cut(1, 850, 900), ack('c', 1, 950), quiet(1000, 2000), read(1500, [{ offset: 0, value: 'a' }], 1), final(4500, ['a', 'c']));
    expect(check(after).anomalies.map((x) => [x.kind, x.events[0]])).toEqual([['unreadable-in-quiet', 3]]);
  });

  it('does not hold a record below a DeleteRecords sent by the deadline, but does one sent later', () => {
    // Prepare: 'a' (offset 0) is never read; offset 0 is deleted at 1500 (in time) or at 2500 (after the deadline 2000).
    const left: Draft = { type: 'final-read', ...TP, at: 3000, records: [{ offset: 1, value: 'b' }], complete: true };
    const inTime = history(ack('a', 0, 700), ack('b', 1, 800), deletion(1, 1500), quiet(1000, 2000, 3), read(1600, [{ offset: 1, value: 'b' }], 2), left);
    expect(check(inTime).anomalies).toEqual([]);
    const late = history(ack('a', 0, 700), ack('b', 1, 800), quiet(1000, 2000, 4), deletion(1, 2500), read(1600, [{ offset: 1, value: 'b' }], 2), left);
    expect(check(late).anomalies.map((x) => [x.kind, x.events[0]])).toEqual([['unreadable-in-quiet', 1]]);
  });

  it('judges nothing without a quiet phase', () => {
    expect(check(history(ack('a', 0, 700), final(3000, ['a']))).anomalies).toEqual([]);
  });
});

describe('Class: Readability', () => {
  it('tracks acknowledged records until a read returns them, from the lowest unread offset', () => {
    // Prepare
    const events = history(ack('a', 0, 100), ack('b', 1, 110), ack('c', 2, 500));
    const r = new Readability();
    // Act / assess: 'c' was acknowledged after the phase began at 200.
    r.update(events);
    expect(r.pending(200)).toEqual([{ ...TP, from: 0, count: 2 }]);
    events.push({ ...read(300, [{ offset: 0, value: 'a' }], 1), id: 4 } as HistoryEvent);
    r.update(events);
    expect(r.pending(200)).toEqual([{ ...TP, from: 1, count: 1 }]);
    expect(r.pending(600)).toEqual([{ ...TP, from: 1, count: 2 }]);
  });

  it('stops waiting for an acks=1 record whose offset holds another value, and for records a phase gave up on', () => {
    const events = history(ack('a', 0, 100, '1'), ack('b', 1, 100), read(150, [{ offset: 0, value: 'x' }], 1));
    const r = new Readability();
    r.update(events);
    expect(r.pending(200)).toEqual([{ ...TP, from: 1, count: 1 }]);
    r.forget(200);
    expect(r.pending(200)).toEqual([]);
  });

  it('stops waiting for acks=1 records at or above the leader\'s log end, and only those', () => {
    const r = new Readability();
    r.update(history(ack('a', 0, 100), ack('b', 1, 100, '1'), ack('c', 2, 100, '1')));
    r.truncated(TP.topic, TP.partition, 2);
    expect(r.pending(200)).toEqual([{ ...TP, from: 0, count: 2 }]);
    r.truncated(TP.topic, TP.partition, 0);
    expect(r.pending(200)).toEqual([{ ...TP, from: 0, count: 1 }]);
  });

  it('names the high watermark each partition needs for its acks=all records', () => {
    const r = new Readability();
    r.update(history(ack('a', 0, 100), ack('b', 1, 110), ack('c', 2, 110, '1'), ack('d', 3, 500)));
    expect(r.needed(200)).toEqual([{ ...TP, hw: 2 }]);
    expect(r.needed(600)).toEqual([{ ...TP, hw: 4 }]);
  });

  it('stops waiting for the records an unclean election cut, and only those', () => {
    // Prepare: a cut at offset 1 elected at 160; 'd' takes offset 1 in the new log afterwards.
    const events = history(ack('a', 0, 100), ack('b', 1, 110), ack('c', 2, 120, '1'), cut(1, 150, 160), ack('d', 1, 200));
    const r = new Readability();
    // Act
    r.update(events.slice(0, 3));
    expect(r.pending(300)).toEqual([{ ...TP, from: 0, count: 3 }]);
    expect(r.needed(300)).toEqual([{ ...TP, hw: 2 }]);
    r.update(events);
    // Assess
    expect(r.pending(180)).toEqual([{ ...TP, from: 0, count: 1 }]);
    expect(r.needed(180)).toEqual([{ ...TP, hw: 1 }]);
    expect(r.pending(300)).toEqual([{ ...TP, from: 0, count: 2 }]);
    expect(r.needed(300)).toEqual([{ ...TP, hw: 2 }]);
  });

  it('stops waiting for the records below a DeleteRecords, and for those acknowledged below it later', () => {
    const events = history(ack('a', 0, 100), ack('b', 1, 110), ack('c', 2, 120), deletion(2, 150, false), ack('x', 1, 200));
    const r = new Readability();
    r.update(events);
    expect(r.pending(300)).toEqual([{ ...TP, from: 2, count: 1 }]);
    expect(r.needed(300)).toEqual([{ ...TP, hw: 3 }]);
    r.forget(300);
    expect(r.needed(130)).toEqual([{ ...TP, hw: 3 }]);
  });

  it('counts a record read before its acknowledgement came back as read', () => {
    const events = history(read(90, [{ offset: 0, value: 'a' }], 1), ack('a', 0, 100));
    const r = new Readability();
    r.update(events);
    expect(r.pending(200)).toEqual([]);
  });
});
