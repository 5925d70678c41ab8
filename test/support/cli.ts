/**
 * The `tributary` CLI as a user runs it, for tests: compiled once per file, as the package ships it
 * compiled (dist/package/cli), so each run starts a plain `node`, not the TypeScript loader; run as
 * a child process against the shared stack. (Compiled inside the project, so that its packages,
 * left external, resolve from node_modules.)
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll } from 'vitest';
import { baseUrl } from './api.js';

export interface CliRun { readonly code: number; readonly stdout: string; readonly stderr: string }

/**
 * Compiles the CLI before the file's tests and removes it after; returns a runner (`args`, `stdin`
 * piped in) whose `main` is the compiled file, for a test that spawns it itself.
 */
export function useCli(): ((args: string[], stdin?: string) => Promise<CliRun>) & { readonly main: string } {
  const cache = path.resolve(import.meta.dirname, '../../node_modules/.cache');
  fs.mkdirSync(cache, { recursive: true });
  const dir = fs.mkdtempSync(path.join(cache, 'tributary-cli-test-'));
  const main = path.join(dir, 'cli.mjs');
  beforeAll(async () => {
    await build({
      entryPoints: [path.resolve(import.meta.dirname, '../../cli/main.ts')], outfile: main, bundle: true, platform: 'node', format: 'esm',
      // package.json's engines: below Node 20.10 esbuild drops import attributes (`with { type: 'json' }`), which Node then refuses.
      target: 'node20.11', packages: 'external', logLevel: 'warning',
    });
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const run = (args: string[], stdin?: string) => new Promise<CliRun>((resolve, reject) => {
    const child = spawn(process.execPath, [main, '--url', baseUrl(), ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d; });
    child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
  return Object.assign(run, { main });
}
