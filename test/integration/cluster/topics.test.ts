/** Topic administration against the real coordination table and replica tables. */
import { describe, expect, it } from 'vitest';
import { createTopic, deleteTopic, describeTopic, alterTopicConfigs, listTopicNames, listTopics } from '../../../lib/cluster/topics.js';
import { replicaStore } from '../../../lib/cluster/metadata.js';
import { produce } from '../../../lib/log/produce.js';
import { readTopic } from '../../../lib/storage/coordination/topics.js';
import { listBrokers } from '../../../lib/storage/coordination/brokers.js';
import { topicPartitionKey } from '../../../lib/storage/model.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { readHead } from '../../../lib/storage/replica/head.js';
import { hookStoreClient } from '../../support/store-hooks.js';

let n = 0;
const name = (p: string) => `${p}-${process.pid}-${Date.now()}-${n++}`;

describe('Function: createTopic', () => {
  it('where two creators race for one name, exactly one wins and the other gets TOPIC_ALREADY_EXISTS', async () => {
    const topic = name('race');
    const results = await Promise.allSettled(Array.from({ length: 4 }, () => createTopic({ name: topic, partitions: 2, replicationFactor: 2 })));
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    for (const l of lost) expect(l.reason).toMatchObject({ kafkaName: 'TOPIC_ALREADY_EXISTS' });
    const winner = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof createTopic>>>).value;
    expect((await describeTopic(topic)).topic.topicId).toBe(winner.topic.topicId);
  });

  it("where two creators race for names differing only by '.' and '_', exactly one wins", async () => {
    const base = name('col');
    const results = await Promise.allSettled([createTopic({ name: `${base}.x`, partitions: 1, replicationFactor: 1 }), createTopic({ name: `${base}_x`, partitions: 1, replicationFactor: 1 })]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(lost?.reason).toMatchObject({ kafkaName: 'INVALID_TOPIC_EXCEPTION', message: expect.stringContaining('collides') });
  });

  it('creates a topic of more partitions than one transaction holds, with a head on every replica; the names listed leave it out until it is whole', async () => {
    const topic = name('wide');
    const listedBeforeFlip: boolean[] = [];
    hookStoreClient(undefined, 'initialize', (next) => async (args) => {
      const items = (args.input as { TransactItems?: { Update?: { UpdateExpression?: string } }[] }).TransactItems ?? [];
      if (items.some((i) => i.Update?.UpdateExpression === 'REMOVE creating')) listedBeforeFlip.push((await listTopicNames()).includes(topic));
      return next(args);
    });
    const created = await createTopic({ name: topic, partitions: 250, replicationFactor: 3 });
    expect(listedBeforeFlip).toEqual([false]);
    expect(await listTopicNames()).toContain(topic);
    const stored = await readTopic(topic);
    expect(stored?.topic.state).toBe('active');
    expect(stored?.partitions.map((p) => p.partition)).toEqual(Array.from({ length: 250 }, (_, i) => i));
    const brokers = await listBrokers();
    const leaders = new Map<number, number>();
    for (const p of created.partitions) leaders.set(p.leader, (leaders.get(p.leader) ?? 0) + 1);
    expect([...leaders.keys()].sort()).toEqual(brokers.map((b) => b.brokerId));
    for (const p of created.partitions.slice(0, 5)) {
      for (const id of p.replicas) {
        const head = await readHead(await replicaStore(id), topicPartitionKey(created.topic.topicId, p.partition));
        expect(head).toMatchObject({ leo: 0, hw: 0, leaderEpoch: 0, role: id === p.leader ? 'leader' : 'follower' });
      }
    }
  });

  it('validate_only places replicas but writes nothing', async () => {
    const topic = name('dry');
    const out = await createTopic({ name: topic, partitions: 3, replicationFactor: 3, validateOnly: true });
    expect(out.partitions).toHaveLength(3);
    expect(await readTopic(topic)).toBeUndefined();
  });
});

describe('Function: listTopics', () => {
  it('reads the topics a few at a time: a fresh process opens no burst of connections that could overflow a store\'s accept queue', async () => {
    const made = Array.from({ length: 40 }, () => name('listed'));
    for (const t of made) await createTopic({ name: t, partitions: 1, replicationFactor: 1 });
    let inFlight = 0;
    let most = 0;
    hookStoreClient(undefined, 'initialize', (next, context) => async (args) => {
      if (context.commandName !== 'QueryCommand') return next(args);
      most = Math.max(most, ++inFlight);
      try {
        return await next(args);
      } finally {
        inFlight--;
      }
    });
    const listed = (await listTopics()).map((d) => d.topic.name);
    expect(listed).toEqual(expect.arrayContaining(made));
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(16);
  });
});

describe('Function: deleteTopic', () => {
  it('removes the metadata at once and the data from every replica table', async () => {
    const topic = name('doomed');
    const { topic: meta, partitions } = await createTopic({ name: topic, partitions: 2, replicationFactor: 1 });
    const outcomes = await produce(topic, Array.from({ length: 10 }, (_, i) => ({ partition: i % 2, key: null, value: Buffer.from(`v${i}`), headers: [] })));
    expect(outcomes.every((o) => o.ok)).toBe(true);
    await deleteTopic(topic);
    await expect(describeTopic(topic)).rejects.toMatchObject({ kafkaName: 'UNKNOWN_TOPIC_OR_PARTITION' });
    for (const p of partitions) {
      const store = await replicaStore(p.leader);
      const tp = topicPartitionKey(meta.topicId, p.partition);
      expect(await readHead(store, tp)).toBeUndefined();
      expect(await queryBatches(store, tp, { fromOffset: 0, toOffset: 100, maxBytes: 1e6 })).toEqual([]);
    }
    await expect(deleteTopic(topic)).rejects.toMatchObject({ kafkaName: 'UNKNOWN_TOPIC_OR_PARTITION' });
  });
});

describe('Function: alterTopicConfigs', () => {
  it('sets and resets configs, and a bad value changes nothing', async () => {
    const topic = name('cfg');
    await createTopic({ name: topic, partitions: 1, replicationFactor: 1, configs: [{ name: 'retention.ms', value: '1000' }] });
    await alterTopicConfigs(topic, [{ name: 'max.message.bytes', value: 5000 }, { name: 'retention.ms', value: null }]);
    expect((await describeTopic(topic)).topic.configs).toEqual({ 'max.message.bytes': '5000' });
    await expect(alterTopicConfigs(topic, [{ name: 'retention.ms', value: '10' }, { name: 'min.insync.replicas', value: '0' }]))
      .rejects.toMatchObject({ kafkaName: 'INVALID_CONFIG' });
    expect((await describeTopic(topic)).topic.configs).toEqual({ 'max.message.bytes': '5000' });
  });
});
