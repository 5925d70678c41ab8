/**
 * The console's schema pages and decoded records, in a real headless Chromium against the shared
 * stack (its console is built from this tree at the stack's start): an AVRO subject with two
 * versions registered through the HTTP API is listed with its latest version, type and own
 * compatibility level; its page shows each version's schema and the line diff of the two; a record
 * produced in the wire format (with a plain string key) is shown decoded in the message browser,
 * linked to its subject's version, beside a plain JSON record shown as before. Each page passes
 * axe-core and the keyboard walk.
 */
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { baseUrl, call, createTopic, uniqueTopic, v3 } from '../support/api.js';
import { checkA11y, checkKeyboard, launchBrowser, openPage, screenshot, type ConsolePage, tableRowsOf } from '../support/browser.js';

const topic = uniqueTopic('console-schemas');
const subject = `${topic}-value`;
const v1 = { type: 'record', name: 'Reading', namespace: 'tributary.console', fields: [{ name: 'sensor', type: 'string' }, { name: 'count', type: 'int' }] };
/** int → long (a promotion BACKWARD allows), and a field with a default. */
const v2 = { ...v1, fields: [{ name: 'sensor', type: 'string' }, { name: 'count', type: 'long' }, { name: 'unit', type: 'string', default: 'C' }] };
let ids: [number, number];

let browser: Browser;
let tab: ConsolePage;
let page: Page;
let ui: string;

async function register(schema: unknown): Promise<number> {
  const r = await call('POST', `/subjects/${subject}/versions`, { schema: JSON.stringify(schema) });
  expect(r.status, r.text).toBe(200);
  return r.body.id;
}

beforeAll(async () => {
  browser = await launchBrowser();
  await createTopic(topic, 1, 3);
  ids = [await register(v1), await register(v2)];
  expect((await call('PUT', `/config/${subject}`, { compatibility: 'FULL' })).status).toBe(200);
  const produce = async (body: unknown) => {
    const r = await call('POST', v3(`/topics/${topic}/records`), body);
    expect(r.status, r.text).toBe(200);
  };
  await produce({ key: { type: 'STRING', data: 'k-avro' }, value: { type: 'AVRO', schema_id: ids[1], data: { sensor: 'greenhouse-7', count: 41, unit: 'K' } } });
  await produce({ key: { type: 'STRING', data: 'k-plain' }, value: { type: 'JSON', data: { plain: true } } });
  ui = `${baseUrl()}/ui/`;
  tab = await openPage(browser, ui);
  page = tab.page;
  page.setDefaultTimeout(15_000);
}, 60_000);

afterEach(() => {
  tab?.expectNoPageErrors();
});

afterAll(async () => {
  await browser?.close();
});

const tableRows = (caption: string): Promise<string[][] | undefined> => tableRowsOf(page, caption);

const text = (selector: string): Promise<string | undefined> => page.evaluate((s) => (globalThis as any).document.querySelector(s)?.textContent as string | undefined, selector);

async function waitFor<T>(what: string, read: () => Promise<T | undefined | false>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const last = await read();
    if (last !== undefined && last !== false) return last as T;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what} in ${page.url()}; last read ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const aria = (role: string, name: string) => `::-p-aria([name=${JSON.stringify(name)}][role=${JSON.stringify(role)}])`;

/**
 * axe-core, and the Tab walk reaching `keys`. The walk starts where focus last was (a click sets
 * Chromium's starting point), so a page is loaded afresh first, and `ready` waits for its data.
 */
async function accessible(keys: { role: string; name: string }[], ready: () => Promise<unknown>): Promise<void> {
  await page.reload({ waitUntil: 'load' });
  await waitFor('the page\'s data after a fresh load', async () => (await ready()) || undefined);
  await checkA11y(page);
  await checkKeyboard(page, keys);
}

/** The pretty-printed text of a version as the registry holds it (its canonical form: keys sorted). */
async function registered(version: number): Promise<string> {
  const r = await call('GET', `/subjects/${subject}/versions/${version}`);
  return JSON.stringify(JSON.parse(r.body.schema), null, 2);
}

