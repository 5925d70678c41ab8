/**
 * The group protocol as a pure state machine: whatever members do (join, heartbeat, acknowledge
 * late, leave, die), no partition is ever held by two members' clients at once, and the group
 * settles on a balanced assignment. Revocation is two-step (KIP-848): a client keeps reading a
 * revoked partition until a later heartbeat acknowledges it, so a coordinator that hands a
 * partition on before its old owner let go is caught here.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isKafkaError } from '../../../lib/errors.js';
import { assign, tpKey } from '../../../lib/groups/assignors.js';
import { byTopic, emptyMeta, keysOf, planHeartbeat, subscribedTopics, type Context, type HeartbeatPlan } from '../../../lib/groups/membership.js';
import type { GroupMeta, MemberRecord, TargetAssignment } from '../../../lib/storage/coordination/groups.js';

const TOPICS = { a: 4, b: 3 };
const ctx = (now: number): Context => ({ now, newMemberId: () => 'unused', partitionsPerTopic: TOPICS, assignor: 'sticky', defaultSessionTimeoutMs: 10_000 });
const key = (tp: { topic: string; partition: number }) => `${tp.topic}#${tp.partition}`;
/** Only these mean "you are out of the group": anything else is a bug the property must surface. */
const fenced = (err: unknown) => isKafkaError(err, 'UNKNOWN_MEMBER_ID') || isKafkaError(err, 'FENCED_MEMBER_EPOCH');

/**
 * A client: what it reads now (`held`: its assignment plus what it is still revoking), its epoch,
 * and when its last heartbeat succeeded — a client whose session may have run out stops reading
 * (the client-side half of any lease: the group has given its partitions away by then).
 */
interface Client { epoch: number; assigned: Set<string>; revoking: Set<string>; alive: boolean; lastBeat: number }
const held = (c: Client) => new Set([...c.assigned, ...c.revoking]);

type Action = 'beat' | 'slow-beat' | 'leave' | 'die' | 'wait';

function simulate(steps: readonly { who: number; action: Action }[]) {
  let meta: GroupMeta = emptyMeta('g', 'sticky', 0);
  let target: TargetAssignment = {};
  let members: MemberRecord[] = [];
  const clients = new Map<string, Client>();
  let now = 0;
  const check = () => {
    // Clients: no partition read by two at once.
    const seen = new Map<string, string>();
    for (const [id, c] of clients) {
      if (!c.alive) continue;
      for (const k of held(c)) {
        expect(seen.get(k), `${k} held by ${seen.get(k)} and ${id}`).toBeUndefined();
        seen.set(k, id);
      }
    }
    // Coordinator: no partition in two member records, and every client's holding is on its record.
    const owner = new Map<string, string>();
    for (const m of members) {
      for (const k of keysOf(m.owned)) {
        expect(owner.get(k), `${k} owned by ${owner.get(k)} and ${m.memberId}`).toBeUndefined();
        owner.set(k, m.memberId);
      }
    }
    for (const [id, c] of clients) if (c.alive) for (const k of held(c)) expect(owner.get(k), `${id} reads ${k}`).toBe(id);
  };
  const apply = (plan: HeartbeatPlan, id: string) => {
    meta = plan.meta;
    target = plan.target;
    const gone = new Set(plan.removed.map((m) => m.memberId));
    members = [...members.filter((m) => m.memberId !== id && !gone.has(m.memberId)), ...(plan.member ? [plan.member] : [])];
  };
  for (const s of steps) {
    now += s.action === 'wait' ? 11_000 : 100;
    for (const c of clients.values()) {
      if (now - c.lastBeat >= 10_000) {
        c.assigned.clear();
        c.revoking.clear();
      }
    }
    if (s.action === 'wait') continue;
    const id = `m${s.who}`;
    const c = clients.get(id) ?? { epoch: 0, assigned: new Set<string>(), revoking: new Set<string>(), alive: true, lastBeat: now };
    clients.set(id, c);
    if (s.action === 'die') {
      // A dead client stops reading at once; the group learns it only when its session runs out.
      c.alive = false;
      c.assigned.clear();
      c.revoking.clear();
      continue;
    }
    if (!c.alive) {
      c.alive = true;
      c.epoch = 0;
    }
    const known = members.find((m) => m.memberId === id);
    if (s.action === 'leave') {
      if (!known) continue;
      apply(planHeartbeat(meta, target, members, { memberId: id, memberEpoch: -1 }, ctx(now)), id);
      c.assigned.clear();
      c.revoking.clear();
      c.alive = false;
      continue;
    }
    // A prompt client finishes revoking before it heartbeats (commits, stops reading) and says so by
    // leaving those partitions out of `owned`; a slow one is still at it and keeps reporting them.
    if (s.action === 'beat') c.revoking.clear();
    let plan: HeartbeatPlan;
    try {
      plan = planHeartbeat(meta, target, members, {
        memberId: id, memberEpoch: known ? c.epoch : 0, subscription: { topics: ['a', 'b'] }, owned: [...held(c)],
      }, ctx(now));
    } catch (err) {
      if (!fenced(err)) throw err;
      // Fenced or removed (its session ran out): the client drops everything and rejoins.
      c.assigned.clear();
      c.revoking.clear();
      c.epoch = 0;
      plan = planHeartbeat(meta, target, members, { memberId: id, memberEpoch: 0, subscription: { topics: ['a', 'b'] }, owned: [] }, ctx(now));
    }
    apply(plan, id);
    // The client reads what it was given and keeps reading what it must revoke until a later heartbeat acknowledges it.
    c.assigned = new Set(plan.assignment.map(key));
    c.revoking = new Set(plan.revoking.map(key));
    c.epoch = plan.member?.memberEpoch ?? 0;
    c.lastBeat = now;
    check();
  }
  return { meta, target, members, clients };
}

