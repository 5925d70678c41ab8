import fc from 'fast-check';
import { rng } from '../../../chaos/recorder.js';
import { describe, expect, it } from 'vitest';
import { ANOMALY_KINDS, check, type AnomalyKind, type CheckReport } from '../../../chaos/checker.js';
import {
  parseHistory, toJsonl, type AssignmentEvent, type CommitEvent, type FinalCommitsEvent, type FinalReadEvent,
  type HistoryEvent, type Outcome, type PollEvent, type ReadEvent, type TP,
} from '../../../chaos/history.js';

// ---- A model of the system that writes clean histories: one log per partition with a high
// watermark, producers appending (acks=1 writes above the HW may be truncated away), readers and a
// consumer group reading below the HW, a rebalance, faults, and a full final read after the heal.

type Fate = 'ok' | 'dup' | 'unknown-applied' | 'unknown-lost' | 'fail';
type Action =
  | { k: 'produce'; producer: number; partition: number; fate: Fate }
  | { k: 'read'; reader: number; partition: number; from: number; max: number; slack: number }
  | { k: 'replicate'; partition: number }
  | { k: 'truncate'; partition: number }
  | { k: 'poll'; consumer: number; max: number }
  | { k: 'commit'; consumer: number }
  | { k: 'heartbeat'; consumer: number }
  | { k: 'rebalance'; shift: number }
  | { k: 'fault'; kind: number };

type Draft = HistoryEvent extends infer E ? (E extends HistoryEvent ? Omit<E, 'id'> : never) : never;

const PRODUCERS = [
  { process: 'idem-all', idempotent: true, acks: 'all' },
  { process: 'plain-all', idempotent: false, acks: 'all' },
  { process: 'idem-1', idempotent: true, acks: '1' },
  { process: 'plain-1', idempotent: false, acks: '1' },
  { process: 'plain-0', idempotent: false, acks: '0' },
] as const;
const TPS: readonly TP[] = [{ topic: 'orders', partition: 0 }, { topic: 'orders', partition: 1 }, { topic: 'audit', partition: 0 }];
const CONSUMERS = 2;
const GROUP = 'billing';
const FAULTS = ['kill', 'pause', 'proxy-drop'];

function simulate(actions: readonly Action[]): HistoryEvent[] {
  const h: HistoryEvent[] = [];
  const emit = (e: Draft): void => void h.push({ ...e, id: h.length + 1 } as HistoryEvent);
  const logs = TPS.map(() => ({ values: [] as string[], hw: 0 }));
  const committed = TPS.map(() => 0);
  const positions = Array.from({ length: CONSUMERS }, () => new Map<number, number>());
  let owner = TPS.map((_, i) => i % CONSUMERS);
  let groupEpoch = 1;
  let seq = 0;
  let t = 0;
  const owned = (c: number) => TPS.flatMap((_, i) => (owner[i] === c ? [i] : []));
  const heartbeat = (c: number) => emit({
    type: 'assignment', process: `consumer-${c}`, group: GROUP, memberId: `member-${c}`, memberEpoch: groupEpoch, groupEpoch, at: t,
    partitions: owned(c).map((i) => ({ ...TPS[i]! })),
  });
  for (let c = 0; c < CONSUMERS; c++) heartbeat(c);

  for (const a of actions) {
    t += 10;
    switch (a.k) {
      case 'produce': {
        const p = PRODUCERS[a.producer % PRODUCERS.length]!;
        const i = a.partition % TPS.length;
        const log = logs[i]!;
        const value = `${p.process}-${seq++}`;
        const fate = a.fate === 'dup' && p.idempotent ? 'ok' : a.fate;
        let offset: number | undefined;
        let outcome: Outcome = fate === 'fail' ? 'fail' : fate === 'ok' || fate === 'dup' ? 'ok' : 'unknown';
        if (fate === 'dup') log.values.push(value); // a retry after a lost response: written twice
        if (fate === 'ok' || fate === 'dup' || fate === 'unknown-applied') {
          offset = log.values.length;
          log.values.push(value);
          if (p.acks === 'all' && fate !== 'unknown-applied') log.hw = log.values.length;
        }
        if (outcome !== 'ok' || p.acks === '0') offset = undefined;
        if (fate === 'unknown-lost') outcome = 'unknown';
        emit({ type: 'produce', process: p.process, idempotent: p.idempotent, acks: p.acks, ...TPS[i]!, value, start: t, end: t + 1, outcome, ...(offset === undefined ? {} : { offset }) });
        break;
      }
      case 'replicate': logs[a.partition % TPS.length]!.hw = logs[a.partition % TPS.length]!.values.length; break;
      case 'truncate': { const log = logs[a.partition % TPS.length]!; log.values.length = log.hw; break; }
      case 'read': {
        const i = a.partition % TPS.length;
        const log = logs[i]!;
        const from = Math.min(log.hw, Math.floor((a.from / 100) * (log.hw + 1)));
        const to = Math.min(from + a.max, log.hw);
        const records = log.values.slice(from, to).map((value, k) => ({ offset: from + k, value }));
        // A new leader may briefly report a lower high watermark, never below what it returned.
        emit({ type: 'read', process: `reader-${a.reader}`, ...TPS[i]!, fromOffset: from, start: t, end: t + 1, outcome: 'ok', records, highWatermark: Math.min(log.hw, to + a.slack) });
        break;
      }
      case 'poll': {
        const c = a.consumer % CONSUMERS;
        const records: PollEvent['records'] = [];
        for (const i of owned(c)) {
          const pos = positions[c]!.get(i) ?? committed[i]!;
          const to = Math.min(pos + a.max, logs[i]!.hw);
          for (let o = pos; o < to; o++) records.push({ ...TPS[i]!, offset: o, value: logs[i]!.values[o]! });
          positions[c]!.set(i, Math.max(pos, to));
        }
        emit({ type: 'poll', process: `consumer-${c}`, group: GROUP, memberId: `member-${c}`, memberEpoch: groupEpoch, start: t, end: t + 1, outcome: 'ok', records });
        break;
      }
      case 'commit': {
        const c = a.consumer % CONSUMERS;
        const offsets = owned(c).flatMap((i) => (positions[c]!.has(i) ? [{ ...TPS[i]!, offset: positions[c]!.get(i)! }] : []));
        for (const o of offsets) committed[TPS.findIndex((x) => x.topic === o.topic && x.partition === o.partition)] = o.offset;
        emit({ type: 'commit', process: `consumer-${c}`, group: GROUP, memberId: `member-${c}`, start: t, end: t + 1, outcome: 'ok', offsets });
        break;
      }
      case 'heartbeat': heartbeat(a.consumer % CONSUMERS); break;
      case 'rebalance': {
        groupEpoch++;
        const next = TPS.map((_, i) => (i + a.shift) % CONSUMERS);
        for (let i = 0; i < TPS.length; i++) if (next[i] !== owner[i]) for (const p of positions) p.delete(i); // newly owned: from the committed offset
        owner = next;
        for (let c = 0; c < CONSUMERS; c++) heartbeat(c);
        break;
      }
      case 'fault': emit({ type: 'fault', kind: FAULTS[a.kind % FAULTS.length]!, target: `broker-${a.kind % 3}`, start: t, end: t + 5 }); break;
    }
  }
  t += 10;
  emit({ type: 'heal', at: t });
  for (let i = 0; i < TPS.length; i++) {
    const log = logs[i]!;
    log.hw = log.values.length;
    emit({ type: 'final-read', ...TPS[i]!, at: t + 1, records: log.values.map((value, offset) => ({ offset, value })), complete: true });
  }
  emit({ type: 'final-commits', group: GROUP, at: t + 2, offsets: TPS.flatMap((tp, i) => (committed[i]! > 0 ? [{ ...tp, offset: committed[i]! }] : [])) });
  return h;
}

