/**
 * What the console reads, through the real SDK against the shared stack: the metadata view, the
 * controller lease, partitions with every replica's offsets, a partition's S3 segments after the
 * replicator rolled them (and the segments route's HTTP shape and errors), and the message
 * browser's reads by offset, by time and from the log start.
 */
import { describe, expect, it } from 'vitest';
import { describeTieredLog } from '../../lib/log/segment-list.js';
import { call, baseUrl, clusterId, createTopic, uniqueTopic, v3 } from '../support/api.js';
import { until } from '../support/cluster.js';
import { Tributary, TributaryProtocolError, type KafkaMessage, type LogTiers } from '../../client/index.js';

const admin = () => new Tributary({ url: baseUrl() }).admin();
const text = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** How `until` waits here: a check whose call fails ends the wait (the calls must not fail). */
const NO_RETRY = { retry: false } as const;

/** The error a call rejects with, and how long it took. */
async function failure(p: Promise<unknown>): Promise<{ e: TributaryProtocolError; ms: number }> {
  const start = Date.now();
  const e = await p.then(() => undefined, (x: unknown) => x);
  expect(e).toBeInstanceOf(TributaryProtocolError);
  return { e: e as TributaryProtocolError, ms: Date.now() - start };
}

/** Sends each message alone (one batch each), in order, to partition 0. */
async function produceOneByOne(topic: string, messages: { key: string; value: string; timestamp?: number; headers?: Record<string, string> }[]): Promise<void> {
  const producer = new Tributary({ url: baseUrl() }).producer({ lingerMs: 0 });
  for (const m of messages) await producer.send({ topic, messages: [{ ...m, partition: 0 }] });
  await producer.disconnect();
}

describe('Method: describeMetadata and describeController', () => {
  it('gives the cluster id, brokers, the controller lease as the controller route shows it, and a new topic\'s partitions', async () => {
    const topic = uniqueTopic('console-md');
    await createTopic(topic, 3, 3);
    const a = admin();
    const [md, controller, raw] = await Promise.all([a.describeMetadata(), a.describeController(), call('GET', v3('/controller'))]);
    expect(md.clusterId).toBe(clusterId());
    expect(md.metadataVersion).toEqual(expect.any(Number));
    expect(md.brokers.map((b) => b.brokerId).sort()).toEqual([1, 2, 3]);
    for (const b of md.brokers) expect(b.state).toEqual(expect.any(String));
    const t = md.topics.find((x) => x.name === topic);
    expect(t?.topicId).toEqual(expect.any(String));
    expect(t?.partitions.map((p) => p.partitionId)).toEqual([0, 1, 2]);
    for (const p of t?.partitions ?? []) {
      expect(p.replicas).toHaveLength(3);
      expect(p.replicas).toContain(p.leader);
      expect(p.isr.sort()).toEqual([...p.replicas].sort());
      expect(p.leaderEpoch).toEqual(expect.any(Number));
    }
    // The shared stack runs no controller; whichever it is, the SDK says what the route says.
    expect(raw.status).toBe(200);
    expect(controller).toEqual({ controllerId: raw.body.controller_id, epoch: raw.body.epoch, leaseExpiresAt: raw.body.lease_expires_at });
    expect(md.controller).toEqual(raw.body.controller_id === null ? null : controller);
  });
});

describe('Method: describePartitions', () => {
  it('gives every replica\'s state and offsets and the leader\'s log start, log end and high watermark, in one request', async () => {
    const topic = uniqueTopic('console-parts');
    await createTopic(topic, 2, 3);
    const producer = new Tributary({ url: baseUrl() }).producer();
    await producer.send({ topic, messages: Array.from({ length: 5 }, (_, i) => ({ value: `v${i}`, partition: 1 })) });
    await producer.disconnect();
    const a = admin();
    // Followers copy in the background: wait until every replica has the 5 records.
    const parts = await until('replicas caught up', async () => {
      const ps = await a.describePartitions(topic);
      return ps[1]?.replicaStates.every((r) => r.logEndOffset === 5 && r.isInSync) ? ps : undefined;
    }, NO_RETRY);
    expect(parts.map((p) => p.partitionId)).toEqual([0, 1]);
    const [p0, p1] = parts;
    expect(p0).toMatchObject({ logStartOffset: 0, logEndOffset: 0, highWatermark: 0 });
    expect(p1).toMatchObject({ logStartOffset: 0, logEndOffset: 5, highWatermark: 5 });
    for (const p of parts) {
      expect(p.replicas).toHaveLength(3);
      expect(p.isr.sort()).toEqual([...p.replicas].sort());
      expect(p.leaderEpoch).toEqual(expect.any(Number));
      expect(p.replicaStates.map((r) => r.brokerId).sort()).toEqual([...p.replicas].sort());
      expect(p.replicaStates.filter((r) => r.isLeader).map((r) => r.brokerId)).toEqual([p.leader]);
    }
    for (const r of p1?.replicaStates ?? []) expect(r).toMatchObject({ isInSync: true, state: 'in-sync', logStartOffset: 0, logEndOffset: 5, lag: 0 });
  });

  it('rejects a topic that does not exist with UNKNOWN_TOPIC_OR_PARTITION (404) at once, without retrying', async () => {
    const { e, ms } = await failure(admin().describePartitions(uniqueTopic('console-none')));
    expect(e).toMatchObject({ type: 'UNKNOWN_TOPIC_OR_PARTITION', status: 404, errorCode: 40401 });
    expect(ms).toBeLessThan(2_000);
  });
});

