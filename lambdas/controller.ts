/**
 * Lambda: the controller. A schedule invokes it every minute; it ticks every controller.tick.ms
 * (and, holding the lease, sweeps lagging partitions: lib/orchestration/sweep.ts) until shortly
 * before the next invocation. One container keeps one identity, so its lease is
 * renewed across invocations rather than taken again under a new epoch.
 */
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { runController } from '../lib/orchestration/controller-loop.js';

export const handler = middy<unknown, { ticks: number }, Error, Context>().handler(async (_event, context) => {
  // The last sweep pass ends with the loop (runController awaits it): nothing runs after return.
  const ticks = await runController({
    until: () => context.getRemainingTimeInMillis() < 3000,
    remainingMs: () => context.getRemainingTimeInMillis() - 3000,
  });
  return { ticks };
});
