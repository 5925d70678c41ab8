/**
 * acks=0 in Lambda: nothing runs after a handler answers (the execution environment is frozen),
 * so the records of an acks=0 produce must be in the leader's log when the answer is given — not
 * written by work left running behind it. A quiet private stack: nothing else writes the log.
 */
import { describe, expect, it } from 'vitest';
import { replicaStore } from '../../../lib/cluster/metadata.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { produceNoAck } from '../../../lib/log/produce.js';
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