const produce = (producer: number, partition: number, fate: Fate = 'ok'): Action => ({ k: 'produce', producer, partition, fate });
const read = (reader: number, partition: number, from = 0, max = 50, slack = 100): Action => ({ k: 'read', reader, partition, from, max, slack });
const poll = (consumer: number, max = 3): Action => ({ k: 'poll', consumer, max });
const commit = (consumer: number): Action => ({ k: 'commit', consumer });
const heartbeat = (consumer: number): Action => ({ k: 'heartbeat', consumer });

/** A clean run touching every case the checker must let pass. */
const BASE: Action[] = [
  { k: 'fault', kind: 0 },
  produce(0, 0), produce(1, 0), produce(0, 1), produce(1, 2), produce(1, 1),
  produce(3, 0), { k: 'truncate', partition: 0 }, // an acks=1 write lost…
  produce(0, 0), // …and its offset reused
  produce(1, 0, 'dup'), produce(1, 0), // a non-idempotent retry written twice
  produce(2, 1), { k: 'replicate', partition: 1 },
  produce(4, 2), produce(0, 2, 'unknown-applied'), produce(1, 1, 'unknown-lost'), produce(0, 1, 'fail'), { k: 'replicate', partition: 2 },
  read(0, 0), read(0, 0, 0, 2, 0), // the second read reports a lower high watermark
  read(1, 1), read(2, 2, 50), read(1, 0, 50, 2, 1),
  poll(0, 2), poll(1, 2), commit(0), commit(1), heartbeat(0), heartbeat(1),
  poll(0), poll(1), commit(0), commit(1),
  { k: 'fault', kind: 1 },
  produce(0, 0), produce(1, 1), produce(0, 2), produce(1, 0), produce(3, 1), produce(2, 2), { k: 'replicate', partition: 1 }, { k: 'replicate', partition: 2 },
  { k: 'rebalance', shift: 1 },
  poll(0), poll(1), commit(0), commit(1), heartbeat(0), heartbeat(1),
  produce(0, 0), produce(0, 1), produce(1, 2), produce(1, 0), produce(0, 1), produce(1, 2),
  poll(0, 2), poll(1, 2), read(2, 1, 30), { k: 'fault', kind: 2 }, commit(0), commit(1), heartbeat(0), heartbeat(1), poll(0, 2), poll(1, 2),
  produce(1, 0), produce(1, 1), produce(1, 2), produce(0, 0), produce(0, 1), produce(0, 2),
];

const clone = (h: readonly HistoryEvent[]): HistoryEvent[] => structuredClone(h) as HistoryEvent[];
const ofType = <T extends HistoryEvent['type']>(h: readonly HistoryEvent[], type: T) => h.filter((e): e is Extract<HistoryEvent, { type: T }> => e.type === type);
const finalOf = (h: readonly HistoryEvent[], tp: TP): FinalReadEvent => ofType(h, 'final-read').find((f) => f.topic === tp.topic && f.partition === tp.partition)!;
const kinds = (r: CheckReport): AnomalyKind[] => [...new Set(r.anomalies.map((a) => a.kind))];
const endOf = (h: readonly HistoryEvent[]): number => Math.max(...h.map((e) => ('end' in e ? e.end : e.at)));
const nextId = (h: readonly HistoryEvent[]): number => Math.max(...h.map((e) => e.id)) + 1;

/** Exactly the anomalies of one kind, nothing else. */
function only(h: readonly HistoryEvent[], kind: AnomalyKind) {
  const r = check(h);
  expect(kinds(r)).toEqual([kind]);
  return r.anomalies;
}