describe('Method: describeSegments (GET …/partitions/{p}/segments)', () => {
  it('lists the segments the replicator rolled, contiguous from the log start to where the replica tables start, with their details', async () => {
    const topic = uniqueTopic('console-seg');
    // segment.bytes at Kafka's minimum: every batch below the high watermark rolls on the next append.
    await createTopic(topic, 1, 3, [{ name: 'segment.bytes', value: '14' }]);
    const T0 = Date.UTC(2026, 0, 1);
    await produceOneByOne(topic, Array.from({ length: 8 }, (_, i) => ({ key: `k${i}`, value: `value-${i}`, timestamp: T0 + i * 1000 })));
    const a = admin();
    // (a roll may be between its commit and its trim while the list and the head are read: wait for a settled view)
    const tiers: LogTiers = await until('two segments rolled', async () => {
      const t = await a.describeLogTiers(topic, 0);
      return t.segments.length >= 2 && t.highWatermark === 8 && t.segments[t.segments.length - 1]?.endOffset === t.localLogStartOffset ? t : undefined;
    }, NO_RETRY);
    const segs = tiers.segments;
    expect(tiers.logStartOffset).toBe(0);
    expect(tiers.highWatermark).toBe(8);
    expect(tiers.logEndOffset).toBe(8);
    // From the log start to the local log start, without a gap: [base, end) with end exclusive.
    expect(segs[0]?.baseOffset).toBe(tiers.logStartOffset);
    for (let i = 1; i < segs.length; i++) expect(segs[i]?.baseOffset).toBe(segs[i - 1]?.endOffset);
    expect(segs[segs.length - 1]?.endOffset).toBe(tiers.localLogStartOffset);
    expect(segs.reduce((n, s) => n + (s.recordCount ?? 0), 0)).toBe((tiers.localLogStartOffset ?? 0) - (tiers.logStartOffset ?? 0));
    const md = await a.describeMetadata();
    const topicId = md.topics.find((t) => t.name === topic)?.topicId;
    for (const s of segs) {
      expect(s).toMatchObject({ topic, partition: 0, state: 'live', generation: 0, deletedAt: null });
      expect(s.objectKey).toBe(`segments/${topicId}/0/${String(s.baseOffset).padStart(20, '0')}.seg`);
      expect(s.sizeBytes).toBeGreaterThan(0);
      expect(s.batchCount).toBeGreaterThan(0);
      expect(s.createdAt).toMatch(ISO);
      // Each record's timestamp is T0 + offset seconds.
      expect(s.minTimestamp).toBe(new Date(T0 + s.baseOffset * 1000).toISOString());
      expect(s.maxTimestamp).toBe(new Date(T0 + (s.endOffset - 1) * 1000).toISOString());
    }
    // Segments are only added here (no retention, no compaction): a later list starts with these.
    expect((await a.describeSegments(topic, 0)).slice(0, segs.length)).toEqual(segs);
    const all = await a.describeSegments(topic, 0, { state: 'all' });
    expect(all.filter((s) => s.state === 'live').map((s) => s.baseOffset)).toEqual(expect.arrayContaining(segs.map((s) => s.baseOffset)));

    // The message browser reads across the tiers, from the log start.
    const read = await a.fetchMessages({ topic, partition: 0 });
    expect(read.messages.map((m) => text(m.value))).toEqual(Array.from({ length: 8 }, (_, i) => `value-${i}`));

    // The route itself: Tributary's KafkaSegmentList and KafkaSegment.
    const r = await call('GET', v3(`/topics/${topic}/partitions/0/segments`));
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({
      kind: 'KafkaSegmentList',
      metadata: { self: expect.stringMatching(new RegExp(`/v3/clusters/${clusterId()}/topics/${topic}/partitions/0/segments$`)), next: null },
      log_start_offset: 0, local_log_start_offset: expect.any(Number), high_watermark: 8, log_end_offset: 8,
    });
    expect(r.body.data[0]).toEqual({
      kind: 'KafkaSegment', cluster_id: clusterId(), topic_name: topic, partition_id: 0, base_offset: 0, end_offset: expect.any(Number),
      size_bytes: expect.any(Number), record_count: expect.any(Number), batch_count: expect.any(Number),
      min_timestamp: new Date(T0).toISOString(), max_timestamp: expect.stringMatching(ISO), state: 'live', generation: 0,
      object_key: expect.stringMatching(/^segments\//), created_at: expect.stringMatching(ISO), deleted_at: null,
    });
  });

  it('pages the list at a base offset boundary and says where the next page starts (lib/log\'s reader, on the real registry)', async () => {
    const topic = uniqueTopic('console-seg-page');
    await createTopic(topic, 1, 3, [{ name: 'segment.bytes', value: '14' }]);
    await produceOneByOne(topic, Array.from({ length: 6 }, (_, i) => ({ key: `k${i}`, value: `v${i}` })));
    const a = admin();
    // Settled: the high watermark at the end, the segments up to the tables' start, and no roll since the last look.
    let last = '';
    const segs = await until('three segments rolled, and no more rolling', async () => {
      const t = await a.describeLogTiers(topic, 0);
      const settled = t.segments.length >= 3 && t.highWatermark === 6 && t.segments[t.segments.length - 1]?.endOffset === t.localLogStartOffset;
      const seen = JSON.stringify(t);
      const same = seen === last;
      last = seen;
      if (!same) await sleep(400);
      return settled && same ? t.segments : undefined;
    }, NO_RETRY);
    const topicId = (await a.describeMetadata()).topics.find((t) => t.name === topic)?.topicId as string;
    const first = await describeTieredLog(topicId, 0, undefined, { limit: 2 });
    expect(first.segments.map((s) => s.baseOffset)).toEqual(segs.slice(0, 2).map((s) => s.baseOffset));
    expect(first.nextBaseOffset).toBe(segs[2]?.baseOffset);
    // No leader store given: the bounds are unknown, not wrong.
    expect(first).toMatchObject({ logStartOffset: null, localLogStartOffset: null, highWatermark: null, logEndOffset: null });
    const rest = await describeTieredLog(topicId, 0, undefined, { fromOffset: first.nextBaseOffset });
    expect([...first.segments, ...rest.segments].map((s) => s.baseOffset)).toEqual(segs.map((s) => s.baseOffset));
    expect(rest.nextBaseOffset).toBeUndefined();
    // Over HTTP, from_offset starts a page there.
    const r = await call('GET', v3(`/topics/${topic}/partitions/0/segments?from_offset=${segs[1]?.baseOffset}`));
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.map((s: any) => s.base_offset)).toEqual(segs.slice(1).map((s) => s.baseOffset));
    expect(r.body.metadata.self).toMatch(new RegExp(`/segments\\?from_offset=${segs[1]?.baseOffset}$`));
  });

  it('answers an empty list for a partition that has not rolled, and Kafka-style errors for what does not exist or is malformed', async () => {
    const topic = uniqueTopic('console-seg-none');
    await createTopic(topic, 2, 3);
    const a = admin();
    const tiers = await a.describeLogTiers(topic, 1);
    expect(tiers).toEqual({ logStartOffset: 0, localLogStartOffset: 0, highWatermark: 0, logEndOffset: 0, segments: [] });

    const noTopic = await failure(a.describeSegments(uniqueTopic('console-seg-gone'), 0));
    expect(noTopic.e).toMatchObject({ type: 'UNKNOWN_TOPIC_OR_PARTITION', status: 404, errorCode: 40401 });
    expect(noTopic.ms).toBeLessThan(2_000);
    const noPartition = await failure(a.describeSegments(topic, 2));
    expect(noPartition.e).toMatchObject({ type: 'UNKNOWN_TOPIC_OR_PARTITION', status: 404, errorCode: 40402 });

    const cases: [string, number, number][] = [
      [`/topics/${topic}/partitions/7/segments`, 404, 40402],
      [`/topics/${topic}/partitions/-1/segments`, 404, 40402],
      [`/topics/${topic}/partitions/0/segments?state=gone`, 400, 40002],
      [`/topics/${topic}/partitions/0/segments?from_offset=-3`, 400, 40002],
      [`/topics/${topic}/partitions/0/segments?from_offset=abc`, 400, 40002],
    ];
    for (const [path, status, code] of cases) {
      const r = await call('GET', v3(path));
      expect(r.status, `${path}: ${r.text}`).toBe(status);
      expect(r.body).toEqual({ error_code: code, message: expect.any(String) });
    }
    const wrongCluster = await call('GET', `/v3/clusters/nope/topics/${topic}/partitions/0/segments`);
    expect(wrongCluster.status).toBe(404);
  });
});

