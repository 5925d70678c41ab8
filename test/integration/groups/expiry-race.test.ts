/**
 * Expiry against a racing heartbeat, on the real store: a member's heartbeat reads the group, sees
 * another member's session run out and removes it — but that member heartbeated in between. The
 * removal is conditioned on the liveness it was judged from, so a member that heartbeated
 * successfully is never expired by a stale read.
 */
import { describe, expect, it } from 'vitest';
import { createTopic } from '../../../lib/cluster/topics.js';
import { heartbeat, heartbeatHooks } from '../../../lib/groups/coordinator.js';
import * as store from '../../../lib/storage/coordination/groups.js';

let n = 0;
const unique = (p: string) => `${p}-${process.pid}-${Date.now().toString(36)}-${n++}`;

describe('Expiry race', () => {
  it('where member A read the group before member B heartbeated, A acting on that stale read does not expire B', async () => {
    // Prepare: a stable group of A (long session) and B (3 s session), two partitions each one.
    const topic = unique('expiry');
    await createTopic({ name: topic, partitions: 2, replicationFactor: 1 });
    const g = unique('g-expiry');
    const a0 = await heartbeat(g, { memberEpoch: 0, subscription: { topics: [topic] }, sessionTimeoutMs: 60_000 });
    const b0 = await heartbeat(g, { memberEpoch: 0, subscription: { topics: [topic] }, sessionTimeoutMs: 3_000 });
    let a = await heartbeat(g, { memberId: a0.memberId, memberEpoch: a0.memberEpoch, owned: [] });
    let b = await heartbeat(g, { memberId: b0.memberId, memberEpoch: b0.memberEpoch, owned: [] });
    const owned = (r: typeof a) => r.assignment.map((tp) => `${tp.topic}#${tp.partition}`);
    a = await heartbeat(g, { memberId: a.memberId, memberEpoch: a.memberEpoch, owned: owned(a) });
    b = await heartbeat(g, { memberId: b.memberId, memberEpoch: b.memberEpoch, owned: owned(b) });
    expect(a.assignment).toHaveLength(1);
    expect(b.assignment).toHaveLength(1);
    // B has been silent for 10 s as far as its record says (its session is 3 s): it looks expired.
    await store.updateMember(g, b.memberId, { lastHeartbeatAt: Date.now() - 10_000 });
    const before = await store.readGroup(g);

    // Act: A's heartbeat reads the group; before A writes, B heartbeats successfully.
    let bAfter: Awaited<ReturnType<typeof heartbeat>> | undefined;
    heartbeatHooks.afterRead = async (_group, member) => {
      if (member !== a.memberId || bAfter) return;
      bAfter = await heartbeat(g, { memberId: b.memberId, memberEpoch: b.memberEpoch, owned: owned(b) });
    };
    try {
      await heartbeat(g, { memberId: a.memberId, memberEpoch: a.memberEpoch, owned: owned(a) });
    } finally {
      delete heartbeatHooks.afterRead;
    }

    // Assess: B's heartbeat succeeded, so B is still a member, at its epoch, owning its partition.
    expect(bAfter?.memberEpoch).toBe(b.memberEpoch);
    const after = await store.readGroup(g);
    const bRecord = after.members.find((m) => m.memberId === b.memberId);
    expect(bRecord, 'B was expired by a stale read').toBeDefined();
    expect(bRecord?.lastHeartbeatAt).toBeGreaterThan(before.members.find((m) => m.memberId === b.memberId)!.lastHeartbeatAt);
    expect(after.meta?.groupEpoch).toBe(before.meta?.groupEpoch);
    const again = await heartbeat(g, { memberId: b.memberId, memberEpoch: b.memberEpoch, owned: owned(b) });
    expect(again.assignment).toEqual(b.assignment);
  });
});
