/**
 * The signature of a push delivery (Standard Webhooks): what signWebhook writes verifyWebhook
 * accepts; a changed body, another secret, a stale or future timestamp and missing headers are
 * refused; the signature is the specification's HMAC-SHA256, as node:crypto computes it. The SDK
 * exports the same functions a receiver uses.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import * as sdk from '../../../client/index.js';
import { newWebhookSecret, signWebhook as signHeaders, verifyWebhook } from '../../../lib/protocol/webhook-signature.js';

const body = JSON.stringify({ subscription_name: 'orders-hook', records: [{ offset: 0, value: 'a' }] });
const now = 1_700_000_000;
/** The signed headers as a receiver's header map holds them. */
const signWebhook = async (...args: Parameters<typeof signHeaders>): Promise<Record<string, string>> => ({ ...(await signHeaders(...args)) });

describe('Method: webhook signatures', () => {
  it('verifies what it signed, with header names in any case and a rotated secret among several signatures', async () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const headers = await signWebhook(secret, 'msg_1', now, body);
    expect(headers['webhook-id']).toBe('msg_1');
    expect(headers['webhook-timestamp']).toBe(String(now));
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(await verifyWebhook(secret, headers, body, { nowSeconds: now })).toBe(true);
    const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    expect(await verifyWebhook(secret, upper, body, { nowSeconds: now + 10 })).toBe(true);
    const old = await signWebhook(newWebhookSecret(), 'msg_1', now, body);
    const both = { ...headers, 'webhook-signature': `${old['webhook-signature']} ${headers['webhook-signature']}` };
    expect(await verifyWebhook(secret, both, body, { nowSeconds: now })).toBe(true);
  });

  it('refuses a tampered body, another secret, a stale or future timestamp, and missing or malformed headers', async () => {
    const secret = newWebhookSecret();
    const headers = await signWebhook(secret, 'msg_2', now, body);
    expect(await verifyWebhook(secret, headers, body.replace('"a"', '"b"'), { nowSeconds: now })).toBe(false);
    expect(await verifyWebhook(newWebhookSecret(), headers, body, { nowSeconds: now })).toBe(false);
    expect(await verifyWebhook(secret, headers, body, { nowSeconds: now + 301 })).toBe(false);
    expect(await verifyWebhook(secret, headers, body, { nowSeconds: now - 301 })).toBe(false);
    expect(await verifyWebhook(secret, headers, body, { nowSeconds: now + 900, toleranceSeconds: 1000 })).toBe(true);
    expect(await verifyWebhook(secret, { ...headers, 'webhook-id': 'msg_3' }, body, { nowSeconds: now })).toBe(false);
    expect(await verifyWebhook(secret, { ...headers, 'webhook-timestamp': String(now + 1) }, body, { nowSeconds: now })).toBe(false);
    expect(await verifyWebhook(secret, { ...headers, 'webhook-timestamp': `${now}.5` }, body, { nowSeconds: now })).toBe(false);
    expect(await verifyWebhook(secret, { ...headers, 'webhook-signature': (headers['webhook-signature'] ?? '').replace('v1,', 'v2,') }, body, { nowSeconds: now })).toBe(false);
    const { 'webhook-signature': _signature, ...unsigned } = headers;
    expect(await verifyWebhook(secret, unsigned, body, { nowSeconds: now })).toBe(false);
    // Without nowSeconds, the receiver's clock: a signature made now is fresh, one made at `now` (long past) is not.
    expect(await verifyWebhook(secret, await signWebhook(secret, 'msg_4', Date.now() / 1000, body), body)).toBe(true);
    expect(await verifyWebhook(secret, headers, body)).toBe(false);
  });

  it('signs HMAC-SHA256 over `id.timestamp.body` with the secret\'s base64 key, as node:crypto does and as the specification\'s example says', async () => {
    const secret = newWebhookSecret();
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    const expected = createHmac('sha256', key).update(`msg_5.${now}.${body}`).digest('base64');
    expect((await signWebhook(secret, 'msg_5', now, body))['webhook-signature']).toBe(`v1,${expected}`);
    // The Standard Webhooks specification's example delivery.
    const spec = { secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', id: 'msg_p5jXN8AQM9LWM0D4loKWxJek', ts: 1614265330, body: '{"test": 2432232314}' };
    const specHeaders = await signWebhook(spec.secret, spec.id, spec.ts, spec.body);
    expect(specHeaders['webhook-signature']).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
    expect(await verifyWebhook(spec.secret, specHeaders, spec.body, { nowSeconds: spec.ts })).toBe(true);
  });

  it('is what the SDK exports to receivers', () => {
    expect(sdk.verifyWebhook).toBe(verifyWebhook);
    expect(sdk.signWebhook).toBe(signHeaders);
    expect(sdk.newWebhookSecret).toBe(newWebhookSecret);
  });
});
