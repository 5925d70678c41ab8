/**
 * The console function (lib/http/console.ts) on API Gateway events: files from memory with their
 * types and caching, the page for app paths, the redirect, ETags, HEAD, gzip, config.json from the
 * environment, and the page's Content-Security-Policy; and the API's catch-all sending `/ui/` on
 * to the console when API Gateway does not route it there.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole, type BuiltConsole } from '../../../build/console.js';
import { consoleConfig, consoleHandler, contentSecurityPolicy } from '../../../lib/http/console-server.js';
import { matchStaticRoute, staticRouteKey } from '../../../lib/http/static-routes.js';
import { handler as catchAll } from '../../../lambdas/admin.js';
import { lambdaContext } from '../../../local/gateway.js';

const FIXTURE = path.resolve(import.meta.dirname, '../../fixtures/console');
let dir: string;
let built: BuiltConsole;
let handler: ReturnType<typeof consoleHandler>;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-console-fn-'));
  built = await buildConsole(dir, { entry: path.join(FIXTURE, 'main.ts'), template: path.join(FIXTURE, 'index.html') });
  handler = consoleHandler(dir);
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The event the local gateway (and API Gateway) sends for `method path`. */
function event(method: string, p: string, headers: Record<string, string> = {}, rawQueryString = ''): APIGatewayProxyEventV2 {
  const m = matchStaticRoute(method, p);
  const routeKey = m ? staticRouteKey(m.route) : '$default';
  return {
    version: '2.0', routeKey, rawPath: p, rawQueryString,
    ...(rawQueryString ? { queryStringParameters: Object.fromEntries(new URLSearchParams(rawQueryString)) } : {}), headers: { host: 'localhost', ...headers }, isBase64Encoded: false,
    ...(m && Object.keys(m.pathParameters).length > 0 ? { pathParameters: m.pathParameters } : {}),
    requestContext: {
      accountId: '0', apiId: 'local', domainName: 'localhost', domainPrefix: 'local', requestId: 'r', routeKey, stage: '$default', time: '', timeEpoch: 0,
      http: { method, path: p, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'test' },
    },
  };
}
const call = (method: string, p: string, headers?: Record<string, string>) => handler(event(method, p, headers)) as Promise<APIGatewayProxyStructuredResultV2 & { headers: Record<string, string> }>;
const text = (r: APIGatewayProxyStructuredResultV2) => Buffer.from(r.body ?? '', r.isBase64Encoded ? 'base64' : 'utf8').toString('utf8');

describe('Function: console', () => {
  it('redirects /ui to ui/ (relative: a REST API stage prefix is kept)', async () => {
    const r = await call('GET', '/ui');
    expect(r.statusCode).toBe(301);
    expect(r.headers.location).toBe('ui/');
  });

  it('serves the page at /ui/ and for any app path under it, with no-cache and the security headers', async () => {
    for (const p of ['/ui/', '/ui/index.html', '/ui/topics/orders', '/ui/x']) {
      const r = await call('GET', p);
      expect(r.statusCode, p).toBe(200);
      expect(r.headers['content-type'], p).toBe('text/html; charset=utf-8');
      expect(r.headers['cache-control'], p).toBe('no-cache');
      expect(text(r), p).toContain(`./${built.js}`);
      expect(r.headers['content-security-policy'], p).toContain("script-src 'self'");
      expect(r.headers['content-security-policy'], p).toContain("frame-ancestors 'none'");
      expect(r.headers['x-content-type-options'], p).toBe('nosniff');
      expect(r.headers['referrer-policy'], p).toBe('no-referrer');
    }
  });

  it('serves hashed files with their type and a year of immutable caching; a missing file name is a Kafka-style 404', async () => {
    const js = await call('GET', `/ui/${built.js}`);
    expect(js.statusCode).toBe(200);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(js.headers['content-security-policy']).toBeUndefined();
    const css = await call('GET', `/ui/${built.css}`);
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    const chunk = built.files.find((f) => f.path.startsWith('chunks/'))?.path as string;
    expect((await call('GET', `/ui/${chunk}`)).statusCode).toBe(200);
    const missing = await call('GET', '/ui/app-OLDHASH1.js');
    expect(missing.statusCode).toBe(404);
    expect(JSON.parse(missing.body as string)).toMatchObject({ error_code: 404 });
  });

  it('answers 304 to a matching If-None-Match, and HEAD with the headers and no body', async () => {
    const first = await call('GET', `/ui/${built.js}`);
    const again = await call('GET', `/ui/${built.js}`, { 'if-none-match': first.headers.etag as string });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBeUndefined();
    expect((await call('GET', '/ui/', { 'if-none-match': first.headers.etag as string })).statusCode).toBe(200);
    const head = await call('HEAD', '/ui/');
    expect(head.statusCode).toBe(200);
    expect(head.body).toBeUndefined();
    expect(head.headers.etag).toBe((await call('GET', '/ui/')).headers.etag);
  });

  it('gzips larger text files for a client that accepts it, under another ETag', async () => {
    const plain = await call('GET', `/ui/${built.js}`);
    const big = built.files.find((f) => f.bytes > 1024 && /\.(js|css|html)$/.test(f.path));
    expect(big, 'a text file over 1 KiB').toBeDefined();
    if (!big) return;
    const r = await call('GET', `/ui/${big.path}`, { 'accept-encoding': 'gzip, br' });
    expect(r.headers['content-encoding']).toBe('gzip');
    expect(r.isBase64Encoded).toBe(true);
    expect(gunzipSync(Buffer.from(r.body as string, 'base64')).length).toBe(big.bytes);
    expect(r.headers.etag).not.toBe(plain.headers.etag);
  });

  it('refuses other methods and paths outside /ui with Kafka-style errors', async () => {
    const post = await handler({ ...event('GET', '/ui/'), requestContext: { ...event('GET', '/ui/').requestContext, http: { ...event('GET', '/ui/').requestContext.http, method: 'POST' } } });
    expect(post.statusCode).toBe(405);
    const other = await handler(event('GET', '/no/such/route'));
    expect(other.statusCode).toBe(404);
    expect(JSON.parse(other.body as string)).toMatchObject({ error_code: 404, message: expect.stringContaining('404') });
  });
});

