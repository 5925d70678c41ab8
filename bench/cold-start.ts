/**
 * Cold starts: each function's bundle as the CDK deploys it (cdk/bundling.ts, build/functions.ts:
 * one esbuild call, ESM, minified, source map beside it), its size, and the time a fresh Node process
 * takes to load it — the module init a cold Lambda pays before its first event, measured on this
 * machine's Node (Lambda's arm64 Node 22 differs; the ranking and the ratios are what carry over).
 * Each load runs in a new process with storage settings pointing nowhere; the baseline is an
 * empty ES module loaded the same way (the process start and the loader, which every function
 * pays). Measured with and without `--enable-source-maps` (what parsing the source map costs at
 * init). Run: `npm run bench -- cold-start`.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleFunctions } from '../build/functions.js';
import { FUNCTIONS } from '../lib/functions/catalog.js';
import { barChart, isQuick, percentile, writeResult } from './lib/report.js';

const RUNS = isQuick() ? 1 : 15;
const out = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-cold-'));
bundleFunctions(FUNCTIONS, out);
const empty = path.join(out, 'empty.mjs');
fs.writeFileSync(empty, 'export const handler = async () => undefined;\n');

/** A child that loads `file` and prints how long the import took and how long since its process began. */
const CHILD = 'const t0 = performance.now(); const m = await import(process.argv[1]); if (typeof m.handler !== "function") throw new Error("no handler"); const t1 = performance.now(); process.stdout.write(JSON.stringify({ importMs: t1 - t0, sinceStartMs: t1 }));';
const ENV = {
  PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE', AWS_SECRET_ACCESS_KEY: 'example',
  AWS_ENDPOINT_URL: 'http://127.0.0.1:9', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  TRIBUTARY_COORDINATION_TABLE: 'cold-coordination', TRIBUTARY_BUCKET: 'cold-bucket', TRIBUTARY_S3_FORCE_PATH_STYLE: 'false',
};

function load(file: string, sourceMaps: boolean): { importMs: number; sinceStartMs: number } {
  const args = [...(sourceMaps ? ['--enable-source-maps'] : []), '--input-type=module', '-e', CHILD, file];
  return JSON.parse(execFileSync(process.execPath, args, { env: ENV, encoding: 'utf8' })) as { importMs: number; sinceStartMs: number };
}

function measure(file: string, sourceMaps: boolean) {
  load(file, sourceMaps); // the file in the page cache, as Lambda's is
  const runs = Array.from({ length: RUNS }, () => load(file, sourceMaps));
  return { importMs: percentile(runs.map((r) => r.importMs), 50), sinceStartMs: percentile(runs.map((r) => r.sinceStartMs), 50) };
}

const baseline = measure(empty, false);
const rows = FUNCTIONS.map((f) => {
  const file = path.join(out, f.name, 'index.mjs');
  const plain = measure(file, false);
  const mapped = measure(file, true);
  return {
    name: f.name, bytes: fs.statSync(file).size, mapBytes: fs.statSync(`${file}.map`).size,
    importMs: plain.importMs, totalMs: plain.sinceStartMs, mappedImportMs: mapped.importMs,
  };
});
fs.rmSync(out, { recursive: true, force: true });

const kb = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
const ms = (n: number) => n.toFixed(1);
await writeResult({
  scenario: 'cold-start',
  title: 'Cold starts: bundle size and module init per function',
  description: `Each function bundled as the CDK deploys it (cdk/bundling.ts) and loaded in a fresh \`node\` process (${process.version}), median of ${RUNS} loads after one warm-up load; the baseline is an empty ES module loaded the same way.`,
  tables: [{
    title: 'Per function',
    columns: ['function', 'bundle', 'source map', 'import, ms (p50)', 'process start to handler ready, ms', 'import with --enable-source-maps, ms', 'import vs empty module'],
    rows: [
      ['(empty module: baseline)', '—', '—', ms(baseline.importMs), ms(baseline.sinceStartMs), '—', '1.0 ×'],
      ...rows.map((r) => [r.name, kb(r.bytes), kb(r.mapBytes), ms(r.importMs), ms(r.totalMs), ms(r.mappedImportMs), `${(r.importMs / Math.max(0.01, baseline.importMs)).toFixed(0)} ×`]),
    ],
    notes: ['Lambda\'s own runtime start comes on top of this; the figures are what the bundle itself costs at init.'],
  }],
  charts: [{ title: 'Import time per function (ms, p50)', spec: barChart(rows.map((r) => ({ function: r.name, ms: r.importMs })), { x: { field: 'function', type: 'nominal' }, y: { field: 'ms', type: 'quantitative' } }) }],
  data: { baseline, rows, runs: RUNS },
});
