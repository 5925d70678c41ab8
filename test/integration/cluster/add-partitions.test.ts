/**
 * Growing a live topic (Kafka's CreatePartitions; REST Proxy v3's PATCH .../topics/{t}), against
 * the shared local stack: placement, replica heads, the refusals, a lost race, a crash midway and
 * its retry, and the data path and a consumer group picking the new partitions up.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { replicaStore } from '../../../lib/cluster/metadata.js';
import { assignReplicas, continuationStart } from '../../../lib/cluster/placement.js';
import { addPartitions, addPartitionsHooks, createTopic, describeTopic, MAX_PARTITIONS } from '../../../lib/cluster/topics.js';
import type { KafkaError } from '../../../lib/protocol/errors.js';
import { partitionForKey } from '../../../lib/protocol/murmur2.js';
import { listBrokers } from '../../../lib/storage/coordination/brokers.js';
import { listTopicPartitionCounts, readTopic } from '../../../lib/storage/coordination/topics.js';
import { readMetadataVersion } from '../../../lib/storage/coordination/cluster.js';
import { topicPartitionKey, type PartitionRecord } from '../../../lib/storage/model.js';
import { readHead } from '../../../lib/storage/replica/head.js';
import { call, createTopic as createTopicHttp, uniqueTopic, v3 } from '../../support/api.js';
import { until } from '../../support/cluster.js';

afterEach(() => {
  delete addPartitionsHooks.beforeCommit;
});

/** Every replica of every partition has a fresh head with the role its partition state gives it. */
async function expectHeads(topicId: string, parts: readonly PartitionRecord[]): Promise<void> {
  for (const p of parts) {
    for (const id of p.replicas) {
      const head = await readHead(await replicaStore(id), topicPartitionKey(topicId, p.partition));
      expect(head, `head of ${p.partition} on ${id}`).toMatchObject({ leo: 0, hw: 0, leaderEpoch: 0, role: id === p.leader ? 'leader' : 'follower' });
    }
  }
}

const rejection = (name: string, message: string | RegExp) =>
  expect.objectContaining({ kafkaName: name, message: typeof message === 'string' ? message : expect.stringMatching(message) }) as KafkaError;

