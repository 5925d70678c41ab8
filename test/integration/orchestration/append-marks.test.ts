/**
 * The append marks its partition in the lag index, for replication that converges without new
 * writes: a stream delivery the replicator
 * never hears of must still leave the partition for the sweep. Driven step by step on a private
 * quiet stack (no stream poller, no controllers), so no replication run happens unless a test
 * makes one: only the append can have set a mark. Marks are written only on idle→active
 * transitions, and the sweep's two-step clear loses no mark to an append that lands in between.
 */
import { describe, expect, it } from 'vitest';
import { replicate } from '../../../lib/log/commit.js';
import { ReplicationSweep } from '../../../lib/orchestration/sweep.js';
import { clearLagging, listLagging } from '../../../lib/storage/coordination/lag-index.js';
import { clearLagFlag, readHead } from '../../../lib/storage/replica/head.js';
import { useQuietCluster } from '../../support/cluster.js';
import { rf3Partition } from '../../support/partition.js';
import { hookStoreClient } from '../../support/store-hooks.js';

useQuietCluster();

/** Counts every write to the coordination table's lag index from here on (of one topic's marks, if given). */
function countIndexWrites(topicId?: string): { n: number } {
  const count = { n: 0 };
  hookStoreClient(undefined, 'initialize', (next, context) => async (args) => {
    const input = args.input as { Item?: { pk?: unknown; sk?: unknown }; Key?: { pk?: unknown; sk?: unknown } };
    const item = input.Item ?? input.Key;
    const ours = topicId === undefined || String(item?.sk ?? '').startsWith(`${topicId}#`);
    if (/Put|Delete|Update/.test(String(context.commandName)) && item?.pk === 'lagging' && ours) count.n++;
    return next(args);
  });
  return count;
}

async function setup() {
  const { name, topic, p0: p, tp, store, send: sendAll, converged } = await rf3Partition('marks');
  const leader = store(p.leader);
  const send = async (count: number, tag = 'v') => {
    const out = await sendAll(Array.from({ length: count }, (_, i) => `${tag}${i}`), { acks: 1 });
    expect(out.every((o) => o.ok)).toBe(true);
  };
  const marks = async () => (await listLagging()).filter((m) => m.topicId === topic.topicId);
  const head = async () => (await readHead(leader, tp))!;
  return { name, topicId: topic.topicId, p, tp, leader, send, marks, head, converged };
}

/** A sweep whose full pass is already spent: it visits only what the index names. */
async function markOnlySweep(idleClearMs = 0): Promise<ReplicationSweep> {
  const sweep = new ReplicationSweep({ fullPassMs: 3_600_000, lagTimeMaxMs: 30_000, idleClearMs });
  await sweep.sweep(); // pays the first full pass (other tests' partitions included)
  return sweep;
}

