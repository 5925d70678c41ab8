/**
 * Consumer groups end to end over HTTP (REST Proxy v2 consumers and the native protocol), against
 * the shared local stack: rebalancing after a member dies, fenced stale commits, seeking, lag and
 * offset resets, and REST Proxy's error codes.
 *
 * Sessions: a REST instance heartbeats only when it polls, and this file runs many requests between
 * one member's polls (the others' polls and commits, produce calls) on a loaded machine. So no
 * session here is short enough to run out by accident: members that must stay get SESSION, which
 * outlasts the whole file, and a member that must expire is made to by the test — its last
 * heartbeat is moved back past its session (the clock, not a sleep that hopes).
 */
import { describe, expect, it } from 'vitest';
import { updateMember } from '../../../lib/storage/coordination/groups.js';
import { call, createTopic, uniqueTopic, v3 } from '../../support/api.js';

/** Longer than this file can run: a session that cannot expire unless the test expires it. */
const SESSION = 1_800_000;

const V2 = { 'content-type': 'application/vnd.kafka.v2+json', accept: 'application/vnd.kafka.binary.v2+json' };

async function produceAll(topic: string, n: number, from = 0): Promise<void> {
  for (let i = from; i < from + n; i += 500) {
    const entries = Array.from({ length: Math.min(500, from + n - i) }, (_, j) => ({ id: String(i + j), key: { type: 'STRING', data: `k${i + j}` }, value: { type: 'STRING', data: `v${i + j}` } }));
    const r = await call('POST', v3(`/topics/${topic}/records:batch`), { entries });
    expect(r.body.failures).toEqual([]);
  }
}

async function newInstance(group: string, name: string, config: Record<string, string> = {}) {
  const r = await call('POST', `/consumers/${group}`, { name, format: 'binary', 'auto.offset.reset': 'earliest', 'auto.commit.enable': 'false', ...config }, V2);
  expect(r.status).toBe(200);
  return `/consumers/${group}/instances/${name}`;
}

interface Seen { member: string; partition: number; offset: number; value: string }

async function pollOnce(base: string, member: string, seen: Seen[]): Promise<Seen[]> {
  const r = await call('GET', `${base}/records?timeout=100&max_bytes=3000`, undefined, V2);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const got = (r.body as any[]).map((x) => ({ member, partition: x.partition, offset: x.offset, value: Buffer.from(x.value, 'base64').toString() }));
  seen.push(...got);
  return got;
}

