/**
 * The garbage pass's clock, against the real coordination table on a private quiet stack (no
 * controllers of its own): in AWS no Lambda container lives the hour between two passes, so the
 * clock is the table's, and a fresh container runs the pass when the table says it is due.
 */
import { describe, expect, it } from 'vitest';
import { ReplicationSweep } from '../../../lib/orchestration/sweep.js';
import { useQuietCluster } from '../../support/cluster.js';

useQuietCluster();

const every = { garbageEveryMs: 1000, fullPassMs: 3_600_000 };

describe('Class: ReplicationSweep, its garbage pass', () => {
  it('runs a period after the clock started, in a container that was not there when it started; two finding it due at once run it once', async () => {
    const t0 = Date.now();
    const first = new ReplicationSweep(every);
    // A new cluster's clock starts at its first pass: no garbage pass yet.
    expect((await first.sweep(t0)).garbage).toBe(false);
    expect((await first.sweep(t0 + 500)).garbage).toBe(false);
    // A fresh container (its first pass) a period later runs it.
    expect((await new ReplicationSweep(every).sweep(t0 + 1500)).garbage).toBe(true);
    // The first container, whose clock is stale, learns the pass ran and does not run it again.
    expect((await first.sweep(t0 + 1600)).garbage).toBe(false);
    // Two fresh containers a period after that: one runs it.
    const both = await Promise.all([new ReplicationSweep(every).sweep(t0 + 3000), new ReplicationSweep(every).sweep(t0 + 3000)]);
    expect(both.map((r) => r.garbage).sort()).toEqual([false, true]);
  });
});
