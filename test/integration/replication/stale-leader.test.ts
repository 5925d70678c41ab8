/**
 * A leader replaced without being told (its head still says leader under the old epoch) must not
 * advance its high watermark over a record the new leader's replicas do not hold: a run that finds
 * its followers at a newer epoch proves nothing, and a follower's log end counts only once a copy
 * step under the leader's epoch has checked it.
 */
import { describe, expect, it } from 'vitest';
import { replicaStore } from '../../../lib/cluster/metadata.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { appendToLeader } from '../../../lib/log/append.js';
import { copyStep } from '../../../lib/log/copy.js';
import { replicate } from '../../../lib/log/commit.js';
import { topicPartitionKey } from '../../../lib/storage/model.js';
import { readHead, setRole } from '../../../lib/storage/replica/head.js';
import { type ReplicaStoreRef } from '../../../lib/storage/replica/store.js';
import { batchOf } from '../../support/batches.js';
import { useQuietCluster } from '../../support/cluster.js';

useQuietCluster();

describe('Function: replicate on a leader that was replaced', () => {
  it('where the followers already follow a newer leader that wrote other records at the same offsets, the old leader\'s high watermark does not cover its record', async () => {
    const name = `stale-leader-${process.pid}-${Date.now()}`;
    const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: 3 });
    const p0 = partitions[0]!;
    const tp = topicPartitionKey(topic.topicId, 0);
    const [a, b, f] = [p0.leader, ...p0.replicas.filter((x) => x !== p0.leader)] as [number, number, number];
    const [sa, sb, sf] = (await Promise.all([a, b, f].map((x) => replicaStore(x)))) as [ReplicaStoreRef, ReplicaStoreRef, ReplicaStoreRef];
    const e = p0.leaderEpoch;
    const append = (s: typeof sa, epoch: number, ...values: string[]) =>
      appendToLeader({ leader: s, topicId: topic.topicId, partition: 0, tp, leaderEpoch: epoch, inlineMaxBytes: 8192 }, batchOf(...values));
    const run = () => replicate(name, topic.topicId, 0, { until: 2, leaderEpoch: e, deadline: Date.now() + 10_000, shrinkOnFailure: false, lagTimeMaxMs: 60_000 });

    // Epoch e, leader a: offset 0 is committed everywhere.
    await append(sa, e, 'committed');
    expect((await run()).highWatermark).toBe(1);
    // A producer appends r at offset 1 on a; its replication has read the partition state (epoch e)...
    await append(sa, e, 'r');
    // ...when the controller elects b under e+1 and tells b and f, but not a (it thinks a is down).
    await setRole(sb, tp, 'leader', e + 1, [b, f]);
    await setRole(sf, tp, 'follower', e + 1);
    // b takes another record at offset 1, and f copies it.
    await append(sb, e + 1, 'other');
    const copied = await copyStep(sb, sf, tp);
    expect(copied.kind).toBe('caught-up');
    expect((await readHead(sf, tp))?.leo).toBe(2);

    // The producer's replication on a now runs: both followers are at e+1 with log end 2.
    await expect(run()).rejects.toMatchObject({ kafkaName: 'NOT_LEADER_OR_FOLLOWER' });
    expect((await readHead(sa, tp))?.hw).toBe(1);
  });
});