describe('Function: parseHistory / toJsonl', () => {
  it('round-trips a history', () => {
    // Prepare
    const h = simulate(BASE);
    // Act
    const text = toJsonl(h);
    // Assess
    expect(text.split('\n')).toHaveLength(h.length + 1);
    expect(parseHistory(text)).toEqual(h);
    expect(toJsonl([])).toBe('');
    expect(parseHistory('')).toEqual([]);
  });

  it('drops a torn last line, and only that', () => {
    const h = simulate(BASE.slice(0, 10));
    const text = toJsonl(h);
    const torn = text + JSON.stringify({ type: 'heal', id: 999, at: 5 }).slice(0, 12);
    expect(parseHistory(torn)).toEqual(h);
    // A complete last line without its newline is kept.
    expect(parseHistory(text + JSON.stringify({ type: 'heal', id: 999, at: 5 }))).toEqual([...h, { type: 'heal', id: 999, at: 5 }]);
    // A torn line in the middle is not a torn write: it throws with its line number.
    const lines = text.split('\n');
    lines[2] = lines[2]!.slice(0, 10);
    expect(() => parseHistory(lines.join('\n'))).toThrow(/history line 3: invalid JSON/);
    // So does a newline-terminated bad line at the end.
    expect(() => parseHistory(`${text}{"type":\n`)).toThrow(/invalid JSON/);
  });

  it('throws on well-formed JSON that is not a history event', () => {
    expect(() => parseHistory('{"type":"nope","id":1}\n')).toThrow(/line 1: unknown event type "nope"/);
    expect(() => parseHistory('[1]\n')).toThrow(/not a JSON object/);
    expect(() => parseHistory('{"type":"heal","id":1}\n')).toThrow(/heal: field 'at' must be number/);
    expect(() => parseHistory('{"type":"produce","id":1,"process":"p","idempotent":true,"acks":"2","topic":"t","partition":0,"value":"v","start":0,"end":1,"outcome":"ok"}\n')).toThrow(/'acks'/);
    expect(() => parseHistory('{"type":"read","id":1,"process":"r","topic":"t","partition":0,"fromOffset":0,"start":0,"end":1,"outcome":"ok","records":[{"offset":"0","value":"v"}]}\n')).toThrow(/'records'/);
    expect(() => parseHistory('{"type":"poll","id":1,"process":"c","group":"g","memberId":"m","start":0,"end":1,"outcome":"ok","records":[],"memberEpoch":1.5}\n')).toThrow(/'memberEpoch'/);
  });
});

