/**
 * Lambda's semantics on the data path. acks=0: nothing runs after a handler answers (the execution
 * environment is frozen), so the records of an acks=0 produce must be in the leader's log when the
 * answer is given — not written by work left running behind it. Deadlines: a long poll inside a
 * request answers by the request's answer-by time. A quiet private stack: nothing else writes.
 */
import { describe, expect, it } from 'vitest';
import { cachedTopic, replicaStore } from '../../../lib/cluster/metadata.js';
import { resetConfig } from '../../../lib/config.js';
import { produce } from '../../../lib/log/produce.js';
import { createTopic as writeTopic, deleteTopic } from '../../../lib/storage/coordination/topics.js';
import { deletePartition } from '../../../lib/storage/replica/deletion.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { withAnswerBy } from '../../../lib/deadline.js';
import { produceNoAck } from '../../../lib/log/produce.js';
import { fetchRecords } from '../../../lib/log/read.js';
import { topicPartitionKey } from '../../../lib/storage/model.js';
import { readHead } from '../../../lib/storage/replica/head.js';
import { useQuietCluster } from '../../support/cluster.js';
import { newAppendTarget, rf3Partition } from '../../support/partition.js';

useQuietCluster();

describe('Produce with acks=0', () => {
  it('has written the records to the leader when it answers, and answers with no offsets', async () => {
    const { name, p0, tp, store } = await rf3Partition('acks0');
    const out = await produceNoAck(name, ['a', 'b'].map((v) => ({ partition: 0, key: null, value: Buffer.from(v), headers: [] })));
    expect(out).toEqual([0, 1].map(() => ({ ok: true, partition: 0, offset: null, timestamp: null })));
    expect((await readHead(store(p0.leader), tp))?.leo).toBe(2);
  });
});

describe('Each instance has its own metadata cache', () => {
  it('where another instance created a topic this one looked up and did not find, this one finds it at once', async () => {
    process.env.TRIBUTARY_METADATA_MAX_AGE_MS = '3600000';
    resetConfig();
    try {
      const name = `late-create-${process.pid}`;
      expect(await cachedTopic(name)).toBeUndefined();
      // Another instance creates it (the same writes as createTopic, without this instance hearing of it).
      const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: 3, validateOnly: true });
      await writeTopic(topic, partitions, name);
      expect((await cachedTopic(name))?.topic.topicId).toBe(topic.topicId);
    } finally {
      delete process.env.TRIBUTARY_METADATA_MAX_AGE_MS;
      resetConfig();
    }
  });

  it('where another instance deleted the topic while this one still has it cached, produce answers that the topic does not exist', async () => {
    // (this instance trusts its cache for the whole test: no version check hides the stale view)
    process.env.TRIBUTARY_METADATA_MAX_AGE_MS = '3600000';
    resetConfig();
    try {
      const name = `stale-delete-${process.pid}`;
      const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: 3 });
      expect(await cachedTopic(name)).toBeDefined();
      // Another instance deletes it: the topic's items, then each replica's log.
      await deleteTopic(name, topic.topicId, 1, name);
      for (const b of partitions[0]!.replicas) await deletePartition(await replicaStore(b), topicPartitionKey(topic.topicId, 0));

      const [out] = await produce(name, [{ partition: 0, key: null, value: Buffer.from('late'), headers: [] }], { acks: 1 });
      expect(out).toMatchObject({ ok: false, error: { kafkaName: 'UNKNOWN_TOPIC_OR_PARTITION' } });
      // The topic's error (REST 40401), not a partition's (40402): the instance found out it is gone.
      expect(out?.ok === false && out.error.context.partition).toBeUndefined();
    } finally {
      delete process.env.TRIBUTARY_METADATA_MAX_AGE_MS;
      resetConfig();
    }
  });
});

describe('A long poll inside a request', () => {
  it('stops at the request\'s answer-by time (the API\'s limit, the function\'s timeout), not at its own 25 s', async () => {
    const t = await newAppendTarget('deadline');
    const started = Date.now();
    const out = await withAnswerBy(started + 300, () => fetchRecords(t, { offset: 0, maxBytes: 1000, maxWaitMs: 25_000 }));
    expect(out.records).toEqual([]);
    // (generous: the point is it did not wait the 25 s asked for)
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
