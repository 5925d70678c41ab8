/**
 * Client quotas end to end: managed over HTTP at `/v3/clusters/{c}/client-quotas`, enforced by the
 * real Lambda handlers on the shared stack's tables.
 *
 * Acting as several principals: the shared stack runs without authentication, so every HTTP
 * caller is `User:ANONYMOUS`, and a quota on it would throttle every other test file running
 * beside this one. The throttling tests therefore call the produce and admin handlers in-process
 * with events as the gateway builds them plus the authorizer's principal
 * (`requestContext.authorizer.lambda.principal`, as the `--auth` token check sets it): the real
 * routes, the real dispatch and the real DynamoDB Local, one principal per test.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { handler as adminHandler } from '../../lambdas/admin.js';
import { handler as produceHandler } from '../../lambdas/produce.js';
import { httpApiEvent } from '../../local/gateway.js';
import { call, clusterId, createTopic, expectError, uniqueTopic, v3 } from '../support/api.js';

const quotaUrl = (principal?: string) => v3(`/client-quotas${principal === undefined ? '' : `/${encodeURIComponent(principal)}`}`);
const principal = (name: string) => `User:quota-e2e-${process.pid}-${name}`;

const context = { getRemainingTimeInMillis: () => 29_000 } as Context;

/** An API Gateway v2 event as the local gateway builds it, from the given principal. */
function event(who: string, method: string, route: string, params: Record<string, string>, body?: unknown): APIGatewayProxyEventV2 {
  let path = route;
  for (const [k, v] of Object.entries(params)) path = path.replace(`{${k}}`, encodeURIComponent(v));
  return httpApiEvent({
    method, url: new URL(path, 'http://localhost'), headers: { host: 'localhost', 'content-type': 'application/json', 'user-agent': 'test' },
    body: body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(body)), route: `${method} ${route}`, params, principal: who,
  });
}

const RECORDS = '/v3/clusters/{cluster_id}/topics/{topic_name}/records';

async function produceAs(who: string, topic: string, value: string): Promise<{ result: APIGatewayProxyStructuredResultV2; ms: number }> {
  const started = performance.now();
  const result = await produceHandler(event(who, 'POST', RECORDS, { cluster_id: clusterId(), topic_name: topic }, { value: { type: 'STRING', data: value } }), context);
  return { result, ms: performance.now() - started };
}

async function latestOffset(topic: string): Promise<number> {
  const r = await call('GET', v3(`/topics/${topic}/partitions/0/offset`));
  expect(r.status, r.text).toBe(200);
  return r.body.latest_offset;
}

const put = (p: string, body: unknown) => call('PUT', quotaUrl(p), body);

/** Another instance sees a quota change within the metadata cache's max age (TRIBUTARY_METADATA_MAX_AGE_MS, 1 s). */
const propagated = () => new Promise((r) => setTimeout(r, 1100));

describe('Client quotas: the admin API', () => {
  it('sets, reads, lists, replaces and deletes a principal\'s quotas', async () => {
    const p = principal('crud');
    const set = await put(p, { producer_byte_rate: 1_048_576, request_rate: 50 });
    expect(set.status, set.text).toBe(200);
    expect(set.body).toMatchObject({ kind: 'KafkaClientQuota', principal: p, producer_byte_rate: 1_048_576, consumer_byte_rate: null, request_rate: 50 });

    const one = await call('GET', quotaUrl(p));
    expect(one.status).toBe(200);
    expect(one.body.metadata.self).toMatch(new RegExp(`/client-quotas/${encodeURIComponent(p)}$`));
    expect(one.body).toMatchObject({ cluster_id: clusterId(), principal: p, producer_byte_rate: 1_048_576, request_rate: 50 });

    const list = await call('GET', quotaUrl());
    expect(list.status).toBe(200);
    expect(list.body.kind).toBe('KafkaClientQuotaList');
    expect(list.body.data.find((q: any) => q.principal === p)).toMatchObject({ producer_byte_rate: 1_048_576 });

    // PUT replaces the whole entity: unset keys are gone.
    expect((await put(p, { consumer_byte_rate: 2048.5 })).status).toBe(200);
    expect((await call('GET', quotaUrl(p))).body).toMatchObject({ producer_byte_rate: null, consumer_byte_rate: 2048.5, request_rate: null });

    expect((await call('DELETE', quotaUrl(p))).status).toBe(204);
    expectError(await call('GET', quotaUrl(p)), 404, 40403);
  });

  it('refuses bad input with 400/40002 and stores nothing', async () => {
    const p = principal('bad');
    const bodies: unknown[] = [
      {}, { producer_byte_rate: 0 }, { producer_byte_rate: -5 }, { request_rate: '10' }, { request_rate: null },
      { producer_byte_rate: 1, fetch_rate: 3 }, [], 'null', '{"producer_byte_rate": 1', { producer_byte_rate: 1e300 },
      // (below DynamoDB's smallest number, 1e-130: found by the fuzz run as a 500)
      { producer_byte_rate: 1e-200 }, { request_rate: 0.0001 },
    ];
    for (const b of bodies) expectError(await put(p, b), 400, 40002);
    expectError(await call('PUT', quotaUrl(p), ''), 400, 40002);
    expectError(await call('GET', quotaUrl(p)), 404, 40403);
    // Principals must be Kafka's Type:name (or <default>).
    for (const bad of ['alice', ':alice', 'User:', 'x'.repeat(600)]) {
      expectError(await put(bad, { request_rate: 1 }), 400, 40002, /Invalid principal/);
    }
    expect((await call('GET', quotaUrl())).body.data.some((q: any) => q.principal === p || q.principal === 'alice')).toBe(false);
  });

  it('answers 404/40403 for a principal without quotas, and to the loser of two racing deletes', async () => {
    expectError(await call('GET', quotaUrl(principal('never'))), 404, 40403);
    expectError(await call('DELETE', quotaUrl(principal('never'))), 404, 40403);
    // The default entity reads like any other (nothing set on the shared stack: it would apply to every test).
    expect([200, 404]).toContain((await call('GET', quotaUrl('<default>'))).status);
    const p = principal('race');
    expect((await put(p, { request_rate: 1000 })).status).toBe(200);
    const [a, b] = await Promise.all([call('DELETE', quotaUrl(p)), call('DELETE', quotaUrl(p))]);
    expect([a.status, b.status].sort()).toEqual([204, 404]);
    expectError(a.status === 404 ? a : b, 404, 40403);
  });

  it('answers 404 for another cluster id', async () => {
    const r = await call('GET', '/v3/clusters/not-this-one/client-quotas');
    expectError(r, 404, 404);
  });
});

