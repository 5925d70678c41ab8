import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { KafkaError } from '../../../lib/protocol/errors.js';
import { ASSIGNORS, assign, tpKey, type Assignment, type AssignorMember, type TopicPartition } from '../../../lib/groups/assignors.js';

const TOPICS = ['a', 'b', 'c', 'd', 'e'];

interface Scenario { readonly ppt: Record<string, number>; readonly members: AssignorMember[] }

/** Owned entries of every stale kind: deleted topics, out-of-range and negative partitions, unsubscribed topics, claims shared with others. */
const staleOwned = fc.array(fc.record({ topic: fc.constantFrom(...TOPICS, 'gone'), partition: fc.integer({ min: -1, max: 9 }) }), { maxLength: 8 });

/** Up to 8 members over topics a–e (0–8 partitions each); `identical` gives them all the same topics (some add an unknown one). */
const scenario = (identical: boolean): fc.Arbitrary<Scenario> => fc.record({
  counts: fc.array(fc.nat({ max: 8 }), { minLength: TOPICS.length, maxLength: TOPICS.length }),
  ids: fc.uniqueArray(fc.string({ minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 8 }),
  shared: fc.subarray(TOPICS, { minLength: 1 }),
  own: fc.array(fc.record({ topics: fc.subarray([...TOPICS, 'unknown']), unknown: fc.boolean(), owned: staleOwned }), { minLength: 8, maxLength: 8 }),
}).map(({ counts, ids, shared, own }) => ({
  ppt: Object.fromEntries(TOPICS.map((t, i) => [t, counts[i] ?? 0])),
  members: ids.map((memberId, i) => {
    const o = own[i] ?? { topics: [], unknown: false, owned: [] };
    return { memberId, topics: identical ? (o.unknown ? [...shared, 'unknown'] : shared) : o.topics, owned: o.owned };
  }),
}));
const anyScenario = fc.oneof(scenario(true), scenario(false));

const show = (a: Assignment) => Object.fromEntries([...a].map(([m, tps]) => [m, tps.map((x) => `${x.topic}-${x.partition}`)]));
const counts = (a: Assignment) => [...a.values()].map((l) => l.length);
const spread = (a: Assignment) => Math.max(...counts(a)) - Math.min(...counts(a));
const keys = (l: readonly TopicPartition[] | undefined) => new Set((l ?? []).map(tpKey));
const withOwned = (members: readonly AssignorMember[], a: Assignment) => members.map((m) => ({ ...m, owned: a.get(m.memberId) ?? [] }));

/** Every partition of every subscribed topic goes to exactly one subscribed member; nothing else; every member appears, its list sorted. */
function expectComplete({ ppt, members }: Scenario, out: Assignment): void {
  expect([...out.keys()].sort()).toEqual(members.map((m) => m.memberId).sort());
  const expected = new Set<string>();
  for (const m of members) for (const t of m.topics) for (let p = 0; p < (ppt[t] ?? 0); p++) expected.add(tpKey({ topic: t, partition: p }));
  const seen = new Set<string>();
  for (const m of members) {
    const list = out.get(m.memberId) ?? [];
    const sorted = [...list].sort((x, y) => (x.topic < y.topic ? -1 : x.topic > y.topic ? 1 : x.partition - y.partition));
    expect(list).toEqual(sorted);
    for (const tp of list) {
      expect(m.topics).toContain(tp.topic);
      expect(expected.has(tpKey(tp))).toBe(true);
      expect(seen.has(tpKey(tp))).toBe(false);
      seen.add(tpKey(tp));
    }
  }
  expect(seen.size).toBe(expected.size);
}

/** No partition could move to a member subscribed to its topic holding at least 2 fewer partitions. */
function expectNoImprovingMove({ members }: Scenario, out: Assignment): void {
  for (const [holder, list] of out) {
    for (const tp of list) {
      for (const other of members) {
        if (other.memberId !== holder && other.topics.includes(tp.topic)) {
          expect(out.get(other.memberId)?.length ?? 0).toBeGreaterThan(list.length - 2);
        }
      }
    }
  }
}

/** A deterministic shuffle (LCG), so a failing seed replays. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let s = seed >>> 0;
  for (let i = out.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

const twoTopics = { t1: 3, t2: 3 };
const pair = [{ memberId: 'c0', topics: ['t1', 't2'] }, { memberId: 'c1', topics: ['t1', 't2'] }];
const mixedTrio = [{ memberId: 'consumer1', topics: ['topic1'] }, { memberId: 'consumer2', topics: ['topic1', 'topic2'] }, { memberId: 'consumer3', topics: ['topic1'] }];

describe('Function: assign', () => {
  describe('for every assignor', () => {
    it('assigns every partition of every subscribed topic to exactly one subscribed member, nothing else, and lists every member', () => {
      fc.assert(fc.property(anyScenario, fc.constantFrom(...ASSIGNORS), (s, name) => {
        expectComplete(s, assign(name, s.members, s.ppt));
      }), { numRuns: 300 });
    });

    it('gives the same assignment whatever the order of members, their topics and their owned partitions', () => {
      fc.assert(fc.property(anyScenario, fc.constantFrom(...ASSIGNORS), fc.nat(), (s, name, seed) => {
        const reordered = shuffled(s.members, seed).map((m, i) => ({
          ...m, topics: shuffled(m.topics, seed + i), owned: shuffled(m.owned ?? [], seed + 2 * i),
        }));
        expect([...assign(name, reordered, s.ppt)]).toEqual([...assign(name, s.members, s.ppt)]);
      }), { numRuns: 200 });
    });

    it('lists a member with no known topics with no partitions, and returns an empty map for no members', () => {
      for (const name of ASSIGNORS) {
        expect(show(assign(name, [{ memberId: 'm', topics: ['missing'] }, { memberId: 'n', topics: ['t'] }], { t: 2, empty: 0 })))
          .toEqual({ m: [], n: ['t-0', 't-1'] });
        expect(assign(name, [], { t: 2 }).size).toBe(0);
      }
    });

    it('rejects an unknown assignor, duplicate memberIds and a bad partition count with INVALID_REQUEST', () => {
      const invalid = expect.objectContaining({ kafkaName: 'INVALID_REQUEST' }) as KafkaError;
      expect(() => assign('uniform' as 'range', pair, twoTopics)).toThrow(invalid);
      expect(() => assign('sticky', [...pair, { memberId: 'c0', topics: [] }], twoTopics)).toThrow(invalid);
      expect(() => assign('range', pair, { t1: -1 })).toThrow(invalid);
      expect(() => assign('range', pair, { t1: 1.5 })).toThrow(invalid);
    });

    // How long this takes is `npm run bench -- assignors`; here only what it assigns.
    it('assigns 1,000 members × 10,000 partitions, each partition once to a subscribed member, with identical and with mixed subscriptions', () => {
      const ppt = Object.fromEntries(Array.from({ length: 100 }, (_, t) => [`topic-${String(t).padStart(3, '0')}`, 100]));
      const topics = Object.keys(ppt);
      const same = Array.from({ length: 1000 }, (_, i) => ({ memberId: `member-${i}`, topics }));
      const mixed = same.map((m, i) => ({ ...m, topics: topics.filter((_, t) => (i * 7 + t * 13) % 5 < 2 || t === i % 100) }));
      for (const name of ASSIGNORS) {
        for (const members of [same, mixed]) {
          const out = assign(name, members, ppt);
          const subscribed = new Map(members.map((m) => [m.memberId, new Set(m.topics)]));
          const seen = new Set<string>();
          const wrong: string[] = [];
          for (const [memberId, list] of out) {
            for (const tp of list) {
              if (seen.has(tpKey(tp)) || !subscribed.get(memberId)?.has(tp.topic)) wrong.push(`${memberId}: ${tpKey(tp)}`);
              seen.add(tpKey(tp));
            }
          }
          expect(wrong, name).toEqual([]);
          expect(seen.size, name).toBe(10_000);
          expect(out.size, name).toBe(1000);
        }
      }
    });
  });

  describe('with range', () => {
    it("matches Kafka's RangeAssignorTest vector for two consumers and two topics of three partitions", () => {
      expect(show(assign('range', pair, twoTopics))).toEqual({ c0: ['t1-0', 't1-1', 't2-0', 't2-1'], c1: ['t1-2', 't2-2'] });
    });

    it("matches Kafka's RangeAssignorTest vector for mixed topic subscriptions", () => {
      expect(show(assign('range', mixedTrio, { topic1: 3, topic2: 2 })))
        .toEqual({ consumer1: ['topic1-0'], consumer2: ['topic1-1', 'topic2-0', 'topic2-1'], consumer3: ['topic1-2'] });
    });

    it('gives each topic contiguous ranges in memberId order, the first n % c members one partition more', () => {
      expect(show(assign('range', ['m2', 'm0', 'm1'].map((memberId) => ({ memberId, topics: ['t'] })), { t: 8 })))
        .toEqual({ m0: ['t-0', 't-1', 't-2'], m1: ['t-3', 't-4', 't-5'], m2: ['t-6', 't-7'] });
    });
  });

  describe('with roundrobin', () => {
    it("matches Kafka's RoundRobinAssignorTest vector for two consumers and two topics of three partitions", () => {
      expect(show(assign('roundrobin', pair, twoTopics))).toEqual({ c0: ['t1-0', 't1-2', 't2-1'], c1: ['t1-1', 't2-0', 't2-2'] });
    });

    it("matches Kafka's RoundRobinAssignorTest vector for mixed topic subscriptions, skipping members not subscribed", () => {
      expect(show(assign('roundrobin', mixedTrio, { topic1: 3, topic2: 2 })))
        .toEqual({ consumer1: ['topic1-0'], consumer2: ['topic1-1', 'topic2-0', 'topic2-1'], consumer3: ['topic1-2'] });
    });

    it('resumes dealing after the member that took the last partition, not after the one it started from', () => {
      const members = [{ memberId: 'a', topics: ['t'] }, { memberId: 'b', topics: ['u'] }, { memberId: 'c', topics: ['t', 'u'] }];
      expect(show(assign('roundrobin', members, { t: 3, u: 2 }))).toEqual({ a: ['t-0', 't-2'], b: ['u-0'], c: ['t-1', 'u-1'] });
    });

    it('keeps member counts within 1 of each other when subscriptions are identical', () => {
      fc.assert(fc.property(scenario(true), (s) => {
        expect(spread(assign('roundrobin', s.members, s.ppt))).toBeLessThanOrEqual(1);
      }), { numRuns: 200 });
    });
  });

  describe('with sticky', () => {
    it("matches Kafka's StickyAssignorTest vectors for a fresh group: two topics, and mixed subscriptions", () => {
      expect(show(assign('sticky', pair, twoTopics))).toEqual({ c0: ['t1-0', 't1-2', 't2-1'], c1: ['t1-1', 't2-0', 't2-2'] });
      expect(show(assign('sticky', mixedTrio, { topic1: 3, topic2: 2 })))
        .toEqual({ consumer1: ['topic1-0', 'topic1-2'], consumer2: ['topic2-0', 'topic2-1'], consumer3: ['topic1-1'] });
    });

    it("matches Kafka's testAddRemoveConsumerOneTopic: a joining member takes only the surplus, and a leaver's partitions go to the rest", () => {
      const all = [0, 1, 2].map((partition) => ({ topic: 't', partition }));
      expect(show(assign('sticky', [{ memberId: 'consumer1', topics: ['t'], owned: all }, { memberId: 'consumer2', topics: ['t'] }], { t: 3 })))
        .toEqual({ consumer1: ['t-0', 't-1'], consumer2: ['t-2'] });
      expect(show(assign('sticky', [{ memberId: 'consumer2', topics: ['t'], owned: [{ topic: 't', partition: 2 }] }], { t: 3 })))
        .toEqual({ consumer2: ['t-0', 't-1', 't-2'] });
    });

    it('gives the larger quota to the member that owned more when two owned enough for it and one slot is left', () => {
      const t = (...ps: number[]) => ps.map((partition) => ({ topic: 't', partition }));
      const out = assign('sticky', [
        { memberId: 'a', topics: ['t'], owned: t(0, 1, 2) },
        { memberId: 'b', topics: ['t'], owned: t(3, 4, 5, 6) },
        { memberId: 'c', topics: ['t'] },
      ], { t: 7 });
      expect(show(out)).toEqual({ a: ['t-0', 't-1'], b: ['t-3', 't-4', 't-5'], c: ['t-2', 't-6'] });
    });

    it('gives a leftover partition to a member already receiving new ones, so fewer members see their assignment change', () => {
      const t = (...ps: number[]) => ps.map((partition) => ({ topic: 't', partition }));
      const out = assign('sticky', [
        { memberId: 'a', topics: ['t'], owned: t(0, 1) },
        { memberId: 'b', topics: ['t'], owned: t(2, 3) },
        { memberId: 'c', topics: ['t'] },
      ], { t: 7 });
      expect(show(out)).toEqual({ a: ['t-0', 't-1'], b: ['t-2', 't-3'], c: ['t-4', 't-5', 't-6'] });
    });

    it('takes a partition claimed by two members from both, as Kafka does for claims from one generation', () => {
      const claim = [{ topic: 't', partition: 1 }];
      const out = assign('sticky', [{ memberId: 'x', topics: ['t'], owned: claim }, { memberId: 'y', topics: ['t'], owned: claim }], { t: 2 });
      // Neither keeps t-1 by right of ownership: both are dealt fresh in memberId order.
      expect(show(out)).toEqual({ x: ['t-0'], y: ['t-1'] });
    });

    it('keeps member counts within 1 of each other when subscriptions are identical, whatever the stale owned entries', () => {
      fc.assert(fc.property(scenario(true), (s) => {
        expect(spread(assign('sticky', s.members, s.ppt))).toBeLessThanOrEqual(1);
      }), { numRuns: 300 });
    });

    it('leaves no partition movable to a subscribed member with 2 fewer partitions when subscriptions differ, whatever the stale owned entries', () => {
      fc.assert(fc.property(scenario(false), (s) => {
        expectNoImprovingMove(s, assign('sticky', s.members, s.ppt));
      }), { numRuns: 300 });
    });

    it('moves partitions it newly assigned before owned ones when rebalancing mixed subscriptions', () => {
      // m1 loses c-0 to balance topic c, and a partition of topic a then moves from m0 to m1: not m0's own a-0.
      const out = assign('sticky', [
        { memberId: 'm0', topics: ['a', 'c'], owned: [{ topic: 'a', partition: 0 }] },
        { memberId: 'm1', topics: ['a', 'c'], owned: [{ topic: 'c', partition: 0 }] },
        { memberId: 'm2', topics: ['c'] },
        { memberId: 'm3', topics: ['c'] },
      ], { a: 4, c: 1 });
      expect(show(out)).toEqual({ m0: ['a-0', 'a-1'], m1: ['a-2', 'a-3'], m2: ['c-0'], m3: [] });
    });

    it('returns the identical assignment when its output is fed back as owned with no membership change', () => {
      fc.assert(fc.property(anyScenario, (s) => {
        const first = assign('sticky', s.members, s.ppt);
        expect([...assign('sticky', withOwned(s.members, first), s.ppt)]).toEqual([...first]);
      }), { numRuns: 300 });
    });

    it('lets every remaining member keep every partition it had when one member leaves (identical subscriptions)', () => {
      fc.assert(fc.property(scenario(true), fc.nat(), (s, pick) => {
        fc.pre(s.members.length >= 2);
        const before = assign('sticky', s.members, s.ppt);
        const rest = withOwned(s.members, before).filter((_, i) => i !== pick % s.members.length);
        const after = assign('sticky', rest, s.ppt);
        for (const m of rest) {
          const now = keys(after.get(m.memberId));
          for (const k of keys(before.get(m.memberId))) expect(now.has(k)).toBe(true);
        }
        expect(spread(after)).toBeLessThanOrEqual(1);
      }), { numRuns: 300 });
    });

    it('moves only the joining member\'s share when one member joins, each existing member keeping min(previous, new) of its partitions (identical subscriptions)', () => {
      fc.assert(fc.property(scenario(true), fc.string({ minLength: 4, maxLength: 5 }), (s, joinerId) => {
        const before = assign('sticky', s.members, s.ppt);
        const joiner = { memberId: joinerId, topics: s.members[0]?.topics ?? [] };
        const after = assign('sticky', [...withOwned(s.members, before), joiner], s.ppt);
        for (const m of s.members) {
          const was = keys(before.get(m.memberId));
          const now = after.get(m.memberId) ?? [];
          expect(now.filter((tp) => was.has(tpKey(tp))).length).toBe(Math.min(was.size, now.length));
        }
        const ownerBefore = new Map([...before].flatMap(([m, l]) => l.map((tp) => [tpKey(tp), m] as const)));
        const moved = [...after].flatMap(([m, l]) => l.filter((tp) => ownerBefore.get(tpKey(tp)) !== m));
        expect(moved.map(tpKey).sort()).toEqual((after.get(joinerId) ?? []).map(tpKey).sort());
        expect(spread(after)).toBeLessThanOrEqual(1);
      }), { numRuns: 300 });
    });

    it('ignores deleted topics, out-of-range partitions, unsubscribed topics and double claims in owned, keeping the valid rest', () => {
      const members: AssignorMember[] = [
        { memberId: 'a', topics: ['t', 'u'], owned: [{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }, { topic: 'gone', partition: 0 }, { topic: 't', partition: 7 }, { topic: 't', partition: -1 }, { topic: 'v', partition: 0 }] },
        { memberId: 'b', topics: ['t', 'u'], owned: [{ topic: 't', partition: 1 }, { topic: 'u', partition: 0 }, { topic: 'u', partition: 0 }] },
        { memberId: 'c', topics: ['u', 't'], owned: [{ topic: 't', partition: 0.5 }] },
      ];
      const ppt = { t: 3, u: 3, v: 1 };
      const out = assign('sticky', members, ppt);
      expectComplete({ ppt, members }, out);
      expect(spread(out)).toBe(0);
      // t-0 and u-0 were claimed by one member each and stay; t-1 was claimed by both a and b.
      expect(keys(out.get('a')).has('t#0')).toBe(true);
      expect(keys(out.get('b')).has('u#0')).toBe(true);
    });
  });
});
