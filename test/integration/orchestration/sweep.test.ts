/**
 * Replication liveness without new writes, driven step by step on a private quiet
 * stack (no stream poller, no controllers): the lag index is set by the append (and by a run that
 * leaves a follower behind), only on a flip, and cleared only by the sweep; a stream batch that fails
 * on every attempt is handed to the sweep, which converges the partition; a partition the index
 * lost is found by the full pass; and two sweeps at once converge it with no error and no lost mark.
 */
import { describe, expect, it } from 'vitest';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { changesOf, handOffToSweep } from '../../../lib/log/replicator.js';
import { StreamPoller } from '../../../local/stream-poller.js';
import { produce } from '../../../lib/log/produce.js';
import { replicate } from '../../../lib/log/commit.js';
import { ReplicationSweep } from '../../../lib/orchestration/sweep.js';
import { clearLagging, listLagging, markLagging } from '../../../lib/storage/coordination/lag-index.js';
import { readHead } from '../../../lib/storage/replica/head.js';
import { useQuietCluster } from '../../support/cluster.js';
import { rf3Partition } from '../../support/partition.js';

const cluster = useQuietCluster();

async function setup(records = 10) {
  const { name, topic, p0: p, tp, store, followers, send, converged } = await rf3Partition('sweep');
  if (records > 0) {
    const out = await send(Array.from({ length: records }, (_, i) => `v${i}`), { acks: 1 });
    expect(out.every((o) => o.ok)).toBe(true);
  }
  const marks = async () => (await listLagging()).filter((m) => m.topicId === topic.topicId);
  return { name, topicId: topic.topicId, p, tp, leader: store(p.leader), followers: followers.map(store), marks, converged };
}

const opts = { shrinkOnFailure: false, lagTimeMaxMs: 30_000 };
/** A sweep that clears a caught-up mark on the second visit that sees the same log end offset. */
const eager = { fullPassMs: 3_600_000, lagTimeMaxMs: 30_000, idleClearMs: 0 };

describe('Lag index', () => {
  it('is set by the append and kept by replication runs, which never clear it and write it only on flips', async () => {
    const s = await setup();
    // The acks=1 append marked it (no replication run has happened on this quiet stack).
    const [mark] = await s.marks();
    expect(mark).toMatchObject({ topic: s.name, topicId: s.topicId, partition: 0 });
    expect((await readHead(s.leader, s.tp))?.lagMarkedEpoch).toBe(s.p.leaderEpoch);

    // A run out of time before its first copy leaves it lagging: the head says the mark is there, so it is not written again.
    const first = await replicate(s.name, s.topicId, 0, { ...opts, deadline: Date.now() - 1 });
    expect(first.lagging).toBe(true);
    expect(await s.marks()).toEqual([mark]);

    // Caught up: a run does not clear (only the sweep does, race-safe against appends).
    const done = await replicate(s.name, s.topicId, 0, { ...opts, deadline: Date.now() + 10_000 });
    expect(done).toMatchObject({ lagging: false, highWatermark: 10 });
    expect(await s.marks()).toEqual([mark]);
    expect((await readHead(s.leader, s.tp))?.lagMarkedEpoch).toBe(s.p.leaderEpoch);

    // Nothing moved: a run writes nothing at all (the head is the same item, the index unchanged).
    const before = await readHead(s.leader, s.tp);
    await replicate(s.name, s.topicId, 0, { ...opts, deadline: Date.now() + 10_000 });
    expect(await readHead(s.leader, s.tp)).toEqual(before);
    expect(await s.marks()).toEqual([mark]);

    // The sweep's first visit finds it caught up but keeps it (a first visit cannot tell idle from
    // busy); the next, seeing the same log end offset, takes it out: the flag, then the mark.
    const sweep = new ReplicationSweep(eager);
    expect((await sweep.sweep()).failed).toBe(0);
    expect(await s.marks()).toEqual([mark]);
    expect((await sweep.sweep()).failed).toBe(0);
    expect(await s.marks()).toEqual([]);
    expect((await readHead(s.leader, s.tp))?.lagMarkedEpoch).toBeUndefined();
  });

  it('clears a mark only if it is the one the clearer read: a newer mark survives', async () => {
    const s = await setup(0);
    const old = await markLagging(s.name, s.topicId, 0, 1000);
    await markLagging(s.name, s.topicId, 0, 2000);
    expect(await clearLagging(s.topicId, 0, old.markedAt)).toBe(false);
    expect((await s.marks()).map((m) => m.markedAt)).toEqual([2000]);
    expect(await clearLagging(s.topicId, 0, 2000)).toBe(true);
    expect(await clearLagging(s.topicId, 0, 2000)).toBe(true); // already gone: not an error
    expect(await s.marks()).toEqual([]);
  });
});

