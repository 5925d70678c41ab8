/**
 * The console's OIDC sign-in (a deployment with the construct's `jwtAuthorizer`), in a real
 * browser against a small OpenID provider of this test's own: discovery, an authorize endpoint
 * that hands back a code, and a token endpoint that checks the PKCE verifier against the challenge
 * before issuing an ID token. The console must send the user to the provider, come back with the
 * code, exchange it (S256 PKCE), tidy the URL, and send the ID token as a Bearer token on every
 * API call. (API Gateway's JWT authorizer checks the token in AWS; here the functions run behind
 * the local gateway, which passes it through.)
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole } from '../../build/console.js';
import { FUNCTIONS } from '../../lib/functions/catalog.js';
import { ENVIRONMENT } from '../../lib/config.js';
import { startGateway, type Gateway } from '../../local/gateway.js';
import { launchBrowser, openPage } from '../support/browser.js';
import { restoreEnv } from '../support/env.js';

const CLIENT_ID = 'tributary-console-test';
const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');

/** An OpenID provider that signs in whoever asks, with PKCE checked, and records what it was asked. */
async function startProvider(): Promise<{ url: string; asked: { authorize: URLSearchParams[]; token: URLSearchParams[] }; idToken: () => string; close: () => Promise<void> }> {
  const asked = { authorize: [] as URLSearchParams[], token: [] as URLSearchParams[] };
  const challenges = new Map<string, string>();
  let issued = '';
  let url = '';
  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', url);
    const cors = { 'access-control-allow-origin': req.headers.origin ?? '*', 'access-control-allow-headers': '*' };
    if (req.method === 'OPTIONS') return void res.writeHead(204, cors).end();
    if (u.pathname === '/.well-known/openid-configuration') {
      return void res.writeHead(200, { ...cors, 'content-type': 'application/json' }).end(JSON.stringify({
        issuer: url, authorization_endpoint: `${url}/authorize`, token_endpoint: `${url}/token`, jwks_uri: `${url}/jwks`,
        response_types_supported: ['code'], subject_types_supported: ['public'], id_token_signing_alg_values_supported: ['RS256'],
        code_challenge_methods_supported: ['S256'],
      }));
    }
    if (u.pathname === '/authorize') {
      asked.authorize.push(u.searchParams);
      const code = crypto.randomBytes(8).toString('hex');
      challenges.set(code, u.searchParams.get('code_challenge') ?? '');
      const back = new URL(u.searchParams.get('redirect_uri') ?? '');
      back.searchParams.set('code', code);
      back.searchParams.set('state', u.searchParams.get('state') ?? '');
      return void res.writeHead(302, { location: back.toString() }).end();
    }
    if (u.pathname === '/token' && req.method === 'POST') {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const form = new URLSearchParams(body);
        asked.token.push(form);
        const challenge = challenges.get(form.get('code') ?? '');
        const verified = challenge !== undefined && b64url(crypto.createHash('sha256').update(form.get('code_verifier') ?? '').digest()) === challenge;
        if (!verified) return void res.writeHead(400, { ...cors, 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid_grant' }));
        const now = Math.floor(Date.now() / 1000);
        issued = [b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT' })), b64url(JSON.stringify({ iss: url, aud: CLIENT_ID, sub: 'alice', iat: now, exp: now + 3600 })), b64url('not-checked-here')].join('.');
        res.writeHead(200, { ...cors, 'content-type': 'application/json', 'cache-control': 'no-store' })
          .end(JSON.stringify({ access_token: `access-${crypto.randomBytes(4).toString('hex')}`, id_token: issued, token_type: 'Bearer', expires_in: 3600, scope: 'openid' }));
      });
      return undefined;
    }
    res.writeHead(404, cors).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, asked, idToken: () => issued, close: () => new Promise((r) => server.close(() => r())) };
}

describe('The console signs in with OIDC when the API uses a JWT authorizer', () => {
  let provider: Awaited<ReturnType<typeof startProvider>>;
  let gateway: Gateway;
  let dir: string;
  const saved = { ...process.env };

  beforeAll(async () => {
    provider = await startProvider();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-console-oidc-'));
    Object.assign(process.env, {
      TRIBUTARY_CONSOLE_DIR: (await buildConsole(path.join(dir, 'console'))).outdir,
      [ENVIRONMENT.auth]: 'jwt',
      [ENVIRONMENT.consoleOidcIssuer]: provider.url,
      [ENVIRONMENT.consoleOidcClientId]: CLIENT_ID,
      [ENVIRONMENT.consoleOidcScopes]: 'openid email',
      // (no JWT authorizer in front of the local gateway: the functions see no claims, so User:ANONYMOUS acts)
      TRIBUTARY_SUPER_USERS: 'User:ANONYMOUS',
    });
    const root = path.resolve(import.meta.dirname, '../..');
    const functions = Object.fromEntries(await Promise.all(FUNCTIONS.filter((f) => f.trigger === 'http').map(async (f) =>
      [f.name, ((await import(path.join(root, f.entry))) as { handler: unknown }).handler] as const)));
    gateway = await startGateway({ host: '127.0.0.1', port: 0, functions: functions as never, maxRequestBytes: 6 * 1024 * 1024 });
  });

  afterAll(async () => {
    await gateway?.close();
    await provider?.close();
    restoreEnv(saved);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('goes to the provider, exchanges the code with its PKCE verifier, comes back to the page it left with a tidy URL, and sends the ID token on every API call', async () => {
    expect(await (await fetch(`${gateway.url}/ui/config.json`)).json()).toEqual({ auth: 'jwt', oidc: { issuer: provider.url, clientId: CLIENT_ID, scopes: ['openid', 'email'] } });
    const browser = await launchBrowser();
    try {
      const { page, expectNoPageErrors } = await openPage(browser, `${gateway.url}/ui/#/topics`);
      const authorizations: string[] = [];
      page.on('request', (r) => {
        if (new URL(r.url()).pathname.startsWith('/v3/')) authorizations.push(r.headers().authorization ?? '(none)');
      });
      await page.waitForSelector('::-p-aria([name="Sign in with your identity provider"][role="button"])');
      await page.click('::-p-aria([name="Sign in with your identity provider"][role="button"])');
      // Back on the page the sign-in started from, with its data.
      await page.waitForSelector('::-p-aria([name="Topics"][role="table"])', { timeout: 20_000 });

      const [authorize] = provider.asked.authorize;
      expect(authorize?.get('client_id')).toBe(CLIENT_ID);
      expect(authorize?.get('response_type')).toBe('code');
      expect(authorize?.get('code_challenge_method')).toBe('S256');
      expect(authorize?.get('scope')).toBe('openid email');
      expect(authorize?.get('redirect_uri')).toBe(`${gateway.url}/ui/`);
      expect(provider.asked.token).toHaveLength(1);
      expect(provider.asked.token[0]?.get('grant_type')).toBe('authorization_code');
      expect(new URL(page.url()).search).toBe('');
      expect(new URL(page.url()).hash).toBe('#/topics');
      expect(authorizations.length).toBeGreaterThan(0);
      expect(new Set(authorizations)).toEqual(new Set([`Bearer ${provider.idToken()}`]));
      expectNoPageErrors();
    } finally {
      await browser.close();
    }
  }, 60_000);
});
