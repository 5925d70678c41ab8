import { describe, expect, it } from 'vitest';
import { ANOMALY_KINDS, check, type AnomalyKind } from '../../../chaos/checker.js';
import { parseHistory, toJsonl, type HistoryEvent } from '../../../chaos/history.js';
import { TXN_ANOMALY_KINDS } from '../../../chaos/txn-checker.js';

type Draft = HistoryEvent extends infer E ? (E extends HistoryEvent ? Omit<E, 'id'> : never) : never;
const history = (...drafts: Draft[]): HistoryEvent[] => drafts.map((d, i) => ({ ...d, id: i + 1 }) as HistoryEvent);

const TOPIC = 'chaos-txn';
const GROUP = 'txn-group';
const ID = 'tid-0';
const who = { process: 'txn-0', transactionalId: ID };

const init = (at: number, epoch: number): Draft => ({ type: 'txn-init', ...who, start: at, end: at + 1, outcome: 'ok', producerId: 7, producerEpoch: epoch });
const begin = (txn: string, at: number, epoch = 0): Draft => ({ type: 'txn-begin', ...who, txn: `${ID}:${txn}`, producerId: 7, producerEpoch: epoch, at });
const send = (txn: string, partition: number, value: string, offset: number | undefined, at: number, sequence = 0): Draft => ({
  type: 'txn-send', ...who, txn: `${ID}:${txn}`, topic: TOPIC, partition, value, sequence, start: at, end: at + 1,
  ...(offset === undefined ? { outcome: 'unknown', error: 'timeout' } : { outcome: 'ok', offset }),
});
const offsets = (txn: string, offset: number, at: number): Draft =>
  ({ type: 'txn-offsets', ...who, txn: `${ID}:${txn}`, group: GROUP, start: at, end: at + 1, outcome: 'ok', offsets: [{ topic: TOPIC, partition: 0, offset }] });
const end = (txn: string, commit: boolean, start: number, outcome: 'ok' | 'fail' | 'unknown' = 'ok'): Draft =>
  ({ type: 'txn-end', ...who, txn: `${ID}:${txn}`, commit, start, end: start + 5, outcome, ...(outcome === 'ok' ? {} : { error: outcome === 'fail' ? '409 PRODUCER_FENCED: ...' : 'timeout' }) });
type Recs = [number, string][];
const recs = (r: Recs) => r.map(([offset, value]) => ({ offset, value }));
const read = (partition: number, from: number, r: Recs, endAt: number, next: number, lso = next, process = 'txn-reader-0'): Draft => ({
  type: 'txn-read', process, topic: TOPIC, partition, fromOffset: from, start: endAt - 2, end: endAt, outcome: 'ok', records: recs(r),
  nextOffset: next, highWatermark: Math.max(next, lso), lastStableOffset: lso,
});
const final = (partition: number, r: Recs, at = 200, complete = true): Draft =>
  ({ type: 'txn-final-read', topic: TOPIC, partition, at, records: recs(r), complete, highWatermark: 6, lastStableOffset: complete ? 6 : 2 });
const committedOffsets = (offset: number | undefined): Draft =>
  ({ type: 'final-commits', group: GROUP, at: 210, offsets: offset === undefined ? [] : [{ topic: TOPIC, partition: 0, offset }] });

/**
 * Four transactions of one producer, as the logs hold them (each marker takes an offset):
 * A commits a0 (0/0) and a1 (1/0), with offsets 1 of the group; B aborts b0 (0/2) and b1 (2/0),
 * with offsets 3; C asks to commit c0 (0/4) and c1 (1/2), with offsets 5, and never hears back —
 * it did commit; D's second send was lost, so it re-inits without asking for a commit.
 */
