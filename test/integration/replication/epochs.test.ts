/**
 * Leader epochs against the real stores: a zombie leader of an old epoch can make no follower
 * accept its batches; when it learns the new epoch it truncates what only it had (KIP-101) and its
 * log converges on the new leader's; acks=all replicates to every ISR member. A private quiet
 * stack (no background replicator): the tests assert high watermarks and log ends that only the
 * steps they drive may move.
 */
import { describe, expect, it } from 'vitest';
import { replicaStore } from '../../../lib/cluster/metadata.js';
import { electLeader } from '../../support/partition.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { appendToLeader } from '../../../lib/log/append.js';
import { produce } from '../../../lib/log/produce.js';
import { copyStep, LeaderUnavailable } from '../../../lib/log/copy.js';
import { replicate } from '../../../lib/log/commit.js';
import { topicPartitionKey, type ReplicaHead } from '../../../lib/storage/model.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { readHead, setRole } from '../../../lib/storage/replica/head.js';
import { truncateLog } from '../../../lib/storage/replica/truncation.js';
import { type ReplicaStoreRef } from '../../../lib/storage/replica/store.js';
import { ConditionFailed } from '../../../lib/storage/transact.js';
import { batchOf } from '../../support/batches.js';
import { useQuietCluster } from '../../support/cluster.js';

let n = 0;

async function logOf(store: ReplicaStoreRef, tp: string): Promise<string[]> {
  const batches = await queryBatches(store, tp, { fromOffset: 0, toOffset: 1e9, maxBytes: 1e9 });
  const head = await readHead(store, tp);
  return batches.filter((b) => b.lastOffset < (head?.leo ?? 0)).map((b) => `${b.baseOffset}-${b.lastOffset}@${b.leaderEpoch}:${Buffer.from(b.data ?? []).toString('base64')}`);
}

useQuietCluster();

describe('Function: copyStep when the leader fails', () => {
  it("blames the leader's store, not the follower (so no follower is dropped from the ISR for it)", async () => {
    const name = `dead-leader-${process.pid}-${n++}`;
    const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: 2 });
    const p0 = partitions[0]!;
    const deadLeader = { ...(await replicaStore(p0.leader)), endpoint: 'http://127.0.0.1:1' };
    const err = await copyStep(deadLeader, await replicaStore(p0.replicas[1]!), topicPartitionKey(topic.topicId, 0)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LeaderUnavailable);
  });
});