describe('Consumer groups over HTTP', () => {
  it('where one of 3 members dies mid-stream, the others take its partitions only once its session ran out and continue from its last commit; every record is processed, in partition order, duplicates only from uncommitted work', async () => {
    const topic = uniqueTopic('grp');
    const group = uniqueTopic('g');
    await createTopic(topic, 6, 1);
    await produceAll(topic, 600);
    const members = ['a', 'b', 'c'];
    const bases = new Map<string, string>();
    for (const m of members) {
      bases.set(m, await newInstance(group, m, { 'session.timeout.ms': String(SESSION) }));
      expect((await call('POST', `${bases.get(m)}/subscription`, { topics: [topic] }, V2)).status).toBe(204);
    }
    const seen: Seen[] = [];
    // Three rounds of poll → process → commit for everyone.
    for (let round = 0; round < 3; round++) {
      for (const m of members) {
        await pollOnce(bases.get(m) as string, m, seen);
        expect((await call('POST', `${bases.get(m)}/offsets`, {}, V2)).status).toBe(204);
      }
    }
    // More records arrive; c processes one more poll without committing, then dies.
    await produceAll(topic, 300, 600);
    const uncommitted = await pollOnce(bases.get('c') as string, 'c', seen);
    expect(uncommitted.length).toBeGreaterThan(0);
    const cPartitions = new Set((await call('GET', `${bases.get('c')}/assignments`, undefined, V2)).body.partitions.map((p: any) => p.partition));
    await produceAll(topic, 300, 900); // the stream goes on
    // While c's session lasts, its partitions stay its own: a and b read only theirs.
    for (let i = 0; i < 3; i++) {
      for (const m of ['a', 'b']) {
        const got = await pollOnce(bases.get(m) as string, m, seen);
        expect(got.filter((g) => cPartitions.has(g.partition))).toEqual([]);
        expect((await call('POST', `${bases.get(m)}/offsets`, {}, V2)).status).toBe(204);
      }
    }
    // c's session runs out: its last heartbeat is now longer ago than its session.
    await updateMember(group, 'c', { lastHeartbeatAt: Date.now() - SESSION - 1 });
    let resumed = false;
    for (let i = 0; i < 400 && new Set(seen.map((s) => s.value)).size < 1200; i++) {
      for (const m of ['a', 'b']) {
        const got = await pollOnce(bases.get(m) as string, m, seen);
        resumed ||= got.some((g) => cPartitions.has(g.partition));
        expect((await call('POST', `${bases.get(m)}/offsets`, {}, V2)).status).toBe(204);
      }
    }
    expect(new Set(seen.map((s) => s.value)).size).toBe(1200);
    // Per partition, each member read in offset order.
    for (const m of members) {
      for (let p = 0; p < 6; p++) {
        const offsets = seen.filter((s) => s.member === m && s.partition === p).map((s) => s.offset);
        expect(offsets).toEqual([...offsets].sort((x, y) => x - y));
      }
    }
    // Duplicates come only from c's uncommitted poll.
    const counts = new Map<string, number>();
    for (const s of seen) counts.set(s.value, (counts.get(s.value) ?? 0) + 1);
    const duplicated = [...counts].filter(([, n]) => n > 1).map(([v]) => v);
    const uncommittedValues = new Set(uncommitted.map((u) => u.value));
    for (const v of duplicated) expect(uncommittedValues.has(v), `${v} was read twice`).toBe(true);
    expect(duplicated.length).toBeGreaterThan(0); // c's uncommitted work is read again by its successor
    expect(resumed).toBe(true);
    expect((await call('GET', `${bases.get('c')}/assignments`, undefined, V2)).body.error_code).toBe(40403); // c was expired
    const lag = await call('GET', v3(`/consumer-groups/${group}/lag-summary`));
    expect(lag.body.total_lag).toBe(0);
  });

  it("rejects a fenced member's commit and keeps the committed offset", async () => {
    const topic = uniqueTopic('fence');
    const group = uniqueTopic('g');
    await createTopic(topic, 1, 1);
    await produceAll(topic, 10);
    const hb = (body: unknown) => call('POST', v3(`/consumer-groups/${group}/heartbeat`), body);
    const x = (await hb({ member_epoch: 0, subscribed_topic_names: [topic], session_timeout_ms: SESSION })).body;
    expect(x.assignment).toEqual([{ topic, partition: 0 }]);
    const commit = (member: any, offset: number) => call('POST', v3(`/consumer-groups/${group}/offsets:commit`), { member_id: member.member_id, member_epoch: member.member_epoch, offsets: [{ topic, partition: 0, offset }] });
    expect((await commit(x, 4)).status).toBe(200);
    await updateMember(group, x.member_id, { lastHeartbeatAt: Date.now() - SESSION - 1 }); // x's session runs out
    const y = (await hb({ member_epoch: 0, subscribed_topic_names: [topic], session_timeout_ms: SESSION })).body;
    expect(y.assignment).toEqual([{ topic, partition: 0 }]);
    const stale = await commit(x, 9);
    expect(stale.status).toBeGreaterThanOrEqual(400);
    expect(stale.body.message).toMatch(/UNKNOWN_MEMBER_ID|FENCED_MEMBER_EPOCH/);
    expect((await commit({ ...y, member_epoch: y.member_epoch + 1 }, 9)).body.message).toMatch(/FENCED_MEMBER_EPOCH/);
    const offsets = (await call('GET', v3(`/consumer-groups/${group}/offsets`))).body.data;
    expect(offsets.map((o: any) => o.offset)).toEqual([4]);
    // Committed offsets never move backwards by a commit.
    expect((await commit(y, 2)).body.kept).toEqual([{ topic, partition: 0, offset: 2 }]);
    expect((await call('GET', v3(`/consumer-groups/${group}/offsets`))).body.data[0].offset).toBe(4);
  });

  it('answers a commit carrying the epoch a heartbeat has just moved on from with STALE_MEMBER_EPOCH (retriable, as in Kafka), and takes it with the new epoch', async () => {
    const topic = uniqueTopic('stale');
    const group = uniqueTopic('g');
    await createTopic(topic, 2, 1);
    const hb = (body: unknown) => call('POST', v3(`/consumer-groups/${group}/heartbeat`), body);
    const x = (await hb({ member_epoch: 0, subscribed_topic_names: [topic], session_timeout_ms: SESSION })).body;
    const owned = x.assignment;
    // The heartbeat that moves x's epoch on (a second member joined), while x's commit with the old one is in flight.
    await hb({ member_epoch: 0, subscribed_topic_names: [topic], session_timeout_ms: SESSION });
    const revoking = (await hb({ member_id: x.member_id, member_epoch: x.member_epoch, owned_partitions: owned, subscribed_topic_names: [topic], session_timeout_ms: SESSION })).body;
    expect(revoking.member_epoch).toBe(x.member_epoch); // (its epoch moves on once it has given a partition up)
    const moved = (await hb({ member_id: x.member_id, member_epoch: x.member_epoch, owned_partitions: revoking.assignment, subscribed_topic_names: [topic], session_timeout_ms: SESSION })).body;
    expect(moved.member_epoch).toBeGreaterThan(x.member_epoch);
    const commit = (epoch: number) => call('POST', v3(`/consumer-groups/${group}/offsets:commit`), { member_id: x.member_id, member_epoch: epoch, offsets: [{ topic, partition: moved.assignment[0].partition, offset: 1 }] });
    const stale = await commit(x.member_epoch);
    expect(stale.status).toBe(409);
    expect(stale.body.message).toMatch(/^STALE_MEMBER_EPOCH/);
    expect((await call('GET', v3(`/consumer-groups/${group}/offsets`))).body.data).toEqual([]);
    expect((await commit(moved.member_epoch)).status).toBe(200);
    // An epoch from the future is fenced, as in Kafka.
    expect((await commit(moved.member_epoch + 1)).body.message).toMatch(/^FENCED_MEMBER_EPOCH/);
  });

  it('where a second member joins, the first gives partitions up before the second gets them (never two owners)', async () => {
    const topic = uniqueTopic('coop');
    const group = uniqueTopic('g');
    await createTopic(topic, 4, 1);
    const hb = (body: unknown) => call('POST', v3(`/consumer-groups/${group}/heartbeat`), body).then((r) => r.body);
    const a = await hb({ member_epoch: 0, subscribed_topic_names: [topic] });
    expect(a.assignment).toHaveLength(4);
    const b = await hb({ member_epoch: 0, subscribed_topic_names: [topic] });
    expect(b.assignment).toEqual([]);
    const a2 = await hb({ member_id: a.member_id, member_epoch: a.member_epoch, owned_partitions: a.assignment });
    expect(a2.revoking).toHaveLength(2);
    const b2 = await hb({ member_id: b.member_id, member_epoch: b.member_epoch, owned_partitions: [] });
    expect(b2.assignment).toEqual([]); // a has not let go yet
    const a3 = await hb({ member_id: a.member_id, member_epoch: a2.member_epoch, owned_partitions: a2.assignment });
    expect(a3.assignment).toHaveLength(2);
    const b3 = await hb({ member_id: b.member_id, member_epoch: b2.member_epoch, owned_partitions: [] });
    expect(b3.assignment).toHaveLength(2);
    expect(new Set([...a3.assignment, ...b3.assignment].map((p: any) => p.partition)).size).toBe(4);
    const described = (await call('GET', v3(`/consumer-groups/${group}`))).body;
    expect(described.state).toBe('STABLE');
  });

  it('seeks to the beginning, the end, an offset and a timestamp as Kafka does', async () => {
    const topic = uniqueTopic('seek');
    const group = uniqueTopic('g');
    await createTopic(topic, 1, 1);
    const base0 = Date.parse('2026-01-01T00:00:00Z');
    for (let i = 0; i < 5; i++) await call('POST', v3(`/topics/${topic}/records`), { value: { type: 'STRING', data: `v${i}` }, timestamp: base0 + i * 1000 });
    const inst = await newInstance(group, 'seeker');
    expect((await call('POST', `${inst}/assignments`, { partitions: [{ topic, partition: 0 }] }, V2)).status).toBe(204);
    const read = async () => ((await call('GET', `${inst}/records?timeout=0`, undefined, V2)).body as any[]).map((r) => r.offset);
    expect(await read()).toEqual([0, 1, 2, 3, 4]);
    expect((await call('POST', `${inst}/positions/beginning`, { partitions: [{ topic, partition: 0 }] }, V2)).status).toBe(204);
    expect(await read()).toEqual([0, 1, 2, 3, 4]);
    await call('POST', `${inst}/positions`, { offsets: [{ topic, partition: 0, offset: 3 }] }, V2);
    expect(await read()).toEqual([3, 4]);
    await call('POST', `${inst}/positions`, { timestamps: [{ topic, partition: 0, timestamp: new Date(base0 + 1500).toISOString() }] }, V2);
    expect(await read()).toEqual([2, 3, 4]);
    await call('POST', `${inst}/positions/end`, { partitions: [{ topic, partition: 0 }] }, V2);
    expect(await read()).toEqual([]);
    const notMine = await call('POST', `${inst}/positions`, { offsets: [{ topic, partition: 7, offset: 0 }] }, V2);
    expect(notMine.body.error_code).toBe(40903);
  });

  it('answers with REST Proxy error codes and keeps lag, describe and resets consistent', async () => {
    const topic = uniqueTopic('codes');
    const group = uniqueTopic('g');
    await createTopic(topic, 2, 1);
    await produceAll(topic, 20);
    const inst = await newInstance(group, 'one');
    expect((await call('POST', `/consumers/${group}`, { name: 'one', format: 'binary' }, V2)).body.error_code).toBe(40902);
    expect((await call('POST', `/consumers/${group}`, { name: 'x', 'auto.offset.reset': 'sometimes' }, V2)).body.error_code).toBe(42204);
    expect((await call('POST', `/consumers/${group}`, { name: 'y', 'no.such.config': '1' }, V2)).body.error_code).toBe(42204);
    expect((await call('GET', `/consumers/${group}/instances/nobody/records`, undefined, V2)).body.error_code).toBe(40403);
    expect((await call('POST', `${inst}/subscription`, { topics: [topic], topic_pattern: 'x.*' }, V2)).body.error_code).toBe(40903);
    expect((await call('POST', `${inst}/subscription`, { topic_pattern: `${topic.replace(/[.-]/g, '.')}` }, V2)).status).toBe(204);
    expect((await call('GET', `${inst}/subscription`, undefined, V2)).body.topic_pattern).toBeDefined();
    // A pattern picks new topics up within the metadata refresh interval (1 s).
    let got: any[] = [];
    for (let i = 0; i < 30 && got.length === 0; i++) got = (await call('GET', `${inst}/records?timeout=200`, undefined, V2)).body as any[];
    expect(got.length).toBeGreaterThan(0);
    expect((await call('GET', `${inst}/records`, undefined, { accept: 'application/vnd.kafka.json.v2+json' })).body.error_code).toBe(40601);
    await call('POST', `${inst}/offsets`, {}, V2);
    const summary = (await call('GET', v3(`/consumer-groups/${group}/lag-summary`))).body;
    const lags = (await call('GET', v3(`/consumer-groups/${group}/lags`))).body.data;
    expect(summary.total_lag).toBe(lags.reduce((n: number, l: any) => n + l.lag, 0));
    expect(lags.every((l: any) => l.log_end_offset >= (l.current_offset ?? 0))).toBe(true);
    const reset = await call('POST', v3(`/consumer-groups/${group}/offsets:reset`), { topics: [topic], to: 'earliest' });
    expect(reset.body.message).toMatch(/NON_EMPTY_GROUP/);
    expect((await call('DELETE', inst, undefined, V2)).status).toBe(204);
    const done = await call('POST', v3(`/consumer-groups/${group}/offsets:reset`), { topics: [topic], to: 'earliest' });
    expect(done.body.data.map((d: any) => d.offset)).toEqual([0, 0]);
    expect((await call('GET', v3('/consumer-groups'))).body.data.some((g: any) => g.consumer_group_id === group)).toBe(true);
    expect((await call('DELETE', v3(`/consumer-groups/${group}`))).status).toBe(204);
    expect((await call('GET', v3(`/consumer-groups/${group}`))).status).toBe(404);
  });

  it('a group that only has committed offsets (reset before any member joined) is listed and described as Empty, as Kafka lists and describes it', async () => {
    const topic = uniqueTopic('offsets-only');
    await createTopic(topic, 2);
    const group = `${topic}-group`;
    expect((await call('GET', v3(`/consumer-groups/${group}`))).status).toBe(404);
    const reset = await call('POST', v3(`/consumer-groups/${group}/offsets:reset`), { topics: [topic], to: 'latest' });
    expect(reset.status).toBe(200);
    const described = await call('GET', v3(`/consumer-groups/${group}`));
    expect(described.status).toBe(200);
    expect(described.body.state).toBe('EMPTY');
    expect((await call('GET', v3(`/consumer-groups/${group}/consumers`))).body.data).toEqual([]);
    expect((await call('GET', v3(`/consumer-groups/${group}/lags`))).body.data.map((l: any) => [l.partition_id, l.current_offset])).toEqual([[0, 0], [1, 0]]);
    expect((await call('GET', v3('/consumer-groups'))).body.data.some((g: any) => g.consumer_group_id === group)).toBe(true);
    expect((await call('DELETE', v3(`/consumer-groups/${group}`))).status).toBe(204);
    expect((await call('GET', v3(`/consumer-groups/${group}`))).status).toBe(404);
  });
});
