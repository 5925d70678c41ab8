/** The push endpoints' SSRF guard and the retry backoff, without a stack. */
import { afterEach, describe, expect, it } from 'vitest';
import { ENVIRONMENT } from '../../../lib/config.js';
import { isBlockedAddress, sendToEndpoint, urlProblem } from '../../../lib/orchestration/push-endpoints.js';
import { retryDelay } from '../../../lib/orchestration/push-delivery.js';

describe('the push endpoint guard (as in AWS)', () => {
  const saved = process.env[ENVIRONMENT.pushAllowPrivate];
  afterEach(() => {
    if (saved === undefined) delete process.env[ENVIRONMENT.pushAllowPrivate];
    else process.env[ENVIRONMENT.pushAllowPrivate] = saved;
  });

  it('refuses loopback, link-local (instance metadata), private, shared and reserved addresses, IPv4-mapped ones too', () => {
    for (const a of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '::', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::ffff:169.254.169.254', 'not-an-ip']) {
      expect(isBlockedAddress(a), a).toBe(true);
    }
    for (const a of ['8.8.8.8', '172.32.0.1', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) expect(isBlockedAddress(a), a).toBe(false);
  });

  it('asks for https and a public host unless the local stack allows private ones', () => {
    delete process.env[ENVIRONMENT.pushAllowPrivate];
    expect(urlProblem('https://hooks.example.com/x')).toBeUndefined();
    expect(urlProblem('http://hooks.example.com/x')).toMatch(/https/);
    expect(urlProblem('https://127.0.0.1/x')).toMatch(/address/);
    expect(urlProblem('https://[::1]/x')).toMatch(/address/);
    expect(urlProblem('https://169.254.169.254/latest/meta-data')).toMatch(/address/);
    expect(urlProblem('https://localhost:8080/x')).toMatch(/local host/);
    expect(urlProblem('https://user:pw@hooks.example.com/x')).toMatch(/credentials/);
    expect(urlProblem('file:///etc/passwd')).toMatch(/http or https/);
    process.env[ENVIRONMENT.pushAllowPrivate] = 'true';
    expect(urlProblem('http://127.0.0.1:9999/x')).toBeUndefined();
  });

  it('does not connect to a name that resolves to a blocked address (checked at delivery, so DNS cannot be rebound past it)', async () => {
    process.env[ENVIRONMENT.pushAllowPrivate] = 'false';
    // (localhost resolves to loopback: the connection is refused before any packet is sent)
    const out = await sendToEndpoint({ type: 'http', url: 'http://localhost:9/x', headers: {} }, '{}', {});
    expect(out).toEqual({ ok: false, error: expect.stringMatching(/may not reach/) });
  });
});

describe('the retry backoff', () => {
  it('doubles from 250-500 ms up to 30-60 s, half of it random', () => {
    expect(retryDelay(1, () => 0)).toBe(250);
    expect(retryDelay(1, () => 1)).toBe(500);
    expect(retryDelay(3, () => 0.5)).toBe(1500);
    expect(retryDelay(20, () => 0)).toBe(30_000);
    expect(retryDelay(20, () => 1)).toBe(60_000);
  });
});