describe('Method: fetchMessages', () => {
  const T0 = Date.UTC(2026, 1, 1);
  const setup = async () => {
    const topic = uniqueTopic('console-browse');
    await createTopic(topic, 1, 3);
    await produceOneByOne(topic, Array.from({ length: 6 }, (_, i) => ({ key: `k${i}`, value: JSON.stringify({ n: i }), timestamp: T0 + i * 10_000, headers: { source: `h${i}` } })));
    return topic;
  };
  const offsets = (ms: KafkaMessage[]) => ms.map((m) => Number(m.offset));

  it('reads from an offset, from a time (epoch ms or ISO-8601), and from the log start, with keys, values, headers and timestamps', async () => {
    const topic = await setup();
    const a = admin();
    const fromStart = await a.fetchMessages({ topic, partition: 0 });
    expect(offsets(fromStart.messages)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(fromStart).toMatchObject({ nextOffset: 6, highWatermark: 6, logStartOffset: 0 });
    const m = fromStart.messages[2] as KafkaMessage;
    expect({ key: text(m.key), value: text(m.value), source: text(m.headers.source ?? null), timestamp: m.timestamp, offset: m.offset })
      .toEqual({ key: 'k2', value: '{"n":2}', source: 'h2', timestamp: String(T0 + 20_000), offset: '2' });

    expect(offsets((await a.fetchMessages({ topic, partition: 0, offset: 4 })).messages)).toEqual([4, 5]);
    // The first record at or after the time: 25 s after T0 is offset 3 (T0 + 30 s).
    expect(offsets((await a.fetchMessages({ topic, partition: 0, timestamp: T0 + 25_000 })).messages)).toEqual([3, 4, 5]);
    expect(offsets((await a.fetchMessages({ topic, partition: 0, timestamp: new Date(T0 + 40_000).toISOString() })).messages)).toEqual([4, 5]);
    // An offset wins over a time.
    expect(offsets((await a.fetchMessages({ topic, partition: 0, offset: 5, timestamp: T0 })).messages)).toEqual([5]);
    // Later than every record: nothing, at the high watermark.
    expect(await a.fetchMessages({ topic, partition: 0, timestamp: T0 + 3_600_000 })).toEqual({ messages: [], nextOffset: 6, highWatermark: 6, logStartOffset: 0 });
    // A small maxBytes still answers one batch (one record here), and says where to go on.
    const small = await a.fetchMessages({ topic, partition: 0, offset: 1, maxBytes: 1 });
    expect(offsets(small.messages)).toEqual([1]);
    expect(small.nextOffset).toBe(2);
  });

  it('answers at once at the high watermark (no long poll), and rejects what is not there', async () => {
    const topic = await setup();
    const a = admin();
    const start = Date.now();
    expect(await a.fetchMessages({ topic, partition: 0, offset: 6 })).toEqual({ messages: [], nextOffset: 6, highWatermark: 6, logStartOffset: 0 });
    expect(Date.now() - start).toBeLessThan(2_000);
    const beyond = await failure(a.fetchMessages({ topic, partition: 0, offset: 99 }));
    expect(beyond.e.type).toBe('OFFSET_OUT_OF_RANGE');
    const noPartition = await failure(a.fetchMessages({ topic, partition: 3, offset: 0 }));
    expect(noPartition.e).toMatchObject({ type: 'UNKNOWN_TOPIC_OR_PARTITION', status: 404 });
    const noTopic = await failure(a.fetchMessages({ topic: uniqueTopic('console-browse-gone'), partition: 0, offset: 0 }));
    expect(noTopic.e).toMatchObject({ type: 'UNKNOWN_TOPIC_OR_PARTITION', status: 404 });
    await expect(a.fetchMessages({ topic, partition: 0, timestamp: 'yesterday' })).rejects.toThrow(/timestamp must be/);
  });
});

describe('describeGroups: each member with what it owns', () => {
  it('reads a member\'s partitions from the consumer\'s assigned_partitions (its `assignments` is a link)', async () => {
    const topic = uniqueTopic('console-group');
    await createTopic(topic, 2);
    const group = `${topic}-g`;
    const hb = (body: object) => call('POST', v3(`/consumer-groups/${group}/heartbeat`), body);
    const joined = (await hb({ member_epoch: 0, subscribed_topic_names: [topic], session_timeout_ms: 60_000 })).body;
    await hb({ member_id: joined.member_id, member_epoch: joined.member_epoch, owned_partitions: joined.assignment });
    const [described] = (await admin().describeGroups([group])).groups;
    expect(described?.members.map((m) => m.assignment.map((a) => `${a.topic}-${a.partition}`).sort())).toEqual([[`${topic}-0`, `${topic}-1`]]);
    await hb({ member_id: joined.member_id, member_epoch: -1 });
  });
});
