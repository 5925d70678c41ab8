/**
 * A full sync with a deadline (a Lambda's end), against the real stores on a private quiet stack:
 * it goes no further once the deadline passed — released as it was before its install, its claim
 * left stale during it — and the next sync, taking the stale claim over, finishes it.
 */
import { describe, expect, it } from 'vitest';
import { fullSync, FullSyncDeadline } from '../../../lib/log/full-sync.js';
import { readHead } from '../../../lib/storage/replica/head.js';
import { useQuietCluster } from '../../support/cluster.js';
import { rf3Partition } from '../../support/partition.js';

useQuietCluster();

async function partition() {
  const p = await rf3Partition('sync-deadline');
  expect((await p.send(['a', 'b', 'c'])).every((o) => o.ok)).toBe(true);
  return { ...p, leader: p.store(p.p0.leader), follower: p.store(p.followers[0]!) };
}

describe('Function: fullSync, with a deadline', () => {
  it('past its deadline before the install, stops and leaves the follower as it was, unclaimed', async () => {
    const p = await partition();
    const before = await readHead(p.follower, p.tp);
    await expect(fullSync(p.leader, p.follower, p.tp, { deadline: Date.now() - 1 })).rejects.toBeInstanceOf(FullSyncDeadline);
    expect(await readHead(p.follower, p.tp)).toEqual(before);
  });

  it('past its deadline during the install, leaves its claim stale; the next sync takes it over and finishes', async () => {
    const p = await partition();
    const deadline = Date.now() + 300;
    await expect(fullSync(p.leader, p.follower, p.tp, {
      deadline,
      onStep: async (s) => {
        if (s.phase === 'build') await new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now() + 50)));
      },
    })).rejects.toBeInstanceOf(FullSyncDeadline);
    const claimed = (await readHead(p.follower, p.tp))!;
    expect(claimed.snapshotting).toBeDefined();
    expect(claimed.snapshotRenewedAt).toBe(0);
    expect(await fullSync(p.leader, p.follower, p.tp)).toBe(true);
    expect(await p.logsEqual()).toBe(true);
  });
});
