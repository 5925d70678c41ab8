/**
 * The console in a real headless Chromium (test/support/browser.ts) against a private stack with
 * one DynamoDB Local process per broker, so a broker can be killed: a topic created through the
 * UI, a JSON message produced through it and found again by key, a partition followed live over the
 * WebSocket API, a group's lag drained by an SDK
 * consumer while its page is open, a partition's last stable offset held back by an open
 * transaction and released by its commit, every page loaded (timed, checked by axe-core and by keyboard,
 * saved as a screenshot), and a partition's leader moving on screen after its broker is killed.
 *
 * The stack runs without Lambda fidelity (`lambda: false`): the console and the failover behave
 * the same either way (the controller runs in its own loop processes in both), and the plain
 * handlers start and answer faster, which keeps this file within its time budget. It runs in the
 * multi-process project (vitest.config.ts). Screenshots: test/artifacts/console/; with
 * UPDATE_SCREENSHOTS=1 the README's two (cluster, partition-failover) also go to docs/images/ as
 * console-cluster.png and console-failover.png.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Tributary } from '../../client/index.js';
import { ARTIFACTS_DIR, checkA11y, checkKeyboard, chromiumOf, launchBrowser, openPage, screenshot, timeToData, type ConsolePage, type KeyboardTarget, tableRowsOf } from '../support/browser.js';
import { startFaultCluster, type FaultCluster } from '../support/cluster.js';

const TOPIC = 'console-orders';
const GROUP = 'console-billing';
/** A schema subject with two versions, for the schema pages. */
const SUBJECT = `${TOPIC}-value`;
/** Messages the SDK produces for the group to drain, after the one produced through the UI. */
const N = 30;

let c: FaultCluster;
let browser: Browser;
let tab: ConsolePage;
let page: Page;
let ui: string;
/** Navigation to first data rendered, per page: printed, and kept in the artifacts, after the run. */
const loadTimes: { page: string; route: string; ms: number }[] = [];

beforeAll(async () => {
  [c, browser] = await Promise.all([
    startFaultCluster({
      lambda: false,
      env: {
        TRIBUTARY_BROKER_SESSION_TIMEOUT_MS: '4000', TRIBUTARY_CONTROLLER_TICK_MS: '500', TRIBUTARY_BROKER_PROBE_TIMEOUT_MS: '1500',
        TRIBUTARY_REPLICA_LAG_TIME_MAX_MS: '2000', TRIBUTARY_REQUEST_TIMEOUT_MS: '15000', TRIBUTARY_STORE_TIMEOUT_MS: '2000',
      },
    }),
    launchBrowser(),
  ]);
  for (const fields of [[{ name: 'order', type: 'int' }], [{ name: 'order', type: 'long' }, { name: 'item', type: 'string', default: '' }]]) {
    const r = await c.call('POST', `/subjects/${SUBJECT}/versions`, { schema: JSON.stringify({ type: 'record', name: 'Order', fields }) });
    if (r.status !== 200) throw new Error(`registering a version of ${SUBJECT}: ${r.status} ${JSON.stringify(r.body)}`);
  }
  ui = `${c.url}/ui/`;
  tab = await openPage(browser, ui);
  page = tab.page;
  page.setDefaultTimeout(15_000);
}, 120_000);

afterEach(() => {
  tab?.expectNoPageErrors();
});

