/**
 * The REST Proxy v3 admin API over HTTP: clusters, brokers, the topic lifecycle (create, describe,
 * list, partitions with their offsets, delete, recreate) and topic configs, with Kafka's rules for
 * topic names, partition counts, replication factors and config values.
 */
import { describe, expect, it, vi } from 'vitest';
import { call, clusterId, createTopic, expectError, uniqueTopic, v3, type Reply } from '../support/api.js';

const BROKERS = 3;
const topicUrl = (t: string, rest = '') => v3(`/topics/${t}${rest}`);
const create = (body: Record<string, unknown>) => call('POST', v3('/topics'), body);
const produceString = (t: string, data: string, partition?: number) =>
  call('POST', topicUrl(t, '/records'), { value: { type: 'STRING', data }, ...(partition !== undefined ? { partition_id: partition } : {}) });

/** A Kafka-style error: the status, REST Proxy's `{error_code, message}` and nothing else. */
async function expectNoTopic(t: string): Promise<void> {
  expectError(await call('GET', topicUrl(t)), 404, 40401, /UNKNOWN_TOPIC_OR_PARTITION/);
}

const configsOf = async (t: string): Promise<Record<string, unknown>[]> => {
  const r = await call('GET', topicUrl(t, '/configs'));
  expect(r.status, r.text).toBe(200);
  return r.body.data;
};

describe('Clusters and brokers', () => {
  it('lists the one cluster and describes it by id', async () => {
    const list = await call('GET', '/v3/clusters');
    expect(list.status).toBe(200);
    expect(list.body.kind).toBe('KafkaClusterList');
    expect(list.body.data.map((c: any) => c.cluster_id)).toEqual([clusterId()]);

    const one = await call('GET', v3());
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ kind: 'KafkaCluster', cluster_id: clusterId() });
  });

  it('answers 404 for an unknown cluster id, on every cluster-scoped route', async () => {
    for (const path of ['/v3/clusters/no-such-cluster', '/v3/clusters/no-such-cluster/brokers', '/v3/clusters/no-such-cluster/topics']) {
      expectError(await call('GET', path), 404, 404, /no-such-cluster/);
    }
    expectError(await call('POST', '/v3/clusters/no-such-cluster/topics', { topic_name: uniqueTopic('nocluster') }), 404, 404);
  });

  it('lists the three brokers of the test stack, ids 1 to 3, all alive', async () => {
    const r = await call('GET', v3('/brokers'));
    expect(r.status).toBe(200);
    expect(r.body.kind).toBe('KafkaBrokerList');
    const brokers = r.body.data;
    expect(brokers).toHaveLength(BROKERS);
    expect(brokers.map((b: any) => b.broker_id).sort()).toEqual([1, 2, 3]);
    for (const b of brokers) {
      expect(b).toMatchObject({ kind: 'KafkaBroker', cluster_id: clusterId(), state: 'alive' });
      expect(b).toHaveProperty('rack');
    }
    const one = await call('GET', v3('/brokers/2'));
    expect(one.status).toBe(200);
    expect(one.body.broker_id).toBe(2);
    expectError(await call('GET', v3('/brokers/99')), 404, 404);
    expectError(await call('GET', v3('/brokers/abc')), 404, 404);
  });
});

