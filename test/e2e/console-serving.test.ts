/**
 * The console served by the same API, same origin: the shared stack's gateway sends
 * `/ui` and `/ui/...` to the console function — here in Lambda-fidelity mode, from its deployed
 * bundle and the build it carries — with the page's security headers, immutable hashed files,
 * ETags, the SPA fallback and config.json; under `--auth` the files need no token while the API does.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole } from '../../build/console.js';
import { startAuthGateway, type AuthGateway } from '../support/auth-gateway.js';
import { launchBrowser, openPage } from '../support/browser.js';
import { baseUrl } from '../support/api.js';

const get = (p: string, init: RequestInit = {}, base = baseUrl()) => fetch(`${base}${p}`, { redirect: 'manual', ...init });

let page: { html: string; etag: string; js: string; css: string | undefined };
beforeAll(async () => {
  const r = await get('/ui/');
  const html = await r.text();
  page = {
    html, etag: r.headers.get('etag') ?? '',
    js: /<script type="module" src="\.\/(app-[A-Z0-9]{8}\.js)"><\/script>/.exec(html)?.[1] ?? '',
    css: /<link rel="stylesheet" href="\.\/(app-[A-Z0-9]{8}\.css)">/.exec(html)?.[1],
  };
});

describe('The console on the local stack', () => {
  it('redirects /ui to /ui/', async () => {
    const r = await get('/ui');
    expect(r.status).toBe(301);
    expect(new URL(r.headers.get('location') ?? '', `${baseUrl()}/ui`).href).toBe(`${baseUrl()}/ui/`);
  });

  it('serves the page at /ui/ with no-cache, a Content-Security-Policy allowing only its own scripts, and no framing', async () => {
    const r = await get('/ui/');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(r.headers.get('cache-control')).toBe('no-cache');
    const csp = r.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self' 'unsafe-inline'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain("'unsafe-eval'");
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    expect(r.headers.get('referrer-policy')).toBe('no-referrer');
    expect(page.js).not.toBe('');
    expect(page.html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
  });

  it('serves the hashed script (and styles) with a year of immutable caching and their content types', async () => {
    const js = await get(`/ui/${page.js}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await js.text()).length).toBeGreaterThan(100);
    if (page.css) {
      const css = await get(`/ui/${page.css}`);
      expect(css.status).toBe(200);
      expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
      expect(css.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    }
  });

  it('answers 304 Not Modified to the ETag it gave, and HEAD with the headers alone', async () => {
    expect(page.etag).toMatch(/^"[^"]+"$/);
    const again = await get('/ui/', { headers: { 'if-none-match': page.etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    const js = await get(`/ui/${page.js}`);
    expect((await get(`/ui/${page.js}`, { headers: { 'if-none-match': js.headers.get('etag') ?? '' } })).status).toBe(304);
    const head = await get('/ui/', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('etag')).toBe(page.etag);
  });

  it('serves the page for any app path under /ui/ that is not a file, and a Kafka-style 404 for a missing script', async () => {
    for (const p of ['/ui/x', '/ui/topics/orders/partitions/0']) {
      const r = await get(p);
      expect(r.status, p).toBe(200);
      expect(await r.text(), p).toBe(page.html);
    }
    const stale = await get('/ui/app-OLDHASH1.js');
    expect(stale.status).toBe(404);
    expect(await stale.json()).toMatchObject({ error_code: 404 });
  });

  it('tells the app the API is open (config.json), not cached', async () => {
    const r = await get('/ui/config.json');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect(r.headers.get('cache-control')).toBe('no-cache');
    expect(await r.json()).toEqual({ auth: 'none' });
  });

  it('runs the console function from its deployed bundle in Lambda-fidelity mode', async () => {
    const stats = await (await get('/local/lambda')).json() as { environments: { fn: string }[] };
    expect(stats.environments.map((e) => e.fn)).toContain('console');
  });
});

describe('The console with --auth', () => {
  let auth: AuthGateway;
  let dir: string;
  const previous = process.env.TRIBUTARY_CONSOLE_DIR;
  beforeAll(async () => {
    // (the auth gateway runs the handlers in this worker: the console function needs a build)
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-console-auth-'));
    process.env.TRIBUTARY_CONSOLE_DIR = (await buildConsole(path.join(dir, 'console'))).outdir;
    auth = await startAuthGateway();
  });
  afterAll(async () => {
    await auth?.close();
    if (previous === undefined) delete process.env.TRIBUTARY_CONSOLE_DIR;
    else process.env.TRIBUTARY_CONSOLE_DIR = previous;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('serves the page, its files and config.json ("token") without credentials, while the API answers 401', async () => {
    const base = auth.gateway.url;
    const html = await get('/ui/', {}, base);
    expect(html.status).toBe(200);
    const js = /src="\.\/(app-[A-Z0-9]{8}\.js)"/.exec(await html.text())?.[1];
    expect((await get(`/ui/${js}`, {}, base)).status).toBe(200);
    expect((await get('/ui', {}, base)).status).toBe(301);
    expect(await (await get('/ui/config.json', {}, base)).json()).toEqual({ auth: 'token' });
    const api = await get('/v3/clusters', {}, base);
    expect(api.status).toBe(401);
    expect(await api.json()).toMatchObject({ error_code: 40101 });
    // Only GET and HEAD of the console are open: anything else under /ui/ is the API's, and needs the token.
    expect((await get('/ui/x', { method: 'POST' }, base)).status).toBe(401);
    expect((await auth.call('GET', '/v3/clusters', auth.adminToken)).status).toBe(200);
  });

  it('asks for a token in a browser, refuses an unknown one, and shows the cluster with User:admin\'s; a 401 later brings the sign-in back', async () => {
    const browser = await launchBrowser();
    try {
      const { page, expectNoPageErrors } = await openPage(browser, `${auth.gateway.url}/ui/#/`);
      await page.waitForSelector('::-p-aria(Token)');
      await page.type('::-p-aria(Token)', 'not-a-token');
      await page.click('::-p-aria([name="Sign in"][role="button"])');
      expect(await (await page.waitForSelector('[role=alert]'))?.evaluate((e) => e.textContent)).toMatch(/401.*not known/);
      await page.$eval('input[name=token]', (e) => { (e as unknown as { value: string }).value = ''; });
      await page.type('::-p-aria(Token)', auth.adminToken);
      await page.click('::-p-aria([name="Sign in"][role="button"])');
      await page.waitForSelector('[data-testid=controller-id]');
      await page.waitForSelector('::-p-aria([name="Sign out"][role="button"])');
      // The token goes stale (as when it is removed from credentials.json): the next refresh's 401 signs out.
      await page.evaluate(`sessionStorage.setItem('tributary.token', 'revoked')`);
      await page.waitForSelector('::-p-aria(Token)', { timeout: 10_000 });
      expectNoPageErrors();
    } finally {
      await browser.close();
    }
  }, 60_000);
});
