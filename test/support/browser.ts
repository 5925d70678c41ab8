/**
 * The console's browser harness: a headless Chromium found on this machine (nothing is downloaded
 * at run time), pages that record what went wrong in them, axe-core's accessibility check, a
 * keyboard walk, and screenshots saved as test artifacts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import axe from 'axe-core';
import puppeteer, { type Browser, type ElementHandle, type Page } from 'puppeteer-core';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** Where every screenshot goes (gitignored). */
export const ARTIFACTS_DIR = path.join(ROOT, 'test/artifacts/console');
/** Where the README's screenshots live; written only with UPDATE_SCREENSHOTS=1. */
export const DOCS_IMAGES_DIR = path.join(ROOT, 'docs/images');

/** Where a Chromium came from, in the order they are tried. */
export type ChromiumSource = 'CHROME_PATH' | 'system' | '@sparticuz/chromium';

export interface ChromiumLocation {
  readonly executablePath: string;
  /** Flags this binary needs beyond the harness's own (the serverless build's recommended flags). */
  readonly args: readonly string[];
  readonly source: ChromiumSource;
}

/** System browsers tried when CHROME_PATH is not set, first found wins. */
export const SYSTEM_CHROMIUMS = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'] as const;

export interface FindChromiumOptions {
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** Whether a file exists; tests replace it. @default fs.existsSync */
  readonly exists?: (file: string) => boolean;
}

/**
 * Finds a Chromium to drive: `CHROME_PATH` (which must exist when set: a wrong setting is a
 * mistake, not a reason to fall back), then a system Chromium, then the binary shipped inside the
 * `@sparticuz/chromium` dev dependency, unpacked to /tmp/chromium on first use (a few seconds).
 */
export async function findChromium(o: FindChromiumOptions = {}): Promise<ChromiumLocation> {
  const env = o.env ?? process.env;
  const exists = o.exists ?? fs.existsSync;
  if (env.CHROME_PATH) {
    if (!exists(env.CHROME_PATH)) throw new Error(`CHROME_PATH is ${env.CHROME_PATH}, which does not exist; unset it to use a system Chromium or the one inside @sparticuz/chromium`);
    return { executablePath: env.CHROME_PATH, args: [], source: 'CHROME_PATH' };
  }
  const system = SYSTEM_CHROMIUMS.find((p) => exists(p));
  if (system) return { executablePath: system, args: [], source: 'system' };
  const { default: chromium } = await import('@sparticuz/chromium');
  return { executablePath: await unpackOnce(() => chromium.executablePath()), args: chromium.args, source: '@sparticuz/chromium' };
}

/**
 * @sparticuz/chromium unpacks to /tmp/chromium and returns that path as soon as the file exists:
 * a second test process asking while the first is still unpacking would launch half a binary. So
 * one process at a time unpacks, under a lock directory (mkdir is atomic), and a marker written
 * after the unpack says the binary is whole; without the marker, a binary left by an interrupted
 * unpack is removed first.
 */
async function unpackOnce(unpack: () => Promise<string>): Promise<string> {
  const lock = path.join(os.tmpdir(), 'tributary-chromium.lock');
  const ready = path.join(os.tmpdir(), 'tributary-chromium.ready');
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // A lock older than two minutes belongs to a process that died while unpacking.
      if (Date.now() - (fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now()) > 120_000) fs.rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`waited 120 s for another process to unpack Chromium (${lock})`, { cause: err });
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    if (!fs.existsSync(ready)) fs.rmSync(path.join(os.tmpdir(), 'chromium'), { force: true });
    const executable = await unpack();
    fs.writeFileSync(ready, executable);
    return executable;
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * Flags that keep Chromium quiet and self-contained on a closed network, plus a real locale: under
 * LANG=C (CI images, containers) Chromium reports navigator.language as `en-US@posix`, which
 * Intl.NumberFormat rejects with a RangeError — no person's browser has that language.
 */
const HARNESS_ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run', '--disable-quic', '--lang=en-US',
];

/** The viewport every page opens with (and every screenshot has). */
export const VIEWPORT = { width: 1280, height: 860 } as const;