describe('Function: addPartitions', () => {
  it("adds partitions placed as Kafka places them (start from partition 0's first replica, ids continuing), with heads on their replicas, in one metadata change", async () => {
    const topic = uniqueTopic('grow');
    const created = await createTopic({ name: topic, partitions: 3, replicationFactor: 2 });
    const version = await readMetadataVersion();
    const grown = await addPartitions(topic, 5);
    const brokers = (await listBrokers()).filter((b) => b.state === 'alive');
    const expected = assignReplicas(brokers, 2, 2, continuationStart(brokers, created.partitions[0]?.replicas[0] as number), 3);
    const stored = await readTopic(topic);
    expect(stored?.topic.partitions).toBe(5);
    expect(stored?.partitions.map((p) => [p.partition, p.replicas, p.leader, p.isr])).toEqual([
      ...created.partitions.map((p) => [p.partition, p.replicas, p.leader, p.isr]),
      [3, expected[0], expected[0]?.[0], expected[0]], [4, expected[1], expected[1]?.[0], expected[1]],
    ]);
    expect(grown.partitions).toEqual(stored?.partitions);
    expect((await listTopicPartitionCounts())[topic]).toBe(5);
    expect(await readMetadataVersion()).toBeGreaterThan(version as number);
    await expectHeads(created.topic.topicId, (stored?.partitions ?? []).slice(3));
  });

  it("refuses a count that is not an increase with Kafka's INVALID_PARTITIONS messages, one over the limit too, and an unknown topic with UNKNOWN_TOPIC_OR_PARTITION", async () => {
    const topic = uniqueTopic('refuse');
    await createTopic({ name: topic, partitions: 3, replicationFactor: 1 });
    await expect(addPartitions(topic, 2)).rejects.toThrow(rejection('INVALID_PARTITIONS', 'Topic currently has 3 partitions, which is higher than the requested 2.'));
    await expect(addPartitions(topic, 3)).rejects.toThrow(rejection('INVALID_PARTITIONS', 'Topic already has 3 partitions.'));
    await expect(addPartitions(topic, MAX_PARTITIONS + 1)).rejects.toThrow(rejection('INVALID_PARTITIONS', /between 1 and 10000/));
    await expect(addPartitions(uniqueTopic('absent'), 4)).rejects.toThrow(rejection('UNKNOWN_TOPIC_OR_PARTITION', /not found/));
    expect((await describeTopic(topic)).partitions).toHaveLength(3);
  });

  it('validate_only places the new partitions but writes nothing', async () => {
    const topic = uniqueTopic('dry');
    await createTopic({ name: topic, partitions: 2, replicationFactor: 1 });
    const out = await addPartitions(topic, 4, { validateOnly: true });
    expect(out.partitions.map((p) => p.partition)).toEqual([0, 1, 2, 3]);
    expect((await readTopic(topic))?.partitions).toHaveLength(2);
  });

  it('where two requests race and the other commits first, exactly one wins and the loser gets INVALID_PARTITIONS saying why, having added nothing', async () => {
    const topic = uniqueTopic('race');
    await createTopic({ name: topic, partitions: 3, replicationFactor: 1 });
    // A has read the topic and written its heads when B runs to completion.
    addPartitionsHooks.beforeCommit = async () => {
      delete addPartitionsHooks.beforeCommit;
      await addPartitions(topic, 4);
    };
    await expect(addPartitions(topic, 6)).rejects.toThrow(rejection('INVALID_PARTITIONS', `Topic ${topic} went from 3 to 4 partitions while this request ran; nothing was added by this one.`));
    expect((await readTopic(topic))?.partitions.map((p) => p.partition)).toEqual([0, 1, 2, 3]);

    addPartitionsHooks.beforeCommit = async () => {
      delete addPartitionsHooks.beforeCommit;
      await addPartitions(topic, 8);
    };
    await expect(addPartitions(topic, 6)).rejects.toThrow(rejection('INVALID_PARTITIONS', 'Topic currently has 8 partitions, which is higher than the requested 6.'));
    expect((await readTopic(topic))?.topic.partitions).toBe(8);
  });

  it('adds more partitions than one transaction holds: all appear at once, each with its heads', async () => {
    const topic = uniqueTopic('wide');
    const created = await createTopic({ name: topic, partitions: 2, replicationFactor: 1 });
    let seen: number[] | undefined;
    addPartitionsHooks.beforeCommit = async () => {
      // Everything is staged and the heads are written, and readers still see 2 partitions.
      seen = (await readTopic(topic))?.partitions.map((p) => p.partition);
    };
    await addPartitions(topic, 250);
    expect(seen).toEqual([0, 1]);
    const stored = await readTopic(topic);
    expect(stored?.partitions.map((p) => p.partition)).toEqual(Array.from({ length: 250 }, (_, i) => i));
    expect(stored?.topic).not.toHaveProperty('growth');
    await expectHeads(created.topic.topicId, (stored?.partitions ?? []).filter((p) => p.partition % 50 === 2 || p.partition === 249));
  });

  it('where a request dies after staging partitions, nothing is visible, and its retry succeeds', async () => {
    const topic = uniqueTopic('crash');
    const created = await createTopic({ name: topic, partitions: 3, replicationFactor: 1 });
    addPartitionsHooks.beforeCommit = () => Promise.reject(new Error('the function instance died'));
    await expect(addPartitions(topic, 203)).rejects.toThrow('the function instance died');
    expect((await readTopic(topic))?.partitions.map((p) => p.partition)).toEqual([0, 1, 2]);
    expect((await listTopicPartitionCounts())[topic]).toBe(3);
    expect((await call('GET', v3(`/topics/${topic}/partitions`))).body.data).toHaveLength(3);
    // (the cluster's metadata version is not checked: other files bump it meanwhile)

    delete addPartitionsHooks.beforeCommit;
    await addPartitions(topic, 203);
    const stored = await readTopic(topic);
    expect(stored?.partitions.map((p) => p.partition)).toEqual(Array.from({ length: 203 }, (_, i) => i));
    await expectHeads(created.topic.topicId, (stored?.partitions ?? []).slice(3));
  });

  it('where a later request takes over the claim of one still staging, the earlier one commits nothing, and the claim left by a crash does not block a retry', async () => {
    const topic = uniqueTopic('claim');
    await createTopic({ name: topic, partitions: 1, replicationFactor: 1 });
    // A has staged 150 partitions when B claims the topic, stages 120, and dies before committing.
    addPartitionsHooks.beforeCommit = async () => {
      addPartitionsHooks.beforeCommit = () => Promise.reject(new Error('B died'));
      await expect(addPartitions(topic, 121)).rejects.toThrow('B died');
      delete addPartitionsHooks.beforeCommit;
    };
    await expect(addPartitions(topic, 151)).rejects.toThrow(rejection('INVALID_PARTITIONS', `Another request is adding partitions to topic ${topic}; nothing was added by this one.`));
    expect((await readTopic(topic))?.topic.partitions).toBe(1);
    await addPartitions(topic, 151);
    expect((await readTopic(topic))?.partitions.map((p) => p.partition)).toEqual(Array.from({ length: 151 }, (_, i) => i));
  });
});