const ownerCounts = (members: readonly MemberRecord[]) => new Map(members.map((m) => [m.memberId, keysOf(m.owned).length]));

describe('Function: planHeartbeat', () => {
  it('never lets two members hold one partition, whatever they do', () => {
    const action = fc.constantFrom<Action>('beat', 'beat', 'beat', 'slow-beat', 'slow-beat', 'leave', 'die', 'wait');
    fc.assert(fc.property(fc.array(fc.record({ who: fc.integer({ min: 0, max: 3 }), action }), { maxLength: 60 }), (steps) => {
      simulate(steps);
    }), { numRuns: 300 });
  });

  it('settles every partition on exactly one member, balanced, after everyone heartbeats a few times', () => {
    const steps = [0, 1, 2].flatMap(() => [0, 1, 2].map((who) => ({ who, action: 'beat' as const })));
    const { members } = simulate([...steps, ...steps]);
    const counts = [...ownerCounts(members).values()];
    expect(counts.reduce((a, b) => a + b, 0)).toBe(7);
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
  });

  it('gives a dead member\'s partitions to the others once its session ran out, under a new group epoch', () => {
    const join = [0, 1, 2].flatMap(() => [0, 1, 2].map((who) => ({ who, action: 'beat' as const })));
    const before = simulate(join).meta;
    const rounds = [0, 1, 2].flatMap(() => [{ who: 0, action: 'beat' as const }, { who: 1, action: 'beat' as const }]);
    const after = simulate([...join, { who: 2, action: 'die' }, { who: 0, action: 'wait' }, ...rounds]);
    expect(after.meta.groupEpoch).toBeGreaterThan(before.groupEpoch);
    const counts = ownerCounts(after.members);
    expect(new Set([...counts].filter(([, n]) => n > 0).map(([m]) => m))).toEqual(new Set(['m0', 'm1']));
    expect([...counts.values()].reduce((a, b) => a + b, 0)).toBe(7);
  });

  it('keeps the group meta item small for 500 members on 5,120 partitions of long-named topics: per-member data stays in the member records', () => {
    // Prepare: a settled 500-member group (every member owns its target), as the store would hold it.
    const topics = Array.from({ length: 20 }, (_, i) => `orders-${'x'.repeat(100)}-${i}`);
    const counts = Object.fromEntries(topics.map((t) => [t, 256]));
    const ids = Array.from({ length: 500 }, (_, i) => `member-${String(i).padStart(4, '0')}-${'u'.repeat(24)}`);
    const assignment = assign('sticky', ids.map((memberId) => ({ memberId, topics })), counts);
    const target = Object.fromEntries([...assignment].map(([m, tps]) => [m, byTopic(tps.map(tpKey))]));
    const members: MemberRecord[] = ids.map((memberId) => ({
      memberId, memberEpoch: 1, subscription: { topics }, owned: target[memberId], lastHeartbeatAt: 1_000, sessionTimeoutMs: 1_800_000, joinedAt: '',
    }));
    const first = planHeartbeat(emptyMeta('g', 'sticky', 0), {}, [], { memberId: ids[0], memberEpoch: 0, subscription: { topics } }, { ...ctx(1_000), partitionsPerTopic: counts });
    // Act: member 501 joins (the group epoch moves, the target is recomputed).
    const plan = planHeartbeat({ ...first.meta, groupEpoch: 1 }, target, members, { memberId: 'newcomer', memberEpoch: 0, subscription: { topics } }, { ...ctx(2_000), partitionsPerTopic: counts });
    // Assess: the meta item is a few hundred bytes; what grows with the group is elsewhere, and bounded per item.
    const bytes = (x: unknown) => Buffer.byteLength(JSON.stringify(x));
    expect(plan.metaChanged && plan.targetChanged).toBe(true);
    expect(bytes(plan.meta)).toBeLessThan(1024);
    expect(Math.max(...members.map(bytes), bytes(plan.member))).toBeLessThan(100 * 1024);
    expect(Object.keys(plan.target)).toHaveLength(501);
    process.stdout.write(`groups: 501 members on 5120 partitions: meta ${bytes(plan.meta)} B, largest member ${Math.max(...members.map(bytes))} B, target ${bytes(plan.target)} B (stored in chunks)\n`);
  });

  it('refuses a stale member epoch with FENCED_MEMBER_EPOCH and an unknown member with UNKNOWN_MEMBER_ID', () => {
    const join = planHeartbeat(emptyMeta('g', 'sticky', 0), {}, [], { memberId: 'x', memberEpoch: 0, subscription: { topics: ['a'] } }, ctx(1));
    expect(() => planHeartbeat(join.meta, join.target, [join.member!], { memberId: 'x', memberEpoch: join.member!.memberEpoch + 5 }, ctx(2))).toThrow(/FENCED_MEMBER_EPOCH/);
    expect(() => planHeartbeat(join.meta, join.target, [join.member!], { memberId: 'nobody', memberEpoch: 3 }, ctx(2))).toThrow(/UNKNOWN_MEMBER_ID/);
  });
});

describe('Function: subscribedTopics', () => {
  it('matches whole topic names against a pattern, and keeps only existing topics for a list', () => {
    expect(subscribedTopics({ pattern: 'orders\\..*' }, ['orders.eu', 'orders.us', 'xorders.eu'])).toEqual(['orders.eu', 'orders.us']);
    expect(subscribedTopics({ topics: ['b', 'gone', 'a'] }, ['a', 'b'])).toEqual(['a', 'b']);
    expect(subscribedTopics(null, ['a'])).toEqual([]);
  });
});
