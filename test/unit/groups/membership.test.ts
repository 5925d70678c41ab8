/**
 * The group protocol as a pure state machine: whatever members do (join, heartbeat, acknowledge,
 * leave, die), no partition is ever held by two members' clients at once, and the group settles
 * on a balanced assignment.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { emptyMeta, planHeartbeat, subscribedTopics, type Context } from '../../../lib/groups/membership.js';
import type { GroupMeta, MemberRecord } from '../../../lib/storage/groups.js';

const TOPICS = { a: 4, b: 3 };
const ctx = (now: number): Context => ({ now, newMemberId: () => 'unused', partitionsPerTopic: TOPICS, assignor: 'sticky', defaultSessionTimeoutMs: 10_000 });
const key = (tp: { topic: string; partition: number }) => `${tp.topic}#${tp.partition}`;

/**
 * A client: what it believes it owns (it reads those partitions), its epoch, and when its last
 * heartbeat succeeded — a client whose session may have run out stops reading (the client-side
 * half of any lease: the group has given its partitions away by then).
 */
interface Client { epoch: number; held: Set<string>; alive: boolean; lastBeat: number }

function simulate(steps: readonly { who: number; action: 'beat' | 'leave' | 'die' | 'wait' }[]) {
  let meta: GroupMeta = emptyMeta('g', 'sticky', 0);
  let members: MemberRecord[] = [];
  const clients = new Map<string, Client>();
  let now = 0;
  const check = () => {
    const seen = new Map<string, string>();
    for (const [id, c] of clients) {
      if (!c.alive) continue;
      for (const k of c.held) {
        expect(seen.get(k), `${k} held by ${seen.get(k)} and ${id}`).toBeUndefined();
        seen.set(k, id);
      }
    }
  };
  for (const s of steps) {
    now += s.action === 'wait' ? 11_000 : 100;
    for (const c of clients.values()) if (now - c.lastBeat >= 10_000) c.held.clear();
    if (s.action === 'wait') continue;
    const id = `m${s.who}`;
    const c = clients.get(id) ?? { epoch: 0, held: new Set<string>(), alive: true, lastBeat: now };
    clients.set(id, c);
    if (s.action === 'die') {
      // A dead client stops reading at once; the group learns it only when its session runs out.
      c.alive = false;
      c.held.clear();
      continue;
    }
    if (!c.alive) {
      c.alive = true;
      c.epoch = 0;
    }
    const known = members.find((m) => m.memberId === id);
    if (s.action === 'leave') {
      if (!known) continue;
      const plan = planHeartbeat(meta, members, { memberId: id, memberEpoch: -1 }, ctx(now));
      meta = plan.meta;
      members = members.filter((m) => m.memberId !== id && !plan.removed.includes(m.memberId));
      c.held.clear();
      c.alive = false;
      continue;
    }
    let plan;
    try {
      plan = planHeartbeat(meta, members, {
        memberId: id, memberEpoch: known ? c.epoch : 0, subscription: { topics: ['a', 'b'] }, owned: [...c.held],
      }, ctx(now));
    } catch {
      // Fenced or removed (its session ran out): the client drops everything and rejoins.
      c.held.clear();
      c.epoch = 0;
      const plan2 = planHeartbeat(meta, members.filter((m) => m.memberId !== id), { memberId: id, memberEpoch: 0, subscription: { topics: ['a', 'b'] }, owned: [] }, ctx(now));
      plan = plan2;
    }
    meta = plan.meta;
    members = [...members.filter((m) => m.memberId !== id && !plan.removed.includes(m.memberId)), ...(plan.member ? [plan.member] : [])];
    // The client reads what it was given, keeps what it must revoke until its next heartbeat acknowledges it.
    c.held = new Set([...plan.assignment.map(key), ...plan.revoking.map(key)]);
    c.epoch = plan.member?.memberEpoch ?? 0;
    c.lastBeat = now;
    for (const k of plan.revoking.map(key)) c.held.delete(k); // it stops reading them now and says so next time
    check();
  }
  return { meta, members, clients };
}

describe('Function: planHeartbeat', () => {
  it('never lets two members hold one partition, whatever they do', () => {
    fc.assert(fc.property(fc.array(fc.record({ who: fc.integer({ min: 0, max: 3 }), action: fc.constantFrom('beat', 'beat', 'beat', 'leave', 'die', 'wait') }), { maxLength: 60 }), (steps) => {
      simulate(steps);
    }), { numRuns: 300 });
  });

  it('settles every partition on exactly one member, balanced, after everyone heartbeats a few times', () => {
    const steps = [0, 1, 2].flatMap(() => [0, 1, 2].map((who) => ({ who, action: 'beat' as const })));
    const { meta } = simulate([...steps, ...steps]);
    const counts = new Map<string, number>();
    for (const owner of Object.values(meta.owners)) counts.set(owner, (counts.get(owner) ?? 0) + 1);
    expect(Object.keys(meta.owners)).toHaveLength(7);
    expect(Math.max(...counts.values()) - Math.min(...counts.values())).toBeLessThanOrEqual(1);
  });

  it('gives a dead member\'s partitions to the others once its session ran out, under a new group epoch', () => {
    const join = [0, 1, 2].flatMap(() => [0, 1, 2].map((who) => ({ who, action: 'beat' as const })));
    const before = simulate(join).meta;
    const rounds = [0, 1, 2].flatMap(() => [{ who: 0, action: 'beat' as const }, { who: 1, action: 'beat' as const }]);
    const after = simulate([...join, { who: 2, action: 'die' }, { who: 0, action: 'wait' }, ...rounds]);
    expect(after.meta.groupEpoch).toBeGreaterThan(before.groupEpoch);
    expect(new Set(Object.values(after.meta.owners))).toEqual(new Set(['m0', 'm1']));
    expect(Object.keys(after.meta.owners)).toHaveLength(7);
  });

  it('refuses a stale member epoch with FENCED_MEMBER_EPOCH and an unknown member with UNKNOWN_MEMBER_ID', () => {
    const join = planHeartbeat(emptyMeta('g', 'sticky', 0), [], { memberId: 'x', memberEpoch: 0, subscription: { topics: ['a'] } }, ctx(1));
    expect(() => planHeartbeat(join.meta, [join.member!], { memberId: 'x', memberEpoch: join.member!.memberEpoch + 5 }, ctx(2))).toThrow(/FENCED_MEMBER_EPOCH/);
    expect(() => planHeartbeat(join.meta, [join.member!], { memberId: 'nobody', memberEpoch: 3 }, ctx(2))).toThrow(/UNKNOWN_MEMBER_ID/);
  });
});

describe('Function: subscribedTopics', () => {
  it('matches whole topic names against a pattern, and keeps only existing topics for a list', () => {
    expect(subscribedTopics({ pattern: 'orders\\..*' }, ['orders.eu', 'orders.us', 'xorders.eu'])).toEqual(['orders.eu', 'orders.us']);
    expect(subscribedTopics({ topics: ['b', 'gone', 'a'] }, ['a', 'b'])).toEqual(['a', 'b']);
    expect(subscribedTopics(null, ['a'])).toEqual([]);
  });
});