describe('Topic lifecycle', () => {
  it('creates a topic (201), describes it and lists it', async () => {
    const t = uniqueTopic('admin-life');
    const r = await create({ topic_name: t, partitions_count: 3, replication_factor: 3 });
    expect(r.status, r.text).toBe(201);
    expect(r.body).toMatchObject({ kind: 'KafkaTopic', cluster_id: clusterId(), topic_name: t, partitions_count: 3, replication_factor: 3 });

    const got = await call('GET', topicUrl(t));
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ topic_name: t, partitions_count: 3, replication_factor: 3, topic_id: r.body.topic_id });

    const list = await call('GET', v3('/topics'));
    expect(list.status).toBe(200);
    expect(list.body.data.map((x: any) => x.topic_name)).toContain(t);
  });

  it('shows each partition with its leader among the replicas, ISR = replicas, leaders spread over the brokers, and offsets 0 before any produce', async () => {
    const t = uniqueTopic('admin-parts');
    await createTopic(t, 3, 3);
    const r = await call('GET', topicUrl(t, '/partitions'));
    expect(r.status).toBe(200);
    expect(r.body.kind).toBe('KafkaPartitionList');
    const parts = r.body.data;
    expect(parts.map((p: any) => p.partition_id)).toEqual([0, 1, 2]);
    for (const p of parts) {
      const replicaIds = p.replica_states.map((x: any) => x.broker_id);
      expect(replicaIds).toHaveLength(3);
      expect(new Set(replicaIds).size).toBe(3);
      expect(replicaIds).toContain(p.leader_id);
      expect(p.replica_states.filter((x: any) => x.is_leader).map((x: any) => x.broker_id)).toEqual([p.leader_id]);
      expect([...p.isr].sort()).toEqual([...replicaIds].sort());
      expect(p).toMatchObject({ topic_name: t, log_start_offset: 0, log_end_offset: 0, high_watermark: 0 });
    }
    // Kafka's placement: with as many partitions as brokers, every broker leads one.
    expect(new Set(parts.map((p: any) => p.leader_id)).size).toBe(BROKERS);
  });

  it('advances the log end offset and the high watermark of the partition produced to, and only that one', async () => {
    const t = uniqueTopic('admin-offsets');
    await createTopic(t, 3, 3);
    for (let i = 0; i < 4; i++) expect((await produceString(t, `v${i}`, 1)).status).toBe(200);

    await vi.waitFor(async () => {
      const parts = (await call('GET', topicUrl(t, '/partitions'))).body.data;
      expect(parts.map((p: any) => [p.log_end_offset, p.high_watermark])).toEqual([[0, 0], [4, 4], [0, 0]]);
    }, { timeout: 10_000, interval: 100 });

    const one = await call('GET', topicUrl(t, '/partitions/1'));
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ kind: 'KafkaPartition', partition_id: 1, log_start_offset: 0, log_end_offset: 4, high_watermark: 4 });
  });

  it('answers 404 40402 for a partition the topic does not have', async () => {
    const t = uniqueTopic('admin-nopart');
    await createTopic(t, 2, 1);
    for (const p of ['2', '99', '-1', 'abc', '1.5']) {
      expectError(await call('GET', topicUrl(t, `/partitions/${p}`)), 404, 40402, /UNKNOWN_TOPIC_OR_PARTITION/);
    }
  });

  it('creates nothing when validate_only is set, yet still validates', async () => {
    const t = uniqueTopic('admin-dry');
    const r = await create({ topic_name: t, partitions_count: 2, replication_factor: 3, validate_only: true });
    expect(r.status, r.text).toBe(201);
    expect(r.body).toMatchObject({ topic_name: t, partitions_count: 2, replication_factor: 3 });
    await expectNoTopic(t);
    const list = await call('GET', v3('/topics'));
    expect(list.body.data.map((x: any) => x.topic_name)).not.toContain(t);

    expectError(await create({ topic_name: t, replication_factor: 4, validate_only: true }), 400, 40002, /INVALID_REPLICATION_FACTOR/);
    expectError(await create({ topic_name: t, configs: [{ name: 'no.such.config', value: '1' }], validate_only: true }), 400, 40002, /INVALID_CONFIG/);
  });

  it('refuses a second topic of the same name with TOPIC_ALREADY_EXISTS (400 40002) naming it', async () => {
    const t = uniqueTopic('admin-dup');
    await createTopic(t, 1, 1);
    expectError(await create({ topic_name: t, partitions_count: 2 }), 400, 40002, new RegExp(`TOPIC_ALREADY_EXISTS.*${t}`));
    expectError(await create({ topic_name: t, validate_only: true }), 400, 40002, /TOPIC_ALREADY_EXISTS/);
    // The first topic is untouched.
    expect((await call('GET', topicUrl(t))).body.partitions_count).toBe(1);
  });

  it('lets exactly one of two concurrent creates of the same name win', async () => {
    for (let round = 0; round < 3; round++) {
      const t = uniqueTopic('admin-race');
      const replies = await Promise.all([1, 2].map(() => create({ topic_name: t, partitions_count: 2, replication_factor: 3 })));
      const statuses = replies.map((r) => r.status).sort();
      expect(statuses, replies.map((r) => r.text).join('\n')).toEqual([201, 400]);
      const loser = replies.find((r) => r.status === 400) as Reply;
      expectError(loser, 400, 40002, /TOPIC_ALREADY_EXISTS/);
      const winner = replies.find((r) => r.status === 201) as Reply;
      expect((await call('GET', topicUrl(t))).body.topic_id).toBe(winner.body.topic_id);
    }
  });

  it.each([
    ['empty', ''],
    ['"."', '.'],
    ['".."', '..'],
    ['250 characters', 'a'.repeat(250)],
    ['a space', 'a b'],
    ['a non-ASCII letter', 'ü'],
    ['a slash', 'a/b'],
    ['a colon', 'a:b'],
  ])('refuses a topic name that is %s with INVALID_TOPIC_EXCEPTION', async (_what, name) => {
    expectError(await create({ topic_name: name }), 400, 40002, /INVALID_TOPIC_EXCEPTION/);
  });

  it('accepts a name of exactly 249 characters of [a-zA-Z0-9._-]', async () => {
    const base = `${uniqueTopic('admin-long')}.A_z-9`;
    const t = base + 'x'.repeat(249 - base.length);
    expect(t).toHaveLength(249);
    const r = await create({ topic_name: t, replication_factor: 1 });
    expect(r.status, r.text).toBe(201);
    expect((await call('GET', topicUrl(t))).status).toBe(200);
  });

  it('refuses a name that differs from an existing one only by "." versus "_"', async () => {
    const base = uniqueTopic('admin-collide').replaceAll('-', '');
    await createTopic(`${base}.x`, 1, 1);
    expectError(await create({ topic_name: `${base}_x` }), 400, 40002, /INVALID_TOPIC_EXCEPTION.*collides/);
    await expectNoTopic(`${base}_x`);
  });

  it.each([
    [0, 400, 40002, /INVALID_PARTITIONS/],
    [-5, 400, 40002, /INVALID_PARTITIONS/],
    [1.5, 422, 42206, /partitions_count/],
    ['3', 422, 42206, /partitions_count/],
  ])('refuses partitions_count %s and creates nothing', async (count, status, code, message) => {
    const t = uniqueTopic('admin-badparts');
    expectError(await create({ topic_name: t, partitions_count: count }), status, code, message);
    await expectNoTopic(t);
  });

  it.each([
    [4, /INVALID_REPLICATION_FACTOR.*4.*3/],
    [0, /INVALID_REPLICATION_FACTOR/],
  ])('refuses replication_factor %s with 3 brokers and creates nothing', async (rf, message) => {
    const t = uniqueTopic('admin-badrf');
    expectError(await create({ topic_name: t, replication_factor: rf }), 400, 40002, message);
    await expectNoTopic(t);
  });
});

