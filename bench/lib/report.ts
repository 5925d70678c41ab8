/**
 * What every benchmark scenario shares: the `--quick` switch, the machine and commit a run was on,
 * and writing a scenario's results — `bench/results/<scenario>.json` (the data), `.md` (tables and
 * notes), one `.svg` per chart (a Vega-Lite spec rendered headless) — and printing its tables.
 * A `--quick` run (the CI smoke test) writes under `bench/results/quick/`, never over the committed
 * full results.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** `npm run bench -- --quick` (or BENCH_QUICK=1): every scenario in a reduced form, for a smoke test. */
export const isQuick = (): boolean => process.argv.includes('--quick') || process.env.BENCH_QUICK === '1';

/** The writer counts a tuning run asks for in `BENCH_WRITERS` (e.g. `16,64`), else `fallback`. */
export const writersFromEnv = (fallback: number[]): number[] => (process.env.BENCH_WRITERS ? process.env.BENCH_WRITERS.split(',').map(Number) : fallback);

export interface Machine {
  readonly date: string;
  readonly commit: string;
  readonly node: string;
  readonly cpus: number;
  readonly cpuModel: string;
  readonly memoryGiB: number;
  readonly platform: string;
}

export function machine(): Machine {
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: import.meta.dirname, encoding: 'utf8' }).trim();
  } catch {
    // not a git checkout
  }
  return {
    date: new Date().toISOString(),
    commit,
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    platform: `${os.platform()} ${os.arch()}`,
  };
}

export interface Table {
  readonly title: string;
  readonly columns: readonly string[];
  readonly rows: readonly (readonly (string | number)[])[];
  /** Lines printed under the table. */
  readonly notes?: readonly string[];
}

export interface Chart {
  readonly title: string;
  /** A Vega-Lite spec with its data inline (`data: { values: [...] }`). */
  readonly spec: Record<string, unknown>;
}

export interface ScenarioResult {
  /** File name stem: bench/results/<scenario>.{json,md,svg}. */
  readonly scenario: string;
  readonly title: string;
  /** What was measured and how (setup, sizes, what the baseline is). */
  readonly description: string;
  readonly tables: readonly Table[];
  readonly charts?: readonly Chart[];
  /** Raw numbers for the JSON file (anything serializable). */
  readonly data?: unknown;
  readonly notes?: readonly string[];
}

const cell = (v: string | number): string => (typeof v === 'number' ? (Number.isInteger(v) ? v.toLocaleString('en-US') : v.toFixed(v < 10 ? 2 : 1)) : v);

export function markdownTable(t: Table): string {
  return [
    `| ${t.columns.join(' | ')} |`,
    `|${t.columns.map(() => '---').join('|')}|`,
    ...t.rows.map((r) => `| ${r.map(cell).join(' | ')} |`),
  ].join('\n');
}

/** Where results go: the committed directory, or its `quick/` subdirectory for a quick run. */
export const resultsDir = (): string => path.join(import.meta.dirname, '..', 'results', ...(isQuick() ? ['quick'] : []));

/** Writes and prints one scenario's results. */
export async function writeResult(r: ScenarioResult): Promise<void> {
  const dir = resultsDir();
  fs.mkdirSync(dir, { recursive: true });
  const m = machine();
  const md = [
    `# ${r.title}`,
    '',
    `${m.date} · commit ${m.commit} · ${m.cpuModel}, ${m.cpus} cores, ${m.memoryGiB} GiB · Node ${m.node}${isQuick() ? ' · **quick run**' : ''}`,
    '',
    r.description,
    '',
    ...r.tables.flatMap((t) => [`### ${t.title}`, '', markdownTable(t), '', ...(t.notes ?? []).map((n) => `- ${n}`), ...(t.notes?.length ? [''] : [])]),
    ...(r.charts ?? []).map((c, i) => `![${c.title}](${chartFile(r.scenario, i)})\n`),
    ...(r.notes ?? []).map((n) => `- ${n}`),
    '',
  ].join('\n');
  fs.writeFileSync(path.join(dir, `${r.scenario}.md`), md);
  fs.writeFileSync(path.join(dir, `${r.scenario}.json`), `${JSON.stringify({ ...m, scenario: r.scenario, title: r.title, tables: r.tables, data: r.data ?? null }, null, 2)}\n`);
  for (const [i, c] of (r.charts ?? []).entries()) fs.writeFileSync(path.join(dir, chartFile(r.scenario, i)), await renderChart(c));
  process.stdout.write(`\n${r.tables.map((t) => `${t.title}\n${markdownTable(t)}\n`).join('\n')}`);
}

