/**
 * Bundling the functions with the project's own esbuild, never Docker: the first asset CDK stages
 * runs ONE esbuild call for every function of the catalog (they share most of their code, so one
 * call costs about what one function costs), and each function's asset then takes its own output.
 * When the stack is synthesized without bundling (`aws:cdk:bundling-stacks: []`), nothing runs.
 *
 * Output per function: `index.mjs` (ESM, Node 22, minified, with a `require` shim for the CommonJS
 * dependencies) and `index.mjs.map` (used when the construct's `sourceMaps` prop turns on `--enable-source-maps`).
 * HTTP functions are wrapped so that they take REST API (payload 1.0) events too; see
 * runtime/rest-event.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { AssetHashType, DockerImage, type BundlingOptions } from 'aws-cdk-lib';
import { Code } from 'aws-cdk-lib/aws-lambda';
import * as esbuild from 'esbuild';
import type { FunctionSpec } from '../lib/functions.js';

export const PROJECT_ROOT = path.resolve(import.meta.dirname, '..');
const REST_ADAPTER = path.join(PROJECT_ROOT, 'cdk', 'runtime', 'rest-event.ts');

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
export function entrySource(spec: FunctionSpec): string {
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
 * Builds every function once, on demand, into `dist/lambda-XXXXXX/<name>/` (inside the project,
 * so the source map's relative paths are the same on every machine and the asset hash with them),
 * and hands each function's directory to its asset. The directory is removed once every asset
 * took its copy, or when the process exits.
 */
export class FunctionBundler {
  private outdir: string | undefined;
  private readonly waiting = new Set<string>();

  constructor(private readonly functions: readonly FunctionSpec[]) {
    for (const f of functions) this.waiting.add(f.name);
  }

  /** The Lambda code of one function of the catalog. */
  code(spec: FunctionSpec): Code {
    const bundling: BundlingOptions = {
      // Required by the type, never pulled: local bundling always succeeds or throws.
      image: DockerImage.fromRegistry('tributary/no-docker-bundling'),
      // Part of the asset cache key: keeps the functions' assets apart.
      command: ['esbuild', spec.entry],
      local: {
        tryBundle: (outputDir: string) => {
          this.copyInto(spec.name, outputDir);
          return true;
        },
      },
    };
    return Code.fromAsset(PROJECT_ROOT, { assetHashType: AssetHashType.OUTPUT, bundling });
  }

  private build(): string {
    if (this.outdir) return this.outdir;
    const dist = path.join(PROJECT_ROOT, 'dist');
    fs.mkdirSync(dist, { recursive: true });
    const outdir = fs.mkdtempSync(path.join(dist, 'lambda-'));
    const removeOnExit = () => fs.rmSync(outdir, { recursive: true, force: true });
    process.once('exit', removeOnExit);
    const entries = path.join(outdir, 'entries');
    fs.mkdirSync(entries);
    const entryPoints: Record<string, string> = {};
    for (const f of this.functions) {
      const file = path.join(entries, `${f.name}.mjs`);
      fs.writeFileSync(file, entrySource(f));
      entryPoints[`${f.name}/index`] = file;
    }
    try {
      esbuild.buildSync({ ...ESBUILD_OPTIONS, entryPoints, outdir });
    } catch (err) {
      removeOnExit();
      throw new Error(`Bundling the Lambda functions with esbuild failed: ${(err as Error).message}`, { cause: err });
    }
    this.outdir = outdir;
    return outdir;
  }

  private copyInto(name: string, outputDir: string): void {
    const from = path.join(this.build(), name);
    fs.cpSync(from, outputDir, { recursive: true });
    this.waiting.delete(name);
    if (this.waiting.size === 0 && this.outdir) {
      fs.rmSync(this.outdir, { recursive: true, force: true });
      this.outdir = undefined;
    }
  }
}