describe('Function: check', () => {
  const base = simulate(BASE);

  it('finds no anomaly in a clean history, and counts its operations', () => {
    // Act
    const r = check(base);
    // Assess
    expect(r.anomalies).toEqual([]);
    expect(Object.values(r.anomalyTotals).every((n) => n === 0)).toBe(true);
    const produces = ofType(base, 'produce');
    expect(r.counts).toEqual({
      operations: produces.length + ofType(base, 'read').length + ofType(base, 'poll').length + ofType(base, 'commit').length,
      produced: produces.length,
      acknowledged: produces.filter((p) => p.outcome === 'ok').length,
      acknowledgedAll: produces.filter((p) => p.outcome === 'ok' && p.acks === 'all').length,
      reads: ofType(base, 'read').length, polls: ofType(base, 'poll').length, commits: ofType(base, 'commit').length,
      faults: { kill: 1, pause: 1, 'proxy-drop': 1 }, quietPhases: 0, uncleanLoss: 0, deleted: 0,
      transactions: { transactions: 0, committed: 0, aborted: 0, abortsAcknowledged: 0, unknown: 0, sends: 0, acknowledgedSends: 0, reads: 0, operations: 0 },
    });
    expect(r.allowed).toEqual([]);
    expect(r.allowedTotals).toEqual({ 'unclean-loss': 0, deleted: 0 });
  });

  it('lets an acks=1 write be lost and its offset reused', () => {
    // The base history has one: acknowledged at an offset that now holds another value.
    const lost = ofType(base, 'produce').find((p) => p.acks === '1' && p.outcome === 'ok' && !finalOf(base, p).records.some((x) => x.value === p.value));
    expect(lost).toBeDefined();
    expect(finalOf(base, lost!).records[lost!.offset!]?.value).not.toBe(lost!.value);
    // And by hand, for an idempotent acks=1 producer too.
    const h: HistoryEvent[] = [
      { type: 'produce', id: 1, process: 'p', idempotent: true, acks: '1', topic: 't', partition: 0, value: 'a', start: 0, end: 1, outcome: 'ok', offset: 0 },
      { type: 'produce', id: 2, process: 'q', idempotent: true, acks: 'all', topic: 't', partition: 0, value: 'b', start: 2, end: 3, outcome: 'ok', offset: 0 },
      { type: 'final-read', id: 3, topic: 't', partition: 0, at: 4, records: [{ offset: 0, value: 'b' }], complete: true },
    ];
    expect(check(h).anomalies).toEqual([]);
  });

  it('lets a non-idempotent producer write a value twice', () => {
    const plain = ofType(base, 'produce').filter((p) => !p.idempotent);
    expect(plain.some((p) => finalOf(base, p).records.filter((x) => x.value === p.value).length === 2)).toBe(true);
    expect(check(base).anomalies).toEqual([]);
  });

  it('lets the high watermark a reader sees go down', () => {
    const byReader = ofType(base, 'read').filter((r) => r.process === 'reader-0' && r.topic === 'orders' && r.partition === 0);
    expect(byReader[1]!.highWatermark).toBeLessThan(byReader[0]!.highWatermark!);
    expect(check(base).anomalies).toEqual([]);
  });

  it('reports an acknowledged acks=all write missing from the final read as a lost write', () => {
    // Prepare
    const h = clone(base);
    const p = ofType(h, 'produce').find((x) => x.acks === 'all' && x.outcome === 'ok' && x.idempotent)!;
    const f = finalOf(h, p);
    f.records = f.records.filter((x) => x.value !== p.value);
    // Act
    const found = only(h, 'lost-write');
    // Assess
    expect(found).toHaveLength(1);
    expect(found[0]!.events).toEqual([p.id, f.id]);
    expect(found[0]!.message).toContain(`"${p.value}"`);
    expect(found[0]!.message).toContain(`orders/0 offset ${p.offset}`);
  });

  it('reports an acknowledgement at an offset holding another value as an inconsistent offset', () => {
    const h = clone(base);
    const p = ofType(h, 'produce').find((x) => x.acks === 'all' && x.outcome === 'ok' && !x.idempotent)!;
    const f = finalOf(h, p);
    const other = f.records.find((x) => x.value !== p.value)!;
    p.offset = other.offset;
    const found = only(h, 'inconsistent-offset');
    expect(found).toHaveLength(1);
    expect(found[0]!.events).toContain(p.id);
    expect(found[0]!.events).toContain(f.id);
    expect(found[0]!.message).toContain(`${p.topic}/${p.partition} offset ${other.offset}`);
    expect(found[0]!.message).toContain(`"${other.value}"`);
  });

  it('reports two acks=all acknowledgements of one offset as an inconsistent offset', () => {
    const h: HistoryEvent[] = [
      { type: 'produce', id: 1, process: 'p', idempotent: false, acks: 'all', topic: 't', partition: 0, value: 'a', start: 0, end: 1, outcome: 'ok', offset: 0 },
      { type: 'produce', id: 2, process: 'q', idempotent: false, acks: 'all', topic: 't', partition: 0, value: 'b', start: 2, end: 3, outcome: 'ok', offset: 0 },
    ];
    expect(check(h).anomalies).toEqual([expect.objectContaining({ kind: 'inconsistent-offset', events: [1, 2] })]);
  });

  it('reports an idempotent value at two offsets as a duplicate', () => {
    const h = clone(base);
    const p = ofType(h, 'produce').find((x) => x.idempotent && x.acks === 'all' && x.outcome === 'ok')!;
    const f = finalOf(h, p);
    f.records.push({ offset: f.records.length, value: p.value });
    const found = only(h, 'duplicate');
    expect(found).toHaveLength(1);
    expect(found[0]!.events).toContain(p.id);
    expect(found[0]!.events).toContain(f.id);
    expect(found[0]!.message).toContain(`offset ${p.offset}`);
    expect(found[0]!.message).toContain(`offset ${f.records.length - 1}`);
  });

  it('reports two readers seeing one partition in different orders as divergence', () => {
    // Prepare: two adjacent values of non-idempotent producers, read swapped by another reader.
    const h = clone(base);
    const plain = new Set(ofType(h, 'produce').filter((p) => !p.idempotent).map((p) => p.value));
    let at: { f: FinalReadEvent; o: number } | undefined;
    for (const f of ofType(h, 'final-read')) {
      const o = f.records.findIndex((x, i) => plain.has(x.value) && plain.has(f.records[i + 1]?.value ?? '') && x.value !== f.records[i + 1]!.value);
      if (o >= 0) at = { f, o };
    }
    expect(at).toBeDefined();
    const { f, o } = at!;
    const rogue: ReadEvent = {
      type: 'read', id: nextId(h), process: 'reader-rogue', topic: f.topic, partition: f.partition, fromOffset: o, start: endOf(h) + 1, end: endOf(h) + 2, outcome: 'ok',
      records: [{ offset: o, value: f.records[o + 1]!.value }, { offset: o + 1, value: f.records[o]!.value }], highWatermark: f.records.length,
    };
    h.push(rogue);
    // Act
    const found = only(h, 'divergence');
    // Assess
    expect(found).toHaveLength(2);
    for (const a of found) expect(a.events).toEqual(expect.arrayContaining([rogue.id, f.id]));
    expect(found.map((a) => a.message).join()).toContain(`${f.topic}/${f.partition} offset ${o + 1}`);
  });

  it('reports a fetch returning an offset at or above its high watermark', () => {
    const h = clone(base);
    const f = finalOf(h, TPS[0]!);
    const r: ReadEvent = { type: 'read', id: nextId(h), process: 'reader-0', ...TPS[0]!, fromOffset: 0, start: endOf(h) + 1, end: endOf(h) + 2, outcome: 'ok', records: f.records.slice(0, 3), highWatermark: 2 };
    h.push(r);
    const found = only(h, 'read-above-hw');
    expect(found).toEqual([expect.objectContaining({ events: [r.id] })]);
    expect(found[0]!.message).toContain('offset 2');
  });

  it('reports a fetch starting below its fetch offset, or out of order, as reading backwards', () => {
    const h = clone(base);
    const recs = finalOf(h, TPS[0]!).records;
    const at = endOf(h) + 1;
    const below: ReadEvent = { type: 'read', id: nextId(h), process: 'reader-0', ...TPS[0]!, fromOffset: 2, start: at, end: at + 1, outcome: 'ok', records: recs.slice(1, 3), highWatermark: recs.length };
    const shuffled: ReadEvent = { ...below, id: below.id + 1, fromOffset: 0, records: [recs[0]!, recs[2]!, recs[1]!] };
    h.push(below, shuffled);
    const found = only(h, 'read-backwards');
    expect(found.map((a) => a.events)).toEqual([[below.id], [shuffled.id]]);
  });

  /** The last poll of consumer-0 that received records, and a copy of it to plant after it. */
  function lastPoll(h: HistoryEvent[]): { last: PollEvent; rec: PollEvent['records'][number]; next: PollEvent } {
    const last = ofType(h, 'poll').filter((p) => p.process === 'consumer-0' && p.records.length > 0).at(-1)!;
    const next = { ...structuredClone(last), id: nextId(h), start: endOf(h) + 1, end: endOf(h) + 2 };
    return { last, rec: last.records.at(-1)!, next };
  }

  it('reports a stable consumer receiving an offset again as reading backwards', () => {
    const h = clone(base);
    const { last, rec, next } = lastPoll(h);
    next.records = [rec];
    h.push(next);
    expect(only(h, 'read-backwards')).toEqual([expect.objectContaining({ events: [last.id, next.id] })]);
  });

  it('reports a stable consumer skipping offsets as a poll skip', () => {
    const h = clone(base);
    const { last, rec, next } = lastPoll(h);
    const skipped = finalOf(h, rec).records[rec.offset + 2];
    expect(skipped).toBeDefined();
    next.records = [{ topic: rec.topic, partition: rec.partition, ...skipped! }];
    h.push(next);
    const found = only(h, 'poll-skip');
    expect(found).toEqual([expect.objectContaining({ events: [last.id, next.id] })]);
    expect(found[0]!.message).toContain(`offsets ${rec.offset + 1}..${rec.offset + 1}`);
  });

  it('does not call a rewind after a failed poll or a reassignment a skip or going backwards', () => {
    const h = clone(base);
    const { rec, next } = lastPoll(h);
    const failed: PollEvent = { ...next, records: [], outcome: 'unknown', error: 'timeout' };
    const again = { ...next, id: next.id + 1, start: next.start + 2, end: next.end + 2, records: [rec] };
    h.push(failed, again);
    expect(check(h).anomalies).toEqual([]);
  });

  it('reports a commit below a completed earlier commit as going backwards', () => {
    const h = clone(base);
    const ok = ofType(h, 'commit').filter((c) => c.offsets.length > 0);
    const o = ok.at(-1)!.offsets[0]!;
    const same = ok.filter((c) => c.offsets.some((x) => x.topic === o.topic && x.partition === o.partition));
    const top = Math.max(...same.map((c) => c.offsets.find((x) => x.topic === o.topic && x.partition === o.partition)!.offset));
    const earliestTop = same.find((c) => c.offsets.some((x) => x.topic === o.topic && x.partition === o.partition && x.offset === top))!;
    expect(top).toBeGreaterThan(0);
    const late: CommitEvent = { ...ok.at(-1)!, id: nextId(h), start: endOf(h) + 1, end: endOf(h) + 2, offsets: [{ ...o, offset: top - 1 }] };
    h.push(late);
    expect(only(h, 'commit-backwards')).toEqual([expect.objectContaining({ events: [earliestTop.id, late.id] })]);
  });

  it('reports final committed offsets below an acknowledged commit as going backwards', () => {
    const h = clone(base);
    const fc0: FinalCommitsEvent = ofType(h, 'final-commits')[0]!;
    const o = fc0.offsets[0]!;
    o.offset -= 1;
    const found = only(h, 'commit-backwards');
    expect(found).toHaveLength(1);
    expect(found[0]!.events).toContain(fc0.id);
    expect(found[0]!.message).toContain(`${o.topic}/${o.partition} is ${o.offset}`);
  });

  it('does not flag concurrent commits that complete out of order', () => {
    const h: HistoryEvent[] = [
      { type: 'commit', id: 1, process: 'c', group: 'g', memberId: 'm', start: 0, end: 10, outcome: 'ok', offsets: [{ topic: 't', partition: 0, offset: 5 }] },
      { type: 'commit', id: 2, process: 'c', group: 'g', memberId: 'm', start: 1, end: 3, outcome: 'ok', offsets: [{ topic: 't', partition: 0, offset: 3 }] },
      { type: 'commit', id: 3, process: 'c', group: 'g', memberId: 'm', start: 11, end: 12, outcome: 'fail', offsets: [{ topic: 't', partition: 0, offset: 1 }] },
      { type: 'final-commits', id: 4, group: 'g', at: 20, offsets: [{ topic: 't', partition: 0, offset: 5 }] },
    ];
    expect(check(h).anomalies).toEqual([]);
  });

  it('reports two members owning a partition in one group epoch', () => {
    // Prepare: consumer-1 is also given one of consumer-0's partitions, in the same epoch.
    const h = clone(base);
    const a0 = ofType(h, 'assignment').filter((a) => a.process === 'consumer-0').at(-1)!;
    const a1 = ofType(h, 'assignment').filter((a) => a.process === 'consumer-1').at(-1)!;
    expect(a0.groupEpoch).toBe(a1.groupEpoch);
    const tp = a0.partitions[0]!;
    const opened = ofType(h, 'assignment').find((a) => a.process === 'consumer-0' && a.groupEpoch === a0.groupEpoch)!;
    const planted: AssignmentEvent = { ...structuredClone(a1), id: nextId(h), at: a1.at + 1, partitions: [...a1.partitions, tp] };
    h.push(planted);
    // Act
    const found = only(h, 'double-ownership');
    // Assess
    expect(found).toEqual([expect.objectContaining({ events: [opened.id, planted.id] })]);
    expect(found[0]!.message).toContain(`partition ${tp.topic}/${tp.partition}`);
    expect(found[0]!.message).toContain('member-0');
    expect(found[0]!.message).toContain('member-1');
  });

  it('does not flag a handover across group epochs, nor back-to-back ownership', () => {
    const tp = { topic: 't', partition: 0 };
    const a = (id: number, member: string, at: number, groupEpoch: number, partitions: TP[]): AssignmentEvent =>
      ({ type: 'assignment', id, process: member, group: 'g', memberId: member, memberEpoch: groupEpoch, groupEpoch, at, partitions });
    const h: HistoryEvent[] = [
      a(1, 'm1', 0, 1, [tp]), a(2, 'm1', 5, 1, [tp]), a(3, 'm1', 10, 2, []), // m1 gives it up at 10…
      a(4, 'm2', 10, 2, [tp]), a(5, 'm2', 20, 2, [tp]), // …and m2 gets it then
      a(6, 'm3', 8, 1, [tp]), // a stale epoch-1 assignment, held until m3's last poll
      { type: 'poll', id: 7, process: 'm3', group: 'g', memberId: 'm3', memberEpoch: 1, start: 8, end: 9, outcome: 'ok', records: [] },
    ];
    expect(check(h).anomalies).toEqual([expect.objectContaining({ kind: 'double-ownership', events: [1, 6] })]);
    expect(check(h.slice(0, 5)).anomalies).toEqual([]);
  });

  it('reports a final read that could not read everything as unreadable after the heal', () => {
    const h = clone(base);
    const f = finalOf(h, TPS[1]!);
    f.complete = false;
    f.records = f.records.slice(0, 2); // whatever it did not get is not judged lost
    expect(only(h, 'unreadable-after-heal')).toEqual([expect.objectContaining({ events: [f.id] })]);
  });

  it('keeps at most maxAnomaliesPerKind of each kind but counts them all', () => {
    const h = clone(base);
    for (const f of ofType(h, 'final-read')) f.complete = false;
    const r = check(h, { maxAnomaliesPerKind: 1 });
    expect(r.anomalies).toHaveLength(1);
    expect(r.anomalyTotals['unreadable-after-heal']).toBe(TPS.length);
  });

  it('lists every anomaly kind', () => {
    expect(ANOMALY_KINDS).toHaveLength(25);
    expect(ANOMALY_KINDS.indexOf('read-below-log-start')).toBe(ANOMALY_KINDS.indexOf('read-backwards') + 1);
    expect(Object.keys(check([]).anomalyTotals)).toEqual(ANOMALY_KINDS);
  });
});

