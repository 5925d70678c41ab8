/**
 * A controller's role push that lands late — it read the partition state, stalled, and pushed
 * after a follower had joined the ISR — against the real stores on a private quiet stack. The
 * push is at the epoch the head already leads at: it must not rewrite the leader's ISR count, and
 * acks=all must never be answered ahead of a member of the partition state's ISR (any of which a
 * clean election may choose). spec/replication.qnt models it (docs/model.md).
 */
import { describe, expect, it } from 'vitest';
import { shrinkWithCount } from '../../../lib/cluster/isr-count.js';
import { invalidateMetadata } from '../../../lib/cluster/metadata.js';
import { joinIsr } from '../../../lib/log/commit.js';
import { readPartition } from '../../../lib/storage/coordination/partitions.js';
import { readHead, setHeadIsr, setRole } from '../../../lib/storage/replica/head.js';
import { replicaLog, useQuietCluster } from '../../support/cluster.js';
import { rf3Partition } from '../../support/partition.js';

useQuietCluster();

/** A partition whose third replica left the ISR, and the partition state a controller read then. */
async function withFollowerOut() {
  const p = await rf3Partition('late-push');
  const [f] = p.followers as [number];
  await shrinkWithCount(p.name, 0, p.store(p.p0.leader), p.tp, p.p0.leaderEpoch, f, 'a test takes it out', p.p0);
  const stale = (await readPartition(p.name, 0))!;
  expect(stale.isr).not.toContain(f);
  return { ...p, f, stale };
}

/** The follower joins the ISR: the leader counts it, the state takes it, the leader counts it in sync. */
async function join(p: Awaited<ReturnType<typeof withFollowerOut>>) {
  const joined = await joinIsr(p.name, 0, p.stale, p.store(p.p0.leader), p.store(p.f), p.tp, Date.now() + 10_000);
  expect(joined?.isr).toContain(p.f);
  invalidateMetadata(p.name);
  const head = (await readHead(p.store(p.p0.leader), p.tp))!;
  expect(head.isr).toContain(p.f);
  return head;
}

describe('Function: setRole, landing late at the epoch the head leads at', () => {
  it('where a follower joined the ISR after the controller read the state, the late push leaves the leader\'s count as it is', async () => {
    const p = await withFollowerOut();
    const before = await join(p);
    // The push the controller computed from the state it read before the join lands now.
    await setRole(p.store(p.p0.leader), p.tp, 'leader', p.stale.leaderEpoch, p.stale.isr);
    const after = (await readHead(p.store(p.p0.leader), p.tp))!;
    expect(after.isr).toContain(p.f);
    expect({ isr: after.isr, joining: after.joining, leaving: after.leaving, isrVersion: after.isrVersion })
      .toEqual({ isr: before.isr, joining: before.joining, leaving: before.leaving, isrVersion: before.isrVersion });
  });

  it('where a late push did shrink the count below the state\'s ISR, acks=all is answered only once every member of the state\'s ISR holds the record', async () => {
    const p = await withFollowerOut();
    await join(p);
    // A count that lacks a member the state has (as a late push left it before the fix, or any
    // other way): the fast commit must not answer from it.
    const leader = p.store(p.p0.leader);
    const head = (await readHead(leader, p.tp))!;
    expect(await setHeadIsr(leader, p.tp, head.leaderEpoch, head.isrVersion, { isr: head.isr.filter((b) => b !== p.f), joining: [], leaving: [] })).toBe(true);
    const [out] = await p.send(['after-the-push']);
    if (!out?.ok || out.offset === null) throw new Error(`the produce failed: ${JSON.stringify(out)}`);
    const state = (await readPartition(p.name, 0))!;
    expect(state.isr).toContain(p.f);
    for (const b of state.isr) {
      const log = await replicaLog(p.store(b), p.tp);
      expect(log.at(-1)?.lastOffset, `broker ${b} (in the state's ISR) holds the acknowledged record`).toBe(out.offset);
    }
  });
});
