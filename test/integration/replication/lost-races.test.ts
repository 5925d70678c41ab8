/**
 * Lost races of partition-state changes, against the real stores on a private quiet stack: for
 * each compare-and-set — `alterPartition`, `shrinkIsr`, `joinIsr`, `settleLeave` — a concurrent
 * change wins, and the loser writes nothing and says so.
 */
import { describe, expect, it } from 'vitest';
import { replicaStore } from '../../../lib/cluster/metadata.js';
import { shrinkIsr } from '../../../lib/cluster/partition-state.js';
import { electLeader } from '../../support/partition.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { produce } from '../../../lib/log/produce.js';
import { beginLeave, settleLeave, shrinkWithCount } from '../../../lib/cluster/isr-count.js';
import { joinIsr, replicate } from '../../../lib/log/commit.js';
import { ReplicationSweep } from '../../../lib/orchestration/sweep.js';
import { alterPartition, PartitionChanged, readPartition } from '../../../lib/storage/coordination/partitions.js';
import { listLagging } from '../../../lib/storage/coordination/lag-index.js';
import { topicPartitionKey, type PartitionRecord } from '../../../lib/storage/model.js';
import { readHead, setHeadIsr } from '../../../lib/storage/replica/head.js';
import { useQuietCluster } from '../../support/cluster.js';

useQuietCluster();

let n = 0;
async function setup(configs: { name: string; value: string }[] = []) {
  const name = `race-${process.pid}-${n++}`;
  const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: 3, configs });
  const p0 = partitions[0]!;
  const tp = topicPartitionKey(topic.topicId, 0);
  const [f, g] = p0.replicas.filter((b) => b !== p0.leader) as [number, number];
  const leader = await replicaStore(p0.leader);
  const state = async () => (await readPartition(name, 0))!;
  const head = async () => (await readHead(leader, tp))!;
  return { name, topicId: topic.topicId, p0, tp, f, g, leader, state, head };
}

const record = (v: string) => [{ partition: 0, key: null, value: Buffer.from(v), headers: [] }];

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
    expect(await settleLeave(name, 0, leader, tp, p0.leaderEpoch, f)).toBe('dropped');
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

describe('Function: settleLeave', () => {
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
      expect(await setHeadIsr(leader, tp, p0.leaderEpoch, before.isrVersion, { isr: before.isr, joining: [f], leaving: [] })).toBe(true);
      await alterPartition(name, shrunk, { isr: p0.replicas.filter((b) => shrunk.isr.includes(b) || b === f) });
      return stale;
    };
    expect(await settleLeave(name, 0, leader, tp, p0.leaderEpoch, f, interleaved)).toBeUndefined();
    expect(reads).toBe(2);
    const after = await head();
    expect(after.isrVersion).toBe(before.isrVersion + 1);
    expect(after.isr).toEqual(before.isr);
    expect((await state()).isr).toContain(f);
  });

  it('where the state still has the follower, writes nothing', async () => {
    const { name, p0, tp, f, leader, head } = await setup();
    const before = await head();
    expect(await settleLeave(name, 0, leader, tp, p0.leaderEpoch, f)).toBeUndefined();
    expect(await head()).toEqual(before);
  });
});

describe('Function: shrinkWithCount', () => {
  it('once the partition state has dropped a follower, an acks=all append that min.insync.replicas would count it for is refused before it is written', async () => {
    const { name, p0, tp, f, leader, state, head } = await setup([{ name: 'min.insync.replicas', value: '3' }]);
    expect((await produce(name, record('before'), { acks: 'all' }))[0]).toMatchObject({ ok: true, offset: 0 });
    let between: Awaited<ReturnType<typeof produce>> | undefined;
    const out = await shrinkWithCount(name, 0, leader, tp, p0.leaderEpoch, f, 'test', await state(), async (...args) => {
      const shrunk = await shrinkIsr(...args);
      // The state says 2 in sync, the leader's count has not dropped f yet: a produce now.
      between = await produce(name, record('between'), { acks: 'all', deadlineMs: 3000 });
      return shrunk;
    });
    expect(out.shrunk).toBe(true);
    expect(between?.[0]).toMatchObject({ ok: false, error: { kafkaName: 'NOT_ENOUGH_REPLICAS' } });
    const h = await head();
    expect(h.leo).toBe(1);
    expect(h.isr).not.toContain(f);
    expect(h.leaving).toEqual([]);
    expect((await state()).isr).not.toContain(f);
  });

  it('where the shrink lost its race (the state kept the follower), the follower is counted again', async () => {
    const { name, p0, tp, f, leader, state, head } = await setup();
    const before = await head();
    const seen = await state();
    const out = await shrinkWithCount(name, 0, leader, tp, p0.leaderEpoch, f, 'test', seen, async () => {
      expect((await head()).leaving).toEqual([f]);
      return { state: seen, shrunk: false };
    });
    expect(out.shrunk).toBe(false);
    const after = await head();
    expect([...after.isr].sort()).toEqual([...before.isr].sort());
    expect(after.leaving).toEqual([]);
  });

  it('where the shrinker died after its first step, the next replicate run counts the follower again; after its second, the run settles it as the state says', async () => {
    const { name, topicId, p0, tp, f, g, leader, state, head } = await setup();
    const opts = { deadline: Date.now() + 10_000, shrinkOnFailure: false, lagTimeMaxMs: 60_000 };
    expect(await beginLeave(leader, tp, p0.leaderEpoch, [f])).toBe(true);
    expect((await head()).isr).not.toContain(f);
    await replicate(name, topicId, 0, opts);
    expect((await head()).isr).toContain(f);
    expect((await head()).leaving).toEqual([]);
    // Died after the state dropped g.
    expect(await beginLeave(leader, tp, p0.leaderEpoch, [g])).toBe(true);
    await shrinkIsr(name, 0, g, p0.leaderEpoch, 'test');
    expect((await head()).leaving).toEqual([g]);
    await replicate(name, topicId, 0, opts);
    // (g is caught up, so the run may also have brought it back in: then the state has it first)
    const h = await head();
    expect(h.leaving).toEqual([]);
    expect(h.isr.includes(g)).toBe((await state()).isr.includes(g));
  });

  it('where leaves the state never saw leave the count too small, an acks=all append is refused and marks the partition; the sweep counts them again', async () => {
    const { name, topicId, p0, tp, f, g, leader, head } = await setup([{ name: 'min.insync.replicas', value: '2' }]);
    expect(await beginLeave(leader, tp, p0.leaderEpoch, [f, g])).toBe(true);
    const refused = await produce(name, record('x'), { acks: 'all', deadlineMs: 3000 });
    expect(refused[0]).toMatchObject({ ok: false, error: { kafkaName: 'NOT_ENOUGH_REPLICAS' } });
    expect((await listLagging()).filter((m) => m.topicId === topicId)).toHaveLength(1);
    await new ReplicationSweep({ fullPassMs: 3_600_000, lagTimeMaxMs: 30_000 }).sweep();
    const h = await head();
    expect(h.leaving).toEqual([]);
    expect([...h.isr].sort()).toEqual([...p0.isr].sort());
    expect((await produce(name, record('y'), { acks: 'all' }))[0]).toMatchObject({ ok: true, offset: 0 });
  });
});
