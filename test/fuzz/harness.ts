/**
 * Runs fuzz cases in this process: each case becomes the API Gateway event the local gateway
 * (lib/local/gateway.ts) would build for it and goes to the same Lambda handler, against the
 * shared local stack's storage. Checks every answer (a 2xx/4xx status, JSON, REST Proxy's error
 * body, the route's deadline) and, for a refused write, that what the route could touch is as it was.
 */
import { deflateSync, gzipSync } from 'node:zlib';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { handler as admin } from '../../lambdas/admin.js';
import { handler as fetchFn } from '../../lambdas/fetch.js';
import { handler as groups } from '../../lambdas/groups.js';
import { handler as produce } from '../../lambdas/produce.js';
import type { HttpHandler } from '../../lib/http/handler.js';
import type { ApiFunctionName } from '../../lib/functions/catalog.js';
import { DEFAULT_ROUTE, matchRoute, routeKey, type RouteSpec } from '../../lib/http/routes.js';
import { httpApiEvent, lambdaContext } from '../../local/gateway.js';
import type { Encoding } from './generators.js';

const HANDLERS: Record<ApiFunctionName, HttpHandler> = { admin, produce, fetch: fetchFn, groups };

/** The functions' timeout (lib/functions.ts: 29 s for every HTTP function). */
export const ROUTE_DEADLINE_MS = 29_000;

export interface Invocation {
  readonly method: string;
  /** Path and query as a client would send them. */
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly encoding?: Encoding;
}

export interface Outcome {
  readonly routeKey: string;
  readonly status: number;
  readonly body: string | undefined;
  readonly contentType: string | undefined;
  readonly ms: number;
}

function encodeBody(text: string | undefined, encoding: Encoding = 'none'): { bytes: Buffer; contentEncoding?: string } {
  const plain = Buffer.from(text ?? '', 'utf8');
  switch (encoding) {
    case 'none': return { bytes: plain };
    case 'identity': return { bytes: plain, contentEncoding: 'identity' };
    case 'gzip': return { bytes: gzipSync(plain), contentEncoding: 'gzip' };
    case 'deflate': return { bytes: deflateSync(plain), contentEncoding: 'deflate' };
    case 'gzip-twice': return { bytes: gzipSync(gzipSync(plain)), contentEncoding: 'gzip, gzip' };
    case 'gzip-truncated': {
      const z = gzipSync(plain);
      return { bytes: z.subarray(0, Math.floor(z.length / 2)), contentEncoding: 'gzip' };
    }
    case 'garbage': return { bytes: plain, contentEncoding: 'br;q=x, zstd' };
  }
}

/** The event the local gateway builds (lib/local/gateway.ts `toEvent`), from a request given as data. */
export function eventOf(inv: Invocation): { event: APIGatewayProxyEventV2; route: RouteSpec } {
  const url = new URL(inv.url, 'http://local');
  const method = inv.method.toUpperCase();
  const match = matchRoute(method, url.pathname);
  const route = match?.route ?? DEFAULT_ROUTE;
  const key = routeKey(route);
  const { bytes, contentEncoding } = encodeBody(inv.body, inv.encoding);
  const headers: Record<string, string> = { host: '127.0.0.1:8080', 'user-agent': 'fuzz', ...inv.headers };
  if (contentEncoding !== undefined) headers['content-encoding'] = contentEncoding;
  if (bytes.length > 0) headers['content-length'] = String(bytes.length);
  const event = httpApiEvent({ method, url, headers, body: bytes, route: key, params: match?.pathParameters ?? {} });
  return { event, route };
}