describe('Topic configs', () => {
  it('lists every config of a new topic as a default (is_default, DEFAULT_CONFIG)', async () => {
    const t = uniqueTopic('cfg-defaults');
    await createTopic(t, 1, 1);
    const configs = await configsOf(t);
    expect(configs.length).toBeGreaterThan(10);
    for (const c of configs) expect(c).toMatchObject({ kind: 'KafkaTopicConfig', topic_name: t, is_default: true, source: 'DEFAULT_CONFIG' });
    const byName = new Map(configs.map((c: any) => [c.name, c.value]));
    expect(byName.get('retention.ms')).toBe('604800000');
    expect(byName.get('cleanup.policy')).toBe('delete');
    expect(byName.get('min.insync.replicas')).toBe('1');
    expect(byName.get('max.message.bytes')).toBe('1048588');
  });

  it('shows a config set at creation as not default, and leaves the others default', async () => {
    const t = uniqueTopic('cfg-create');
    await createTopic(t, 1, 1, [{ name: 'retention.ms', value: '3600000' }]);
    const r = await call('GET', topicUrl(t, '/configs/retention.ms'));
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ name: 'retention.ms', value: '3600000', is_default: false, source: 'DYNAMIC_TOPIC_CONFIG' });
    const others = (await configsOf(t)).filter((c: any) => c.name !== 'retention.ms');
    expect(others.every((c: any) => c.is_default)).toBe(true);
  });

  it('sets a config with PUT, shows it with GET, and resets it to the default with DELETE', async () => {
    const t = uniqueTopic('cfg-put');
    await createTopic(t, 1, 1);
    const put = await call('PUT', topicUrl(t, '/configs/max.message.bytes'), { value: '20000' });
    expect(put.status, put.text).toBe(204);
    expect((await call('GET', topicUrl(t, '/configs/max.message.bytes'))).body).toMatchObject({ value: '20000', is_default: false });

    const del = await call('DELETE', topicUrl(t, '/configs/max.message.bytes'));
    expect(del.status, del.text).toBe(204);
    expect((await call('GET', topicUrl(t, '/configs/max.message.bytes'))).body).toMatchObject({ value: '1048588', is_default: true, source: 'DEFAULT_CONFIG' });
  });

  it('alters several configs at once with configs:alter (SET and DELETE)', async () => {
    const t = uniqueTopic('cfg-alter');
    await createTopic(t, 1, 1, [{ name: 'retention.ms', value: '1000' }]);
    const r = await call('POST', topicUrl(t, '/configs:alter'), {
      data: [{ name: 'cleanup.policy', value: 'compact' }, { name: 'retention.ms', operation: 'DELETE' }],
    });
    expect(r.status, r.text).toBe(204);
    const byName = new Map((await configsOf(t)).map((c: any) => [c.name, c]));
    expect(byName.get('cleanup.policy')).toMatchObject({ value: 'compact', is_default: false });
    expect(byName.get('retention.ms')).toMatchObject({ value: '604800000', is_default: true });
  });

  it('refuses an unknown config name with 400 INVALID_CONFIG and changes nothing', async () => {
    const t = uniqueTopic('cfg-unknown');
    await createTopic(t, 1, 1, [{ name: 'retention.ms', value: '5000' }]);
    const before = await configsOf(t);

    expectError(await call('PUT', topicUrl(t, '/configs/no.such.config'), { value: '1' }), 400, 40002, /INVALID_CONFIG.*no\.such\.config/);
    // One bad entry fails the whole alteration: the good one is not applied either.
    expectError(await call('POST', topicUrl(t, '/configs:alter'), {
      data: [{ name: 'retention.ms', value: '1' }, { name: 'no.such.config', value: '1' }],
    }), 400, 40002, /INVALID_CONFIG/);
    expectError(await call('GET', topicUrl(t, '/configs/no.such.config')), 404, 404);
    expectError(await call('DELETE', topicUrl(t, '/configs/no.such.config')), 404, 404);
    expect(await configsOf(t)).toEqual(before);

    const other = uniqueTopic('cfg-unknown-create');
    expectError(await create({ topic_name: other, configs: [{ name: 'no.such.config', value: '1' }] }), 400, 40002, /INVALID_CONFIG/);
    await expectNoTopic(other);
  });

  it.each([
    ['min.insync.replicas', '0'],
    ['retention.ms', 'abc'],
    ['retention.ms', '-2'],
    ['max.message.bytes', '-1'],
    ['cleanup.policy', 'shred'],
    ['unclean.leader.election.enable', 'yes'],
    ['min.cleanable.dirty.ratio', '1.5'],
  ])('refuses %s=%s with 400 INVALID_CONFIG, at creation and on a live topic, and changes nothing', async (name, value) => {
    const t = uniqueTopic('cfg-bad');
    expectError(await create({ topic_name: t, configs: [{ name, value }] }), 400, 40002, new RegExp(`INVALID_CONFIG.*${name.replaceAll('.', '\\.')}`));
    await expectNoTopic(t);

    await createTopic(t, 1, 1);
    const before = await configsOf(t);
    expectError(await call('PUT', topicUrl(t, `/configs/${name}`), { value }), 400, 40002, /INVALID_CONFIG/);
    expectError(await call('POST', topicUrl(t, '/configs:alter'), { data: [{ name, value }] }), 400, 40002, /INVALID_CONFIG/);
    expect(await configsOf(t)).toEqual(before);
  });

  it('answers 404 40401 for the configs of a topic that does not exist', async () => {
    const t = uniqueTopic('cfg-notopic');
    expectError(await call('GET', topicUrl(t, '/configs')), 404, 40401);
    expectError(await call('GET', topicUrl(t, '/configs/retention.ms')), 404, 40401);
    expectError(await call('PUT', topicUrl(t, '/configs/retention.ms'), { value: '1' }), 404, 40401);
    expectError(await call('POST', topicUrl(t, '/configs:alter'), { data: [{ name: 'retention.ms', value: '1' }] }), 404, 40401);
  });
});