/**
 * Launches a headless Chromium (see {@link findChromium}) with a fresh profile in a temporary
 * directory, removed when the browser closes. {@link chromiumOf} says which Chromium it runs.
 */
export async function launchBrowser(o: FindChromiumOptions = {}): Promise<Browser> {
  const chromium = await findChromium(o);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: chromium.executablePath,
    headless: true,
    defaultViewport: VIEWPORT,
    // (the locale from the environment too: --lang alone leaves navigator.language at en-US@posix under LANG=C)
    env: { ...process.env, LANG: 'en_US.UTF-8' },
    args: [...chromium.args, ...HARNESS_ARGS, `--user-data-dir=${profile}`],
  }).catch((err: unknown) => {
    fs.rmSync(profile, { recursive: true, force: true });
    throw new Error(`Chromium from ${chromium.source} (${chromium.executablePath}) did not launch`, { cause: err });
  });
  sources.set(browser, chromium);
  // After the process is gone: until then Chromium may still be writing the profile.
  browser.process()?.once('exit', () => {
    try {
      fs.rmSync(profile, { recursive: true, force: true, maxRetries: 3 });
    } catch {
      // A temporary directory left behind is harmless.
    }
  });
  return browser;
}
const sources = new WeakMap<Browser, ChromiumLocation>();

/** The Chromium a browser from {@link launchBrowser} runs. */
export const chromiumOf = (browser: Browser): ChromiumLocation | undefined => sources.get(browser);

/** What went wrong in a page since it opened. */
export interface PageProblems {
  /** Uncaught exceptions and unhandled rejections: a test fails on these. */
  readonly pageErrors: string[];
  /** `console.error` lines (the app may log an API error it shows; informative). */
  readonly consoleErrors: string[];
  /** Requests that got no answer, or an answer of 400 or more, as `METHOD url: reason`. */
  readonly failedRequests: string[];
}

export interface ConsolePage {
  readonly page: Page;
  readonly problems: PageProblems;
  /** Throws, listing them, when the page had uncaught errors. */
  expectNoPageErrors(): void;
}

/**
 * Opens `url` in a new tab that records its problems (see {@link PageProblems}). Requests aborted
 * by a navigation or by closing the page are not failures.
 */
export async function openPage(browser: Browser, url: string): Promise<ConsolePage> {
  const page = await browser.newPage();
  const problems: PageProblems = { pageErrors: [], consoleErrors: [], failedRequests: [] };
  page.on('pageerror', (err) => problems.pageErrors.push(err instanceof Error ? (err.stack ?? err.message) : String(err)));
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.consoleErrors.push(msg.text());
  });
  page.on('requestfailed', (req) => {
    const reason = req.failure()?.errorText ?? 'failed';
    if (reason !== 'net::ERR_ABORTED') problems.failedRequests.push(`${req.method()} ${req.url()}: ${reason}`);
  });
  page.on('response', (res) => {
    if (res.status() >= 400) problems.failedRequests.push(`${res.request().method()} ${res.url()}: ${res.status()}`);
  });
  await page.goto(url, { waitUntil: 'load' });
  return {
    page,
    problems,
    expectNoPageErrors() {
      if (problems.pageErrors.length > 0) {
        throw new Error(`the page had ${problems.pageErrors.length} uncaught error(s):\n${problems.pageErrors.map((e) => `  - ${e}`).join('\n')}`);
      }
    },
  };
}

/** How much an accessibility violation hurts, as axe-core rates it. */
export type Impact = 'minor' | 'moderate' | 'serious' | 'critical';

export interface A11yOptions {
  /** Violations at or above this impact fail the check. @default 'serious' */
  readonly failAt?: Impact;
  /** axe-core rule ids to skip, each with a reason in the caller. @default [] */
  readonly disableRules?: readonly string[];
  /** Only this part of the page (a CSS selector). @default the whole document */
  readonly include?: string;
}

/** One rule's violation, flattened for reading. */
export interface A11yViolation {
  readonly id: string;
  readonly impact: Impact | null;
  readonly help: string;
  readonly helpUrl: string;
  /** The offending elements, as CSS selectors. */
  readonly targets: string[];
  /** axe-core's summary of what to fix, for the first element. */
  readonly fix: string;
}