/** Invokes the route's function as the gateway would, with the function's deadline. */
export async function invoke(inv: Invocation): Promise<Outcome> {
  const { event, route } = eventOf(inv);
  const started = Date.now();
  // A hang is reported as one (Lambda would end the invocation there), not left to the test's timeout.
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within the route's ${ROUTE_DEADLINE_MS} ms deadline: the handler hangs`)), ROUTE_DEADLINE_MS + 1000);
  });
  const result = await Promise.race([
    HANDLERS[route.fn](event, lambdaContext(route.fn, event.requestContext.requestId, started + ROUTE_DEADLINE_MS)) as Promise<APIGatewayProxyStructuredResultV2>,
    hung,
  ]).finally(() => clearTimeout(timer));
  const ms = Date.now() - started;
  const body = result.body === undefined ? undefined : result.isBase64Encoded ? Buffer.from(result.body, 'base64').toString('utf8') : result.body;
  const contentType = Object.entries(result.headers ?? {}).find(([k]) => k.toLowerCase() === 'content-type')?.[1] as string | undefined;
  return { routeKey: event.routeKey, status: result.statusCode ?? 200, body, contentType, ms };
}

/** A JSON document, or several (REST Proxy's streaming produce answers one per record). */
function parseDocuments(text: string): unknown[] {
  try {
    return [JSON.parse(text)];
  } catch {
    return text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as unknown);
  }
}

/** The property every answer must have; a string naming the first violation, or undefined. */
export function violation(o: Outcome): string | undefined {
  if (!Number.isInteger(o.status) || o.status < 200 || o.status >= 500 || (o.status >= 300 && o.status < 400)) return `status ${o.status}`;
  if (o.ms > ROUTE_DEADLINE_MS) return `answered after ${o.ms} ms, past the route's ${ROUTE_DEADLINE_MS} ms deadline`;
  // (A 201 without a body is REST Proxy v3's answer to an ACL created: createKafkaAcls.)
  if (o.body === undefined || o.body === '') return o.status === 204 || o.status === 201 ? undefined : `status ${o.status} with an empty body`;
  if (o.status === 204) return 'a 204 with a body';
  // (The schema registry's raw schema of a Protobuf schema is its .proto text.)
  if (o.status === 200 && /\/schema$/.test(o.routeKey) && /^text\/plain/.test(o.contentType ?? '')) return undefined;
  let docs: unknown[];
  try {
    docs = parseDocuments(o.body);
  } catch {
    return `a body that is not JSON: ${o.body.slice(0, 200)}`;
  }
  if (!/json/i.test(o.contentType ?? '')) return `content-type ${o.contentType} for a JSON body`;
  if (o.status >= 400) {
    const e = docs[0] as Record<string, unknown>;
    const keys = e && typeof e === 'object' ? Object.keys(e).sort().join(',') : '';
    if (docs.length !== 1 || keys !== 'error_code,message' || typeof e.error_code !== 'number' || typeof e.message !== 'string' || e.message === '') {
      return `an error body other than {error_code, message}: ${o.body.slice(0, 200)}`;
    }
  }
  return undefined;
}

/** Per route: how many cases, which statuses, the slowest. */
export class Stats {
  private readonly rows = new Map<string, { cases: number; statuses: Map<number, number>; maxMs: number; totalMs: number }>();

  add(route: string, o: Outcome): void {
    const row = this.rows.get(route) ?? { cases: 0, statuses: new Map(), maxMs: 0, totalMs: 0 };
    row.cases++;
    row.statuses.set(o.status, (row.statuses.get(o.status) ?? 0) + 1);
    row.maxMs = Math.max(row.maxMs, o.ms);
    row.totalMs += o.ms;
    this.rows.set(route, row);
  }

  table(): string {
    const lines = ['| route | cases | statuses seen | max ms |', '|---|---:|---|---:|'];
    let cases = 0;
    for (const [route, r] of this.rows) {
      cases += r.cases;
      const statuses = [...r.statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`).join(' ');
      lines.push(`| \`${route}\` | ${r.cases} | ${statuses} | ${r.maxMs} |`);
    }
    lines.push(`| all ${this.rows.size} routes | ${cases} | | |`);
    return lines.join('\n');
  }
}