describe('The console\'s schema pages', () => {
  it('lists the subject with its latest version, id, type and its own compatibility level, from the Schemas link', async () => {
    await page.goto(`${ui}#/`);
    await page.locator(aria('link', 'Schemas')).click();
    const row = await waitFor('the subject in the subjects table', async () => (await tableRows('Subjects'))?.find((r) => r[0] === subject));
    expect(row).toEqual([subject, '2', String(ids[1]), 'AVRO', 'FULL']);
    expect(await text('[data-testid="global-level"]')).toBe('BACKWARD');
    await accessible([{ role: 'link', name: 'Schemas' }, { role: 'button', name: 'Refresh' }, { role: 'link', name: subject }], async () => (await tableRows('Subjects'))?.some((r) => r[0] === subject));
    await screenshot(page, 'schemas');
  }, 45_000);

  it('shows the subject\'s versions, the chosen version\'s schema pretty-printed, and the changed line of the diff as removed and added', async () => {
    await page.goto(`${ui}#/schemas`);
    await page.locator(aria('link', subject)).click();
    const versions = await waitFor('the versions table', async () => {
      const r = await tableRows('Versions');
      return r?.length === 2 ? r : undefined;
    });
    expect(versions).toEqual([['1', String(ids[0]), 'AVRO'], ['2', String(ids[1]), 'AVRO']]);
    expect(await text('[data-testid="schema"]')).toBe(await registered(2));

    const diff = await waitFor('the diff', () => page.evaluate(() => {
      const pre = (globalThis as any).document.querySelector('[data-testid="diff"]');
      // (each line is "+ " or "- " and the line as it is indented in the schema)
      const lines = (sel: string) => [...pre.querySelectorAll(sel)].map((e: any) => `${e.textContent.slice(0, 1)} ${e.textContent.slice(2).trim()}`);
      return pre ? { ins: lines('ins'), del: lines('del') } : undefined;
    }));
    expect(diff.del).toContain('- "type": "int"');
    expect(diff.ins).toContain('+ "type": "long"');
    expect(diff.ins).toContain('+ "name": "unit",');
    expect(diff.del).not.toContain('- "name": "sensor",');
    expect(await text('[data-testid="diff-summary"]')).toMatch(/^\d+ lines added, \d+ removed\.$/);
    await accessible([{ role: 'link', name: 'All subjects' }, { role: 'link', name: '1' }, { role: 'combobox', name: 'From version' }, { role: 'combobox', name: 'To version' }], () => text('[data-testid="diff"]'));
    await screenshot(page, 'subject-diff');

    // Version 1 chosen from the table; the same version on both sides is no difference.
    await page.locator(aria('link', '1')).click();
    const first = await registered(1);
    await waitFor('version 1\'s schema', async () => (await text('[data-testid="schema"]')) === first);
    const from = await page.waitForSelector(aria('combobox', 'From version'));
    await from!.select('1');
    const to = await page.waitForSelector(aria('combobox', 'To version'));
    await to!.select('1');
    await waitFor('no difference', async () => (await text('[data-testid="diff-summary"]')) === 'The two versions are the same.');
  }, 45_000);

  it('shows a wire-format AVRO value decoded in the message browser, linked to its subject\'s version, and a plain record as before', async () => {
    const partitionsRead = async () => {
      const el = await page.$(aria('combobox', 'Partition'));
      return el ? el.evaluate((s: any) => s.options.length >= 2) : false;
    };
    await page.goto(`${ui}#/topics/${topic}/messages`);
    await accessible([{ role: 'button', name: 'Load' }], partitionsRead);
    await page.locator(aria('button', 'Load')).click();
    const rows = await waitFor('both records', async () => {
      const r = await tableRows('Messages');
      return r?.length === 2 ? r : undefined;
    });
    const [avro, plain] = rows as [string[], string[]];
    expect(avro).toEqual(expect.arrayContaining(['k-avro']));
    const value = await page.evaluate(() => {
      const cell = [...(globalThis as any).document.querySelectorAll('table td .decoded')][0];
      return cell ? { ref: cell.querySelector('.schema-ref').textContent.trim(), json: cell.querySelector('pre').textContent } : undefined;
    });
    expect(value?.ref).toBe(`AVRO schema ${ids[1]}: ${subject} v2`);
    expect(JSON.parse(value?.json ?? 'null')).toEqual({ sensor: 'greenhouse-7', count: 41, unit: 'K' });
    expect(plain).toEqual(expect.arrayContaining(['k-plain']));
    expect(plain.join(' ')).toContain('"plain": true');
    // (from the Load button, where the click left focus, on to the decoded value's link)
    await checkA11y(page);
    await checkKeyboard(page, [{ role: 'link', name: `AVRO schema ${ids[1]}: ${subject} v2` }]);
    await screenshot(page, 'messages-decoded');

    await page.locator(aria('link', `AVRO schema ${ids[1]}: ${subject} v2`)).click();
    const second = await registered(2);
    await waitFor('the subject page at version 2', async () => (await text('[data-testid="schema"]')) === second);
    expect(page.url()).toContain(`#/schemas/${subject}/versions/2`);
  }, 45_000);
});
