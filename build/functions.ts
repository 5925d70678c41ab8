/**
 * The one esbuild call that bundles the functions as they are deployed: the CDK construct's
 * assets (cdk/bundling.ts), the cold-start bench and the local stack's Lambda-fidelity mode
 * (local/lambda-runtime.ts) all build with it, so what runs locally is what deploys.
 *
 * Output per function: `<name>/index.mjs` (ESM, Node 22, minified, with a `require` shim for the
 * CommonJS dependencies) and `index.mjs.map` (used when the construct's `sourceMaps` prop turns on
 * `--enable-source-maps`). HTTP functions are wrapped so that they take REST API (payload 1.0)
 * events too; see runtime/rest-event.ts. A function whose catalog entry has `bundlesConsole`
 * also gets the built console (build/console.ts) in `<name>/console/`, where it serves it from.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { buildConsoleSync } from './console.js';
import type { FunctionSpec } from '../lib/functions/catalog.js';

/** What bundling needs of a function (the catalog's specs, or a test's). */
export type BundledFunction = Pick<FunctionSpec, 'entry' | 'trigger' | 'bundlesConsole'> & { readonly name: string };

export const PROJECT_ROOT = path.resolve(import.meta.dirname, '..');
const REST_ADAPTER = path.join(PROJECT_ROOT, 'lib', 'http', 'rest-event.ts');

/** The handler setting of every bundled function (`index.mjs` exporting `handler`). */
export const HANDLER = 'index.handler';

/** esbuild's options for the functions (one place, so a test can bundle exactly as the deployment does). */
export const ESBUILD_OPTIONS: esbuild.BuildOptions = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  outExtension: { '.js': '.mjs' },
  // ESM builds of dependencies where they have one (the AWS SDK does): smaller bundles.
  mainFields: ['module', 'main'],
  minify: true,
  // Class names survive minification: errors are logged with their constructor's name.
  keepNames: true,
  sourcemap: true,
  sourcesContent: false,
  // CommonJS dependencies (pino, ...) call require() for Node built-ins; ESM has no require.
  banner: { js: "import { createRequire as __tributaryCreateRequire } from 'node:module'; const require = __tributaryCreateRequire(import.meta.url);" },
  logLevel: 'warning',
  absWorkingDir: PROJECT_ROOT,
};

/** The entry module of a function: its handler, wrapped with the REST adapter when it serves HTTP. */
export function entrySource(spec: BundledFunction): string {
  const handler = JSON.stringify(path.join(PROJECT_ROOT, spec.entry));
  if (spec.trigger !== 'http') return `export { handler } from ${handler};\n`;
  return [
    `import { handler as httpApiHandler } from ${handler};`,
    `import { acceptRestEvents } from ${JSON.stringify(REST_ADAPTER)};`,
    'export const handler = acceptRestEvents(httpApiHandler);',
    '',
  ].join('\n');
}

/**
 * Bundles `functions` (and any `extra` entry points, by output name → source file) into
 * `outdir/<name>/index.mjs` with one esbuild call; the entry modules go to `outdir/entries/`.
 */
export function bundleFunctions(functions: readonly BundledFunction[], outdir: string, extra: Record<string, string> = {}): void {
  const entries = path.join(outdir, 'entries');
  fs.mkdirSync(entries, { recursive: true });
  const entryPoints: Record<string, string> = { ...extra };
  for (const f of functions) {
    const file = path.join(entries, `${f.name}.mjs`);
    fs.writeFileSync(file, entrySource(f));
    entryPoints[`${f.name}/index`] = file;
  }
  esbuild.buildSync({ ...ESBUILD_OPTIONS, entryPoints, outdir });
  for (const f of functions) if (f.bundlesConsole) buildConsoleSync(path.join(outdir, f.name, 'console'));
}