// ---- The loss an unclean election or a DeleteRecords allows, told from any other loss.

describe('Function: check (allowed loss)', () => {
  const T = { topic: 't', partition: 0 };
  const history = (...drafts: Draft[]): HistoryEvent[] => drafts.map((d, i) => ({ ...d, id: i + 1 }) as HistoryEvent);
  const rec = (offset: number, value: string) => ({ offset, value });
  const put = (value: string, offset: number, start: number, end: number, idempotent = false): Draft =>
    ({ type: 'produce', process: 'p', idempotent, acks: 'all', ...T, value, start, end, outcome: 'ok', offset });
  /** An idempotent write whose answer was lost (it may have reached the leader). */
  const unanswered = (value: string, start: number, end: number): Draft =>
    ({ type: 'produce', process: 'p', idempotent: true, acks: 'all', ...T, value, start, end, outcome: 'unknown' });
  const fetch = (process: string, start: number, end: number, records: { offset: number; value: string }[]): Draft =>
    ({ type: 'read', process, ...T, fromOffset: records[0]?.offset ?? 0, start, end, outcome: 'ok', records });
  /** The ISR killed at `killedAt`, a replica whose log ends at `offset` elected at `electedAt`. */
  const cut = (offset: number, killedAt: number, electedAt: number): Draft =>
    ({ type: 'fault', kind: 'unclean-election', target: 't/0', start: killedAt - 5, end: electedAt + 5, cut: { ...T, offset, leaderEpoch: 3, killedAt, electedAt } });
  const deletion = (offset: number, start: number, end: number, answered = true): Draft =>
    ({ type: 'fault', kind: 'delete-records', target: 't/0', start, end, deletion: { ...T, offset, answered } });
  const final = (at: number, records: { offset: number; value: string }[]): Draft => ({ type: 'final-read', ...T, at, records, complete: true });
  const kindsOf = (r: CheckReport) => r.anomalies.map((a) => a.kind);

  it('allows acks=all writes acknowledged before an unclean election, at or above its cut, to be lost, and lists them', () => {
    // Prepare: 'b' and 'c' (offsets 1, 2) acknowledged before the election of a replica whose log ends at 1; 'd' takes offset 1 in the new log.
    const h = history(put('a', 0, 5, 10), put('b', 1, 15, 20), put('c', 2, 25, 30), cut(1, 40, 50), put('d', 1, 55, 60), final(100, [rec(0, 'a'), rec(1, 'd')]));
    // Act
    const r = check(h);
    // Assess
    expect(r.anomalies).toEqual([]);
    expect(r.counts.uncleanLoss).toBe(2);
    expect(r.counts.deleted).toBe(0);
    expect(r.allowedTotals).toEqual({ 'unclean-loss': 3, deleted: 0 });
    expect(r.allowed.map((a) => a.events)).toEqual([[2, 4, 5, 6], [2, 4, 6], [3, 4, 6]]);
    expect(r.allowed[0]!.message).toMatch(/^t\/0 offset 1 holds 2 values: .*the old and the new log across the unclean election of event 4 \(new log from offset 1/);
    expect(r.allowed[1]!.message).toContain('acks=all write "b" by p acknowledged at t/0 offset 1 is missing from the final read (2 records): acknowledged at 20, before the unclean election of event 4');
  });

  it('still reports a lost write below the cut, or acknowledged after the election', () => {
    // Prepare: 'a' (offset 0) is below the cut; 'e' (offset 2) was acknowledged by the new leader after the election.
    const h = history(put('a', 0, 5, 10), put('b', 1, 15, 20), cut(1, 40, 50), put('d', 1, 55, 60), put('e', 2, 65, 70), final(100, [rec(1, 'd')]));
    // Act
    const r = check(h);
    // Assess
    expect(r.anomalies).toEqual([
      expect.objectContaining({ kind: 'lost-write', events: [1, 6] }),
      expect.objectContaining({ kind: 'lost-write', events: [5, 6] }),
    ]);
    expect(r.counts.uncleanLoss).toBe(1);
  });

  it('allows two readers to see the old and the new log at an offset across an unclean election', () => {
    const h = history(put('b', 1, 15, 20), fetch('r1', 22, 25, [rec(1, 'b')]), cut(1, 40, 50), fetch('r2', 62, 65, [rec(1, 'd')]), final(100, [rec(1, 'd')]));
    const r = check(h);
    expect(r.anomalies).toEqual([]);
    // The offset's two values, and 'b' missing from the final read.
    expect(r.allowed.map((a) => [a.kind, a.events])).toEqual([['unclean-loss', [1, 2, 3, 4, 5]], ['unclean-loss', [1, 3, 5]]]);
    expect(r.counts.uncleanLoss).toBe(1);
  });

  it('still reports divergence when the old value was read after the election, and an inconsistent offset when the new one was acknowledged before the kill', () => {
    // 'b' read again at 55, after the election at 50.
    const late = history(put('b', 1, 15, 20), fetch('r1', 52, 55, [rec(1, 'b')]), cut(1, 40, 50), fetch('r2', 62, 65, [rec(1, 'd')]), final(100, [rec(1, 'd')]));
    expect(kindsOf(check(late))).toEqual(['divergence']);
    // 'd' acknowledged at 35, before the ISR was killed at 40: both values in one log.
    const early = history(put('b', 1, 15, 20), put('d', 1, 30, 35), cut(1, 40, 50));
    expect(kindsOf(check(early))).toEqual(['inconsistent-offset']);
    // The cut above the offset explains nothing at it.
    const below = history(put('b', 1, 15, 20), cut(2, 40, 50), put('d', 1, 55, 60));
    expect(kindsOf(check(below))).toEqual(['inconsistent-offset']);
  });

  it('explains three values at an offset across two unclean elections, each pair by one, in the order last seen', () => {
    const reads = [fetch('r1', 5, 10, [rec(0, 'x')]), fetch('r2', 55, 60, [rec(0, 'y')]), fetch('r3', 115, 120, [rec(0, 'z')])];
    const both = history(...reads, cut(0, 20, 30), cut(0, 80, 90));
    expect(check(both).anomalies).toEqual([]);
    expect(check(both).allowed).toEqual([expect.objectContaining({ events: [1, 2, 3, 4, 5] })]);
    // Without the second election, 'y' and 'z' at one offset are unexplained.
    expect(kindsOf(check(history(...reads, cut(0, 20, 30))))).toEqual(['divergence']);
  });

  it('allows an idempotent value read in an unclean election\'s old log and retried into the new one', () => {
    // Prepare: 'v' reached the old leader at offset 2 (its answer was lost); the retry landed at offset 1 of the new log.
    const h = history(put('a', 0, 1, 5), unanswered('v', 10, 45), fetch('r1', 25, 30, [rec(2, 'v')]), cut(1, 40, 50), put('v', 1, 55, 60, true), final(100, [rec(0, 'a'), rec(1, 'v')]));
    // Act
    const r = check(h);
    // Assess
    expect(r.anomalies).toEqual([]);
    expect(r.allowed).toEqual([expect.objectContaining({ kind: 'unclean-loss', events: [2, 3, 4, 5, 6] })]);
    expect(r.allowed[0]!.message).toContain('1 of them in the old log of the unclean election of event 4');
  });

  it('still reports a duplicate when the old log\'s copy was read after the election', () => {
    const h = history(put('a', 0, 1, 5), unanswered('v', 10, 45), fetch('r1', 52, 55, [rec(2, 'v')]), cut(1, 40, 50), put('v', 1, 55, 60, true), final(100, [rec(0, 'a'), rec(1, 'v')]));
    expect(kindsOf(check(h))).toEqual(['duplicate']);
  });

  it('allows acks=all writes below a DeleteRecords to be missing, and reads that started before it was answered to return them', () => {
    // Prepare: offsets 0 and 1 deleted (sent at 40, answered at 50); a fetch that started at 45 still returns offset 0.
    const h = history(put('a', 0, 5, 10), put('b', 1, 15, 20), put('c', 2, 25, 30), deletion(2, 40, 50), fetch('r1', 45, 52, [rec(0, 'a')]), final(100, [rec(2, 'c')]));
    // Act
    const r = check(h);
    // Assess
    expect(r.anomalies).toEqual([]);
    expect(r.counts.deleted).toBe(2);
    expect(r.counts.uncleanLoss).toBe(0);
    expect(r.allowed).toEqual([
      expect.objectContaining({ kind: 'deleted', events: [1, 4, 6] }),
      expect.objectContaining({ kind: 'deleted', events: [2, 4, 6] }),
    ]);
    expect(r.allowed[0]!.message).toContain('below offset 2, deleted from 40 by the DeleteRecords of event 4');
  });

  it('still reports a lost write at or above the DeleteRecords offset', () => {
    const h = history(put('a', 0, 5, 10), put('b', 1, 15, 20), deletion(1, 40, 50), final(100, []));
    const r = check(h);
    expect(r.anomalies).toEqual([expect.objectContaining({ kind: 'lost-write', events: [2, 4] })]);
    expect(r.counts.deleted).toBe(1);
  });

  it('reports a fetch, a poll or a final read that started after an answered DeleteRecords returning a record below it', () => {
    // Prepare
    const poll: Draft = { type: 'poll', process: 'c1', group: 'g', memberId: 'm1', start: 60, end: 61, outcome: 'ok', records: [{ ...T, ...rec(1, 'b') }] };
    const h = history(put('a', 0, 5, 10), put('b', 1, 15, 20), put('c', 2, 25, 30), deletion(2, 40, 50), fetch('r1', 55, 56, [rec(1, 'b'), rec(2, 'c')]), poll,
      final(100, [rec(0, 'a'), rec(1, 'b'), rec(2, 'c')]));
    // Act
    const found = only(h, 'read-below-log-start');
    // Assess
    expect(found.map((a) => a.events)).toEqual([[4, 5], [4, 6], [4, 7]]);
    expect(found[0]!.message).toBe('a fetch by r1 started at 55 returned t/0 offset 1 ("b"), below the log start 2 a DeleteRecords had set by 50 (event 4)');
    expect(found[2]!.message).toContain('the final read started at 100 returned t/0 offset 0 ("a")');
  });

  it('does not judge reads below an answered DeleteRecords after an unclean election that followed it (the new leader may not have had the raise)', () => {
    const h = history(put('a', 0, 5, 10), put('b', 1, 15, 20), put('c', 2, 25, 30), deletion(2, 40, 50), cut(3, 60, 70), fetch('r1', 80, 81, [rec(1, 'b'), rec(2, 'c')]),
      fetch('r2', 55, 56, [rec(1, 'b')]), final(100, [rec(1, 'b'), rec(2, 'c')]));
    expect(only(h, 'read-below-log-start').map((a) => a.events)).toEqual([[4, 7]]);
  });

  it('lets an unanswered DeleteRecords allow loss below it, without judging the reads after it', () => {
    const h = history(put('a', 0, 5, 10), put('b', 1, 15, 20), deletion(2, 40, 50, false), fetch('r1', 55, 56, [rec(1, 'b')]), final(100, [rec(1, 'b')]));
    const r = check(h);
    expect(r.anomalies).toEqual([]);
    expect(r.counts.deleted).toBe(1);
    expect(r.allowed).toEqual([expect.objectContaining({ kind: 'deleted', events: [1, 3, 5] })]);
  });
});

// ---- Properties over histories generated from the model.

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ k: fc.constant('produce' as const), producer: fc.nat(4), partition: fc.nat(2), fate: fc.constantFrom<Fate>('ok', 'ok', 'ok', 'dup', 'unknown-applied', 'unknown-lost', 'fail') }) },
  { weight: 4, arbitrary: fc.record({ k: fc.constant('read' as const), reader: fc.nat(2), partition: fc.nat(2), from: fc.nat(100), max: fc.integer({ min: 1, max: 6 }), slack: fc.nat(4) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('replicate' as const), partition: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('truncate' as const), partition: fc.nat(2) }) },
  { weight: 4, arbitrary: fc.record({ k: fc.constant('poll' as const), consumer: fc.nat(1), max: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('commit' as const), consumer: fc.nat(1) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('heartbeat' as const), consumer: fc.nat(1) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('rebalance' as const), shift: fc.nat(1) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('fault' as const), kind: fc.nat(5) }) },
);
const actionsArb = fc.array(actionArb, { minLength: 5, maxLength: 120 });

