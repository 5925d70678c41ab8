/**
 * Invariant 7 (docs/architecture.md, "Invariants") for consumer groups: bad input on the group routes (/v3 native protocol)
 * and the consumer routes (REST Proxy v2) gets a clear 4xx with a Kafka-style error code — the
 * Kafka name in the message, REST Proxy's code in `error_code` — and changes nothing: each case
 * reads the group back (members, epochs, committed offsets, positions) and finds it as it was.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { call, createTopic, uniqueTopic, v3, type Reply } from '../support/api.js';

const V2 = { 'content-type': 'application/vnd.kafka.v2+json', accept: 'application/vnd.kafka.binary.v2+json' };
/** Sessions that cannot run out during this file: the cases below never wait for one. */
const SESSION = 1_800_000;
const T = uniqueTopic('group-bad-input');

beforeAll(async () => {
  await createTopic(T, 2, 1);
  for (let p = 0; p < 2; p++) expect((await call('POST', v3(`/topics/${T}/records`), { partition_id: p, value: { type: 'STRING', data: `v${p}` } })).status).toBe(200);
});

function expectRejected(r: Reply, status: number, errorCode: number, kafkaName: string): void {
  expect(r.status, r.text).toBe(status);
  expect(r.body, r.text).toEqual({ error_code: errorCode, message: expect.any(String) });
  expect(r.body.message, r.text).toMatch(new RegExp(`^${kafkaName}\\b`));
}

const hb = (group: string, body: Record<string, unknown>) => call('POST', v3(`/consumer-groups/${encodeURIComponent(group)}/heartbeat`), body);
const commit = (group: string, body: Record<string, unknown>) => call('POST', v3(`/consumer-groups/${group}/offsets:commit`), body);
const offsets = async (group: string) => (await call('GET', v3(`/consumer-groups/${group}/offsets`))).body.data.map((o: any) => [o.topic_name, o.partition_id, o.offset, o.metadata]);
/** What a bad request must not change: the group, its members (epochs, sessions, assignments) and its offsets. */
async function snapshot(group: string) {
  const g = await call('GET', v3(`/consumer-groups/${group}`));
  const members = await call('GET', v3(`/consumer-groups/${group}/consumers`));
  return {
    status: g.status,
    epoch: g.body.group_epoch,
    members: (members.body.data ?? []).map((m: any) => [m.consumer_id, m.member_epoch, m.session_timeout_ms, m.subscription, m.assigned_partitions]),
    offsets: g.status === 200 ? await offsets(group) : [],
  };
}

/** A stable one-member group on T owning both partitions, with offset 1 committed on partition 0. */
async function stableGroup() {
  const group = uniqueTopic('g-bad');
  const j = (await hb(group, { member_epoch: 0, subscribed_topic_names: [T], session_timeout_ms: SESSION })).body;
  const m = (await hb(group, { member_id: j.member_id, member_epoch: j.member_epoch, owned_partitions: j.assignment })).body;
  expect(m.assignment).toHaveLength(2);
  expect((await commit(group, { member_id: m.member_id, member_epoch: m.member_epoch, offsets: [{ topic: T, partition: 0, offset: 1 }] })).status).toBe(200);
  return { group, member: { member_id: m.member_id as string, member_epoch: m.member_epoch as number } };
}

