/**
 * The SDK honours a quota's 429: the error carries the answer's Retry-After, and a retry waits at
 * least that long (never the shorter backoff). The answers come from a fetch that replays what the
 * API sends over quota (the server side is tested in test/e2e/client-quotas.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { TributaryProtocolError } from '../../../client/errors.js';
import { withRetry } from '../../../client/retry.js';
import { Transport } from '../../../client/transport.js';

const overQuota = () => new Response(JSON.stringify({ error_code: 429, message: 'Too many requests: User:alice is over its quota of 5 requests/s (request_rate); retry in 1 s.' }), {
  status: 429, headers: { 'content-type': 'application/json', 'retry-after': '1' },
});

describe('Transport: a 429', () => {
  it('is a retriable error carrying Retry-After in ms', async () => {
    const t = new Transport({ url: 'http://quota.test', fetch: async () => overQuota() });
    const err = await t.call('GET', '/v3/clusters').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TributaryProtocolError);
    expect(err).toMatchObject({ status: 429, errorCode: 429, type: 'HTTP_429', retriable: true, retryAfterMs: 1000 });
  });
});

describe('Function: withRetry', () => {
  it('waits at least Retry-After before retrying a 429, however short the backoff', async () => {
    let calls = 0;
    const t = new Transport({ url: 'http://quota.test', fetch: async () => (++calls === 1 ? overQuota() : new Response('{"ok":true}', { status: 200 })) });
    const started = Date.now();
    const r = await withRetry(() => t.call('GET', '/v3/clusters'), { initialRetryTime: 1, retries: 2 });
    expect(r.status).toBe(200);
    expect(calls).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(990);
  });
});
