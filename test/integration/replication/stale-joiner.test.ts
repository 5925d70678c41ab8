/**
 * A joiner that died between its steps, against the real stores on a private quiet stack: its
 * entry in the leader's `joining` must not hold the high watermark for good. While the joiner
 * may live the entry holds (the high watermark waits for a member it knows no log end of); once
 * it is older than any joiner lives, `replicate` settles it by the partition state.
 * spec/replication.qnt models it (`joinCrash`, `settleJoin`; docs/model.md).
 */
import { describe, expect, it } from 'vitest';
import { JOIN_STALE_MS, shrinkWithCount } from '../../../lib/cluster/isr-count.js';
import { replicate } from '../../../lib/log/commit.js';
import { alterPartition, readPartition } from '../../../lib/storage/coordination/partitions.js';
import { claimHead } from '../../../lib/storage/replica/claims.js';
import { readHead, setHeadIsr } from '../../../lib/storage/replica/head.js';
import { useQuietCluster } from '../../support/cluster.js';
import { hookStoreClient } from '../../support/store-hooks.js';
import { rf3Partition } from '../../support/partition.js';

useQuietCluster();

/**
 * A partition whose follower `f` left the ISR and is in the leader's `joining` since `since`
 * (undefined: an entry that carries no time), with no joiner alive; `f`'s log end is unknown to
 * the leader, and records wait above the high watermark. When the state took `f` (the joiner died
 * after its second step), `f`'s store does not answer; otherwise its head is claimed by a full sync.
 */
async function withJoiningLeftBehind(since: number | undefined, stateTakesIt = false) {
  const p = await rf3Partition('stale-join');
  const [f] = p.followers as [number];
  const leader = p.store(p.p0.leader);
  await shrinkWithCount(p.name, 0, leader, p.tp, p.p0.leaderEpoch, f, 'a test takes it out', p.p0);
  const h = (await readHead(leader, p.tp))!;
  expect(await setHeadIsr(leader, p.tp, h.leaderEpoch, h.isrVersion, {
    isr: h.isr, joining: [f], leaving: [], ...(since === undefined ? {} : { joiningSince: { [String(f)]: since } }),
  })).toBe(true);
  if (stateTakesIt) {
    const state = (await readPartition(p.name, 0))!;
    await alterPartition(p.name, state, { isr: state.replicas.filter((r) => state.isr.includes(r) || r === f) });
  }
  if (stateTakesIt) {
    const fs = p.store(f);
    hookStoreClient(fs.endpoint, 'initialize', (next) => async (args) => {
      if ((args.input as { TableName?: string }).TableName === fs.replicaTable) throw Object.assign(new Error('connect ECONNREFUSED (refused by the test hook)'), { code: 'ECONNREFUSED', $metadata: {} });
      return next(args);
    });
  } else {
    expect(await claimHead(p.store(f), p.tp, Date.now())).toBe(true);
  }
  const [out] = await p.send(['waits'], { acks: 1 });
  expect(out?.ok).toBe(true);
  const run = () => replicate(p.name, p.topic.topicId, 0, { until: h.leo + 1, deadline: Date.now() + 2_000, shrinkOnFailure: false, lagTimeMaxMs: 60_000 });
  return { ...p, f, leader, leo: h.leo + 1, run };
}

describe('Function: replicate, with a joining entry a dead joiner left', () => {
  it('settles an entry older than any joiner lives: the state never took the follower, so it leaves the count and the high watermark moves', async () => {
    const p = await withJoiningLeftBehind(Date.now() - JOIN_STALE_MS - 1000);
    const r = await p.run();
    expect(r.highWatermark).toBe(p.leo);
    const head = (await readHead(p.leader, p.tp))!;
    expect(head.joining).toEqual([]);
    expect(head.isr).not.toContain(p.f);
  });

  it('settles an entry that carries no time the same way', async () => {
    const p = await withJoiningLeftBehind(undefined);
    expect((await p.run()).highWatermark).toBe(p.leo);
    expect((await readHead(p.leader, p.tp))!.joining).toEqual([]);
  });

  it('counts a stale joiner in sync when the state took it before the joiner died (and the high watermark waits for it)', async () => {
    const p = await withJoiningLeftBehind(Date.now() - JOIN_STALE_MS - 1000, true);
    const r = await p.run();
    const head = (await readHead(p.leader, p.tp))!;
    expect(head.joining).toEqual([]);
    expect(head.isr).toContain(p.f);
    expect(r.highWatermark).toBeLessThan(p.leo);
  });

  it('leaves an entry alone while its joiner may still live: the high watermark waits for the member', async () => {
    const p = await withJoiningLeftBehind(Date.now());
    const r = await p.run();
    expect(r.highWatermark).toBeLessThan(p.leo);
    expect((await readHead(p.leader, p.tp))!.joining).toEqual([p.f]);
  });
});