describe('Group routes (/v3): bad input', () => {
  it('rejects an invalid group id with 400 INVALID_GROUP_ID and creates no group', async () => {
    for (const bad of ['has space', 'slash/in/it', 'x'.repeat(250), 'ünïcode']) {
      expectRejected(await hb(bad, { member_epoch: 0, subscribed_topic_names: [T] }), 400, 40002, 'INVALID_GROUP_ID');
    }
    const listed = (await call('GET', v3('/consumer-groups'))).body.data.map((g: any) => g.consumer_group_id);
    expect(listed.filter((g: string) => g.startsWith('has ') || g.startsWith('xxxx') || g.startsWith('ü'))).toEqual([]);
  });

  it('rejects a session timeout out of range with 400 INVALID_SESSION_TIMEOUT, for a new member and an existing one', async () => {
    const fresh = uniqueTopic('g-bad');
    for (const ms of [0, 999, 1_800_001]) {
      expectRejected(await hb(fresh, { member_epoch: 0, subscribed_topic_names: [T], session_timeout_ms: ms }), 400, 40002, 'INVALID_SESSION_TIMEOUT');
    }
    expect((await snapshot(fresh)).status).toBe(404);
    const { group, member } = await stableGroup();
    const before = await snapshot(group);
    expectRejected(await hb(group, { member_id: member.member_id, member_epoch: member.member_epoch, session_timeout_ms: 10 }), 400, 40002, 'INVALID_SESSION_TIMEOUT');
    expect(await snapshot(group)).toEqual(before);
  });

  it('rejects offset metadata over 4096 bytes with 400 OFFSET_METADATA_TOO_LARGE and commits none of the request', async () => {
    const { group, member } = await stableGroup();
    const before = await snapshot(group);
    const r = await commit(group, {
      ...member,
      offsets: [{ topic: T, partition: 0, offset: 2 }, { topic: T, partition: 1, offset: 1, metadata: 'm'.repeat(4097) }],
    });
    expectRejected(r, 400, 40002, 'OFFSET_METADATA_TOO_LARGE');
    expect(await snapshot(group)).toEqual(before);
  });

  it('rejects a member epoch ahead of the member\'s with 409 FENCED_MEMBER_EPOCH, a commit\'s epoch behind it with 409 STALE_MEMBER_EPOCH (Kafka\'s rule), and an unknown member with 404 UNKNOWN_MEMBER_ID', async () => {
    const { group, member } = await stableGroup();
    const before = await snapshot(group);
    // (A heartbeat at epoch 0 is a rejoin, and -1 a leave: those are not bad input.)
    for (const epoch of [member.member_epoch + 1, member.member_epoch + 7]) {
      expectRejected(await hb(group, { member_id: member.member_id, member_epoch: epoch, owned_partitions: [] }), 409, 40901, 'FENCED_MEMBER_EPOCH');
    }
    expectRejected(await commit(group, { member_id: member.member_id, member_epoch: member.member_epoch + 1, offsets: [{ topic: T, partition: 0, offset: 2 }] }), 409, 40901, 'FENCED_MEMBER_EPOCH');
    expectRejected(await commit(group, { member_id: member.member_id, member_epoch: member.member_epoch - 1, offsets: [{ topic: T, partition: 0, offset: 2 }] }), 409, 40901, 'STALE_MEMBER_EPOCH');
    expectRejected(await hb(group, { member_id: 'nobody', member_epoch: 3 }), 404, 40403, 'UNKNOWN_MEMBER_ID');
    expectRejected(await commit(group, { member_id: 'nobody', member_epoch: 3, offsets: [{ topic: T, partition: 0, offset: 2 }] }), 404, 40403, 'UNKNOWN_MEMBER_ID');
    expect(await snapshot(group)).toEqual(before);
  });

  // Found by the 10,000-case fuzz run: both were 500s.
  it('rejects a subscription pattern too large to compile, and a member id too long to be a key, with 422 and changes nothing', async () => {
    const { group, member } = await stableGroup();
    const before = await snapshot(group);
    const huge = await hb(group, { member_epoch: 0, subscribed_topic_regex: '"'.repeat(100_000), session_timeout_ms: 45_000 });
    expect(huge.status, huge.text).toBe(422);
    expect(huge.body.error_code).toBe(42206);
    const long = await commit(group, { member_id: '🙂'.repeat(300), member_epoch: member.member_epoch, offsets: [{ topic: T, partition: 0, offset: 2 }] });
    expect(long.status, long.text).toBe(422);
    expect(await snapshot(group)).toEqual(before);
    // (A third, not bad input: a commit naming a partition twice stores the last offset, as Kafka's does.)
    const twice = await commit(group, { ...member, offsets: [{ topic: T, partition: 0, offset: 3 }, { topic: T, partition: 0, offset: 4 }] });
    expect(twice.status, twice.text).toBe(200);
    expect((await call('GET', v3(`/consumer-groups/${encodeURIComponent(group)}/offsets`))).body.data.find((o: { partition_id: number }) => o.partition_id === 0)?.offset).toBe(4);
  });

  // Found by the second 10,000-case fuzz run: both were 500s.
  it('rejects a topic name longer than any topic can have (249) in a commit, a reset or a subscription with 422, and resets a partition named twice once', async () => {
    const { group, member } = await stableGroup();
    const before = await snapshot(group);
    const name = 'a'.repeat(70_000);
    const long = await commit(group, { ...member, offsets: [{ topic: name, partition: 0, offset: 1 }] });
    expect(long.status, long.text).toBe(422);
    expect(long.body.error_code).toBe(42206);
    expect((await hb(group, { ...member, subscribed_topic_names: [T, 'b'.repeat(250)] })).status).toBe(422);
    expect(await snapshot(group)).toEqual(before);
    const empty = `${group}-empty`;
    expect((await call('POST', v3(`/consumer-groups/${empty}/offsets:reset`), { topics: [name], to: 'earliest' })).status).toBe(422);
    const twice = await call('POST', v3(`/consumer-groups/${empty}/offsets:reset`), { partitions: [{ topic: T, partition: 1 }, { topic: T, partition: 1 }], to: 'latest' });
    expect(twice.status, twice.text).toBe(200);
    expect(twice.body.data.map((d: any) => [d.partition_id, d.offset])).toEqual([[1, 1]]);
  });

  it('rejects a commit of a partition the member does not own with 409 FENCED_MEMBER_EPOCH and writes none of it', async () => {
    const { group, member } = await stableGroup();
    const other = uniqueTopic('group-bad-other');
    await createTopic(other, 1, 1);
    const before = await snapshot(group);
    for (const notMine of [{ topic: other, partition: 0 }, { topic: T, partition: 5 }]) {
      const r = await commit(group, { ...member, offsets: [{ topic: T, partition: 0, offset: 2 }, { ...notMine, offset: 1 }] });
      expectRejected(r, 409, 40901, 'FENCED_MEMBER_EPOCH');
      expect(r.body.message).toMatch(/does not own/);
    }
    expect(await snapshot(group)).toEqual(before);
  });
});

