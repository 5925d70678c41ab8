/**
 * Partition reassignment step by step on a private quiet stack of 4 brokers: the controller is
 * ticked by hand and the replication sweep run by hand, so each test drives the steps in the
 * order it names — start, sync, complete, purge — and checks after each that the ISR never got
 * smaller than it was, that the moved replica holds the whole log, and what a lost race writes.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { alterClusterConfigs } from '../../../lib/cluster/cluster-config-admin.js';
import { Controller } from '../../../lib/cluster/controller.js';
import { electLeaderOf } from '../../../lib/cluster/leadership.js';
import { cancelReassignment, completeReassignment, purgeRemoved, reassigning, startReassignment } from '../../../lib/cluster/reassignment.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { KafkaError } from '../../../lib/protocol/errors.js';
import { produce } from '../../../lib/log/produce.js';
import { ReplicationSweep } from '../../../lib/orchestration/sweep.js';
import { acquireLease } from '../../../lib/storage/coordination/lease.js';
import { alterPartition, readPartition } from '../../../lib/storage/coordination/partitions.js';
import { listBrokers } from '../../../lib/storage/coordination/brokers.js';
import { markLagging } from '../../../lib/storage/coordination/lag-index.js';
import { topicPartitionKey, type PartitionRecord } from '../../../lib/storage/model.js';
import { purgePartition } from '../../../lib/storage/replica/deletion.js';
import { fenceStore } from '../../../lib/storage/replica/incarnation.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { ConditionFailed } from '../../../lib/storage/transact.js';
import { readHead } from '../../../lib/storage/replica/head.js';
import { useQuietCluster } from '../../support/cluster.js';

const cluster = useQuietCluster({ brokers: 4 });
// These tests place replicas by hand: the balancer and the preferred-leader rebalance stay out.
beforeAll(async () => {
  await alterClusterConfigs([{ name: 'tributary.balancer.enable', value: 'false' }, { name: 'auto.leader.rebalance.enable', value: 'false' }]);
});

/** The controllers' clock: past any lease, moved only by the tests. */
let t = Date.now() + 60 * 60_000;
let ids = 0;
const newController = (o: { purgeSliceMs?: number; purgeMinMs?: number } = {}) => new Controller({ id: `reassign-${ids++}`, tickMs: 1000, leaseMs: 3000, sessionTimeoutMs: 600_000, probeTimeoutMs: 15_000, clock: () => t, catchUp: async (topic, topicId, partition) => { await markLagging(topic, topicId, partition); }, ...o });
/** The controller the tests tick (one, so that it keeps the lease from tick to tick). */
const ctl = newController();
const tick = async (c: Controller) => {
  t += 1500;
  return c.tick(t);
};

let n = 0;
/** A topic of one partition on brokers `replicas` (placed by a reassignment from wherever creation put it), holding `records` records. */
async function topicOn(replicas: number[], records = 50) {
  const name = `reassign-${n++}`;
  const { topic } = await createTopic({ name, partitions: 1, replicationFactor: replicas.length });
  const sweep = new ReplicationSweep({ lagTimeMaxMs: 60_000 });
  const p0 = (await readPartition(name, 0))!;
  if (p0.replicas.join() !== replicas.join()) await moveFully(name, replicas, sweep, ctl);
  if ((await readPartition(name, 0))?.leader !== replicas[0]) await electLeaderOf(name, 0, 'PREFERRED');
  if (records > 0) {
    const out = await produce(name, Array.from({ length: records }, (_, i) => ({ partition: 0, key: null, headers: [], value: Buffer.from(`v${i}`) })), { acks: 'all' });
    expect(out.every((o) => o.ok)).toBe(true);
  }
  return { name, topicId: topic.topicId, tp: topicPartitionKey(topic.topicId, 0), sweep, ctl };
}

/** Start → sweep until the adding replicas are in the ISR → controller walk completes and purges. */
async function moveFully(name: string, target: number[], sweep: ReplicationSweep, ctl: Controller): Promise<PartitionRecord> {
  await startReassignment(name, 0, target);
  for (let i = 0; i < 20; i++) {
    await tick(ctl); // the walk marks the partition for the sweep
    await sweep.sweep();
    await tick(ctl);
    const p = (await readPartition(name, 0))!;
    if (!reassigning(p) && !p.purging) return p;
  }
  throw new Error(`the move of ${name} to ${target.join(',')} did not finish: ${JSON.stringify(await readPartition(name, 0))}`);
}

const store = (id: number) => cluster().store(id);
const offsets = async (broker: number, tp: string) => (await queryBatches(store(broker), tp, { fromOffset: 0, toOffset: 1e9, maxBytes: 1e9 })).map((b) => [b.baseOffset, b.lastOffset]);