const A = [begin('A', 10), send('A', 0, 'a0', 0, 11), send('A', 1, 'a1', 0, 11), offsets('A', 1, 13), end('A', true, 20)];
const B = [begin('B', 30, 1), send('B', 0, 'b0', 2, 31), send('B', 2, 'b1', 0, 31), offsets('B', 3, 33), end('B', false, 40)];
const C = [begin('C', 50, 2), send('C', 0, 'c0', 4, 51), send('C', 1, 'c1', 2, 51), offsets('C', 5, 53), end('C', true, 60, 'unknown'), init(70, 4)];
const D = [begin('D', 80, 4), send('D', 2, 'd0', 2, 81), send('D', 2, 'd1', undefined, 83, 1), init(90, 5)];
const RUN = [init(0, 0), ...A, ...B, ...C, ...D];
const READS = [
  read(0, 0, [[0, 'a0']], 22, 2), // while A's commit was being asked
  read(2, 0, [], 50, 2), // B aborted: nothing to return, the next offset past it
  read(0, 2, [[4, 'c0']], 95, 6),
];
const FINALS = [final(0, [[0, 'a0'], [4, 'c0']]), final(1, [[0, 'a1'], [2, 'c1']]), final(2, [])];
const clean = (): Draft[] => [...RUN, ...READS, ...FINALS, committedOffsets(5)];

const kinds = (h: HistoryEvent[]): AnomalyKind[] => [...new Set(check(h).anomalies.map((a) => a.kind))];
const only = (h: HistoryEvent[], kind: AnomalyKind) => check(h).anomalies.filter((a) => a.kind === kind);
const without = (drafts: Draft[], drop: (d: Draft) => boolean): Draft[] => drafts.filter((d) => !drop(d));
const isFinal = (partition: number) => (d: Draft) => d.type === 'txn-final-read' && d.partition === partition;

