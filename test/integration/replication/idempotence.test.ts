/**
 * The idempotent producer against the real stores: retries return the original offsets and write
 * nothing, gaps and stale epochs are refused, and the state follows the log to a new leader.
 */
import { describe, expect, it } from 'vitest';
import { replicaStore } from '../../../lib/cluster/metadata.js';
import { electLeader } from '../../support/partition.js';
import { initProducer } from '../../../lib/cluster/producers.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { produce } from '../../../lib/log/produce.js';
import { topicPartitionKey } from '../../../lib/storage/model.js';
import { readHead, setRole } from '../../../lib/storage/replica/head.js';

let n = 0;
const records = (from: number, count: number, partition = 0) =>
  Array.from({ length: count }, (_, i) => ({ partition, sequence: from + i, key: null, value: Buffer.from(`s${from + i}`), headers: [] }));
const offsets = (out: Awaited<ReturnType<typeof produce>>) => out.map((o) => (o.ok ? o.offset : o.error.kafkaName));

async function setup(rf = 3) {
  const name = `idem-${process.pid}-${n++}`;
  const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: rf });
  const tp = topicPartitionKey(topic.topicId, 0);
  const leo = async () => (await readHead(await replicaStore(partitions[0]!.leader), tp))?.leo;
  return { name, topic, partitions, tp, leo, producer: await initProducer() };
}

describe('Idempotent producer', () => {
  it('hands out producer ids and bumps the epoch of an existing one', async () => {
    const a = await initProducer();
    const b = await initProducer();
    expect(b.producerId).not.toBe(a.producerId);
    expect(a.producerEpoch).toBe(0);
    expect(await initProducer(a.producerId)).toEqual({ producerId: a.producerId, producerEpoch: 1 });
    await expect(initProducer(10 ** 9)).rejects.toMatchObject({ kafkaName: 'UNKNOWN_PRODUCER_ID' });
  });

  it('where a retried batch already landed (its response was lost), the retry returns the original offsets and writes nothing', async () => {
    const { name, leo, producer } = await setup();
    expect(offsets(await produce(name, records(0, 3), { producer }))).toEqual([0, 1, 2]);
    expect(offsets(await produce(name, records(0, 3), { producer }))).toEqual([0, 1, 2]);
    expect(offsets(await produce(name, records(3, 2), { producer }))).toEqual([3, 4]);
    expect(offsets(await produce(name, records(3, 2), { producer }))).toEqual([3, 4]);
    expect(await leo()).toBe(5);
  });

  it('where the same batch is sent twice at once, one copy is written and both get its offsets', async () => {
    const { name, leo, producer } = await setup();
    const [a, b] = await Promise.all([produce(name, records(0, 4), { producer }), produce(name, records(0, 4), { producer })]);
    expect(offsets(a)).toEqual([0, 1, 2, 3]);
    expect(offsets(b)).toEqual([0, 1, 2, 3]);
    expect(await leo()).toBe(4);
  });

  it('refuses a sequence gap with OUT_OF_ORDER_SEQUENCE_NUMBER and an old epoch with INVALID_PRODUCER_EPOCH, writing nothing', async () => {
    const { name, leo, producer } = await setup(1);
    expect(offsets(await produce(name, records(1, 1), { producer }))).toEqual(['OUT_OF_ORDER_SEQUENCE_NUMBER']);
    expect(offsets(await produce(name, records(0, 2), { producer }))).toEqual([0, 1]);
    expect(offsets(await produce(name, records(5, 1), { producer }))).toEqual(['OUT_OF_ORDER_SEQUENCE_NUMBER']);
    const bumped = await initProducer(producer.producerId);
    expect(offsets(await produce(name, records(0, 1), { producer: bumped }))).toEqual([2]);
    expect(offsets(await produce(name, records(2, 1), { producer }))).toEqual(['INVALID_PRODUCER_EPOCH']);
    expect(await leo()).toBe(3);
  });

  it('keeps producer state across a leader change: the new leader recognises a retry and continues the sequence', async () => {
    const { name, topic, partitions, tp, producer } = await setup(3);
    expect(offsets(await produce(name, records(0, 3), { producer }))).toEqual([0, 1, 2]);
    const p0 = partitions[0]!;
    const next = p0.replicas[1]!;
    const state = await electLeader(name, 0, next);
    for (const b of p0.replicas) await setRole(await replicaStore(b), tp, b === next ? 'leader' : 'follower', state.leaderEpoch);
    expect(offsets(await produce(name, records(0, 3), { producer }))).toEqual([0, 1, 2]);
    expect(offsets(await produce(name, records(3, 1), { producer }))).toEqual([3]);
    expect((await readHead(await replicaStore(next), topicPartitionKey(topic.topicId, 0)))?.leo).toBe(4);
  });
});
