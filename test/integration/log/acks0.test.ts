/**
 * Lambda's semantics on the data path. acks=0: nothing runs after a handler answers (the execution
 * environment is frozen), so the records of an acks=0 produce must be in the leader's log when the
 * answer is given — not written by work left running behind it. Deadlines: a long poll inside a
 * request answers by the request's answer-by time. A quiet private stack: nothing else writes.
 */
import { describe, expect, it } from 'vitest';
import { replicaStore } from '../../../lib/cluster/metadata.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { withAnswerBy } from '../../../lib/deadline.js';
import { produceNoAck } from '../../../lib/log/produce.js';
import { fetchRecords } from '../../../lib/log/read.js';
import { topicPartitionKey } from '../../../lib/storage/model.js';
import { readHead } from '../../../lib/storage/replica.js';
import { useQuietCluster } from '../../support/cluster.js';

useQuietCluster();

describe('Produce with acks=0', () => {
  it('has written the records to the leader when it answers, and answers with no offsets', async () => {
    const name = `acks0-${process.pid}`;
    const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: 3 });
    const leader = await replicaStore(partitions[0]!.leader);
    const out = await produceNoAck(name, ['a', 'b'].map((v) => ({ partition: 0, key: null, value: Buffer.from(v), headers: [] })));
    expect(out).toEqual([0, 1].map(() => ({ ok: true, partition: 0, offset: null, timestamp: null })));
    expect((await readHead(leader, topicPartitionKey(topic.topicId, 0)))?.leo).toBe(2);
  });
});

describe('A long poll inside a request', () => {
  it('stops at the request\'s answer-by time (the API\'s limit, the function\'s timeout), not at its own 25 s', async () => {
    const name = `deadline-${process.pid}`;
    const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: 1 });
    const leader = await replicaStore(partitions[0]!.leader);
    const t = { leader, tp: topicPartitionKey(topic.topicId, 0), partition: 0 };
    const started = Date.now();
    const out = await withAnswerBy(started + 300, () => fetchRecords(t, { offset: 0, maxBytes: 1000, maxWaitMs: 25_000 }));
    expect(out.records).toEqual([]);
    // (generous: the point is it did not wait the 25 s asked for)
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
