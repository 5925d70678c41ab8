/**
 * The console function: serves the built console (build/console.ts) under `/ui/` and its
 * `/ui/config.json`, with no credentials asked (the routes have no authorizer: the files hold no
 * data; the app's API calls carry the credentials).
 *
 * - Files are read once per container from `TRIBUTARY_CONSOLE_DIR` (default: `console/` beside the
 *   bundle) and kept in memory with their ETag and gzipped form; no request touches the disk.
 * - `GET /ui` → 301 to `ui/` (relative, so a REST API's stage prefix is kept); `GET /ui/` and any
 *   path under it that is no file → index.html, the single-page app (it routes by the URL's hash).
 *   A missing name with a file extension (`app-OLDHASH.js`) is a 404: an HTML page in place of a
 *   script would only fail later and less clearly.
 * - Hashed files: `cache-control: public, max-age=31536000, immutable`; index.html and
 *   config.json: `no-cache`. Strong ETags, 304 on a matching If-None-Match; HEAD as GET without
 *   the body; gzip when the client accepts it (API Gateway does not compress Lambda responses).
 * - HTML gets a Content-Security-Policy allowing only this origin's scripts and styles (plus inline
 *   styles: uPlot sets them), API calls to this origin and the OIDC provider, and no framing.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { ENVIRONMENT } from '../config.js';
import { logger } from '../logger.js';

/** What `/ui/config.json` tells the app about the API's authentication. */
export interface ConsoleConfig {
  /** `none`: open; `token`: the local stack's `--auth` (a bearer token); `iam`: SigV4 only; `jwt`: an OIDC provider's token. */
  readonly auth: 'none' | 'token' | 'iam' | 'jwt';
  /** The WebSocket API's URL, where it is not this origin's `/ws` (a deployment's: `TRIBUTARY_CONSOLE_WEBSOCKET_URL`). */
  readonly websocket?: string;
  /** With `jwt`, when the deployment names the console's OIDC client. */
  readonly oidc?: {
    readonly issuer: string;
    readonly clientId: string;
    readonly scopes: readonly string[];
    /** Where else the sign-in connects: a provider whose token endpoint is not on the issuer's host. */
    readonly connectOrigins?: readonly string[];
  };
}

const AUTH_MODES = new Set<ConsoleConfig['auth']>(['none', 'token', 'iam', 'jwt']);

/** The console's configuration from the function's environment. */
export function consoleConfig(env: NodeJS.ProcessEnv = process.env): ConsoleConfig {
  const mode = env[ENVIRONMENT.auth] as ConsoleConfig['auth'] | undefined;
  const auth = mode !== undefined && AUTH_MODES.has(mode) ? mode : 'none';
  const issuer = env[ENVIRONMENT.consoleOidcIssuer];
  const clientId = env[ENVIRONMENT.consoleOidcClientId];
  const websocket = env[ENVIRONMENT.consoleWebsocketUrl];
  const base = { auth, ...(websocket ? { websocket } : {}) };
  if (auth !== 'jwt' || !issuer || !clientId) return base;
  const words = (v: string | undefined) => (v ?? '').split(/\s+/).filter((s) => s !== '');
  const scopes = words(env[ENVIRONMENT.consoleOidcScopes] ?? 'openid');
  const connectOrigins = words(env[ENVIRONMENT.consoleConnectOrigins]);
  return { ...base, oidc: { issuer, clientId, scopes, ...(connectOrigins.length > 0 ? { connectOrigins } : {}) } };
}

/**
 * Where the app may connect besides this origin: the OIDC issuer; for a Cognito user pool also its
 * hosted domains (`https://<domain>.auth.<region>.amazoncognito.com`), where the token endpoint is.
 * Another provider's token endpoint on another host (Google's `https://oauth2.googleapis.com`) is
 * named by the construct's `jwtAuthorizer.consoleConnectOrigins`.
 */