const chartFile = (scenario: string, i: number): string => `${scenario}${i === 0 ? '' : `-${i + 1}`}.svg`;

/** A Vega-Lite chart as SVG, rendered without a browser or canvas. */
export async function renderChart(c: Chart): Promise<string> {
  const vega = await import('vega');
  const vl = await import('vega-lite');
  const spec = { $schema: 'https://vega.github.io/schema/vega-lite/v6.json', title: c.title, ...c.spec };
  const view = new vega.View(vega.parse(vl.compile(spec as never).spec), { renderer: 'none' });
  return view.toSVG();
}

/** `full` in a full run, `quick` in a `--quick` run: a scenario's sizes in one place. */
export const sized = <T>(full: T, quick: T): T => (isQuick() ? quick : full);

/** The `p` quantile (0..1) of `xs` (nearest rank below); 0 for none. */
export function percentile(xs: readonly number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
}

/** All requests in a `requests` map (CapacityTotals.requests). */
export const totalRequests = (requests: Readonly<Record<string, number>>): number => Object.values(requests).reduce((a, b) => a + b, 0);

/** `requests` per operation as "GetItem 2, Query 1", divided by `per`. */
export const byOperation = (requests: Readonly<Record<string, number>>, per = 1): string =>
  Object.entries(requests).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k} ${Number.isInteger(v / per) ? v / per : (v / per).toFixed(1)}`).join(', ');

/** One axis of a chart: a field of the values; `title: null` hides the axis title. */
interface Encoding { readonly field: string; readonly title?: string | null; readonly type?: 'quantitative' | 'nominal' | 'ordinal' | 'temporal'; readonly scale?: Record<string, unknown> }
const enc = (e: Encoding, fallback: Encoding['type']) => ({ field: e.field, type: e.type ?? fallback, ...(e.title !== undefined ? { title: e.title } : {}), ...(e.scale ? { scale: e.scale } : {}) });

/** A bar chart spec (grouped by `color` when given, side by side with xOffset). */
export function barChart(values: readonly Record<string, unknown>[], o: { x: Encoding; y: Encoding; color?: Encoding; width?: number }): Record<string, unknown> {
  return {
    data: { values }, mark: { type: 'bar', tooltip: true }, width: o.width ?? 420, height: 240,
    encoding: {
      x: { ...enc(o.x, 'nominal'), axis: { labelAngle: -30, labelLimit: 220 } },
      y: enc(o.y, 'quantitative'),
      ...(o.color ? { color: { ...enc(o.color, 'nominal'), legend: { labelLimit: 400 } }, xOffset: { field: o.color.field } } : {}),
    },
  };
}

/** A line chart spec with points (one line per `color` value when given). */
export function lineChart(values: readonly Record<string, unknown>[], o: { x: Encoding; y: Encoding; color?: Encoding; width?: number }): Record<string, unknown> {
  return {
    data: { values }, mark: { type: 'line', point: true, tooltip: true }, width: o.width ?? 420, height: 240,
    encoding: { x: enc(o.x, 'quantitative'), y: enc(o.y, 'quantitative'), ...(o.color ? { color: { ...enc(o.color, 'nominal'), legend: { labelLimit: 400 } } } : {}) },
  };
}

/** A number for a table: thousands separated, `d` decimals. */
export const fmt = (n: number, d = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
/** Dollars for a table: four decimals below a cent, whole dollars from $100. */
export const usd = (n: number): string => (n === 0 ? '$0' : n < 0.01 ? `$${n.toFixed(4)}` : n < 100 ? `$${n.toFixed(2)}` : `$${Math.round(n).toLocaleString('en-US')}`);
