/**
 * The local API Gateway: an HTTP server that matches each request to a route as API Gateway does,
 * turns it into an HTTP API payload-2.0 event, and invokes the same handler the CDK deploys for
 * that route's function. Bodies over the limit get 413 as Lambda gives them. `/local/...` is the
 * local-only control API (processes), served by the caller's `control` hook. With `authenticate`
 * (`--auth`), the gateway is also the API's Lambda authorizer: every API route needs a known
 * bearer token (401 with 40101 before any function runs), and the principal goes into the event as
 * `requestContext.authorizer.lambda.principal`, where lib/http/principal.ts reads it. The console's
 * static routes (lib/http/static-routes.ts) have no authorizer here either, as in AWS.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { logger } from '../lib/logger.js';
import { observedRequest } from '../lib/storage/metering.js';
import type { HttpHandler } from '../lib/http/handler.js';
import type { HttpFunctionName } from '../lib/functions/catalog.js';
import { matchStaticRoute, staticRouteKey } from '../lib/http/static-routes.js';
import { DEFAULT_ROUTE, matchRoute, routeKey } from '../lib/http/routes.js';
import { READY_PATH } from './ports.js';
import type { WebSocketApi } from './websocket-api.js';

export interface ControlResponse {
  readonly status: number;
  readonly body: unknown;
}

export interface GatewayOptions {
  readonly host: string;
  readonly port: number;
  /** The HTTP functions: the API's (lib/http/routes.ts) and the console's (lib/http/static-routes.ts). */
  readonly functions: Readonly<Record<HttpFunctionName, HttpHandler>>;
  readonly maxRequestBytes: number;
  /** The 413 body for a request over `maxRequestBytes`. @default the REST Proxy's error shape */
  readonly tooLargeBody?: unknown;
  /** Serves `/local/...`; undefined means those paths are ordinary (unknown) routes. */
  readonly control?: (method: string, path: string, query: URLSearchParams) => Promise<ControlResponse>;
  /**
   * The Lambda authorizer: the principal of a request's `Authorization` header, undefined to
   * refuse it with 401. Not asked for `/local/...` nor the console's routes (`GET`/`HEAD` `/ui`, `/ui/...`).
   * @default none: every request is let through, as `User:ANONYMOUS`
   */
  readonly authenticate?: (authorization: string | undefined) => string | undefined;
  /** The WebSocket API on `/ws`, with the connection management and Lambda Invoke APIs its function uses (local/websocket-api.ts). */
  readonly websocket?: WebSocketApi;
}

/** REST Proxy's code for a request without valid credentials. */
export const UNAUTHENTICATED_CODE = 40101;

/**
 * API Gateway passes these content types as text and base64-encodes everything else. An HTTP API
 * decides by Content-Type alone ("infers the need for encoding based on the content-type header");
 * Content-Encoding plays no part (HTTP APIs do not decompress; that is a REST API option), so a
 * gzip body sent as application/json reaches the function as text, its bytes not UTF-8 mangled.
 * Compressed bodies go with a binary type (the SDK sends application/octet-stream); docs/compression.md.
 */
const TEXT_TYPES = /^(text\/|application\/json\b|application\/xml\b|application\/javascript\b)/i;