describe('The append marks its partition lagging', () => {
  it('where no replication run ever happens, an acks=1 append leaves a mark and one sweep pass converges the partition with no new writes', async () => {
    const sweep = await markOnlySweep();
    const s = await setup();
    await s.send(10);
    expect(await s.converged()).toBe(false);
    const [mark] = await s.marks();
    expect(mark).toMatchObject({ topic: s.name, topicId: s.topicId, partition: 0 });
    expect((await s.head()).lagMarkedEpoch).toBe(s.p.leaderEpoch);

    const report = await sweep.sweep();
    expect(report).toMatchObject({ full: false, failed: 0 });
    expect(report.converged).toBeGreaterThanOrEqual(1);
    expect(await s.converged()).toBe(true);
    expect((await s.head()).hw).toBe(10);
    // Caught up, and still so at the next visit: the sweep took it out of the index and the flag off the head.
    expect(await s.marks()).toEqual([mark]);
    await sweep.sweep();
    expect(await s.marks()).toEqual([]);
    expect((await s.head()).lagMarkedEpoch).toBeUndefined();
  });

  it('writes the index once per idle→active transition: further appends to a marked partition write nothing to it', async () => {
    const s = await setup();
    const writes = countIndexWrites();
    await s.send(3, 'a');
    expect(writes.n).toBe(1);
    const [mark] = await s.marks();
    for (let i = 0; i < 5; i++) await s.send(2, `b${i}`);
    expect(writes.n).toBe(1);
    expect(await s.marks()).toEqual([mark]);
    expect((await s.head()).leo).toBe(13);
  });

  it('where appends keep coming between sweep passes, the mark stays and they write nothing to the index; idle past the idle age, it is cleared', async () => {
    const sweep = await markOnlySweep(30_000);
    const s = await setup();
    const writes = countIndexWrites(s.topicId);
    await s.send(2, 'a');
    const [mark] = await s.marks();
    expect(writes.n).toBe(1);
    // Busy: every pass finds it caught up (an acks=all partition between requests), but its log
    // end offset moved since the last visit. Passes run on a clock already past the mark's idle age.
    const later = () => Date.now() + 60_000;
    for (let i = 0; i < 4; i++) {
      expect((await sweep.sweep(later())).failed).toBe(0);
      expect(await s.converged()).toBe(true);
      expect(await s.marks()).toEqual([mark]);
      await s.send(1, `b${i}`);
    }
    expect(await s.marks()).toEqual([mark]);
    expect(writes.n).toBe(1); // no re-mark, no clear: the appends paid nothing for the sweep
    expect((await s.head()).lagMarkedEpoch).toBe(s.p.leaderEpoch);
    // Idle: a visit records the log end offset; one less than the idle age later, nothing goes...
    await sweep.sweep(later());
    await sweep.sweep(later() + 29_000);
    expect(await s.marks()).toEqual([mark]);
    // ...and once it has not moved for the idle age, the mark and the flag go.
    await sweep.sweep(later() + 31_000);
    expect(await s.marks()).toEqual([]);
    expect((await s.head()).lagMarkedEpoch).toBeUndefined();
    expect(writes.n).toBe(2);
  });

  it('where an append lands between the sweep clearing the head flag and deleting the mark, the mark survives and the next pass visits it', async () => {
    const sweep = await markOnlySweep();
    const s = await setup();
    await s.send(5, 'a');
    await sweep.sweep(); // converges it; the first visit does not clear
    const [first] = await s.marks();
    let appended = false;
    sweep.hooks.afterFlagCleared = async (m) => {
      if (m.topicId !== s.topicId) return;
      sweep.hooks.afterFlagCleared = undefined;
      await s.send(1, 'between'); // its cached head says flagged: the condition fails, it re-marks
      appended = true;
    };
    const report = await sweep.sweep();
    expect(appended).toBe(true);
    expect(report.failed).toBe(0);
    const [survivor] = await s.marks();
    expect(survivor).toBeDefined();
    expect(survivor!.markedAt).toBeGreaterThan(first!.markedAt);
    expect((await s.head()).lagMarkedEpoch).toBe(s.p.leaderEpoch);
    expect(await s.converged()).toBe(false); // the late record is on the leader only

    const next = await sweep.sweep();
    expect(next.driven).toBeGreaterThanOrEqual(1);
    expect(await s.converged()).toBe(true);
    expect((await s.head()).hw).toBe(6);
    expect(await s.marks()).toEqual([survivor]); // a new mark: its first visit does not clear
    await sweep.sweep();
    expect(await s.marks()).toEqual([]);
  });

  it('where the cached head says marked but the mark was cleared meanwhile, the append fails its condition and marks again', async () => {
    const s = await setup();
    await s.send(4, 'a'); // this instance now caches a flagged head
    const [mark] = await s.marks();
    // A sweep's clear, step by step.
    const h = await s.head();
    expect(await clearLagFlag(s.leader, s.tp, h.leaderEpoch, h.leo)).toBe(false); // hw < leo: not caught up, no clear
    // A replication run brings the followers up; it never clears (only the sweep does).
    await replicate(s.name, s.topicId, 0, { deadline: Date.now() + 10_000, shrinkOnFailure: false, lagTimeMaxMs: 30_000 });
    const caught = await s.head();
    expect(caught).toMatchObject({ hw: 4, leo: 4, lagMarkedEpoch: s.p.leaderEpoch });
    expect(await s.marks()).toEqual([mark]);
    expect(await clearLagFlag(s.leader, s.tp, caught.leaderEpoch, caught.leo)).toBe(true);
    expect(await clearLagging(s.topicId, 0, mark!.markedAt)).toBe(true);
    expect(await s.marks()).toEqual([]);
    expect((await s.head()).lagMarkedEpoch).toBeUndefined();

    const writes = countIndexWrites();
    await s.send(1, 'after');
    expect(writes.n).toBe(1);
    expect(await s.marks()).toHaveLength(1);
    expect(await s.head()).toMatchObject({ lagMarkedEpoch: s.p.leaderEpoch, leo: 5 });
  });
});