export function oidcOrigins(issuer: string): string[] {
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    return [];
  }
  const cognito = /^cognito-idp\.([a-z0-9-]+)\.amazonaws\.com$/.exec(url.hostname);
  return [url.origin, ...(cognito ? [`https://*.auth.${cognito[1]}.amazoncognito.com`] : [])];
}

/** A WebSocket URL's origin for connect-src (`wss://host`); the URL itself when it is not one. */
function websocketOrigin(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return url;
  }
}

/** The Content-Security-Policy of the console's page. */
export function contentSecurityPolicy(config: ConsoleConfig): string {
  const connect = ["'self'", ...(config.websocket ? [websocketOrigin(config.websocket)] : []), ...(config.oidc ? [...oidcOrigins(config.oidc.issuer), ...(config.oidc.connectOrigins ?? [])] : [])];
  return [
    "default-src 'none'",
    "script-src 'self'",
    // uPlot positions its cursor and legend with inline styles.
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src ${connect.join(' ')}`,
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};
const TEXT = /^(text\/|application\/json|image\/svg)/;
/** esbuild's `[hash]`: 8 characters of base32. */
const HASHED = /-[A-Z0-9]{8}\.[a-z0-9]+$/;
const IMMUTABLE = 'public, max-age=31536000, immutable';

interface StaticFile {
  readonly body: Buffer;
  readonly gzip: Buffer | undefined;
  readonly type: string;
  readonly etag: string;
  readonly cacheControl: string;
}

/** Every file of a built console, by path relative to its directory (`chunks/x-ABC.js`). */
export type ConsoleFiles = ReadonlyMap<string, StaticFile>;

function toFile(name: string, body: Buffer): StaticFile {
  const type = TYPES[path.extname(name).toLowerCase()] ?? 'application/octet-stream';
  const gzipped = TEXT.test(type) && body.length > 1024 ? gzipSync(body, { level: 9 }) : undefined;
  return {
    body,
    gzip: gzipped && gzipped.length < body.length ? gzipped : undefined,
    type,
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
    cacheControl: HASHED.test(name) ? IMMUTABLE : 'no-cache',
  };
}

/** Reads a built console into memory; throws if it has no index.html. */
export function loadConsoleFiles(dir: string): ConsoleFiles {
  const files = new Map<string, StaticFile>();
  const walk = (sub: string) => {
    for (const e of fs.readdirSync(path.join(dir, sub), { withFileTypes: true })) {
      const rel = sub === '' ? e.name : `${sub}/${e.name}`;
      if (e.isDirectory()) walk(rel);
      else if (e.isFile()) files.set(rel, toFile(rel, fs.readFileSync(path.join(dir, rel))));
    }
  };
  walk('');
  if (!files.has('index.html')) throw new Error(`${dir} has no index.html`);
  return files;
}

/** The directory of built files: `TRIBUTARY_CONSOLE_DIR`, or `console/` beside the running bundle. */
export function consoleDir(env: NodeJS.ProcessEnv = process.env, moduleUrl: string = import.meta.url): string {
  return env[ENVIRONMENT.consoleDir] || path.join(path.dirname(fileURLToPath(moduleUrl)), 'console');
}

const loaded = new Map<string, ConsoleFiles>();

/** The files of `dir`, read on first use and kept for the container's life. */
function filesOf(dir: string): ConsoleFiles {
  let files = loaded.get(dir);
  if (!files) loaded.set(dir, (files = loadConsoleFiles(dir)));
  return files;
}

type Result = APIGatewayProxyStructuredResultV2;
type Headers = Record<string, string>;

const COMMON: Headers = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' };

const error = (status: number, message: string, headers: Headers = {}): Result => ({
  statusCode: status,
  headers: { ...COMMON, 'content-type': 'application/json', 'cache-control': 'no-cache', ...headers },
  body: JSON.stringify({ error_code: status, message }),
});

/** Does any entry of an If-None-Match header match `etag` (weak comparison, as RFC 9110 asks for GET)? */
function matches(ifNoneMatch: string | undefined, etags: readonly string[]): boolean {
  if (ifNoneMatch === undefined) return false;
  const wanted = ifNoneMatch.split(',').map((t) => t.trim().replace(/^W\//, ''));
  return wanted.includes('*') || wanted.some((t) => etags.includes(t));
}

function serve(file: StaticFile, event: APIGatewayProxyEventV2, extra: Headers): Result {
  const headers = Object.fromEntries(Object.entries(event.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  const gzip = file.gzip !== undefined && /\bgzip\b/i.test(headers['accept-encoding'] ?? '');
  // One representation, one tag: the gzipped bytes are another.
  const etag = gzip ? file.etag.replace(/"$/, '.gz"') : file.etag;
  const common: Headers = {
    ...COMMON, ...extra, etag, 'cache-control': file.cacheControl, ...(file.gzip ? { vary: 'accept-encoding' } : {}),
  };
  if (matches(headers['if-none-match'], [file.etag, file.etag.replace(/"$/, '.gz"')])) return { statusCode: 304, headers: common };
  const body = gzip ? (file.gzip as Buffer) : file.body;
  const result: Result = {
    statusCode: 200,
    headers: { ...common, 'content-type': file.type, ...(gzip ? { 'content-encoding': 'gzip' } : {}) },
  };
  if (event.requestContext.http.method === 'HEAD') return result;
  return TEXT.test(file.type) && !gzip
    ? { ...result, body: body.toString('utf8'), isBase64Encoded: false }
    : { ...result, body: body.toString('base64'), isBase64Encoded: true };
}

/**
 * The path under `/ui/` a request names: the greedy route's `proxy` parameter, or what follows
 * `/ui/` in the path (API Gateway may route `/ui/` to either route); undefined for `/ui` itself.
 */
function pathUnderUi(event: APIGatewayProxyEventV2): string | undefined | null {
  if (event.routeKey.endsWith(' /ui/{proxy+}')) return event.pathParameters?.proxy ?? '';
  const m = /\/ui(\/.*)?$/.exec(event.rawPath);
  if (!m) return null;
  if (m[1] === undefined) return undefined;
  try {
    return decodeURIComponent(m[1].slice(1));
  } catch {
    return m[1].slice(1);
  }
}

/** The console function's handler; `dir` overrides where the files are (tests). */
export function consoleHandler(dir?: string): (event: APIGatewayProxyEventV2) => Promise<Result> {
  return async (event) => {
    const method = event.requestContext.http.method;
    if (method !== 'GET' && method !== 'HEAD') return error(405, `HTTP 405 Method Not Allowed: the console's files take GET and HEAD, not ${method}.`, { allow: 'GET, HEAD' });
    const under = pathUnderUi(event);
    if (under === null) return error(404, `HTTP 404 Not Found: the console serves /ui/, not ${event.rawPath}.`);
    if (under === undefined) {
      const query = event.rawQueryString ? `?${event.rawQueryString}` : '';
      return { statusCode: 301, headers: { ...COMMON, location: `ui/${query}`, 'cache-control': 'no-cache' } };
    }
    const config = consoleConfig();
    if (under === 'config.json') {
      const body = JSON.stringify(config);
      return serve(toFile('config.json', Buffer.from(body)), event, {});
    }
    const where = dir ?? consoleDir();
    let files: ConsoleFiles;
    try {
      files = filesOf(where);
    } catch (err) {
      logger.error({ event: 'console-files-missing', dir: where, err }, 'the console function has no built console');
      return error(500, `HTTP 500 Internal Server Error: the console's files are missing (${where}); build them with npm run build:console and set ${ENVIRONMENT.consoleDir}.`);
    }
    const file = files.get(under);
    if (file && under !== 'index.html') return serve(file, event, {});
    if (!file && /\.[a-z0-9]+$/i.test(under) && !under.endsWith('.html')) return error(404, `HTTP 404 Not Found: the console has no file ${under}.`);
    const index = files.get('index.html') as StaticFile;
    return serve(index, event, { 'content-security-policy': contentSecurityPolicy(config), 'x-frame-options': 'DENY' });
  };
}
