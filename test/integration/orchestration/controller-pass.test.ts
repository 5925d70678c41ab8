/**
 * The controller as Lambda runs it (lambdas/controller.ts): a scheduled invocation ticks only while
 * there is work, runs one sweep pass, and returns — on a quiet, healthy cluster after its first
 * tick; at once when another controller holds the lease. A private quiet stack (no controllers).
 */
import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { handler } from '../../../lambdas/controller.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { acquireLease, readLease } from '../../../lib/storage/coordination/lease.js';
import { useQuietCluster } from '../../support/cluster.js';

useQuietCluster();

/** A Lambda context with `ms` left (what the handler reads of it). */
const context = (ms: number): Context => {
  const end = Date.now() + ms;
  return { getRemainingTimeInMillis: () => end - Date.now() } as unknown as Context;
};

describe('Lambda: the controller, a pass at a time', () => {
  it('on a quiet healthy cluster, takes the lease, walks and sweeps once, and returns after one tick', async () => {
    await createTopic({ name: `pass-${process.pid}`, partitions: 6, replicationFactor: 3 });
    const out = await handler({}, context(70_000));
    expect(out).toEqual({ ticks: 1 });
    expect(await readLease()).toMatchObject({ holder: expect.stringMatching(/^controller-/) });
  });

  it('returns after one tick while another controller holds the lease', async () => {
    await acquireLease('another', 60_000, Date.now() + 10_000);
    const out = await handler({}, context(70_000));
    expect(out).toEqual({ ticks: 1 });
    expect(await readLease()).toMatchObject({ holder: 'another' });
  });
});
