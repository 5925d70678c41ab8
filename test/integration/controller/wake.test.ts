/**
 * The controller as the deployment runs it: a Lambda function (the local stack's Lambda-fidelity
 * mode), with no loop process. Its schedule here is an hour away, so it runs only when woken: a
 * data path that finds a broker's store failing writes the broker's `suspectAt`, and the
 * coordination table's stream, filtered to those writes (CONTROLLER_WAKE_PATTERN), invokes it.
 * One store per broker, so a leader's store can really be killed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFaultCluster, type FaultCluster } from '../../support/cluster.js';

const SESSION_TIMEOUT_MS = 3000;
let c: FaultCluster;
beforeAll(async () => {
  c = await startFaultCluster({
    isolatedBrokers: true, controllers: 0, lambda: true, controllerScheduleMs: 3_600_000,
    env: { TRIBUTARY_BROKER_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS), TRIBUTARY_CONTROLLER_TICK_MS: '500' },
  });
}, 120_000);
afterAll(async () => {
  await c?.stop();
});

const controllerInvocations = async (): Promise<number> => {
  const stats = (await c.call('GET', '/local/lambda')).body as { environments: { fn: string; invocations: number }[] };
  return stats.environments.filter((e) => e.fn === 'controller').reduce((n, e) => n + e.invocations, 0);
};

describe('Feature: a suspect report wakes the controller between its scheduled runs', () => {
  it('where the leader\'s store dies, the first produce that finds it failing wakes the controller, which fences it and elects a new leader that acknowledges the retry', async () => {
    const created = await c.call('POST', c.v3('/topics'), { topic_name: 'wake', partitions_count: 1, replication_factor: 3 });
    expect(created.status).toBe(201);
    const first = await c.call('POST', c.v3('/topics/wake/records?acks=all'), { partition_id: 0, value: { type: 'STRING', data: 'before' } });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const leader = (await c.call('GET', c.v3('/topics/wake/partitions/0'))).body.leader.related.split('/').pop() as string;
    // Nothing has run the controller: the schedule is an hour away and nothing was suspect.
    expect(await controllerInvocations()).toBe(0);

    expect((await c.call('POST', `/local/processes/broker-${leader}/kill`)).status).toBe(200);
    const killedAt = Date.now();
    // The first produce finds the store gone: its append's outcome is unknown to it, so it is not
    // retried (REQUEST_TIMED_OUT), and its failure report is what wakes the controller.
    const failed = await c.call('POST', c.v3('/topics/wake/records?acks=all'), { partition_id: 0, value: { type: 'STRING', data: 'lost' } });
    expect(failed.status).toBeGreaterThanOrEqual(500);
    // A client retrying is acknowledged once the controller, and only it, has moved the leader.
    const second = await c.until('a produce acknowledged by a new leader', async () => {
      const r = await c.call('POST', c.v3('/topics/wake/records?acks=all'), { partition_id: 0, value: { type: 'STRING', data: 'after' } });
      return r.status === 200 ? r : undefined;
    }, 30_000);
    expect(second.body.offset).toBe(1);
    // The failure-detection time of the woken controller, reported (docs/architecture.md states the bound).
    process.stdout.write(`wake: kill → retry acknowledged by the new leader in ${Date.now() - killedAt} ms (session timeout ${SESSION_TIMEOUT_MS} ms)\n`);
    expect(await controllerInvocations()).toBeGreaterThanOrEqual(1);
    const now = (await c.call('GET', c.v3('/topics/wake/partitions/0'))).body.leader.related.split('/').pop() as string;
    expect(now).not.toBe(leader);
    const fenced = (await c.call('GET', c.v3(`/brokers/${leader}`))).body;
    expect(fenced).toMatchObject({ broker_id: Number(leader) });
  });
});