/** The harness's seeded generator: model histories replay from a seed. */
const prng = rng;

function randomActions(n: number, seed: number): Action[] {
  const rand = prng(seed);
  const int = (k: number) => Math.floor(rand() * k);
  const fates: Fate[] = ['ok', 'ok', 'ok', 'ok', 'dup', 'unknown-applied', 'unknown-lost', 'fail'];
  const out: Action[] = [];
  while (out.length < n) {
    const x = int(100);
    if (x < 40) out.push(produce(int(5), int(3), fates[int(fates.length)]!));
    else if (x < 60) out.push(read(int(3), int(3), int(101), 1 + int(20), int(4)));
    else if (x < 66) out.push({ k: 'replicate', partition: int(3) });
    else if (x < 67) out.push({ k: 'truncate', partition: int(3) });
    else if (x < 85) out.push(poll(int(2), 1 + int(10)));
    else if (x < 93) out.push(commit(int(2)));
    else if (x < 98) out.push(heartbeat(int(2)));
    else if (x < 99) out.push({ k: 'rebalance', shift: int(2) });
    else out.push({ k: 'fault', kind: int(6) });
  }
  return out;
}

describe('Property: check over model histories', () => {
  it('finds no anomaly in any history the model writes', () => {
    fc.assert(fc.property(actionsArb, (actions) => {
      expect(check(simulate(actions)).anomalies).toEqual([]);
    }), { numRuns: 300 });
  });

  it('always detects one swapped value in a read or a poll as divergence', () => {
    fc.assert(fc.property(actionsArb, fc.nat(), fc.nat(), (actions, pick, at) => {
      const h = simulate(actions);
      const observed = h.filter((e): e is ReadEvent | PollEvent => (e.type === 'read' || e.type === 'poll') && e.records.length > 0);
      fc.pre(observed.length > 0);
      const e = observed[pick % observed.length]!;
      const rec = e.records[at % e.records.length]!;
      const tp = e.type === 'read' ? e : (rec as PollEvent['records'][number]);
      const others = finalOf(h, tp).records.filter((x) => x.value !== rec.value);
      rec.value = others.length > 0 ? others[at % others.length]!.value : `${rec.value}-swapped`;
      const r = check(h);
      expect(r.anomalies.find((a) => a.kind === 'divergence' && a.events.includes(e.id))).toBeDefined();
      // Swapping in an idempotent producer's value also puts it at two offsets.
      for (const k of kinds(r)) expect(['divergence', 'duplicate']).toContain(k);
    }), { numRuns: 300 });
  });

  it('always detects an acknowledged acks=all value dropped from the final read as a lost write', () => {
    fc.assert(fc.property(actionsArb, fc.nat(), (actions, pick) => {
      const h = simulate(actions);
      const acked = ofType(h, 'produce').filter((p) => p.acks === 'all' && p.outcome === 'ok');
      fc.pre(acked.length > 0);
      const p = acked[pick % acked.length]!;
      const f = finalOf(h, p);
      f.records = f.records.filter((x) => x.value !== p.value);
      expect(check(h).anomalies).toEqual([expect.objectContaining({ kind: 'lost-write', events: [p.id, f.id] })]);
    }), { numRuns: 300 });
  });

  it('always detects an idempotent value written twice as a duplicate', () => {
    fc.assert(fc.property(actionsArb, fc.nat(), (actions, pick) => {
      const h = simulate(actions);
      const idempotent = new Map(ofType(h, 'produce').filter((p) => p.idempotent).map((p) => [p.value, p] as const));
      const present = ofType(h, 'final-read').flatMap((f) => f.records.filter((x) => idempotent.has(x.value)).map((x) => ({ f, x })));
      fc.pre(present.length > 0);
      const { f, x } = present[pick % present.length]!;
      f.records.push({ offset: f.records.length, value: x.value });
      const r = check(h);
      expect(r.anomalies).toEqual([expect.objectContaining({ kind: 'duplicate' })]);
      expect(r.anomalies[0]!.events).toEqual(expect.arrayContaining([idempotent.get(x.value)!.id, f.id]));
    }), { numRuns: 300 });
  });
});

describe('Scale: check', () => {
  // How fast it runs belongs in bench/; here only that a large history is judged the same way.
  it('finds no anomaly in a 100k-event model history', () => {
    // Prepare
    const h = simulate(randomActions(110_000, 7));
    expect(h.length).toBeGreaterThanOrEqual(100_000);
    // Act
    const r = check(h);
    // Assess
    expect(r.anomalies).toEqual([]);
    expect(r.counts.produced).toBeGreaterThan(30_000);
  });
});
