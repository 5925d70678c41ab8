/**
 * Lambda: the controller, a pass at a time. A schedule invokes it every minute; each invocation
 * ticks (controller.tick.ms apart) only while there is work — a live broker whose store does not
 * answer (fenced once it has failed for broker.session.timeout.ms while watched), brokers fenced
 * or back, elections — then runs one sweep pass over the lag index (and, when due, the full pass
 * with log maintenance) and returns. Another controller holding the lease ends it at once. So an
 * idle cluster costs one short invocation a minute, not a container ticking around the clock.
 */
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { runController } from '../lib/orchestration/controller-loop.js';
import { armWebSocketWake, flushWakes } from '../lib/orchestration/websocket-wake.js';

armWebSocketWake();

export const handler = middy<unknown, { ticks: number }, Error, Context>().handler(async (_event, context) => {
  // The last sweep pass ends with the loop (runController awaits it): nothing runs after return.
  let ticks: number;
  try {
    ticks = await runController({
      untilIdle: true,
      until: () => context.getRemainingTimeInMillis() < 3000,
      remainingMs: () => context.getRemainingTimeInMillis() - 3000,
    });
  } finally {
    await flushWakes();
  }
  return { ticks };
});