describe('Replication sweep', () => {
  it('where a stream delivery fails on every attempt, the batch goes to the sweep and the partition converges with no new writes', async () => {
    const s = await setup(0);
    const failures: number[] = [];
    let handed = 0;
    const poller = new StreamPoller({
      tables: [{ table: s.leader.replicaTable, endpoint: s.leader.endpoint }],
      maxDeliveryAttempts: 3, retryBaseMs: 10,
      deliver: async (e: DynamoDBStreamEvent) => {
        failures.push(e.Records.length);
        throw new Error('the replicator times out on every attempt');
      },
      onFailure: async (e: DynamoDBStreamEvent) => {
        await handOffToSweep(changesOf(e.Records));
        handed++;
      },
    });
    await poller.start();
    try {
      const out = await produce(s.name, Array.from({ length: 20 }, (_, i) => ({ partition: 0, key: null, value: Buffer.from(`r${i}`), headers: [] })), { acks: 1 });
      expect(out.every((o) => o.ok)).toBe(true);
      // (the append marked the partition already; the handover marks it again)
      await cluster().until('the batch handed to the sweep', async () => handed > 0 && (await s.marks()).length === 1, 15_000);
    } finally {
      await poller.stop();
    }
    expect(failures.length).toBeGreaterThanOrEqual(3);
    expect(await s.converged()).toBe(false);

    // No writes from here on: one sweep pass converges it, the next (nothing appended) takes it out of the index.
    const sweep = new ReplicationSweep(eager);
    const report = await sweep.sweep();
    expect(report).toMatchObject({ marked: 1, failed: 0 });
    expect(report.converged).toBeGreaterThanOrEqual(1);
    expect(await s.converged()).toBe(true);
    expect((await readHead(s.leader, s.tp))?.hw).toBe(20);
    expect(await s.marks()).toHaveLength(1);
    expect((await sweep.sweep()).failed).toBe(0);
    expect(await s.marks()).toEqual([]);
  });

  it('finds a lagging partition the index does not name on its full pass, and visits only marks between full passes', async () => {
    const s = await setup(5); // acks=1 and no replicator: behind, marked by the append...
    expect(await s.marks()).toHaveLength(1);
    await clearLagging(s.topicId, 0); // ...and the mark lost (the head still says it is there)
    expect(await s.marks()).toEqual([]);
    const sweep = new ReplicationSweep(eager);
    const first = await sweep.sweep();
    expect(first.full).toBe(true);
    expect(first.unmarked).toBeGreaterThanOrEqual(1);
    expect(await s.converged()).toBe(true);
    // The full pass marked it before running it, so index and head agree again; the next append
    // (flagged head) writes nothing to the index, and the next passes — not full ones — re-drive
    // just the marks, clearing it once a visit sees the log end offset a previous one saw.
    const [mark] = await s.marks();
    expect(mark).toBeDefined();
    expect((await readHead(s.leader, s.tp))?.lagMarkedEpoch).toBe(s.p.leaderEpoch);
    const out = await produce(s.name, [{ partition: 0, key: null, value: Buffer.from('late'), headers: [] }], { acks: 1 });
    expect(out[0]?.ok).toBe(true);
    expect(await s.marks()).toEqual([mark]);
    const second = await sweep.sweep();
    expect(second).toMatchObject({ full: false, marked: 1, driven: 1, cleared: 0 });
    expect(await s.converged()).toBe(true);
    expect(await s.marks()).toEqual([mark]); // the log end offset moved since the last visit: not idle
    expect(await sweep.sweep()).toMatchObject({ full: false, driven: 1, cleared: 1 });
    expect(await s.marks()).toEqual([]);
  });

  it('where the full pass finds an unmarked lagging partition it cannot run (no time left), it leaves it marked for the next ordinary pass', async () => {
    const s = await setup(5);
    await clearLagging(s.topicId, 0); // the mark lost; the head still flagged
    expect(await s.marks()).toEqual([]);
    const sweep = new ReplicationSweep(eager);
    const first = await sweep.sweep(Date.now(), Date.now()); // the deadline already passed: no run starts
    expect(first.full).toBe(true);
    expect(first.unmarked).toBeGreaterThanOrEqual(1);
    expect(first.converged).toBe(0);
    expect(await s.converged()).toBe(false);
    expect(await s.marks()).toHaveLength(1);
    // The next pass is not a full one, and it re-drives the partition.
    const second = await sweep.sweep();
    expect(second.full).toBe(false);
    expect(second.driven).toBeGreaterThanOrEqual(1);
    expect(await s.converged()).toBe(true);
  });

  it('where two sweeps re-drive the same mark at once, the partition converges, neither fails, and the mark is gone', async () => {
    const s = await setup(30);
    expect(await s.marks()).toHaveLength(1); // marked by the append
    const [a, b] = [new ReplicationSweep({ fullPassMs: 3_600_000, idleClearMs: 0 }), new ReplicationSweep({ fullPassMs: 3_600_000, idleClearMs: 0 })];
    // Both pay their first full pass now, so the race below is between two mark visits.
    const reports = await Promise.all([a.sweep(), b.sweep()]);
    for (const r of reports) expect(r.failed).toBe(0);
    expect(reports.reduce((x, r) => x + r.converged, 0)).toBeGreaterThanOrEqual(2);
    expect(await s.converged()).toBe(true);
    // Their second visits, at once, both find it idle and race to clear it.
    for (const r of await Promise.all([a.sweep(), b.sweep()])) expect(r.failed).toBe(0);
    expect(await s.marks()).toEqual([]);
    const logs = await Promise.all([s.leader, ...s.followers].map(async (st) => (await readHead(st, s.tp))?.leo));
    expect(new Set(logs)).toEqual(new Set([30]));
  });
});
