/**
 * Builds the console (a static single-page app, console/src) with one esbuild call: the entry
 * console/src/main.tsx bundled for the browser into `app-<hash>.js` and `app-<hash>.css` (CSS
 * imported from TypeScript is bundled too), with code splitting (modules loaded by dynamic import,
 * oidc-client-ts say, become `chunks/<name>-<hash>.js`), and `index.html` written from
 * console/index.html with the hashed names in place of `./app.js` and `./app.css`.
 *
 * Who runs it: `npm run build:console` (into dist/console/), the local stack at start, and the
 * bundling of the `console` function (build/functions.ts), whose bundle carries the files in `console/`.
 * Everything but index.html has a content hash in its name, so the server may cache it for a year.
 */
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';

const CONSOLE_ROOT = path.resolve(import.meta.dirname, '..', 'console');

/** One file of a build. */
export interface BuiltFile {
  /** Relative to the output directory, with `/` separators (`app-3FJX2KQA.js`). */
  readonly path: string;
  readonly bytes: number;
  /** Its size gzipped (level 9): what a browser downloads when the server compresses it. */
  readonly gzipBytes: number;
}

/** What `buildConsole` wrote. */
export interface BuiltConsole {
  readonly outdir: string;
  /** The entry script, e.g. `app-3FJX2KQA.js`. */
  readonly js: string;
  /** The entry's stylesheet, e.g. `app-QW6D7ZPM.css`; undefined when the app imports no CSS. */
  readonly css: string | undefined;
  /** Every file, index.html first, then by name. */
  readonly files: readonly BuiltFile[];
  /** Sums over `files`. */
  readonly totalBytes: number;
  readonly totalGzipBytes: number;
  /** How long the build took. */
  readonly ms: number;
}

export interface BuildConsoleOptions {
  /** @default true */
  readonly minify?: boolean;
  /** The app's entry module. @default console/src/main.tsx */
  readonly entry?: string;
  /** The page template; it must refer to `./app.js` (and `./app.css` if the app has styles). @default console/index.html */
  readonly template?: string;
}

/** esbuild's options for the console (one place, for the synchronous and the asynchronous build). */
export function consoleBuildOptions(outdir: string, o: BuildConsoleOptions = {}): esbuild.BuildOptions & { metafile: true } {
  return {
    entryPoints: { app: path.resolve(o.entry ?? path.join(CONSOLE_ROOT, 'src', 'main.tsx')) },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: o.minify ?? true,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    entryNames: '[name]-[hash]',
    chunkNames: 'chunks/[name]-[hash]',
    assetNames: 'assets/[name]-[hash]',
    loader: { '.svg': 'file', '.png': 'file', '.woff2': 'file' },
    define: { 'process.env.NODE_ENV': '"production"' },
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
    absWorkingDir: path.resolve(CONSOLE_ROOT, '..'),
  };
}

/** Builds the console into `outdir`, which is emptied first (old hashed files would pile up). */
export async function buildConsole(outdir: string, o: BuildConsoleOptions = {}): Promise<BuiltConsole> {
  const started = Date.now();
  const abs = prepare(outdir);
  const result = await esbuild.build(consoleBuildOptions(abs, o));
  return finish(abs, result.metafile, o, started);
}

/** The same build, synchronously: for CDK's local bundling, which cannot wait for a promise. */
export function buildConsoleSync(outdir: string, o: BuildConsoleOptions = {}): BuiltConsole {
  const started = Date.now();
  const abs = prepare(outdir);
  const result = esbuild.buildSync(consoleBuildOptions(abs, o));
  return finish(abs, result.metafile, o, started);
}

function prepare(outdir: string): string {
  const abs = path.resolve(outdir);
  fs.rmSync(abs, { recursive: true, force: true });
  fs.mkdirSync(abs, { recursive: true });
  return abs;
}

function finish(outdir: string, metafile: esbuild.Metafile, o: BuildConsoleOptions, started: number): BuiltConsole {
  // Metafile paths are relative to absWorkingDir (the project root).
  const root = path.resolve(CONSOLE_ROOT, '..');
  const rel = (p: string) => path.relative(outdir, path.resolve(root, p)).split(path.sep).join('/');
  const entry = Object.entries(metafile.outputs).find(([, out]) => out.entryPoint !== undefined);
  if (!entry) throw new Error('The console build produced no entry script.');
  const js = rel(entry[0]);
  const css = entry[1].cssBundle !== undefined ? rel(entry[1].cssBundle) : undefined;

  const templateFile = o.template ?? path.join(CONSOLE_ROOT, 'index.html');
  let html = fs.readFileSync(templateFile, 'utf8');
  if (!html.includes('"./app.js"')) throw new Error(`${templateFile} must load the app as "./app.js".`);
  html = html.replace('"./app.js"', JSON.stringify(`./${js}`));
  if (css !== undefined) {
    if (!html.includes('"./app.css"')) throw new Error(`${templateFile} must link the styles as "./app.css".`);
    html = html.replace('"./app.css"', JSON.stringify(`./${css}`));
  } else {
    // No styles: no link to a file that does not exist.
    html = html.replace(/^[ \t]*<link[^>]*href="\.\/app\.css"[^>]*>[ \t]*\r?\n?/m, '');
  }
  fs.writeFileSync(path.join(outdir, 'index.html'), html);

  const names = [...Object.keys(metafile.outputs).map(rel)].sort();
  const files = ['index.html', ...names].map((p): BuiltFile => {
    const bytes = fs.readFileSync(path.join(outdir, p));
    return { path: p, bytes: bytes.length, gzipBytes: gzipSync(bytes, { level: 9 }).length };
  });
  return {
    outdir, js, css, files,
    totalBytes: files.reduce((n, f) => n + f.bytes, 0),
    totalGzipBytes: files.reduce((n, f) => n + f.gzipBytes, 0),
    ms: Date.now() - started,
  };
}

/** The build as a table, for `npm run build:console` and the local stack's log. */
export function describeBuild(b: BuiltConsole): string {
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  const rows = b.files.map((f) => `  ${f.path.padEnd(40)} ${kb(f.bytes).padStart(10)} ${kb(f.gzipBytes).padStart(10)} gzipped`);
  return [`Console built in ${b.ms} ms into ${b.outdir}:`, ...rows, `  ${'total'.padEnd(40)} ${kb(b.totalBytes).padStart(10)} ${kb(b.totalGzipBytes).padStart(10)} gzipped`].join('\n');
}

// `npm run build:console [outdir]`
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const outdir = process.argv[2] ?? path.join(CONSOLE_ROOT, '..', 'dist', 'console');
  buildConsole(outdir).then((b) => process.stdout.write(`${describeBuild(b)}\n`), (err: unknown) => {
    process.stderr.write(`The console build failed: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