afterAll(async () => {
  if (loadTimes.length > 0) {
    const chromium = browser ? chromiumOf(browser) : undefined;
    console.log(`console page load (navigation to first data), Chromium from ${chromium?.source ?? '?'}:\n${loadTimes.map((l) => `  ${l.page.padEnd(16)} ${String(l.ms).padStart(5)} ms  #${l.route}`).join('\n')}`);
    fs.mkdirSync(ARTIFACTS_DIR, { recursive: true });
    fs.writeFileSync(path.join(ARTIFACTS_DIR, 'load-times.json'), `${JSON.stringify({ chromium: chromium?.source, loadTimes }, null, 2)}\n`);
  }
  if (tab && (tab.problems.consoleErrors.length > 0 || tab.problems.failedRequests.length > 0)) {
    console.log(`the console's page logged ${tab.problems.consoleErrors.length} console error(s) and ${tab.problems.failedRequests.length} failed request(s) (the failover makes some):\n${[...tab.problems.consoleErrors, ...tab.problems.failedRequests].slice(0, 20).map((l) => `  ${l}`).join('\n')}`);
  }
  await browser?.close();
  await c?.stop();
}, 60_000);

// ---- Reading the page: by accessible names, table captions and the contract's data-testids ----

/** The cells' text of each body row of the table captioned `caption` (undefined: no such table). */
const tableRows = (caption: string): Promise<string[][] | undefined> => tableRowsOf(page, caption);

/** The text of `[data-testid=id]`, undefined while there is none. */
const testId = (id: string): Promise<string | undefined> => page.evaluate((i) => (globalThis as any).document.querySelector(`[data-testid="${i}"]`)?.textContent.trim(), id);

/** A number as the console shows it ("1,234"). */
const num = (s: string | undefined): number => (s === undefined ? NaN : Number(s.replace(/,/g, '')));

/**
 * Polls a condition read from the page every 200 ms (the console itself refreshes every 2 s); on
 * timeout, says what `shown` (the values the condition looks at) last read.
 */
async function waitFor<T>(what: string, read: () => Promise<T | undefined | false>, ms = 15_000, shown?: () => Promise<unknown>): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    last = await read();
    if (last !== undefined && last !== false) return last as T;
    if (Date.now() > deadline) {
      const state = shown ? `; the page shows ${JSON.stringify(await shown().catch((err: unknown) => String(err)))}` : '';
      throw new Error(`timed out after ${ms} ms waiting for ${what} in ${page.url()}; last read ${JSON.stringify(last)}${state}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

const aria = (role: string, name: string) => `::-p-aria([name=${JSON.stringify(name)}][role=${JSON.stringify(role)}])`;

/** The select labelled `label` has at least `n` options (a topic's partitions have been read). */
const optionsLoaded = (label: string, n: number) => async () => {
  const el = await page.$(aria('combobox', label));
  return el ? el.evaluate((s: any, min: number) => s.options.length >= min, n) : false;
};

/**
 * What a screen reader finds on the page: the h1 and every form control and button by role and
 * accessible name — what a timeout shows, so a renamed label is plain to see.
 */
async function controls(): Promise<string[]> {
  const tree = await page.accessibility.snapshot({ interestingOnly: true });
  const out: string[] = [];
  const walk = (n: { role: string; name?: string; level?: number; children?: unknown[] } | null) => {
    if (!n) return;
    if (['combobox', 'textbox', 'searchbox', 'spinbutton', 'button'].includes(n.role) || (n.role === 'heading' && n.level === 1)) out.push(`${n.role} ${JSON.stringify(n.name ?? '')}`);
    for (const c of n.children ?? []) walk(c as typeof n);
  };
  walk(tree as Parameters<typeof walk>[0]);
  return out;
}

/** Chooses the option shown as `text` in the select labelled `label`, as a person would. */
async function choose(label: string, text: string): Promise<void> {
  const select = await page.waitForSelector(aria('combobox', label));
  const value = await select!.evaluate((s: any, t: string) => [...s.options].find((o: any) => o.textContent.trim() === t)?.value, text);
  if (value === undefined) throw new Error(`the select "${label}" has no option "${text}"`);
  await select!.select(value);
}

/** Every page of the contract, with what "its first data is on screen" means there. */
const PAGES: readonly { name: string; route: string; ready: () => Promise<unknown>; keys?: readonly KeyboardTarget[] }[] = [
  {
    name: 'cluster', route: '/',
    ready: async () => (await tableRows('Brokers'))?.length === 3 && (await testId('controller-id')) !== undefined,
    keys: ['Cluster', 'Topics', 'Consumer groups', 'Schemas', 'ACLs'].map((name) => ({ role: 'link', name })),
  },
  { name: 'topics', route: '/topics', ready: async () => (await tableRows('Topics'))?.some((r) => r[0] === TOPIC), keys: [{ role: 'button', name: 'Create topic' }] },
  { name: 'topic', route: `/topics/${TOPIC}`, ready: async () => (await tableRows('Partitions'))?.length === 3 && (await testId('leader-0')) !== undefined },
  { name: 'partition', route: `/topics/${TOPIC}/partitions/0`, ready: async () => (await testId('leader')) !== undefined },
  { name: 'messages', route: `/topics/${TOPIC}/messages`, ready: optionsLoaded('Partition', 4), keys: [{ role: 'button', name: 'Load' }] },
  { name: 'produce', route: `/topics/${TOPIC}/produce`, ready: optionsLoaded('Partition', 4), keys: [{ role: 'button', name: 'Produce' }] },
  { name: 'configs', route: `/topics/${TOPIC}/configs`, ready: async () => ((await tableRows('Configs'))?.length ?? 0) > 0 },
  { name: 'groups', route: '/groups', ready: async () => (await tableRows('Consumer groups'))?.some((r) => r[0] === GROUP) },
  { name: 'group', route: `/groups/${GROUP}`, ready: async () => (await testId('total-lag')) !== undefined, keys: [{ role: 'button', name: 'Reset' }] },
  { name: 'schemas', route: '/schemas', ready: async () => (await tableRows('Subjects'))?.some((r) => r[0] === SUBJECT), keys: [{ role: 'button', name: 'Refresh' }, { role: 'link', name: SUBJECT }] },
  {
    name: 'subject', route: `/schemas/${SUBJECT}`, ready: async () => (await tableRows('Versions'))?.length === 2 && (await testId('diff')) !== undefined,
    keys: [{ role: 'link', name: '1' }, { role: 'combobox', name: 'From version' }, { role: 'combobox', name: 'To version' }],
  },
  { name: 'acls', route: '/acls', ready: async () => (await tableRows('ACLs')) !== undefined },
];

/** Opens a route as a fresh load and waits for its first data; records how long that took. */
async function load(name: string): Promise<void> {
  const p = PAGES.find((x) => x.name === name)!;
  const ms = await timeToData(page, `${ui}#${p.route}`, () => waitFor(`the ${name} page's first data`, p.ready, 15_000, controls));
  loadTimes.push({ page: name, route: p.route, ms });
}

describe('The console in a browser', () => {
  it('creates a topic through the form on the topics page', async () => {
    await load('cluster');
    await page.locator(aria('link', 'Topics')).click();
    await waitFor('the topics table', () => tableRows('Topics'));
    expect(await page.$$eval('h1', (hs) => hs.length)).toBe(1);
    await page.locator(aria('button', 'Create topic')).click();
    await page.locator(aria('textbox', 'Name')).fill(TOPIC);
    await page.locator(aria('spinbutton', 'Partitions')).fill('3');
    await page.locator(aria('spinbutton', 'Replication factor')).fill('3');
    await page.locator(aria('button', 'Create')).click();
    await waitFor(`${TOPIC} in the topics table`, async () => (await tableRows('Topics'))?.find((r) => r[0] === TOPIC));
    expect(await page.$(`${aria('link', TOPIC)}`)).not.toBeNull();
    const described = await c.call('GET', c.v3(`/topics/${TOPIC}`));
    expect(described.status).toBe(200);
    expect(described.body).toMatchObject({ partitions_count: 3, replication_factor: 3 });
  }, 30_000);

  it('produces a JSON message with a key through the produce page and finds it by that key in the message browser', async () => {
    await page.goto(`${ui}#/topics/${TOPIC}`);
    await waitFor('the partitions table', () => tableRows('Partitions'));
    await page.locator(aria('link', 'Produce')).click();
    await waitFor('the partition choices', optionsLoaded('Partition', 4), 15_000, controls);
    await choose('Partition', 'Any');
    await page.locator(aria('textbox', 'Key')).fill('k1');
    await page.locator(aria('textbox', 'Value')).fill('{"order":1,"item":"coffee","quantity":2}');
    await page.locator(aria('button', 'Produce')).click();
    const status = await waitFor('the produce result', () => page.evaluate(() => (globalThis as any).document.querySelector('[role="status"]')?.textContent.trim()));
    const [, partition, offset] = /^Produced to partition (\d+) at offset (\d+)$/.exec(status) ?? [];
    expect(status).toMatch(/^Produced to partition \d+ at offset \d+$/);
    await screenshot(page, 'produce');

    await page.locator(aria('link', 'Messages')).click();
    await waitFor('the partition choices', optionsLoaded('Partition', 4), 15_000, controls);
    await page.locator(aria('searchbox', 'Search')).fill('k1');
    await page.locator(aria('button', 'Load')).click();
    const rows = await waitFor('the message in the messages table', async () => (await tableRows('Messages'))?.filter((r) => r.includes('k1')));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toEqual(expect.arrayContaining([partition, offset, 'k1']));
    const pre = await page.$eval('table pre', (el) => el.textContent);
    expect(pre).toBe(JSON.stringify({ order: 1, item: 'coffee', quantity: 2 }, null, 2));
    await screenshot(page, 'messages-search');

    // The newest record of its partition: From "Newest", limit 1, no search.
    await choose('Partition', partition as string);
    await choose('From', 'Newest');
    await page.locator(aria('searchbox', 'Search')).fill('');
    await page.locator(aria('spinbutton', 'Limit')).fill('1');
    await page.locator(aria('button', 'Load')).click();
    const newest = await waitFor('the newest message', async () => {
      const r = await tableRows('Messages');
      return r?.length === 1 && r[0]?.includes(offset as string) ? r : undefined;
    });
    expect(newest[0]).toEqual(expect.arrayContaining([partition, offset, 'k1']));

    // Following partition 0 live over the WebSocket API: a record produced afterwards is pushed to the page.
    await choose('Follow partition', '0');
    await page.locator(aria('button', 'Follow')).click();
    const liveStatus = () => page.evaluate(() => (globalThis as any).document.querySelector('[aria-live="polite"]')?.textContent.trim() as string | undefined);
    await waitFor('the subscription', async () => (await liveStatus())?.startsWith('Following partition 0'), 15_000, liveStatus);
    const producer = new Tributary({ url: c.url }).producer();
    await producer.send({ topic: TOPIC, messages: [{ partition: 0, key: 'live-1', value: 'pushed over the WebSocket' }] });
    await producer.disconnect();
    const live = await waitFor('the pushed record in the live table', async () => (await tableRows('Live messages'))?.find((r) => r.includes('live-1')), 15_000, liveStatus);
    expect(live).toEqual(expect.arrayContaining(['live-1', 'pushed over the WebSocket']));
    await screenshot(page, 'messages-live');
    await page.locator(aria('button', 'Stop')).click();
    expect(await liveStatus()).toBe('Not following.');
  }, 45_000);

  it('shows a group\'s lag dropping to 0 while an SDK consumer reads the topic, with the group page open', async () => {
    const tributary = new Tributary({ url: c.url });
    /** One member of the group reading until `total` records are read, committing as it goes. */
    const drain = async (total: number, during?: () => Promise<unknown>) => {
      const consumer = tributary.consumer({ groupId: GROUP, maxWaitTimeInMs: 500, sessionTimeout: 10_000 });
      let read = 0;
      try {
        await consumer.subscribe({ topics: [TOPIC], fromBeginning: true });
        await consumer.run({ autoCommitInterval: 200, eachMessage: async () => { read++; } });
        await (during ?? (() => waitFor(`${total} records read`, async () => read >= total, 30_000)))();
      } finally {
        await consumer.disconnect();
      }
      return read;
    };
    // The group as Kafka makes it: a consumer joins, reads what is there (the message produced
    // above), commits and leaves; then, Empty, its offsets go to the log end on every partition.
    // (Setting offsets on a group that never had a member would do in Kafka; here such a group
    // answers 404.)
    const there = (await tributary.admin().fetchTopicOffsets(TOPIC)).reduce((sum, o) => sum + Number(o.high), 0);
    expect(await drain(there)).toBe(there);
    await tributary.admin().resetOffsetsTo({ groupId: GROUP, topics: [TOPIC], to: 'latest' });
    const producer = tributary.producer();
    await producer.send({ topic: TOPIC, messages: Array.from({ length: N }, (_, i) => ({ key: `order-${i}`, value: JSON.stringify({ order: i + 2 }) })) });
    await producer.disconnect();

    await load('group');
    const lagShown = async () => ({ totalLag: await testId('total-lag'), lag: await tableRows('Lag') });
    await waitFor(`total-lag to show the ${N} records produced since`, async () => num(await testId('total-lag')) === N, 15_000, lagShown);
    const read = await drain(N, () => waitFor('total-lag to reach 0', async () => num(await testId('total-lag')) === 0, 30_000, lagShown));
    expect(read).toBe(N);
    // The Lag table agrees, partition by partition: committed offset = log end offset.
    const lagRows = (await tableRows('Lag')) ?? [];
    expect(lagRows).toHaveLength(3);
    for (const row of lagRows) expect(row[2], `committed = log end in ${row.join(' | ')}`).toBe(row[3]);
    // role="img" is "image" in Chromium's accessibility tree, which ::-p-aria queries.
    expect(await page.$(aria('image', 'Lag over time'))).not.toBeNull();
    expect(await page.$(aria('form', 'Reset offsets'))).not.toBeNull();
    await screenshot(page, 'group-lag-drained');
  }, 60_000);

  it('shows partition 0\'s last stable offset held at an open transaction\'s first record, below the high watermark, and reaching it once the transaction commits', async () => {
    const tributary = new Tributary({ url: c.url });
    const producer = tributary.producer({ transactionalId: 'console-txn' });
    await producer.connect();
    try {
      const txn = await producer.transaction();
      await txn.send({ topic: TOPIC, messages: [{ partition: 0, value: 'in a transaction' }] });
      await load('partition');
      const shown = async () => ({ lso: await testId('lso'), hw: await testId('hw') });
      const open = await waitFor('the last stable offset below the high watermark', async () => {
        const v = await shown();
        return num(v.lso) < num(v.hw) ? v : undefined;
      }, 15_000, shown);
      await txn.commit();
      // The commit marker takes an offset: the high watermark moves past it, and the last stable offset with it.
      const closed = await waitFor('the last stable offset at the high watermark', async () => {
        const v = await shown();
        return num(v.lso) === num(v.hw) && num(v.hw) > num(open.hw) ? v : undefined;
      }, 15_000, shown);
      expect(num(closed.lso)).toBeGreaterThan(num(open.lso));
    } finally {
      await producer.disconnect();
    }
  }, 45_000);

  it('loads every page with its data, passes axe-core and the keyboard walk, and saves a screenshot of each', async () => {
    const failures: string[] = [];
    // Every page is tried, so one page's failure does not hide another's.
    for (const p of PAGES) {
      try {
        await load(p.name);
        const h1s = await page.$$eval('h1', (hs) => hs.length);
        if (h1s !== 1) failures.push(`${p.name}: ${h1s} h1 elements, not one`);
        await checkA11y(page).catch((err: Error) => failures.push(err.message));
        if (p.keys) await checkKeyboard(page, p.keys).catch((err: Error) => failures.push(err.message));
      } catch (err) {
        failures.push((err as Error).message);
      }
      await screenshot(page, p.name, p.name === 'cluster' ? { docs: 'console-cluster' } : {});
    }
    expect(failures, failures.join('\n')).toEqual([]);
  }, 90_000);

  it('shows partition 0\'s leader move and its ISR shrink after the leader\'s broker is killed, and the ISR grow back once it restarts', async () => {
    await load('topic');
    const before = { leader: await testId('leader-0'), isr: await testId('isr-0') };
    const leader = Number(before.leader);
    expect(before.isr?.split(', ').map(Number).sort()).toEqual([1, 2, 3]);
    const killed = await c.call('POST', `/local/processes/broker-${leader}/kill`);
    expect(killed.body.state).toBe('killed');
    const started = Date.now();
    const after = await waitFor(`leader-0 to move off broker ${leader}`, async () => {
      const now = { leader: await testId('leader-0'), isr: await testId('isr-0') };
      const isr = now.isr?.split(', ').map(Number) ?? [];
      return now.leader !== String(leader) && now.leader !== 'none' && !isr.includes(leader) && now;
    }, 30_000);
    console.log(`failover seen in the console ${Date.now() - started} ms after the kill: leader ${leader} → ${after.leader}, ISR ${before.isr} → ${after.isr}`);
    expect(after.isr?.split(', ')).toHaveLength(2);
    await screenshot(page, 'partition-failover', { docs: 'console-failover' });

    await load('cluster');
    await waitFor('an under-replicated partition on the cluster page', async () => num(await testId('under-replicated-count')) > 0);
    expect(await testId('offline-count')).toBe('0');
    await screenshot(page, 'cluster-failover');

    // The broker comes back (same port, same data): its replicas catch up and the ISR grows back.
    expect((await c.call('POST', `/local/processes/broker-${leader}/restart`)).body.state).toBe('running');
    const restarted = Date.now();
    await load('topic');
    const healed = await waitFor(`broker ${leader} back in partition 0's ISR`, async () => {
      const isr = (await testId('isr-0'))?.split(', ').map(Number) ?? [];
      return isr.includes(leader) && isr.length === 3 && isr;
    }, 60_000);
    console.log(`ISR grown back in the console ${Date.now() - restarted} ms after the restart: ${healed.join(', ')}`);
    await load('cluster');
    await waitFor('no under-replicated partition on the cluster page', async () => (await testId('under-replicated-count')) === '0');
  }, 120_000);
});
