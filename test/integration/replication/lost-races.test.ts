/**
 * Lost races of partition-state changes, against the real stores on a private quiet stack: for
 * each compare-and-set — `alterPartition`, `shrinkIsr`, `joinIsr`, `dropFromCount` — a concurrent
 * change wins, and the loser writes nothing and says so.
 */
import { describe, expect, it } from 'vitest';
import { replicaStore } from '../../../lib/cluster/metadata.js';
import { electLeader, shrinkIsr } from '../../../lib/cluster/partition-state.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { produce } from '../../../lib/log/produce.js';
import { dropFromCount, joinIsr } from '../../../lib/log/replicate.js';
import { alterPartition, PartitionChanged, readPartition } from '../../../lib/storage/coordination.js';
import { topicPartitionKey, type PartitionRecord } from '../../../lib/storage/model.js';
import { readHead, setHeadIsr } from '../../../lib/storage/replica.js';
import { useQuietCluster } from '../../support/cluster.js';

useQuietCluster();

let n = 0;
async function setup() {
  const name = `race-${process.pid}-${n++}`;
  const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: 3 });
  const p0 = partitions[0]!;
  const tp = topicPartitionKey(topic.topicId, 0);
  const [f, g] = p0.replicas.filter((b) => b !== p0.leader) as [number, number];
  const leader = await replicaStore(p0.leader);
  const state = async () => (await readPartition(name, 0))!;
  const head = async () => (await readHead(leader, tp))!;
  return { name, p0, tp, f, g, leader, state, head };
}

describe('Function: alterPartition', () => {
  it('where two changes are made from the same state, one wins and the other writes nothing and returns the winner\'s state', async () => {
    const { name, p0, f, g, state } = await setup();
    const results = await Promise.allSettled([
      alterPartition(name, p0, { isr: p0.isr.filter((b) => b !== f) }),
      alterPartition(name, p0, { isr: p0.isr.filter((b) => b !== g) }),
    ]);
    const won = results.filter((r): r is PromiseFulfilledResult<PartitionRecord> => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(lost[0]!.reason).toBeInstanceOf(PartitionChanged);
    const now = await state();
    expect(now).toEqual(won[0]!.value);
    expect(now.partitionEpoch).toBe(p0.partitionEpoch + 1);
    expect((lost[0]!.reason as PartitionChanged).current).toEqual(now);
  });
});

describe('Function: shrinkIsr', () => {
  it('where an election won the race, writes nothing (the epoch moved on) and reports no shrink', async () => {
    const { name, p0, f, state } = await setup();
    const seen = await state();
    const elected = await electLeader(name, 0, p0.leader, seen);
    const out = await shrinkIsr(name, 0, f, seen.leaderEpoch, 'test', seen);
    expect(out.shrunk).toBe(false);
    expect(out.state).toEqual(elected);
    expect(await state()).toEqual(elected);
    expect(elected.isr).toContain(f);
  });

  it('where another shrink of the same follower won the race, writes nothing and reports no shrink of its own', async () => {
    const { name, p0, f, state } = await setup();
    const seen = await state();
    const first = await shrinkIsr(name, 0, f, p0.leaderEpoch, 'winner', seen);
    expect(first.shrunk).toBe(true);
    const second = await shrinkIsr(name, 0, f, p0.leaderEpoch, 'loser', seen);
    expect(second).toEqual({ state: first.state, shrunk: false });
    expect((await state()).partitionEpoch).toBe(seen.partitionEpoch + 1);
  });
});

describe('Function: joinIsr', () => {
  it('where a shrink of another follower won the race, the partition state keeps the winner\'s ISR and the leader\'s count is as before', async () => {
    const { name, p0, tp, f, g, leader, state, head } = await setup();
    expect((await produce(name, [{ partition: 0, key: null, value: Buffer.from('v'), headers: [] }], { acks: 'all' }))[0]).toMatchObject({ ok: true });
    // f left the ISR (and the leader's count), and is caught up again.
    await shrinkIsr(name, 0, f, p0.leaderEpoch, 'test');
    expect(await dropFromCount(name, 0, leader, tp, p0.leaderEpoch, f)).toBe(true);
    const seen = await state();
    const countBefore = await head();
    // The joiner decided on `seen`; a shrink of g wins the race.
    const winner = (await shrinkIsr(name, 0, g, p0.leaderEpoch, 'winner')).state;
    const joined = await joinIsr(name, 0, seen, leader, await replicaStore(f), tp, Date.now() + 10_000);
    expect(joined).toBeUndefined();
    expect(await state()).toEqual(winner);
    expect(winner.isr).not.toContain(f);
    const count = await head();
    expect(count.isr).toEqual(countBefore.isr);
    expect(count.joining).toEqual([]);
  });
});

describe('Function: dropFromCount', () => {
  it('where an expander re-adds the follower between its read and its write, writes nothing and reports it kept', async () => {
    const { name, p0, tp, f, leader, state, head } = await setup();
    const seen = await state();
    // The state lost f (it left the ISR); the leader still counts it.
    const shrunk = (await shrinkIsr(name, 0, f, p0.leaderEpoch, 'test', seen)).state;
    const before = await head();
    expect(before.isr).toContain(f);
    let reads = 0;
    const interleaved = async (topic: string, partition: number) => {
      if (reads++ > 0) return readPartition(topic, partition);
      // The dropper has read the head and now reads the state (still without f), while an
      // expander adds f to the leader's count as joining and then to the state's ISR.
      const stale = await readPartition(topic, partition);
      expect(await setHeadIsr(leader, tp, p0.leaderEpoch, before.isrVersion, { isr: before.isr, joining: [f] })).toBe(true);
      await alterPartition(name, shrunk, { isr: p0.replicas.filter((b) => shrunk.isr.includes(b) || b === f) });
      return stale;
    };
    expect(await dropFromCount(name, 0, leader, tp, p0.leaderEpoch, f, interleaved)).toBe(false);
    expect(reads).toBe(2);
    const after = await head();
    expect(after.isrVersion).toBe(before.isrVersion + 1);
    expect(after.isr).toEqual(before.isr);
    expect((await state()).isr).toContain(f);
  });

  it('where the state still has the follower, writes nothing', async () => {
    const { name, p0, tp, f, leader, head } = await setup();
    const before = await head();
    expect(await dropFromCount(name, 0, leader, tp, p0.leaderEpoch, f)).toBe(false);
    expect(await head()).toEqual(before);
  });
});