describe('Route: PATCH /v3/clusters/{cluster_id}/topics/{topic_name}', () => {
  it('answers 200 with the grown topic, and the partition list shows the new partitions', async () => {
    const topic = uniqueTopic('patch');
    await createTopicHttp(topic, 3, 3);
    const r = await call('PATCH', v3(`/topics/${topic}`), { partitions_count: 5 });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ kind: 'KafkaTopic', topic_name: topic, partitions_count: 5, replication_factor: 3 });
    expect((await call('GET', v3(`/topics/${topic}`))).body.partitions_count).toBe(5);
    const parts = (await call('GET', v3(`/topics/${topic}/partitions`))).body.data;
    expect(parts.map((p: any) => p.partition_id)).toEqual([0, 1, 2, 3, 4]);
    for (const p of parts) expect(p).toMatchObject({ log_end_offset: 0, high_watermark: 0 });
  });

  it('answers REST Proxy errors: 400 INVALID_PARTITIONS, 404 for an unknown topic, 422 for a body without an integer partitions_count', async () => {
    const topic = uniqueTopic('patch-bad');
    await createTopicHttp(topic, 3, 1);
    const lower = await call('PATCH', v3(`/topics/${topic}`), { partitions_count: 2 });
    expect([lower.status, lower.body.error_code]).toEqual([400, 40002]);
    expect(lower.body.message).toMatch(/INVALID_PARTITIONS.*Topic currently has 3 partitions, which is higher than the requested 2\./);
    const same = await call('PATCH', v3(`/topics/${topic}`), { partitions_count: 3 });
    expect([same.status, same.body.error_code, same.body.message]).toEqual([400, 40002, expect.stringMatching(/Topic already has 3 partitions\./)]);
    const unknown = await call('PATCH', v3(`/topics/${uniqueTopic('nope')}`), { partitions_count: 4 });
    expect([unknown.status, unknown.body.error_code]).toEqual([404, 40401]);
    for (const body of [{}, { partitions_count: 4.5 }, { partitions_count: '4' }, { partitions_count: 4, validate_only: true }]) {
      const r = await call('PATCH', v3(`/topics/${topic}`), body);
      expect([r.status, r.body.error_code], JSON.stringify(body)).toEqual([422, 42206]);
    }
    expect((await call('GET', v3(`/topics/${topic}`))).body.partitions_count).toBe(3);
  });

  it('produce and fetch pick the new partitions up: the new ids take records, and a key then lands in murmur2(key) % the new count', async () => {
    const topic = uniqueTopic('patch-data');
    await createTopicHttp(topic, 3, 3);
    // A key whose partition moves: murmur2 over 3 and over 6 differ.
    const key = Array.from({ length: 100 }, (_, i) => `k${i}`).find((k) => {
      const b = Buffer.from(k);
      return partitionForKey(b, 3) !== partitionForKey(b, 6) && partitionForKey(b, 6) >= 3;
    }) as string;
    const produce = (body: Record<string, unknown>) => call('POST', v3(`/topics/${topic}/records`), { value: { type: 'STRING', data: 'v' }, ...body });
    const keyed = () => produce({ key: { type: 'STRING', data: key } });
    // The produce function has this topic cached with 3 partitions.
    expect((await keyed()).body.partition_id).toBe(partitionForKey(Buffer.from(key), 3));

    expect((await call('PATCH', v3(`/topics/${topic}`), { partitions_count: 6 })).status).toBe(200);
    // A partition id the cache does not know yet makes produce look at fresh metadata.
    for (const p of [3, 4, 5]) {
      const r = await produce({ partition_id: p, value: { type: 'STRING', data: `new-${p}` } });
      expect([r.status, r.body.partition_id, r.body.offset], r.text).toEqual([200, p, 0]);
    }
    // Keys map over the new count once the instance has seen the new metadata (at the latest after
    // its metadata version check), and from then on always.
    const moved = partitionForKey(Buffer.from(key), 6);
    await until('a keyed record lands in murmur2(key) % 6', async () => (await keyed()).body.partition_id === moved, 15_000);
    for (let i = 0; i < 5; i++) expect((await keyed()).body.partition_id).toBe(moved);
    for (const p of [3, 4, 5]) {
      const r = await call('GET', v3(`/topics/${topic}/partitions/${p}/records?offset=0&format=string`));
      expect(r.status, r.text).toBe(200);
      expect(r.body.records[0]).toMatchObject({ partition_id: p, offset: 0, value: { data: `new-${p}` } });
    }
  });

  it('a consumer group member (v3 heartbeats) is assigned the new partitions', async () => {
    const topic = uniqueTopic('patch-group');
    const group = uniqueTopic('g');
    await createTopicHttp(topic, 2, 1);
    const hb = async (body: unknown) => {
      const r = await call('POST', v3(`/consumer-groups/${group}/heartbeat`), body);
      expect(r.status, r.text).toBe(200);
      return r.body;
    };
    let m = await hb({ member_epoch: 0, subscribed_topic_names: [topic], session_timeout_ms: 600_000 });
    expect(m.assignment.map((x: any) => x.partition).sort()).toEqual([0, 1]);
    expect((await call('PATCH', v3(`/topics/${topic}`), { partitions_count: 4 })).status).toBe(200);
    const partitions = await until('the member is assigned all 4 partitions', async () => {
      m = await hb({ member_id: m.member_id, member_epoch: m.member_epoch, owned_partitions: m.assignment });
      const got = m.assignment.map((x: any) => x.partition).sort();
      return got.length === 4 && got;
    }, 15_000);
    expect(partitions).toEqual([0, 1, 2, 3]);
  });
});
