/**
 * The bundles are what AWS runs: synthesize with real bundling (the local esbuild), then load each
 * function's `index.mjs` in a child `node` (this machine's Node 20) with dummy storage settings and
 * no way to reach AWS, and have every HTTP function answer API Gateway's catch-all.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FUNCTIONS } from '../../lib/functions/catalog.js';
import { logicalId, synth, type Synthesized } from './synth.js';

const run = promisify(execFile);

/** Loads a bundle, and with an event, invokes its handler once and prints the result. */
const CHILD = `
const [file, eventJson] = process.argv.slice(1);
const mod = await import(file);
if (typeof mod.handler !== 'function') throw new Error('no handler export');
if (eventJson) {
  const context = { functionName: 'test', awsRequestId: 'req-1', getRemainingTimeInMillis: () => 29000 };
  process.stdout.write(JSON.stringify(await mod.handler(JSON.parse(eventJson), context)));
} else process.stdout.write('loaded');
`;

/** Settings a deployed function gets, pointing nowhere: nothing here may need storage. */
const ENV = {
  PATH: process.env.PATH ?? '',
  TRIBUTARY_COORDINATION_TABLE: 'bundle-test-coordination',
  TRIBUTARY_BUCKET: 'bundle-test-bucket',
  TRIBUTARY_S3_FORCE_PATH_STYLE: 'false',
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE',
  AWS_SECRET_ACCESS_KEY: 'example',
  // Any request would fail at once: port 9 (discard) refuses connections here.
  AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  NODE_OPTIONS: '--enable-source-maps',
  LOG_LEVEL: 'warn',
};

const httpApiDefault = {
  version: '2.0', routeKey: '$default', rawPath: '/no/such/route', rawQueryString: '', headers: { host: 'api.example.com', 'x-forwarded-proto': 'https' },
  isBase64Encoded: false,
  requestContext: {
    accountId: '123456789012', apiId: 'api', domainName: 'api.example.com', domainPrefix: 'api', requestId: 'req-1', routeKey: '$default',
    stage: '$default', time: '29/Nov/2026:17:02:38 +0000', timeEpoch: 1_796_000_000_000,
    http: { method: 'GET', path: '/no/such/route', protocol: 'HTTP/1.1', sourceIp: '192.0.2.1', userAgent: 'test' },
  },
};

const restApiProxy = {
  resource: '/{proxy+}', path: '/no/such/route', httpMethod: 'GET', headers: { Host: 'api.example.com' }, multiValueHeaders: { Host: ['api.example.com'] },
  queryStringParameters: null, multiValueQueryStringParameters: null, pathParameters: { proxy: 'no/such/route' }, stageVariables: null, body: null,
  isBase64Encoded: false,
  requestContext: {
    accountId: '123456789012', apiId: 'api', domainName: 'api.example.com', httpMethod: 'GET', path: '/prod/no/such/route', protocol: 'HTTP/1.1',
    requestId: 'req-2', requestTimeEpoch: 1_796_000_000_000, resourceId: 'r', resourcePath: '/{proxy+}', stage: 'prod', identity: { sourceIp: '192.0.2.1' },
  },
};

let s: Synthesized;
/** Function name → its staged asset directory. */
const assets = new Map<string, string>();

beforeAll(() => {
  // (with a JWT authorizer every catalog entry is deployed, the WebSocket API's authorizer too)
  s = synth({ brokers: 1, jwtAuthorizer: { issuer: 'https://id.example.com', audience: ['client'] } }, { bundle: true, keep: true });
  for (const spec of FUNCTIONS) {
    const fn = s.json.Resources[logicalId(s, (s.stack.cluster.functions as Record<string, any>)[spec.name])]?.Properties;
    const hash = String(fn.Code.S3Key).replace(/\.zip$/, '');
    assets.set(spec.name, path.join(s.outdir, `asset.${hash}`));
  }
});

afterAll(() => s?.cleanup());