describe('Topic deletion', () => {
  it('deletes a topic (204): it is gone for every route, and the same name can be created again, starting at offset 0', async () => {
    const t = uniqueTopic('admin-delete');
    await createTopic(t, 2, 3);
    for (let i = 0; i < 3; i++) expect((await produceString(t, `old-${i}`, 0)).status).toBe(200);

    const del = await call('DELETE', topicUrl(t));
    expect(del.status, del.text).toBe(204);

    await expectNoTopic(t);
    expectError(await call('GET', topicUrl(t, '/partitions')), 404, 40401);
    expectError(await call('GET', topicUrl(t, '/partitions/0')), 404, 40401);
    expectError(await call('GET', topicUrl(t, '/configs')), 404, 40401);
    expectError(await produceString(t, 'late'), 404, 40401, /UNKNOWN_TOPIC_OR_PARTITION/);
    expectError(await call('POST', `/topics/${t}`, { records: [{ value: 'eA==' }] }, { 'content-type': 'application/vnd.kafka.binary.v2+json' }), 404, 40401);
    expectError(await call('GET', topicUrl(t, '/partitions/0/records?offset=0')), 404, 40401);
    expectError(await call('DELETE', topicUrl(t)), 404, 40401);
    expect((await call('GET', v3('/topics'))).body.data.map((x: any) => x.topic_name)).not.toContain(t);

    const again = await create({ topic_name: t, partitions_count: 1, replication_factor: 3 });
    expect(again.status, again.text).toBe(201);
    expect(again.body.partitions_count).toBe(1);
    const p0 = await call('GET', topicUrl(t, '/partitions/0'));
    expect(p0.body).toMatchObject({ log_start_offset: 0, log_end_offset: 0, high_watermark: 0 });
    const first = await produceString(t, 'new-0');
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ partition_id: 0, offset: 0 });
    const read = await call('GET', topicUrl(t, '/partitions/0/records?offset=0&format=string'));
    expect(read.status, read.text).toBe(200);
    expect(read.body.records.map((r: any) => r.value.data)).toEqual(['new-0']);
  });
});