describe('Method: consoleConfig', () => {
  it('tells the app how the API authenticates, the local --auth mode as "token"', () => {
    expect(consoleConfig({})).toEqual({ auth: 'none' });
    expect(consoleConfig({ TRIBUTARY_AUTH: 'token' })).toEqual({ auth: 'token' });
    expect(consoleConfig({ TRIBUTARY_AUTH: 'iam' })).toEqual({ auth: 'iam' });
    expect(consoleConfig({ TRIBUTARY_AUTH: 'jwt' })).toEqual({ auth: 'jwt' });
  });

  it('names a deployment\'s WebSocket API for the live follow, and lets the page connect to its origin', () => {
    const url = 'wss://abc123.execute-api.eu-west-1.amazonaws.com/prod';
    const config = consoleConfig({ TRIBUTARY_AUTH: 'jwt', TRIBUTARY_CONSOLE_WEBSOCKET_URL: url });
    expect(config).toEqual({ auth: 'jwt', websocket: url });
    expect(contentSecurityPolicy(config)).toContain("connect-src 'self' wss://abc123.execute-api.eu-west-1.amazonaws.com;");
  });

  it('names the OIDC provider and client with a JWT authorizer, and lets the page connect to it', () => {
    const env = {
      TRIBUTARY_AUTH: 'jwt', TRIBUTARY_CONSOLE_OIDC_ISSUER: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc',
      TRIBUTARY_CONSOLE_OIDC_CLIENT_ID: 'client-1', TRIBUTARY_CONSOLE_OIDC_SCOPES: 'openid email',
    };
    const config = consoleConfig(env);
    expect(config).toEqual({ auth: 'jwt', oidc: { issuer: env.TRIBUTARY_CONSOLE_OIDC_ISSUER, clientId: 'client-1', scopes: ['openid', 'email'] } });
    const csp = contentSecurityPolicy(config);
    expect(csp).toContain("connect-src 'self' https://cognito-idp.eu-west-1.amazonaws.com https://*.auth.eu-west-1.amazoncognito.com");
    expect(contentSecurityPolicy({ auth: 'none' })).toContain("connect-src 'self';");
  });

  it('lets the page connect to the origins the deployment names besides the issuer (a token endpoint on another host)', () => {
    const config = consoleConfig({
      TRIBUTARY_AUTH: 'jwt', TRIBUTARY_CONSOLE_OIDC_ISSUER: 'https://accounts.google.com', TRIBUTARY_CONSOLE_OIDC_CLIENT_ID: 'c',
      TRIBUTARY_CONSOLE_CONNECT_ORIGINS: 'https://oauth2.googleapis.com https://www.googleapis.com',
    });
    expect(config.oidc?.connectOrigins).toEqual(['https://oauth2.googleapis.com', 'https://www.googleapis.com']);
    expect(contentSecurityPolicy(config)).toContain("connect-src 'self' https://accounts.google.com https://oauth2.googleapis.com https://www.googleapis.com;");
    // Not in sign-in's absence.
    expect(contentSecurityPolicy(consoleConfig({ TRIBUTARY_AUTH: 'iam', TRIBUTARY_CONSOLE_CONNECT_ORIGINS: 'https://evil.example' }))).toContain("connect-src 'self';");
  });
});

describe('The API catch-all ($default) and the console', () => {
  const viaCatchAll = (method: string, p: string, query = '') =>
    catchAll({ ...event(method, p, {}, query), routeKey: '$default' }, lambdaContext('admin')) as Promise<APIGatewayProxyStructuredResultV2 & { headers: Record<string, string> }>;

  it('sends /ui/ (which API Gateway may not match to /ui/{proxy+}) to ui/index.html, keeping an OIDC callback\'s query', async () => {
    const r = await viaCatchAll('GET', '/ui/', 'code=abc&state=xyz');
    expect(r.statusCode).toBe(302);
    expect(r.headers.location).toBe('index.html?code=abc&state=xyz');
    expect((await viaCatchAll('HEAD', '/prod/ui/')).headers.location).toBe('index.html');
    // …which the console serves as its page.
    const page = await call('GET', '/ui/index.html');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
  });

  it('answers anything else it gets with the Kafka-style 404', async () => {
    for (const [method, p] of [['GET', '/ui/x/'], ['POST', '/ui/'], ['GET', '/uix/'], ['GET', '/no/such/route']] as const) {
      const r = await viaCatchAll(method, p);
      expect(r.statusCode, `${method} ${p}`).toBe(404);
      expect(JSON.parse(r.body ?? '')).toMatchObject({ error_code: 404 });
    }
  });
});