const IMPACTS: readonly Impact[] = ['minor', 'moderate', 'serious', 'critical'];

// The functions passed to page.evaluate run in the browser; this project typechecks without the
// DOM library, so they reach the page's globals through `globalThis as any`.

/**
 * Runs axe-core in the page (injected from the `axe-core` package, so the check runs in this very
 * browser) and throws a readable list when any violation reaches `failAt`. Returns every
 * violation, the minor ones too, for the caller to report.
 */
export async function checkA11y(page: Page, o: A11yOptions = {}): Promise<A11yViolation[]> {
  const loaded = await page.evaluate(() => typeof (globalThis as { axe?: unknown }).axe === 'object');
  if (!loaded) await page.evaluate(axe.source);
  const rules = Object.fromEntries((o.disableRules ?? []).map((id) => [id, { enabled: false }]));
  const raw = await page.evaluate(async (include, rulesJson) => {
    const a = (globalThis as unknown as { axe: typeof axe }).axe;
    const results = await a.run(include ? { include: [include] } : (globalThis as any).document, { resultTypes: ['violations'], rules: JSON.parse(rulesJson) });
    return results.violations.map((v) => ({
      id: v.id, impact: v.impact ?? null, help: v.help, helpUrl: v.helpUrl,
      targets: v.nodes.map((n) => n.target.map(String).join(' ')),
      fix: (v.nodes[0]?.failureSummary ?? '').replace(/\s+/g, ' ').trim(),
    }));
  }, o.include ?? '', JSON.stringify(rules));
  const violations = raw as A11yViolation[];
  const threshold = IMPACTS.indexOf(o.failAt ?? 'serious');
  const failing = violations.filter((v) => v.impact !== null && IMPACTS.indexOf(v.impact) >= threshold);
  if (failing.length > 0) throw new Error(`${page.url()}: ${failing.length} accessibility violation(s) at or above ${o.failAt ?? 'serious'}:\n${formatViolations(failing)}`);
  return violations;
}

/** Violations as a list a person can act on: rule, impact, what it means, where, what to fix. */
export function formatViolations(violations: readonly A11yViolation[]): string {
  return violations.map((v) => `  - ${v.id} (${v.impact ?? 'unrated'}): ${v.help}\n      at ${v.targets.join(', ')}\n      ${v.fix}\n      ${v.helpUrl}`).join('\n');
}

export interface ScreenshotOptions {
  /**
   * This screenshot is one of the README's: with UPDATE_SCREENSHOTS=1 it is also written to
   * docs/images/, as `<name>.png` or, given a string, as `<that>.png` (the name the README uses).
   * @default false
   */
  readonly docs?: boolean | string;
  /** The whole scrollable page rather than the viewport. @default true */
  readonly fullPage?: boolean;
}

/** Saves a PNG of the page as test/artifacts/console/<name>.png (and maybe docs/images/); returns the paths written. */
export async function screenshot(page: Page, name: string, o: ScreenshotOptions = {}): Promise<string[]> {
  const docsName = typeof o.docs === 'string' ? o.docs : name;
  for (const n of [name, docsName]) {
    if (!/^[a-z0-9][a-z0-9-]*$/.test(n)) throw new Error(`a screenshot's name is lowercase words joined by '-', not ${JSON.stringify(n)}`);
  }
  // (no focus ring from a keyboard walk in the picture)
  await page.evaluate('document.activeElement && document.activeElement.blur()');
  const png = await page.screenshot({ type: 'png', fullPage: o.fullPage ?? true });
  const files = [path.join(ARTIFACTS_DIR, `${name}.png`), ...(o.docs && process.env.UPDATE_SCREENSHOTS === '1' ? [path.join(DOCS_IMAGES_DIR, `${docsName}.png`)] : [])];
  for (const file of files) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, png);
  }
  return files;
}

/** An element a keyboard user must be able to reach, by its ARIA role and accessible name. */
export interface KeyboardTarget {
  readonly role: string;
  readonly name: string;
}

export interface KeyboardWalkOptions {
  /** Tab presses before giving up. @default 60 */
  readonly maxTabs?: number;
}

