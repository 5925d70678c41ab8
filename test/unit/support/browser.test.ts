/**
 * The browser harness checks itself in one real headless Chromium launch: axe-core flags an
 * unlabelled input and passes a labelled one, a page's uncaught errors fail it, the keyboard walk
 * tells a reachable, visibly focused link from a hidden or unreachable one, screenshots land in
 * the artifacts. Pages come from a tiny local HTTP server.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS_DIR, checkA11y, checkKeyboard, chromiumOf, findChromium, launchBrowser, openPage, screenshot, SYSTEM_CHROMIUMS } from '../../support/browser.js';

const doc = (body: string, head = '') => `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>self-test</title>${head}</head><body>${body}</body></html>`;

const PAGES: Record<string, string> = {
  '/labelled': doc('<main><h1>Create topic</h1><form><label for="name">Name</label><input id="name"><button type="submit">Create</button></form></main>'),
  '/unlabelled': doc('<main><h1>Create topic</h1><form><label for="name">Name</label><input id="name"><input id="partitions" type="number"><button type="submit">Create</button></form></main>'),
  '/broken': doc('<main><h1>Broken</h1><img alt="" src="/missing.png"></main><script>setTimeout(() => { throw new Error("boom in the page"); }, 0);</script>'),
  '/keyboard': doc(
    '<nav aria-label="Main"><a href="#/">Cluster</a> <a href="#/topics">Topics</a> <a class="hidden-focus" href="#/acls">ACLs</a></nav>'
    + '<main><h1>Topics</h1><button type="button">Create topic</button><button type="button" tabindex="-1">Delete topic</button></main>',
    '<style>.hidden-focus:focus { outline: none; }</style>',
  ),
};

/** The error a promise rejects with; a promise that resolves fails the test. */
async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection, but the promise resolved');
}

let server: http.Server;
let base: string;
let browser: Browser;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const page = PAGES[req.url ?? ''];
    res.writeHead(page ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' }).end(page ?? 'not found');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => server?.close(r));
});

describe('Function: findChromium', () => {
  const none = () => false;

  it('takes CHROME_PATH first, then a system Chromium, and refuses a CHROME_PATH that does not exist', async () => {
    const everywhere = () => true;
    expect(await findChromium({ env: { CHROME_PATH: '/opt/chrome/chrome' }, exists: everywhere })).toEqual({ executablePath: '/opt/chrome/chrome', args: [], source: 'CHROME_PATH' });
    expect(await findChromium({ env: {}, exists: (f) => f === '/usr/bin/chromium-browser' })).toEqual({ executablePath: '/usr/bin/chromium-browser', args: [], source: 'system' });
    expect(await findChromium({ env: {}, exists: everywhere })).toMatchObject({ executablePath: SYSTEM_CHROMIUMS[0] });
    await expect(findChromium({ env: { CHROME_PATH: '/nowhere/chrome' }, exists: none })).rejects.toThrow(/CHROME_PATH is \/nowhere\/chrome, which does not exist/);
  });

  it('without a system Chromium, uses the binary inside @sparticuz/chromium with its flags', async () => {
    const found = await findChromium({ env: {}, exists: none });
    expect(found.source).toBe('@sparticuz/chromium');
    expect(fs.existsSync(found.executablePath)).toBe(true);
    expect(found.args).toContain('--no-sandbox');
  });

  it('launches the Chromium it finds on this machine, with a language Intl accepts even under LANG=C', async () => {
    expect(chromiumOf(browser)?.source).toBeDefined();
    expect(await browser.version()).toMatch(/Chrome\/\d+/);
    const { page } = await openPage(browser, `${base}/labelled`);
    expect(await page.evaluate(() => (globalThis as any).navigator.language)).toBe('en-US');
    expect(await page.evaluate(() => new Intl.NumberFormat((globalThis as any).navigator.language).format(1234.5))).toBe('1,234.5');
    await page.close();
  });
});