describe('Client quotas: enforcement through the handlers', () => {
  it('throttles one principal over its producer_byte_rate (429, Retry-After, nothing written) while another produces unslowed', async () => {
    const alice = principal('alice');
    const bob = principal('bob');
    const [ta, tb] = [uniqueTopic('quota-alice'), uniqueTopic('quota-bob')];
    await Promise.all([createTopic(ta, 1, 1), createTopic(tb, 1, 1)]);
    expect((await put(alice, { producer_byte_rate: 2000 })).status).toBe(200);
    await propagated();
    try {
      const value = 'x'.repeat(1000);
      const aliceRuns = (async () => {
        const out = [];
        for (let i = 0; i < 12; i++) out.push(await produceAs(alice, ta, value));
        return out;
      })();
      const bobRuns = (async () => {
        const out = [];
        for (let i = 0; i < 12; i++) out.push(await produceAs(bob, tb, value));
        return out;
      })();
      const [a, b] = await Promise.all([aliceRuns, bobRuns]);

      const refused = a.filter((r) => r.result.statusCode === 429);
      const accepted = a.filter((r) => r.result.statusCode === 200);
      expect(refused.length, JSON.stringify(a.map((r) => r.result.statusCode))).toBeGreaterThan(0);
      expect(accepted.length + refused.length).toBe(12);
      for (const r of refused) {
        expect(JSON.parse(r.result.body ?? '')).toEqual({ error_code: 429, message: expect.stringMatching(/over its quota of 2000 bytes\/s/) });
        expect(Number(r.result.headers?.['retry-after'])).toBeGreaterThanOrEqual(1);
      }
      // Nothing written for a refused request: the log holds exactly the accepted records.
      expect(await latestOffset(ta)).toBe(accepted.length);

      // Bob has no quota: every request succeeds, none waits.
      expect(b.map((r) => r.result.statusCode)).toEqual(Array(12).fill(200));
      expect(await latestOffset(tb)).toBe(12);
      const ms = b.map((r) => r.ms).sort((x, y) => x - y);
      console.log(`bob's produce latency while alice is throttled: p50 ${ms[6]?.toFixed(0)} ms, max ${ms[11]?.toFixed(0)} ms; alice ${accepted.length} accepted, ${refused.length} refused`);
      expect(ms[6]).toBeLessThan(1000);
    } finally {
      await call('DELETE', quotaUrl(alice));
    }
  });

  it('throttles a principal over its request_rate on any route, before the route runs', async () => {
    const carol = principal('carol');
    expect((await put(carol, { request_rate: 2 })).status).toBe(200);
    await propagated();
    try {
      const statuses: number[] = [];
      let retryAfter: string | undefined;
      for (let i = 0; i < 8; i++) {
        const r = await adminHandler(event(carol, 'GET', '/v3/clusters/{cluster_id}', { cluster_id: clusterId() }), context);
        statuses.push(r.statusCode ?? 0);
        if (r.statusCode === 429) retryAfter = String(r.headers?.['retry-after']);
      }
      expect(statuses).toContain(429);
      expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
      // Another principal at the same moment is not limited.
      const dave = await adminHandler(event(principal('dave'), 'GET', '/v3/clusters/{cluster_id}', { cluster_id: clusterId() }), context);
      expect(dave.statusCode).toBe(200);
    } finally {
      await call('DELETE', quotaUrl(carol));
    }
  });
});