/** One stop of the Tab walk: the focused element, shortly described, and whether focus showed. */
export interface FocusStop {
  readonly element: string;
  readonly focusVisible: boolean;
}

/**
 * Tabs through the page from its start and asserts that focus reaches every target, and that it
 * is visible there (the element matches :focus-visible and draws an outline or a shadow). The
 * targets are found by role and accessible name, as a screen reader would. Returns the stops.
 */
export async function checkKeyboard(page: Page, targets: readonly KeyboardTarget[], o: KeyboardWalkOptions = {}): Promise<FocusStop[]> {
  const handles: ElementHandle[] = [];
  for (const t of targets) {
    const h = await page.$(`::-p-aria([name=${JSON.stringify(t.name)}][role=${JSON.stringify(t.role)}])`);
    if (!h) throw new Error(`${page.url()}: no ${t.role} named ${JSON.stringify(t.name)} to reach by keyboard`);
    handles.push(h);
  }
  // Start from the top of the document, as after a fresh load.
  await page.evaluate(() => {
    const w = globalThis as any;
    w.document.activeElement?.blur();
    w.getSelection()?.removeAllRanges();
  });
  const reached = new Map<number, boolean>();
  const stops: FocusStop[] = [];
  const maxTabs = o.maxTabs ?? 60;
  for (let i = 0; i < maxTabs && reached.size < handles.length; i++) {
    await page.keyboard.press('Tab');
    const stop = await page.evaluate((...els: unknown[]) => {
      const w = globalThis as any;
      const el = w.document.activeElement;
      if (!el || el === w.document.body) return { index: -1, element: 'body', focusVisible: false, body: true };
      const style = w.getComputedStyle(el);
      const outline = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0;
      const shadow = style.boxShadow !== 'none';
      const label = String(el.getAttribute('aria-label') ?? el.textContent ?? '').trim().replace(/\s+/g, ' ').slice(0, 40);
      return {
        index: els.indexOf(el), body: false,
        element: `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''} "${label}"`,
        focusVisible: el.matches(':focus-visible') && (outline || shadow),
      };
    }, ...handles);
    // Focus left the document (past the last element) and came back to the body: one full cycle.
    if (stop.body && stops.length > 0) break;
    if (stop.body) continue;
    stops.push({ element: stop.element, focusVisible: stop.focusVisible });
    if (stop.index >= 0) reached.set(stop.index, (reached.get(stop.index) ?? false) || stop.focusVisible);
  }
  const problems = targets.flatMap((t, i) => {
    if (!reached.has(i)) return [`  - ${t.role} "${t.name}" is not reached by Tab`];
    if (!reached.get(i)) return [`  - ${t.role} "${t.name}" takes focus without showing it (no :focus-visible outline or shadow)`];
    return [];
  });
  if (problems.length > 0) {
    throw new Error(`${page.url()}: keyboard navigation fails:\n${problems.join('\n')}\n  focus order: ${stops.map((s) => s.element).join(' → ')}`);
  }
  return stops;
}

/**
 * Milliseconds from navigating to `url` (from a blank page, so a route loads as when a link is
 * opened) until `ready` holds: a selector for the page's first data is in the page, or a function
 * that resolves once it is there.
 */
export async function timeToData(page: Page, url: string, ready: string | (() => Promise<unknown>), timeoutMs = 15_000): Promise<number> {
  await page.goto('about:blank');
  const started = performance.now();
  await page.goto(url, { waitUntil: 'domcontentloaded' });
  if (typeof ready === 'string') await page.waitForSelector(ready, { timeout: timeoutMs });
  else await ready();
  return Math.round(performance.now() - started);
}

/** The text of each cell of the body of the table captioned `caption`, row by row; undefined while there is none. */
export const tableRowsOf = (page: Page, caption: string): Promise<string[][] | undefined> => page.evaluate((cap) => {
  const doc = (globalThis as any).document;
  const table = [...doc.querySelectorAll('table')].find((t: any) => t.caption?.textContent.trim() === cap);
  if (!table) return undefined;
  return [...table.tBodies[0].rows].map((r: any) => [...r.cells].map((td: any) => String(td.textContent).trim()));
}, caption);