/** A Lambda context for a local invocation of `fn`. */
export function lambdaContext(fn: string, requestId: string = randomUUID(), deadline = Date.now() + 900_000): Context {
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: `tributary-${fn}`,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:tributary-${fn}`,
    memoryLimitInMB: '1024',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/tributary-${fn}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', ...headers, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Reads the body, up to `limit` bytes. A larger body is read to its end and dropped (answering
 * before the client finished sending would reset its connection instead of showing it the 413);
 * a declared length beyond that is not waited for.
 */
async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too-large'> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > 8 * limit) return 'too-large';
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size <= limit) chunks.push(chunk as Buffer);
    else if (size > 8 * limit) return 'too-large';
  }
  return size > limit ? 'too-large' : Buffer.concat(chunks);
}

/** A request as API Gateway sees it, before it becomes an event. */
export interface GatewayRequest {
  readonly method: string;
  readonly url: URL;
  /** Lower-case names; repeated headers joined with `,` (as API Gateway joins them). */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  /** The matched route's key (`POST /v3/...`, `$default`) and its path parameters. */
  readonly route: string;
  readonly params: Readonly<Record<string, string>>;
  /** What a Lambda authorizer put in the request context (local `--auth`). */
  readonly principal?: string;
  readonly protocol?: string;
  readonly sourceIp?: string;
}

/**
 * The API Gateway HTTP API (payload 2.0) event of a request: text bodies (by Content-Type) as
 * UTF-8, others base64; query parameters joined as API Gateway joins repeats. The gateway builds
 * every invocation with it, and tests that call a handler directly build theirs the same way.
 */
export function httpApiEvent(r: GatewayRequest): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = { ...r.headers };
  headers['x-forwarded-proto'] ??= 'http';
  const query: Record<string, string> = {};
  for (const key of new Set(r.url.searchParams.keys())) query[key] = r.url.searchParams.getAll(key).join(',');
  const text = TEXT_TYPES.test(headers['content-type'] ?? '');
  const now = new Date();
  return {
    version: '2.0',
    routeKey: r.route,
    rawPath: r.url.pathname,
    rawQueryString: r.url.search.replace(/^\?/, ''),
    headers,
    ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
    ...(Object.keys(r.params).length > 0 ? { pathParameters: { ...r.params } } : {}),
    ...(r.body.length > 0 ? { body: text ? r.body.toString('utf8') : r.body.toString('base64') } : {}),
    isBase64Encoded: r.body.length > 0 && !text,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'local',
      http: {
        method: r.method, path: r.url.pathname, protocol: r.protocol ?? 'HTTP/1.1',
        sourceIp: r.sourceIp ?? '127.0.0.1', userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: r.route,
      stage: '$default',
      time: now.toISOString(),
      timeEpoch: now.getTime(),
      // (what API Gateway passes on from a Lambda authorizer's context)
      ...(r.principal !== undefined ? { authorizer: { lambda: { principal: r.principal } } } : {}),
    } as APIGatewayProxyEventV2['requestContext'],
  };
}

function toEvent(req: IncomingMessage, url: URL, body: Buffer, route: string, params: Record<string, string>, principal?: string): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(',') : v;
  return httpApiEvent({
    method: req.method ?? 'GET', url, headers, body, route, params,
    ...(principal !== undefined ? { principal } : {}),
    protocol: `HTTP/${req.httpVersion}`, sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
  });
}

function writeResult(res: ServerResponse, result: APIGatewayProxyStructuredResultV2): void {
  const body = result.body === undefined ? Buffer.alloc(0) : Buffer.from(result.body, result.isBase64Encoded ? 'base64' : 'utf8');
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(result.headers ?? {})) headers[k] = String(v);
  res.writeHead(result.statusCode ?? 200, { ...headers, 'content-length': body.length });
  res.end(body);
}

export interface Gateway {
  readonly server: Server;
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

export async function startGateway(o: GatewayOptions): Promise<Gateway> {
  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      logger.error({ event: 'gateway-error', err }, 'gateway failed to answer');
      if (!res.headersSent) send(res, 500, { error_code: 500, message: 'Internal server error' });
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://local');
    const method = (req.method ?? 'GET').toUpperCase();
    if (method === 'GET' && url.pathname === READY_PATH) return send(res, 200, { status: 'ready' });
    if (o.websocket && (url.pathname.startsWith('/@connections/') || url.pathname.startsWith('/2015-03-31/'))) {
      const body = await readBody(req, o.maxRequestBytes);
      if (body === 'too-large') return send(res, 413, { message: 'Request Entity Too Large' });
      if (o.websocket.serve(req, res, body)) return;
    }
    if (o.control && url.pathname.startsWith('/local/')) {
      const out = await o.control(method, url.pathname, url.searchParams);
      return send(res, out.status, out.body);
    }
    const body = await readBody(req, o.maxRequestBytes);
    if (body === 'too-large') {
      res.setHeader('connection', 'close');
      return send(res, 413, o.tooLargeBody ?? { error_code: 413, message: `HTTP 413 Request Entity Too Large: the body is larger than ${o.maxRequestBytes} bytes.` });
    }
    const deadline = Date.now() + 30_000;
    // The console's routes: no authorizer, their own function (as cdk/api.ts deploys them).
    const file = matchStaticRoute(method, url.pathname);
    if (file) {
      const key = staticRouteKey(file.route);
      const event = toEvent(req, url, body, key, file.pathParameters);
      const result = await o.functions[file.route.fn](event, lambdaContext(file.route.fn, event.requestContext.requestId, deadline));
      return writeResult(res, result);
    }
    let principal: string | undefined;
    if (o.authenticate) {
      principal = o.authenticate(req.headers.authorization);
      if (principal === undefined) {
        const message = req.headers.authorization === undefined
          ? 'Unauthorized: this cluster requires Authorization: Bearer <token> (tokens are in the data directory\'s credentials.json).'
          : 'Unauthorized: the bearer token is not known to this cluster.';
        return send(res, 401, { error_code: UNAUTHENTICATED_CODE, message }, { 'www-authenticate': 'Bearer realm="tributary"' });
      }
    }
    const match = matchRoute(method, url.pathname);
    const route = match?.route ?? DEFAULT_ROUTE;
    const key = routeKey(route);
    const event = toEvent(req, url, body, key, match?.pathParameters ?? {}, principal);
    const result = await observedRequest(event.routeKey, () => o.functions[route.fn](event, lambdaContext(route.fn, event.requestContext.requestId, deadline)));
    writeResult(res, result);
  }

  server.on('upgrade', (req, socket, head) => {
    if (!o.websocket?.upgrade(req, socket, head)) socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.keepAliveTimeout = 65_000;
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    url: `http://${o.host}:${port}`,
    close: () => new Promise<void>((resolve) => {
      o.websocket?.close();
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