describe('Consumer routes (REST Proxy v2): bad input', () => {
  const instance = async (group: string, name: string, config: Record<string, string> = {}) => {
    const r = await call('POST', `/consumers/${group}`, { name, format: 'binary', 'auto.commit.enable': 'false', 'session.timeout.ms': String(SESSION), ...config }, V2);
    expect(r.status, r.text).toBe(200);
    return `/consumers/${group}/instances/${name}`;
  };
  const committed = async (base: string) => {
    const out = [];
    for (const p of [0, 1]) out.push(...(await call('GET', `${base}/offsets?topic=${T}&partition=${p}`, undefined, V2)).body.offsets);
    return out;
  };

  it('rejects an invalid group name with 400 INVALID_GROUP_ID and a session timeout out of range with 422 (42204), creating no instance', async () => {
    expectRejected(await call('POST', `/consumers/${encodeURIComponent('bad group')}`, { name: 'x' }, V2), 400, 40002, 'INVALID_GROUP_ID');
    const group = uniqueTopic('g-bad');
    const r = await call('POST', `/consumers/${group}`, { name: 'x', 'session.timeout.ms': '10' }, V2);
    expect(r.status, r.text).toBe(422);
    expect(r.body).toEqual({ error_code: 42204, message: expect.stringMatching(/INVALID_SESSION_TIMEOUT/) });
    expect((await call('GET', `/consumers/${group}/instances/x/subscription`, undefined, V2)).body.error_code).toBe(40403);
    expect((await snapshot(group)).status).toBe(404);
  });

  it('rejects offset metadata over 4096 bytes with 400 OFFSET_METADATA_TOO_LARGE and keeps the committed offsets', async () => {
    const group = uniqueTopic('g-bad');
    const base = await instance(group, 'meta');
    expect((await call('POST', `${base}/assignments`, { partitions: [{ topic: T, partition: 0 }, { topic: T, partition: 1 }] }, V2)).status).toBe(204);
    expect((await call('POST', `${base}/offsets`, { offsets: [{ topic: T, partition: 0, offset: 1 }] }, V2)).status).toBe(204);
    const before = await committed(base);
    const r = await call('POST', `${base}/offsets`, { offsets: [{ topic: T, partition: 1, offset: 1, metadata: 'm'.repeat(4097) }] }, V2);
    expectRejected(r, 400, 40002, 'OFFSET_METADATA_TOO_LARGE');
    expect(await committed(base)).toEqual(before);
  });

  it('rejects a commit of a partition the instance was not given with 409 ILLEGAL_GENERATION and keeps the committed offsets', async () => {
    const group = uniqueTopic('g-bad');
    const first = await instance(group, 'first');
    expect((await call('POST', `${first}/subscription`, { topics: [T] }, V2)).status).toBe(204);
    // `first` takes both partitions; `second` joins, `first` gives one up on its next poll.
    expect((await call('GET', `${first}/records?timeout=0`, undefined, V2)).status).toBe(200);
    const second = await instance(group, 'second');
    expect((await call('POST', `${second}/subscription`, { topics: [T] }, V2)).status).toBe(204);
    expect((await call('GET', `${first}/records?timeout=0`, undefined, V2)).status).toBe(200);
    expect((await call('GET', `${second}/records?timeout=0`, undefined, V2)).status).toBe(200);
    const mine = (await call('GET', `${second}/assignments`, undefined, V2)).body.partitions;
    expect(mine).toHaveLength(1);
    const notMine = { topic: T, partition: 1 - mine[0].partition };
    const before = await snapshot(group);
    const r = await call('POST', `${second}/offsets`, { offsets: [{ ...mine[0], offset: 1 }, { ...notMine, offset: 1 }] }, V2);
    expectRejected(r, 409, 40901, 'ILLEGAL_GENERATION');
    expect(await snapshot(group)).toEqual(before);
  });

  it("answers a poll with auto.offset.reset=none and no committed offset with 416 OFFSET_OUT_OF_RANGE (Kafka's NoOffsetForPartition), storing no position and no offset", async () => {
    const group = uniqueTopic('g-bad');
    const base = await instance(group, 'none', { 'auto.offset.reset': 'none', 'auto.commit.enable': 'true' });
    expect((await call('POST', `${base}/assignments`, { partitions: [{ topic: T, partition: 0 }] }, V2)).status).toBe(204);
    const r = await call('GET', `${base}/records?timeout=0`, undefined, V2);
    expectRejected(r, 416, 41601, 'OFFSET_OUT_OF_RANGE');
    expect(r.body.message).toMatch(/no committed offset/);
    expect(await committed(base)).toEqual([]);
    // No position was stored: committing "where the instance is" commits nothing.
    expect((await call('POST', `${base}/offsets`, {}, V2)).status).toBe(204);
    expect(await committed(base)).toEqual([]);
    // With an offset committed, the same instance reads from it.
    expect((await call('POST', `${base}/offsets`, { offsets: [{ topic: T, partition: 0, offset: 0 }] }, V2)).status).toBe(204);
    const ok = await call('GET', `${base}/records?timeout=0`, undefined, V2);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.map((x: any) => x.offset)).toEqual([0]);
  });
});
