/**
 * The controller lease on the real coordination table: one holder per epoch, takeover only after
 * expiry, and a deposed controller's writes fenced by the lease check in every transaction.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Controller } from '../../../lib/cluster/controller.js';
import { acquireLease, LeaseLost, readLease, renewLease } from '../../../lib/storage/coordination/lease.js';
import { setBrokerState } from '../../../lib/storage/coordination/brokers.js';
import { startFaultCluster, type FaultCluster } from '../../support/cluster.js';

// A private stack without controller loops: these controllers tick by hand, with made-up clocks.
let c: FaultCluster;
beforeAll(async () => {
  c = await startFaultCluster({ isolatedBrokers: false, controllers: 0 });
}, 60_000);
afterAll(async () => {
  await c?.stop();
});

describe('Controller lease', () => {
  it('where two controllers race for the lease, exactly one gets each epoch', async () => {
    const before = (await readLease())?.epoch ?? 0;
    const now = Date.now() + 10 * 60_000; // past any lease an earlier test left behind
    const results = await Promise.all(['a', 'b', 'c', 'd'].map((id) => acquireLease(`race-${id}`, 5000, now)));
    const winners = results.filter((r) => r !== undefined);
    expect(winners).toHaveLength(1);
    expect(winners[0]?.epoch).toBe(before + 1);
    expect((await readLease())?.holder).toBe(winners[0]?.holder);
  });

  it('where the holder stalls past expiry, another takes over under the next epoch and the old one can write nothing', async () => {
    const t0 = Date.now() + 20 * 60_000;
    const a = new Controller({ id: 'stall-a', tickMs: 1000, leaseMs: 3000, sessionTimeoutMs: 60_000 });
    const b = new Controller({ id: 'stall-b', tickMs: 1000, leaseMs: 3000, sessionTimeoutMs: 60_000 });
    expect((await a.tick(t0)).role).toBe('controller');
    expect((await b.tick(t0 + 1000)).role).toBe('standby');
    const old = a.held;
    // a stalls (no renewal) for longer than its lease...
    const taken = await b.tick(t0 + 4000);
    expect(taken.role).toBe('controller');
    expect(taken.epoch).toBe((old?.epoch ?? 0) + 1);
    // ...and when it wakes up, its writes are fenced and it stands by.
    await expect(setBrokerState(old!, 1, 'alive')).rejects.toBeInstanceOf(LeaseLost);
    expect(await renewLease(old!, 3000, t0 + 4500)).toBeUndefined();
    expect((await a.tick(t0 + 4500)).role).toBe('standby');
    expect(a.held).toBeUndefined();
    expect((await readLease())?.holder).toBe('stall-b');
  });
});
