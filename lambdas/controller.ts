/**
 * Lambda: the controller. A schedule invokes it every minute; it ticks every controller.tick.ms
 * until shortly before the next invocation. One container keeps one identity, so its lease is
 * renewed across invocations rather than taken again under a new epoch.
 */
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { runController } from '../lib/orchestration/controller-loop.js';

export const handler = middy<unknown, { ticks: number }, Error, Context>().handler(async (_event, context) => {
  const ticks = await runController({ until: () => context.getRemainingTimeInMillis() < 3000 });
  return { ticks };
});
