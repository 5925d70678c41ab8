/**
 * Bundling the functions with the project's own esbuild, never Docker: the first asset CDK stages
 * runs ONE esbuild call for every function of the catalog (they share most of their code, so one
 * call costs about what one function costs), and each function's asset then takes its own output.
 * When the stack is synthesized without bundling (`aws:cdk:bundling-stacks: []`), nothing runs.
 * What the bundles hold: build/functions.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { AssetHashType, DockerImage, type BundlingOptions } from 'aws-cdk-lib';
import { Code } from 'aws-cdk-lib/aws-lambda';
import type { FunctionSpec } from '../lib/functions/catalog.js';
import { PROJECT_ROOT, bundleFunctions } from '../build/functions.js';

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
    try {
      bundleFunctions(this.functions, outdir);
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