describe('Function: check (transactions)', () => {
  it('finds no anomaly in a clean history, and counts its transactions by outcome', () => {
    // Act
    const r = check(history(...clean()));
    // Assess
    expect(r.anomalies).toEqual([]);
    expect(r.counts.transactions).toEqual({
      transactions: 4, committed: 1, aborted: 2, abortsAcknowledged: 1, unknown: 1, sends: 8, acknowledgedSends: 7, reads: 3,
      operations: 3 + 8 + 3 + 3 + READS.length,
    });
  });

  it('lets a transaction whose commit answer was lost be invisible, all of it', () => {
    const h = history(...RUN, ...READS.slice(0, 2), final(0, [[0, 'a0']]), final(1, [[0, 'a1']]), final(2, []), committedOffsets(1));
    expect(check(h).anomalies).toEqual([]);
  });

  it('reports a transaction whose commit answer was lost, once read, missing from the final read as lost committed writes', () => {
    const h = history(...RUN, ...READS, final(0, [[0, 'a0']]), final(1, [[0, 'a1']]), final(2, []), committedOffsets(1));
    expect(kinds(h)).toEqual(['lost-committed-write']);
    expect(only(h, 'lost-committed-write').map((a) => a.message)).toEqual([
      expect.stringMatching(/"c0" of transaction tid-0:C of tid-0 \(its commit answer was lost, but a read returned its values\), acknowledged at chaos-txn\/0 offset 4/),
      expect.stringMatching(/"c1" of transaction tid-0:C of tid-0 .* acknowledged at chaos-txn\/1 offset 2/),
    ]);
  });

  it('reports a read_committed read returning a value of an aborted transaction, or of one never asked to commit, as an aborted read', () => {
    const h = history(...clean(), read(2, 0, [[0, 'b1'], [2, 'd0']], 100, 4));
    // Assess
    const found = only(h, 'aborted-read');
    expect(found).toHaveLength(2);
    expect(found[0]!.message).toMatch(/"b1" at offset 0 of transaction tid-0:B of tid-0, which was aborted/);
    expect(found[1]!.message).toMatch(/"d0" at offset 2 of transaction tid-0:D of tid-0, which never committed \(no commit was asked\)/);
    expect(kinds(h)).toEqual(['aborted-read']);
  });

  it('reports an aborted value in the final read as an aborted read', () => {
    const h = history(...without(clean(), isFinal(2)), final(2, [[0, 'b1']]));
    // (and only part of it: b0 is not there)
    expect(kinds(h)).toEqual(['aborted-read', 'non-atomic-visibility']);
    expect(only(h, 'aborted-read')[0]!.events).toContain(h.find((e) => e.type === 'txn-end' && !e.commit)!.id);
  });

  it('reports a value of a transaction whose commit was refused as an aborted read', () => {
    const h = history(...RUN, begin('E', 100, 5), send('E', 1, 'e0', 4, 101), end('E', true, 110, 'fail'), read(1, 4, [[4, 'e0']], 120, 5));
    expect(only(h, 'aborted-read')[0]!.message).toMatch(/"e0" at offset 4 of transaction tid-0:E of tid-0, which never committed \(its commit was refused\)/);
  });

  it('reports a read that ended before the commit was asked returning the transaction\'s value as an intermediate read', () => {
    const h = history(...clean(), read(1, 0, [[0, 'a1']], 15, 1));
    const found = only(h, 'intermediate-read');
    expect(found).toHaveLength(1);
    expect(found[0]!.message).toMatch(/ended at 15, before the commit of transaction tid-0:A of tid-0 was asked at 20, and returned "a1" at offset 0/);
    expect(kinds(h)).toEqual(['intermediate-read']);
  });

  it('reports a value no transactional send wrote (a marker) as a control record read', () => {
    const h = history(...clean(), read(0, 0, [[0, 'a0'], [1, '<no value>']], 100, 2));
    expect(kinds(h)).toEqual(['control-record-read']);
    expect(only(h, 'control-record-read')[0]!.message).toMatch(/offset 1 with value "<no value>"/);
  });

  it('reports a read returning an offset at or above the last stable offset it answered', () => {
    const h = history(...clean(), read(0, 0, [[0, 'a0']], 100, 2, 0));
    expect(kinds(h)).toEqual(['read-past-lso']);
    expect(only(h, 'read-past-lso')[0]!.message).toMatch(/offset 0 \("a0" of transaction tid-0:A of tid-0\) at or above the last stable offset 0/);
  });

  it('reports a read moving past a committed value without returning it', () => {
    const h = history(...clean(), read(1, 0, [], 100, 4));
    expect(kinds(h)).toEqual(['skipped-committed-read']);
    expect(only(h, 'skipped-committed-read')[0]!.message).toMatch(/without returning "a1" at offset 0, an acknowledged send of transaction tid-0:A of tid-0/);
  });

  it('reports acknowledged sends of a committed transaction missing from the final read as lost committed writes', () => {
    const h = history(...without(clean(), (d) => isFinal(0)(d) || isFinal(1)(d)), final(0, [[4, 'c0']]), final(1, [[2, 'c1']]));
    const found = only(h, 'lost-committed-write');
    expect(found.map((a) => a.message)).toEqual([
      expect.stringMatching(/"a0" of transaction tid-0:A of tid-0, acknowledged at chaos-txn\/0 offset 0, is missing/),
      expect.stringMatching(/"a1" of transaction tid-0:A of tid-0, acknowledged at chaos-txn\/1 offset 0, is missing/),
    ]);
    expect(kinds(h)).toEqual(['lost-committed-write']);
  });

  it('reports a transaction whose outcome is unknown partly visible in the final read as non-atomic visibility', () => {
    const h = history(...RUN, ...READS.slice(0, 2), FINALS[0]!, final(1, [[0, 'a1']]), FINALS[2]!, committedOffsets(5));
    const found = only(h, 'non-atomic-visibility');
    expect(found).toHaveLength(1);
    expect(found[0]!.message).toMatch(/1 of the 2 acknowledged sends of transaction tid-0:C of tid-0 \(unknown\): present "c0" \(chaos-txn\/0 offset 4\); missing "c1" \(chaos-txn\/1 offset 2\)/);
    expect(kinds(h)).toEqual(['non-atomic-visibility']);
  });

  it('reports a committed transaction partly visible as non-atomic visibility, besides its lost write', () => {
    const h = history(...without(clean(), isFinal(1)), final(1, [[2, 'c1']]));
    expect(kinds(h)).toEqual(['lost-committed-write', 'non-atomic-visibility']);
  });

  it('reports a value at two offsets as a duplicate', () => {
    const h = history(...without(clean(), isFinal(0)), final(0, [[0, 'a0'], [3, 'a0'], [4, 'c0']]));
    expect(kinds(h)).toEqual(['txn-duplicate']);
    expect(only(h, 'txn-duplicate')[0]!.message).toMatch(/"a0" of transaction tid-0:A of tid-0 is at 2 offsets: chaos-txn\/0 offset 0 .*, chaos-txn\/0 offset 3/);
  });

  it('reports two values read at one offset as an inconsistent offset', () => {
    const h = history(...clean(), read(1, 2, [[2, 'c1']], 100, 4, 4, 'txn-reader-1'), read(1, 2, [[2, 'a1']], 101, 4, 4, 'txn-reader-0'));
    expect(kinds(h)).toContain('txn-inconsistent-offset');
    expect(only(h, 'txn-inconsistent-offset')[0]!.message).toMatch(/chaos-txn\/1 offset 2 holds 2 values: "c1" of transaction tid-0:C of tid-0 .* vs "a1" of transaction tid-0:A of tid-0/);
  });

  it('reports a final committed offset sent only in an aborted transaction, or in none, as aborted offsets', () => {
    const aborted = history(...without(clean(), (d) => d.type === 'final-commits'), committedOffsets(3));
    expect(only(aborted, 'aborted-offsets')[0]!.message).toMatch(/group txn-group's final committed offset of chaos-txn\/0 is 3, but it was sent only in transaction tid-0:B of tid-0, which was aborted/);
    const unknown = history(...without(clean(), (d) => d.type === 'final-commits'), committedOffsets(4));
    expect(only(unknown, 'aborted-offsets')[0]!.message).toMatch(/is 4, but no transaction sent it/);
    expect(kinds(aborted)).toEqual(['aborted-offsets']);
  });

  it('reports a final committed offset missing or below a committed transaction\'s offsets as lost committed offsets', () => {
    const h = history(...RUN, ...READS, ...FINALS, committedOffsets(undefined));
    expect(kinds(h)).toEqual(['lost-committed-offsets']);
    expect(only(h, 'lost-committed-offsets')[0]!.message).toMatch(/final committed offset of chaos-txn\/0 is missing, below 1, sent by transaction tid-0:A of tid-0, which committed/);
  });

  it('reports a final read_committed read that could not get past an open transaction as unreadable after the heal', () => {
    const h = history(...without(clean(), isFinal(0)), final(0, [[0, 'a0']], 200, false));
    expect(kinds(h)).toEqual(['unreadable-after-heal']);
    expect(only(h, 'unreadable-after-heal')[0]!.message).toMatch(/final read_committed read of chaos-txn\/0 could not get to the high watermark 6 .*last stable offset 2/);
  });

  it('lists its kinds among the checker\'s, in report order', () => {
    expect(ANOMALY_KINDS.slice(-TXN_ANOMALY_KINDS.length)).toEqual([...TXN_ANOMALY_KINDS]);
  });
});

describe('Function: parseHistory (transactions)', () => {
  it('round-trips the transactional events', () => {
    const h = history(...clean());
    expect(parseHistory(toJsonl(h))).toEqual(h);
  });

  it('throws on a transactional event with a field missing', () => {
    const text = toJsonl(history(end('A', true, 20))).replace('"commit":true,', '');
    expect(() => parseHistory(text)).toThrow(/history line 1: txn-end: field 'commit' must be boolean/);
  });
});