describe('Replication under leader epochs', () => {
  it('where a zombie leader of an old epoch appends, no replica accepts its batch, and it truncates it on rejoining', async () => {
    const name = `zombie-${process.pid}-${n++}`;
    const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: 3 });
    const p0 = partitions[0]!;
    const tp = topicPartitionKey(topic.topicId, 0);
    const [old, next, third] = [p0.replicas[0]!, p0.replicas[1]!, p0.replicas[2]!];
    const stores = new Map(await Promise.all(p0.replicas.map(async (b) => [b, await replicaStore(b)] as const)));
    const target = (leader: number, leaderEpoch: number) => ({ leader: stores.get(leader)!, topicId: topic.topicId, partition: 0, tp, leaderEpoch, inlineMaxBytes: 8192 });

    expect((await produce(name, [{ partition: 0, key: null, value: Buffer.from('committed'), headers: [] }])).every((o) => o.ok)).toBe(true);

    // Broker `old` is cut off: the election reaches only the other two.
    const state = await electLeader(name, 0, next);
    await setRole(stores.get(next)!, tp, 'leader', state.leaderEpoch);
    await setRole(stores.get(third)!, tp, 'follower', state.leaderEpoch);

    // The zombie still thinks it leads under epoch 0 and appends to its own table...
    await appendToLeader(target(old, 0), batchOf('zombie-1', 'zombie-2'));
    // ...but no follower takes it.
    for (const f of [next, third]) expect((await copyStep(stores.get(old)!, stores.get(f)!, tp)).kind).toBe('fenced');
    expect(await logOf(stores.get(third)!, tp)).toHaveLength(1);

    // The new leader writes under epoch 1; acks=all brings the third replica along.
    expect((await produce(name, [{ partition: 0, key: null, value: Buffer.from('epoch-1'), headers: [] }])).every((o) => o.ok)).toBe(true);

    // The old leader learns the new epoch: its next copy step truncates the zombie batch first.
    await setRole(stores.get(old)!, tp, 'follower', state.leaderEpoch);
    const out = await copyStep(stores.get(next)!, stores.get(old)!, tp);
    expect(out.kind).toBe('caught-up');
    const leaderLog = await logOf(stores.get(next)!, tp);
    expect(leaderLog).toHaveLength(2);
    expect(await logOf(stores.get(old)!, tp)).toEqual(leaderLog);
    expect(await logOf(stores.get(third)!, tp)).toEqual(leaderLog);
    expect((await readHead(stores.get(old)!, tp))?.epochs).toEqual([[0, 0], [state.leaderEpoch, 1]]);
  });

  it('where two copiers truncate one follower, the one that read its head first deletes nothing the other copied since, and writes nothing', async () => {
    const name = `truncate-race-${process.pid}-${n++}`;
    const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: 3 });
    const p0 = partitions[0]!;
    const tp = topicPartitionKey(topic.topicId, 0);
    const [old, next, third] = [p0.replicas[0]!, p0.replicas[1]!, p0.replicas[2]!];
    const stores = new Map(await Promise.all(p0.replicas.map(async (b) => [b, await replicaStore(b)] as const)));
    expect((await produce(name, [{ partition: 0, key: null, value: Buffer.from('committed'), headers: [] }])).every((o) => o.ok)).toBe(true);
    const state = await electLeader(name, 0, next);
    await setRole(stores.get(next)!, tp, 'leader', state.leaderEpoch, state.isr);
    await setRole(stores.get(third)!, tp, 'follower', state.leaderEpoch);
    // The old leader holds two batches no one else has, then learns the new epoch.
    await appendToLeader({ leader: stores.get(old)!, topicId: topic.topicId, partition: 0, tp, leaderEpoch: 0, inlineMaxBytes: 8192 }, batchOf('zombie-1'));
    await appendToLeader({ leader: stores.get(old)!, topicId: topic.topicId, partition: 0, tp, leaderEpoch: 0, inlineMaxBytes: 8192 }, batchOf('zombie-2'));
    const before = (await readHead(stores.get(old)!, tp))!;
    await setRole(stores.get(old)!, tp, 'follower', state.leaderEpoch);

    // A slow copier read the follower's head as the role push left it; a fast one truncates it,
    // and acks=all copies two new records in, so the follower's log end is again what the slow
    // one read.
    const stale: ReplicaHead = { ...before, role: 'follower', leaderEpoch: state.leaderEpoch };
    expect(stale.leo).toBe(3);
    for (let i = 0; i < 10 && (await copyStep(stores.get(next)!, stores.get(old)!, tp)).kind !== 'caught-up'; i++);
    for (const v of ['epoch-1-a', 'epoch-1-b']) expect((await produce(name, [{ partition: 0, key: null, value: Buffer.from(v), headers: [] }], { acks: 'all' })).every((o) => o.ok)).toBe(true);
    expect((await readHead(stores.get(old)!, tp))?.leo).toBe(3);

    // The slow copier's truncation, from the head it read, loses the race and removes nothing.
    await expect(truncateLog(stores.get(old)!, tp, stale, 1)).rejects.toBeInstanceOf(ConditionFailed);
    const leaderLog = await logOf(stores.get(next)!, tp);
    expect(leaderLog).toHaveLength(3);
    expect(await logOf(stores.get(old)!, tp)).toEqual(leaderLog);
    expect((await readHead(stores.get(old)!, tp))?.leo).toBe(3);
  });

  it('where a follower missed its role push, the leader tells it while replicating, and it catches up', async () => {
    const name = `untold-${process.pid}-${n++}`;
    const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: 3 });
    const p0 = partitions[0]!;
    const tp = topicPartitionKey(topic.topicId, 0);
    const [, next, untold] = [p0.replicas[0]!, p0.replicas[1]!, p0.replicas[2]!];
    const stores = new Map(await Promise.all(p0.replicas.map(async (b) => [b, await replicaStore(b)] as const)));
    const state = await electLeader(name, 0, next);
    await setRole(stores.get(next)!, tp, 'leader', state.leaderEpoch, state.isr);
    expect((await readHead(stores.get(untold)!, tp))?.leaderEpoch).toBeLessThan(state.leaderEpoch);
    expect((await produce(name, [{ partition: 0, key: null, value: Buffer.from('after'), headers: [] }], { acks: 'all' })).every((o) => o.ok)).toBe(true);
    expect(await readHead(stores.get(untold)!, tp)).toMatchObject({ leaderEpoch: state.leaderEpoch, role: 'follower', leo: 1 });
    expect(await logOf(stores.get(untold)!, tp)).toEqual(await logOf(stores.get(next)!, tp));
  });

  it('with acks=all, every ISR replica holds a record before it is acknowledged, and the high watermark covers it', async () => {
    const name = `acks-all-${process.pid}-${n++}`;
    const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: 3 });
    const tp = topicPartitionKey(topic.topicId, 0);
    const out = await produce(name, Array.from({ length: 5 }, (_, i) => ({ partition: 0, key: null, value: Buffer.from(`v${i}`), headers: [] })), { acks: 'all' });
    expect(out.map((o) => o.ok && o.offset)).toEqual([0, 1, 2, 3, 4]);
    for (const b of partitions[0]!.replicas) expect((await readHead(await replicaStore(b), tp))?.leo).toBe(5);
    expect((await readHead(await replicaStore(partitions[0]!.leader), tp))?.hw).toBe(5);

    // acks=1 returns after the leader's append: followers and the high watermark move on a replicate.
    await produce(name, [{ partition: 0, key: null, value: Buffer.from('v5'), headers: [] }], { acks: 1 });
    const leader = await replicaStore(partitions[0]!.leader);
    expect((await readHead(leader, tp))?.hw).toBe(5);
    const r = await replicate(name, topic.topicId, 0, { deadline: Date.now() + 5000, shrinkOnFailure: false, lagTimeMaxMs: 30_000 });
    expect(r.highWatermark).toBe(6);
  });

  it('refuses acks=all with NOT_ENOUGH_REPLICAS when the ISR is smaller than min.insync.replicas, writing nothing', async () => {
    const name = `min-isr-${process.pid}-${n++}`;
    const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: 2, configs: [{ name: 'min.insync.replicas', value: '3' }] });
    const out = await produce(name, [{ partition: 0, key: null, value: Buffer.from('x'), headers: [] }], { acks: 'all' });
    expect(out[0]).toMatchObject({ ok: false, error: { kafkaName: 'NOT_ENOUGH_REPLICAS' } });
    expect((await readHead(await replicaStore(partitions[0]!.leader), topicPartitionKey(topic.topicId, 0)))?.leo).toBe(0);
    const one = await produce(name, [{ partition: 0, key: null, value: Buffer.from('x'), headers: [] }], { acks: 1 });
    expect(one[0]).toMatchObject({ ok: true, offset: 0 });
  });
});
