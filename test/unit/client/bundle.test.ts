/**
 * The SDK stays a client: bundled for a browser (esbuild, platform=browser) it pulls in none of
 * the server's modules — no DynamoDB or S3 client, no CDK, no lib/storage, log, cluster or http —
 * and no `node:` built-in, and it stays small.
 */
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

describe('the SDK bundled for a browser', () => {
  it('holds no server module and no Node built-in, and its entry chunk stays under 40 KB gzipped', async () => {
    const out = await build({
      entryPoints: ['client/index.ts'], bundle: true, platform: 'browser', format: 'esm', splitting: true,
      outdir: 'out', write: false, minify: true, metafile: true, logLevel: 'silent',
    });
    const inputs = Object.keys(out.metafile.inputs);
    const forbidden = [/@aws-sdk\/client-/, /@aws-sdk\/lib-dynamodb/, /aws-cdk-lib/, /constructs/, /lib\/(storage|log|cluster|groups|http|local|orchestration)\//, /^node:/, /pino/, /zod/, /@middy/];
    for (const input of inputs) for (const f of forbidden) expect(input, `${input} is in the browser bundle`).not.toMatch(f);
    const imports = Object.values(out.metafile.outputs).flatMap((o) => o.imports.filter((i) => i.external).map((i) => i.path));
    // The only import left to the runtime is the Node-only credential chain, behind a specifier bundlers do not follow.
    expect(imports.filter((p) => p.startsWith('node:'))).toEqual([]);
    const entry = out.outputFiles.find((f) => /out\/index\.js$/.test(f.path));
    expect(entry).toBeDefined();
    const sizes = {
      entryBytes: entry?.contents.length ?? 0,
      entryGzip: gzipSync(entry?.contents ?? new Uint8Array()).length,
      allBytes: out.outputFiles.reduce((n, f) => n + f.contents.length, 0),
      allGzip: out.outputFiles.reduce((n, f) => n + gzipSync(f.contents).length, 0),
    };
    console.log(`SDK browser bundle: entry ${sizes.entryBytes} B (${sizes.entryGzip} B gzipped); with the SigV4 chunks ${sizes.allBytes} B (${sizes.allGzip} B gzipped)`);
    expect(sizes.entryGzip).toBeLessThan(40_000);
  });
});