describe('Function: checkA11y', () => {
  it('passes a form whose inputs all have labels', async () => {
    const { page } = await openPage(browser, `${base}/labelled`);
    expect((await checkA11y(page)).filter((v) => v.impact === 'critical' || v.impact === 'serious')).toEqual([]);
    await page.close();
  });

  it('fails a form with an unlabelled input, naming the rule and the element', async () => {
    const { page } = await openPage(browser, `${base}/unlabelled`);
    const failure = await rejection(checkA11y(page));
    expect(failure.message).toMatch(/1 accessibility violation\(s\) at or above serious/);
    expect(failure.message).toMatch(/- label \(critical\): Form elements must have labels\n\s+at #partitions\n/);
    expect(failure.message).not.toMatch(/#name/);
    // The same page passes when the caller turns that rule off.
    expect(await checkA11y(page, { disableRules: ['label'] })).toEqual([]);
    await page.close();
  });
});

describe('Function: openPage', () => {
  it('records an uncaught error and a failed request, and fails on the error', async () => {
    const p = await openPage(browser, `${base}/broken`);
    await expect.poll(() => p.problems.pageErrors.length).toBe(1);
    expect(p.problems.pageErrors[0]).toMatch(/boom in the page/);
    // (the image's 404 and the script's error are separate events: either may come first)
    await expect.poll(() => p.problems.failedRequests).toEqual([`GET ${base}/missing.png: 404`]);
    expect(() => p.expectNoPageErrors()).toThrow(/the page had 1 uncaught error\(s\):\n\s+- Error: boom in the page/);
    await p.page.close();
  });
});

describe('Function: checkKeyboard', () => {
  it('reaches nav links and buttons by Tab with visible focus', async () => {
    const { page, expectNoPageErrors } = await openPage(browser, `${base}/keyboard`);
    const stops = await checkKeyboard(page, [{ role: 'link', name: 'Cluster' }, { role: 'link', name: 'Topics' }, { role: 'button', name: 'Create topic' }]);
    expect(stops.map((s) => s.element)).toEqual(['a "Cluster"', 'a "Topics"', 'a "ACLs"', 'button "Create topic"']);
    expectNoPageErrors();
    await page.close();
  });

  it('fails a link whose focus is hidden and a button Tab never reaches', async () => {
    const { page } = await openPage(browser, `${base}/keyboard`);
    const failure = await rejection(checkKeyboard(page, [{ role: 'link', name: 'ACLs' }, { role: 'button', name: 'Delete topic' }]));
    expect(failure.message).toMatch(/link "ACLs" takes focus without showing it/);
    expect(failure.message).toMatch(/button "Delete topic" is not reached by Tab/);
    await expect(checkKeyboard(page, [{ role: 'button', name: 'No such button' }])).rejects.toThrow(/no button named "No such button"/);
    await page.close();
  });
});

describe('Function: screenshot', () => {
  it('writes a PNG to the artifacts, and to docs/images only with UPDATE_SCREENSHOTS=1', async () => {
    const { page } = await openPage(browser, `${base}/labelled`);
    const saved = process.env.UPDATE_SCREENSHOTS;
    delete process.env.UPDATE_SCREENSHOTS;
    try {
      const files = await screenshot(page, 'harness-self-test', { docs: 'harness-self-test-docs' });
      expect(files).toEqual([path.join(ARTIFACTS_DIR, 'harness-self-test.png')]);
      expect(fs.readFileSync(files[0]!).subarray(1, 4).toString()).toBe('PNG');
    } finally {
      if (saved !== undefined) process.env.UPDATE_SCREENSHOTS = saved;
    }
    await expect(screenshot(page, '../escape')).rejects.toThrow(/lowercase words/);
    await expect(screenshot(page, 'fine', { docs: '../escape' })).rejects.toThrow(/lowercase words/);
    await page.close();
  });
});
