/** The push endpoints' SSRF guard and the retry backoff, without a stack. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ENVIRONMENT } from '../../../lib/config.js';
import { isBlockedAddress, redactedUrl, sendToEndpoint, urlProblem } from '../../../lib/orchestration/push-endpoints.js';
import { retryDelay } from '../../../lib/orchestration/push-delivery.js';
import { LAMBDA_TARGET_ENTRY, lambdaTargetAllowed, parseLambdaTargets } from '../../../lib/orchestration/push-targets.js';

describe('the push endpoint guard (as in AWS)', () => {
  const saved = process.env[ENVIRONMENT.pushAllowPrivate];
  afterEach(() => {
    if (saved === undefined) delete process.env[ENVIRONMENT.pushAllowPrivate];
    else process.env[ENVIRONMENT.pushAllowPrivate] = saved;
  });

  it('refuses loopback, link-local (instance metadata), private, shared and reserved addresses, IPv4-mapped ones too', () => {
    for (const a of [
      '127.0.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '::', 'fe80::1', 'fd00::1', 'fcab::1',
      '::ffff:127.0.0.1', '::ffff:169.254.169.254', '::7f00:1', '::ffff:0:7f00:1', '64:ff9b:1::1', '2002:7f00:1::', '2001::1', 'fec0::1', '100::1', 'not-an-ip',
    ]) {
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
    expect(urlProblem('https://localhost./x')).toMatch(/local host/);
    expect(urlProblem('https://metadata.internal./x')).toMatch(/local host/);
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

describe('the Lambda targets push subscriptions may invoke', () => {
  const arn = (fn: string) => `arn:aws:lambda:eu-west-1:123456789012:function:${fn}`;
  const saved = process.env[ENVIRONMENT.pushLambdaTargets];
  afterEach(() => {
    if (saved === undefined) delete process.env[ENVIRONMENT.pushLambdaTargets];
    else process.env[ENVIRONMENT.pushLambdaTargets] = saved;
  });

  it('are the entries of the allow-list: an ARN exactly, a prefix ending in *; none without one', () => {
    expect(parseLambdaTargets(` ${arn('a')},,${arn('b-*')} `)).toEqual([arn('a'), arn('b-*')]);
    expect(lambdaTargetAllowed(arn('a'), [arn('a')])).toBe(true);
    expect(lambdaTargetAllowed(arn('a:live'), [arn('a')])).toBe(false);
    expect(lambdaTargetAllowed(arn('ab'), [arn('a')])).toBe(false);
    expect(lambdaTargetAllowed(arn('b-x:live'), [arn('b-*')])).toBe(true);
    expect(lambdaTargetAllowed(arn('b'), [arn('b-*')])).toBe(false);
    expect(lambdaTargetAllowed(arn('a'), [])).toBe(false);
    for (const e of [arn('a'), arn('a:live'), arn('b-*'), arn('*'), arn('a:*')]) expect(LAMBDA_TARGET_ENTRY.test(e), e).toBe(true);
    for (const e of ['*', 'arn:aws:lambda:*', 'arn:aws:lambda:eu-west-1:*', arn('a*b'), 'billing']) expect(LAMBDA_TARGET_ENTRY.test(e), e).toBe(false);
  });

  it('are checked again at each delivery: a function the allow-list no longer names is a failed attempt, not invoked', async () => {
    process.env[ENVIRONMENT.pushLambdaTargets] = arn('other');
    const out = await sendToEndpoint({ type: 'lambda', functionArn: arn('gone') }, '{}', {});
    expect(out).toEqual({ ok: false, error: expect.stringMatching(/^POLICY_VIOLATION: function .*gone is not one/) });
  });
});

describe('an endpoint\'s URL as reads answer it', () => {
  it('replaces the whole query string and a fragment (a parameter\'s name may be a token), drops userinfo, and keeps a URL without them as given', () => {
    expect(redactedUrl('https://hooks.example.com/x?token=s3cr3t&a=1')).toBe('https://hooks.example.com/x?REDACTED');
    expect(redactedUrl('https://hooks.example.com/x?s3cr3t')).toBe('https://hooks.example.com/x?REDACTED');
    expect(redactedUrl('https://hooks.example.com/x?')).toBe('https://hooks.example.com/x?REDACTED');
    expect(redactedUrl('https://hooks.example.com/x#s3cr3t')).toBe('https://hooks.example.com/x#REDACTED');
    expect(redactedUrl('https://u:s3cr3t@hooks.example.com/x')).toBe('https://hooks.example.com/x');
    expect(redactedUrl('https://hooks.example.com:8443/a/b')).toBe('https://hooks.example.com:8443/a/b');
    expect(redactedUrl('https://hooks.example.com')).toBe('https://hooks.example.com');
  });
});

describe('an attempt\'s time', () => {
  it('is settled by a 2xx status at once, whatever the body does after it, and fails past its limit in all', async () => {
    const server = createServer((req, res) => {
      if (req.url === '/dribble') {
        res.writeHead(200);
        const t = setInterval(() => res.write('.'), 100);
        res.on('close', () => clearInterval(t));
      }
      // '/silent': reads the request and never answers
      req.resume();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = (p: string) => `http://127.0.0.1:${(server.address() as AddressInfo).port}${p}`;
    try {
      // (the body never ends: only the status can have settled it within the limit)
      expect(await sendToEndpoint({ type: 'http', url: url('/dribble'), headers: {} }, '{}', {}, 2000)).toEqual({ ok: true });
      const t0 = Date.now();
      expect(await sendToEndpoint({ type: 'http', url: url('/silent'), headers: {} }, '{}', {}, 300)).toEqual({ ok: false, error: 'no answer within 300 ms' });
      expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
      // a header value Node refuses to send is a failed attempt, not a throw
      expect(await sendToEndpoint({ type: 'http', url: url('/dribble'), headers: { authorization: 'Bearer \u20ac' } }, '{}', {}, 300)).toMatchObject({ ok: false });
    } finally {
      server.closeAllConnections();
      server.close();
    }
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