async function inChild(name: string, event?: unknown): Promise<string> {
  const file = pathToFileURL(path.join(assets.get(name) ?? '', 'index.mjs')).href;
  // No deadline of its own: this file runs at the lowest CPU priority, where a child waits whenever
  // the test phases want both cores (the project's test timeout bounds a hang).
  try {
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', CHILD, file, ...(event ? [JSON.stringify(event)] : [])], { env: ENV });
    return stdout;
  } catch (e) {
    // The first line says which bundle and how it ended: CI's recap keeps only a failure's first lines.
    const { code, signal, stderr } = e as { code?: number; signal?: string; stderr?: string };
    throw new Error(`the ${name} bundle ended with ${signal ?? `exit code ${code}`}: ${String(stderr ?? '').trim().slice(0, 600)}`, { cause: e });
  }
}

describe('Bundled functions', () => {
  it('are one ESM file each, with a source map, built for every catalog entry (and the built console beside the console function\'s)', () => {
    for (const spec of FUNCTIONS) {
      const dir = assets.get(spec.name) ?? '';
      expect(fs.readdirSync(dir).sort(), spec.name).toEqual(['index.mjs', 'index.mjs.map', ...(spec.bundlesConsole ? ['console'] : [])].sort());
      expect(fs.readFileSync(path.join(dir, 'index.mjs'), 'utf8').slice(0, 120)).toContain('createRequire');
    }
  });

  it('load on this Node without reaching AWS', async () => {
    const loaded = await Promise.all(FUNCTIONS.filter((f) => f.trigger !== 'http').map((f) => inChild(f.name)));
    expect(loaded).toEqual(FUNCTIONS.filter((f) => f.trigger !== 'http').map(() => 'loaded'));
  });

  it('serve the console from the files in its bundle (no TRIBUTARY_CONSOLE_DIR), on both API types', async () => {
    const dir = path.join(assets.get('console') ?? '', 'console');
    const index = fs.readFileSync(path.join(dir, 'index.html'), 'utf8');
    const script = /src="\.\/(app-[A-Z0-9]{8}\.js)"/.exec(index)?.[1] as string;
    expect(fs.existsSync(path.join(dir, script))).toBe(true);
    const page = { ...httpApiDefault, routeKey: 'GET /ui/{proxy+}', rawPath: '/ui/', requestContext: { ...httpApiDefault.requestContext, routeKey: 'GET /ui/{proxy+}', http: { ...httpApiDefault.requestContext.http, path: '/ui/' } } };
    const file = { ...restApiProxy, resource: '/ui/{proxy+}', path: `/ui/${script}`, pathParameters: { proxy: script }, requestContext: { ...restApiProxy.requestContext, resourcePath: '/ui/{proxy+}', path: `/prod/ui/${script}` } };
    const [html, js] = await Promise.all([page, file].map(async (e) => JSON.parse(await inChild('console', e)) as { statusCode: number; headers: Record<string, string>; body: string }));
    expect(html?.statusCode).toBe(200);
    expect(html?.body).toBe(index);
    expect(html?.headers['content-security-policy']).toContain("script-src 'self'");
    expect(js?.statusCode).toBe(200);
    expect(js?.headers['cache-control']).toBe('public, max-age=31536000, immutable');
  });

  it('answer the HTTP API catch-all and the REST API proxy with a Kafka-style 404', async () => {
    const http = FUNCTIONS.filter((f) => f.trigger === 'http');
    const results = await Promise.all(http.flatMap((f) => [httpApiDefault, restApiProxy].map(async (event) => ({
      fn: f.name, out: JSON.parse(await inChild(f.name, event)) as { statusCode: number; headers: Record<string, string>; body: string },
    }))));
    expect(results).toHaveLength(http.length * 2);
    for (const { fn, out } of results) {
      expect(out.statusCode, fn).toBe(404);
      expect(out.headers['content-type'], fn).toBe('application/json');
      expect(JSON.parse(out.body), fn).toMatchObject({ error_code: 404, message: expect.stringContaining('404') });
    }
  });
});