describe('Partition reassignment', () => {
  it('moves a follower to a new broker: the new replica syncs and joins the ISR before the old one leaves, then the old copy is deleted', async () => {
    const { name, tp, sweep, ctl } = await topicOn([1, 2, 3]);
    const before = (await readPartition(name, 0))!;
    const started = await startReassignment(name, 0, [1, 2, 4]);
    expect(started).toMatchObject({ replicas: [1, 2, 4, 3], addingReplicas: [4], removingReplicas: [3], isr: before.isr, leader: before.leader });

    // Nothing completes before the new replica is in the ISR.
    await tick(ctl);
    expect((await readPartition(name, 0))?.replicas).toEqual([1, 2, 4, 3]);

    await sweep.sweep();
    const synced = (await readPartition(name, 0))!;
    expect(synced.isr).toEqual(expect.arrayContaining([1, 2, 3, 4]));
    expect((await readHead(store(4), tp))?.leo).toBe(50);

    await tick(ctl);
    const done = (await readPartition(name, 0))!;
    expect(done).toMatchObject({ replicas: [1, 2, 4], isr: [1, 2, 4], leader: 1, leaderEpoch: before.leaderEpoch });
    expect(done.addingReplicas).toBeUndefined();
    expect(done.purging).toBeUndefined();
    expect(await readHead(store(3), tp)).toBeUndefined();
    expect(await offsets(4, tp)).toEqual(await offsets(1, tp));
    // The leader counts the new ISR for min.insync.replicas.
    expect((await readHead(store(1), tp))?.isr).toEqual(expect.arrayContaining([1, 2, 4]));
    expect((await readHead(store(1), tp))?.isr).not.toContain(3);
  });

  it('moves the leader: a target replica in the ISR takes over under a new epoch, and the data path follows it', async () => {
    const { name, tp, sweep, ctl } = await topicOn([1, 2, 3]);
    const before = (await readPartition(name, 0))!;
    const done = await moveFully(name, [4, 2, 3], sweep, ctl);
    expect(done).toMatchObject({ replicas: [4, 2, 3], leader: 4, leaderEpoch: before.leaderEpoch + 1 });
    expect(done.isr).toEqual(expect.arrayContaining([2, 3, 4]));
    expect(await readHead(store(4), tp)).toMatchObject({ role: 'leader', leaderEpoch: before.leaderEpoch + 1 });
    expect(await readHead(store(1), tp)).toBeUndefined();
    const out = await produce(name, [{ partition: 0, key: null, headers: [], value: Buffer.from('after') }], { acks: 'all' });
    expect(out[0]).toMatchObject({ ok: true, offset: 50 });
  });

  it('changes the replication factor: 3 → 2 drops one replica, 2 → 3 adds one', async () => {
    const { name, sweep, ctl } = await topicOn([1, 2, 3], 10);
    expect(await moveFully(name, [1, 2], sweep, ctl)).toMatchObject({ replicas: [1, 2], isr: [1, 2] });
    const grown = await moveFully(name, [1, 2, 4], sweep, ctl);
    expect(grown.replicas).toEqual([1, 2, 4]);
    expect(grown.isr).toEqual(expect.arrayContaining([1, 2, 4]));
  });

  it('a reorder of the same replicas applies at once and moves no data; a preferred election then moves the leadership', async () => {
    const { name, tp } = await topicOn([1, 2, 3], 5);
    const p = await startReassignment(name, 0, [2, 1, 3]);
    expect(p).toMatchObject({ replicas: [2, 1, 3], leader: 1 });
    expect(p.addingReplicas).toBeUndefined();
    const elected = await electLeaderOf(name, 0, 'PREFERRED');
    expect(elected).toMatchObject({ leader: 2, leaderEpoch: p.leaderEpoch + 1 });
    expect(await readHead(store(2), tp)).toMatchObject({ role: 'leader', leaderEpoch: elected.leaderEpoch });
    expect(await readHead(store(1), tp)).toMatchObject({ role: 'follower', leaderEpoch: elected.leaderEpoch });
    await expect(electLeaderOf(name, 0, 'PREFERRED')).rejects.toMatchObject({ kafkaName: 'ELECTION_NOT_NEEDED' });
    await expect(electLeaderOf(name, 0, 'UNCLEAN')).rejects.toBeInstanceOf(KafkaError);
  });

  it('a cancellation before the sync returns to the original replicas and deletes the added copy', async () => {
    const { name, tp, sweep, ctl } = await topicOn([1, 2, 3], 20);
    await startReassignment(name, 0, [1, 2, 4]);
    await tick(ctl); // the walk marks the partition for the sweep
    await sweep.sweep(); // 4 syncs and joins the ISR
    const cancelled = await cancelReassignment(name, 0);
    expect(cancelled).toMatchObject({ replicas: [1, 2, 3], purging: [4] });
    expect(cancelled.isr).not.toContain(4);
    expect(cancelled.isr).toEqual(expect.arrayContaining([1, 2, 3]));
    expect((await readHead(store(1), tp))?.isr).not.toContain(4);
    await tick(ctl);
    expect((await readPartition(name, 0))?.purging).toBeUndefined();
    expect(await readHead(store(4), tp)).toBeUndefined();
    await expect(cancelReassignment(name, 0)).rejects.toMatchObject({ kafkaName: 'NO_REASSIGNMENT_IN_PROGRESS' });
  });

  it('refuses a bad target and a broker still deleting its old copy, and writes nothing', async () => {
    const { name } = await topicOn([1, 2, 3], 0);
    const before = (await readPartition(name, 0))!;
    for (const target of [[], [1, 1, 2], [1, 2, 9], [1, -2]]) {
      await expect(startReassignment(name, 0, target)).rejects.toMatchObject({ kafkaName: 'INVALID_REPLICA_ASSIGNMENT' });
    }
    await alterPartition(name, before, { purging: [4] });
    await expect(startReassignment(name, 0, [1, 2, 4])).rejects.toMatchObject({ kafkaName: 'REASSIGNMENT_IN_PROGRESS' });
    expect((await readPartition(name, 0))?.partitionEpoch).toBe(before.partitionEpoch + 1);
  });

  it('a completion decided on a stale state writes nothing when a cancellation won the race', async () => {
    const { name, sweep } = await topicOn([1, 2, 3], 5);
    await startReassignment(name, 0, [1, 2, 4]);
    await tick(ctl); // the walk marks the partition for the sweep
    await sweep.sweep();
    const seen = (await readPartition(name, 0))!; // complete-able: 4 is in the ISR
    const cancelled = await cancelReassignment(name, 0);
    const lease = (await acquireLease(`stale-${ids++}`, 3000, t += 10_000))!;
    const brokers = await listBrokers();
    const after = await completeReassignment(name, seen, new Set([1, 2, 3, 4]), new Map(brokers.map((b) => [b.brokerId, b])), lease);
    expect(after).toEqual(cancelled);
    expect(await readPartition(name, 0)).toEqual(cancelled);
  });

  it('deletes a removed copy too large for one tick over several ticks, each within its purge budget (the ticks, and the sweeps between them, go on)', async () => {
    const { name, tp, sweep } = await topicOn([1, 2, 3], 0);
    // (more items than one step of deletes: four BatchWriteItems of 25 between two looks at the clock)
    const RECORDS = 130;
    for (let i = 0; i < RECORDS; i++) {
      expect((await produce(name, [{ partition: 0, key: null, headers: [], value: Buffer.from(`r${i}`) }], { acks: 'all' }))[0]?.ok).toBe(true);
    }
    t += 10_000; // (the shared controller's lease runs out: this one takes it)
    const slicing = newController({ purgeSliceMs: 0, purgeMinMs: 0 });
    await startReassignment(name, 0, [1, 2, 4]);
    await tick(slicing); // the walk marks the partition for the sweep
    await sweep.sweep();
    await tick(slicing); // completes, and deletes a first part of 3's copy
    expect((await readPartition(name, 0))).toMatchObject({ replicas: [1, 2, 4], purging: [3] });
    const left = (await offsets(3, tp)).length;
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(RECORDS);
    for (let i = 0; i < 5 && (await readPartition(name, 0))?.purging; i++) await tick(slicing);
    expect((await readPartition(name, 0))?.purging).toBeUndefined();
    expect(await offsets(3, tp)).toEqual([]);
    expect(await readHead(store(3), tp)).toBeUndefined();
    t += 10_000; // (and gives the lease back to the shared one)
  });

  it('a copy the walk reaches after the tick\'s purge budget is spent still gets its own share of deletes that tick', async () => {
    const { name, tp, sweep } = await topicOn([1, 2, 3], 0);
    for (let i = 0; i < 30; i++) {
      expect((await produce(name, [{ partition: 0, key: null, headers: [], value: Buffer.from(`r${i}`) }], { acks: 'all' }))[0]?.ok).toBe(true);
    }
    t += 10_000; // (the shared controller's lease runs out: this one takes it)
    const late = newController({ purgeSliceMs: 0 });
    await startReassignment(name, 0, [1, 2, 4]);
    await tick(late); // the walk marks the partition for the sweep
    await sweep.sweep();
    await tick(late); // completes, and deletes 3's copy: the tick's budget is gone, the copy's share is not
    expect((await readPartition(name, 0))?.purging).toBeUndefined();
    expect(await offsets(3, tp)).toEqual([]);
    t += 10_000; // (and gives the lease back to the shared one)
  });

  it('a controller that dies after completing leaves the purge to its successor', async () => {
    const { name, tp, sweep } = await topicOn([1, 2, 3], 5);
    await startReassignment(name, 0, [1, 2, 4]);
    await tick(ctl); // the walk marks the partition for the sweep
    await sweep.sweep();
    const lease = (await acquireLease(`dies-${ids++}`, 3000, t += 10_000))!;
    const brokers = await listBrokers();
    const stores = new Map(brokers.map((b) => [b.brokerId, b]));
    const completed = await completeReassignment(name, (await readPartition(name, 0))!, new Set([1, 2, 3, 4]), stores, lease);
    expect(completed).toMatchObject({ replicas: [1, 2, 4], purging: [3] });
    expect(await readHead(store(3), tp)).toBeDefined();
    // (the controller dies here) A successor's first walk deletes the copy.
    t += 10_000;
    const report = await newController().tick(t);
    expect(report.scanned).toBe(true);
    expect((await readPartition(name, 0))?.purging).toBeUndefined();
    expect(await readHead(store(3), tp)).toBeUndefined();
  });

  it('a deposed controller that wakes in its purge deletes nothing of a copy its successor purged and the broker synced again', async () => {
    const { name, tp, sweep } = await topicOn([1, 2, 3], 5);
    await startReassignment(name, 0, [1, 2, 4]);
    await tick(ctl); // the walk marks the partition for the sweep
    await sweep.sweep();
    const deposed = (await acquireLease(`deposed-${ids++}`, 3000, t += 10_000))!;
    const stores = new Map((await listBrokers()).map((b) => [b.brokerId, b]));
    const seen = await completeReassignment(name, (await readPartition(name, 0))!, new Set([1, 2, 3, 4]), stores, deposed);
    expect(seen).toMatchObject({ replicas: [1, 2, 4], purging: [3] });

    // (the deposed controller stalls here, about to purge 3) Its successor purges 3's copy; 3 is
    // then added back, syncs and joins the ISR, and 4's copy is purged in turn.
    t += 10_000;
    const successor = newController();
    await tick(successor);
    expect((await readPartition(name, 0))?.purging).toBeUndefined();
    const back = await moveFully(name, [1, 2, 3], sweep, successor);
    expect(back.isr).toEqual(expect.arrayContaining([1, 2, 3]));
    const copy = await offsets(3, tp);
    expect(copy).toEqual(await offsets(1, tp));

    // The deposed controller wakes and goes on with the purge it read.
    // (its claim on 3's store is refused: it deletes nothing, and leaves 3 in the `purging` it read)
    expect(await purgeRemoved(name, seen, new Set([1, 2, 3, 4]), stores, deposed)).toEqual(seen);
    expect(await offsets(3, tp)).toEqual(copy);
    expect(await readHead(store(3), tp)).toMatchObject({ leo: 5 });
    expect((await readPartition(name, 0))?.isr).toContain(3);
  });

  it('a purge whose store a newer controller claimed stops at its next transaction of deletes', async () => {
    const { name, tp } = await topicOn([1, 2, 3], 0);
    for (let i = 0; i < 130; i++) {
      expect((await produce(name, [{ partition: 0, key: null, headers: [], value: Buffer.from(`r${i}`) }], { acks: 'all' }))[0]?.ok).toBe(true);
    }
    const older = (await acquireLease(`older-${ids++}`, 3000, t += 10_000))!;
    expect(await fenceStore(store(3), older.epoch)).toBe(true);
    expect(await purgePartition(store(3), tp, older.epoch, 0)).toBe(false); // one transaction, then out of time
    const left = (await offsets(3, tp)).length;
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(130);

    const newer = (await acquireLease(`newer-${ids++}`, 3000, t += 10_000))!;
    expect(await fenceStore(store(3), newer.epoch)).toBe(true);
    expect(await fenceStore(store(3), older.epoch)).toBe(false);
    await expect(purgePartition(store(3), tp, older.epoch)).rejects.toBeInstanceOf(ConditionFailed);
    expect((await offsets(3, tp)).length).toBe(left);
    expect(await purgePartition(store(3), tp, newer.epoch)).toBe(true);
    expect(await offsets(3, tp)).toEqual([]);
    t += 10_000; // (the shared controller takes the lease back)
  });
});
