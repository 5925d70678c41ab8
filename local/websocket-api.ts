/**
 * The local API Gateway WebSocket API, on the gateway's port at `/ws`: it holds the sockets and
 * runs the websocket function (lib/http/websocket.ts) for `$connect`, each message (`$default`) and
 * `$disconnect`, with the events API Gateway sends; and it serves the two AWS APIs that function
 * and its wakers call: the connection management API (`POST`/`GET`/`DELETE /@connections/{id}`,
 * a closed connection answering 410 as API Gateway's GoneException) and Lambda's Invoke
 * (`POST /2015-03-31/functions/{name}/invocations`, `Event` invocations of the websocket function,
 * with Lambda's asynchronous semantics: a throttle waits in its queue, a failure is retried twice).
 *
 * API Gateway's limits, as it applies them: a message over 128 KB closes the connection (1009); a
 * connection idle for 10 minutes or open for 2 hours is closed (1001, both configurable for tests).
 * With `authenticate` (the stack's `--auth`), the handshake needs a known token, in the
 * `Authorization` header or, for browsers, which cannot set headers on a WebSocket, `?token=`.
 */
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import { logger } from '../lib/logger.js';
import type { DeliverEvent, WebSocketEvent, WebSocketResult } from '../lib/http/websocket.js';
import { LOCAL_TOKEN_HEADER } from '../lib/storage/local-endpoint-token.js';

export const WEBSOCKET_PATH = '/ws';
/** API Gateway's largest WebSocket message. */
export const MAX_MESSAGE_BYTES = 128 * 1024;
/** Lambda's waits before the two retries of an asynchronous invocation that failed. */
export const ASYNC_RETRY_DELAYS_MS: readonly number[] = [60_000, 120_000];

export type WebSocketFunction = (event: WebSocketEvent | DeliverEvent) => Promise<WebSocketResult | undefined>;

export interface WebSocketApiOptions {
  /** The websocket function (in this process, or an invoker of its Lambda-fidelity environments). */
  readonly fn: WebSocketFunction;
  /** The principal of a token, undefined to refuse it (the stack's `--auth`); unset: everyone, anonymous. */
  readonly authenticate?: (authorization: string | undefined) => string | undefined;
  /**
   * With the stack's `--auth`: the token callers of the connection API and of Invoke must send
   * (lib/storage/local-endpoint-token.ts), as IAM guards them in AWS; unset: anyone on the host.
   */
  readonly endpointToken?: string;
  /**
   * The function as Lambda's asynchronous invocation (`Event`) runs it: a throttle is retried
   * until it runs, as Lambda's event queue does (for up to six hours); it answers the function's
   * result. Unset: `fn`.
   */
  readonly fnAsync?: WebSocketFunction;
  /**
   * How long Lambda waits before retrying an asynchronous invocation that failed, one entry per
   * retry (its MaximumRetryAttempts, 2 by default). @default one then two minutes, as Lambda
   */
  readonly asyncRetryDelaysMs?: readonly number[];
  /** @default 10 minutes, API Gateway's idle timeout */
  readonly idleTimeoutMs?: number;
  /** @default 2 hours, API Gateway's connection lifetime */
  readonly maxLifetimeMs?: number;
}

interface Connection {
  readonly socket: WebSocket;
  readonly connectedAt: number;
  readonly principal?: string;
  readonly sourceIp: string;
  lastActiveAt: number;
}

export interface WebSocketApi {
  /** Handles an HTTP upgrade to `/ws`; false when the path is not the WebSocket API's. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Serves the management and invoke APIs; false when the request is for neither. */
  serve(req: IncomingMessage, res: ServerResponse, body: Buffer): boolean;
  /** Open connections. */
  readonly size: number;
  close(): void;
}

/** An API Gateway-style connection id: 16 characters, base64 with `=` at the end. */
const newConnectionId = (): string => `${randomBytes(11).toString('base64').slice(0, 15)}=`;

export function startWebSocketApi(o: WebSocketApiOptions): WebSocketApi {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  const open = new Map<string, Connection>();
  const idleMs = o.idleTimeoutMs ?? 600_000;
  const lifetimeMs = o.maxLifetimeMs ?? 7_200_000;

  const event = (id: string, c: Pick<Connection, 'principal' | 'sourceIp'>, routeKey: string, body?: string): WebSocketEvent => ({
    requestContext: {
      routeKey, connectionId: id,
      eventType: routeKey === '$connect' ? 'CONNECT' : routeKey === '$disconnect' ? 'DISCONNECT' : 'MESSAGE',
      identity: { sourceIp: c.sourceIp },
      ...(c.principal !== undefined ? { authorizer: { principal: c.principal } } : {}),
    },
    ...(body !== undefined ? { body, isBase64Encoded: false } : {}),
  });
  const run = (e: WebSocketEvent | DeliverEvent, failed?: () => void, fn = o.fn): Promise<WebSocketResult | undefined> => fn(e).catch((err: unknown) => {
    logger.warn({ event: 'websocket-function-failed', err }, 'the websocket function failed');
    failed?.();
    return { statusCode: 500 };
  });

  let closed = false;
  const delays = o.asyncRetryDelaysMs ?? ASYNC_RETRY_DELAYS_MS;
  const retryTimers = new Set<ReturnType<typeof setTimeout>>();
  /** Partitions with a retry waiting: a delivery reads from where its subscriptions are, so one retry serves every wake that failed meanwhile. */
  const retrying = new Set<string>();
  /** An `Event` invocation: run (a throttle waits in `fnAsync`), and a failure retried after each of `delays`. */
  const runAsync = async (e: DeliverEvent): Promise<void> => {
    const partition = `${e.tributaryDeliver.topicId}#${e.tributaryDeliver.partition}`;
    for (let attempt = 0; ; attempt++) {
      const r = await run(e, undefined, o.fnAsync);
      const wait = delays[attempt];
      if (r?.statusCode !== 500 || wait === undefined || closed || retrying.has(partition)) return;
      logger.warn({ event: 'websocket-event-retry', attempt: attempt + 1, inMs: wait }, 'an asynchronous invocation failed; Lambda retries it');
      retrying.add(partition);
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => { retryTimers.delete(t); resolve(); }, wait);
        t.unref();
        retryTimers.add(t);
      });
      retrying.delete(partition);
      if (closed) return;
    }
  };

  const timer = setInterval(() => {
    const now = Date.now();
    for (const c of open.values()) {
      if (now - c.lastActiveAt > idleMs) c.socket.close(1001, 'Going away: idle timeout');
      else if (now - c.connectedAt > lifetimeMs) c.socket.close(1001, 'Going away: connection lifetime');
    }
  }, Math.min(1000, idleMs, lifetimeMs));
  timer.unref();

  const refuse = (socket: Duplex, status: number, text: string): void => {
    socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  };

  function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(req.url ?? '/', 'http://local');
    if (url.pathname !== WEBSOCKET_PATH) return false;
    let principal: string | undefined;
    if (o.authenticate) {
      const token = url.searchParams.get('token');
      principal = o.authenticate(req.headers.authorization ?? (token ? `Bearer ${token}` : undefined));
      if (principal === undefined) {
        refuse(socket, 401, 'Unauthorized');
        return true;
      }
    }
    const id = newConnectionId();
    const sourceIp = req.socket.remoteAddress ?? '127.0.0.1';
    void run(event(id, { principal, sourceIp }, '$connect')).then((r) => {
      if ((r?.statusCode ?? 200) >= 300) return refuse(socket, r?.statusCode ?? 500, 'Forbidden');
      wss.handleUpgrade(req, socket, head, (ws) => {
        const c: Connection = { socket: ws, connectedAt: Date.now(), lastActiveAt: Date.now(), sourceIp, ...(principal !== undefined ? { principal } : {}) };
        open.set(id, c);
        ws.on('message', (data, isBinary) => {
          c.lastActiveAt = Date.now();
          const text = isBinary ? Buffer.from(data as Buffer).toString('base64') : String(data);
          // (a message whose invocation failed or was throttled: API Gateway tells the client so)
          void run(event(id, c, '$default', text), () => {
            if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ message: 'Internal server error', connectionId: id, requestId: randomUUID() }));
          });
        });
        ws.on('close', () => {
          if (open.get(id) !== c) return;
          open.delete(id);
          void run(event(id, c, '$disconnect'));
        });
        ws.on('error', () => ws.terminate());
      });
    });
    return true;
  }

  function reply(res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}): true {
    const text = body === undefined ? '' : JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'x-amzn-requestid': randomUUID(), ...headers });
    res.end(text);
    return true;
  }

  /** Whether the request carries the endpoint token (always, without one). */
  const tokenOk = (req: IncomingMessage): boolean => {
    if (o.endpointToken === undefined) return true;
    const given = Buffer.from(String(req.headers[LOCAL_TOKEN_HEADER] ?? ''));
    const wanted = Buffer.from(o.endpointToken);
    return given.length === wanted.length && timingSafeEqual(given, wanted);
  };

  function serve(req: IncomingMessage, res: ServerResponse, body: Buffer): boolean {
    const url = new URL(req.url ?? '/', 'http://local');
    const method = (req.method ?? 'GET').toUpperCase();
    const conn = /^\/@connections\/([^/]+)$/.exec(url.pathname);
    const invoke = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/.exec(url.pathname);
    if ((conn || invoke) && !tokenOk(req)) {
      // (as AWS answers a request without valid credentials)
      return reply(res, 403, { message: 'The security token included in the request is invalid.' }, { 'x-amzn-errortype': 'UnrecognizedClientException' });
    }
    if (conn) {
      const id = decodeURIComponent(conn[1] as string);
      const c = open.get(id);
      // (the error type header is how the AWS SDK names the error: GoneException)
      if (!c || c.socket.readyState !== c.socket.OPEN) return reply(res, 410, { message: 'GoneException' }, { 'x-amzn-errortype': 'GoneException' });
      if (method === 'POST') {
        if (body.length > MAX_MESSAGE_BYTES) return reply(res, 413, { message: 'PayloadTooLargeException' }, { 'x-amzn-errortype': 'PayloadTooLargeException' });
        c.lastActiveAt = Date.now();
        c.socket.send(body.toString('utf8'));
        return reply(res, 200);
      }
      if (method === 'DELETE') {
        c.socket.close(1000);
        return reply(res, 204);
      }
      if (method === 'GET') {
        return reply(res, 200, { ConnectedAt: new Date(c.connectedAt).toISOString(), LastActiveAt: new Date(c.lastActiveAt).toISOString(), Identity: { SourceIp: c.sourceIp } });
      }
      return reply(res, 405, { message: 'Method not allowed' });
    }
    if (invoke && method === 'POST') {
      const name = decodeURIComponent(invoke[1] as string);
      if (name !== 'websocket' && name !== 'tributary-websocket') {
        return reply(res, 404, { Type: 'User', message: `Function not found: ${name} (the local stack invokes only the websocket function)` });
      }
      let payload: DeliverEvent;
      try {
        payload = JSON.parse(body.toString('utf8')) as DeliverEvent;
      } catch {
        return reply(res, 400, { Type: 'User', message: 'InvalidRequestContentException: the payload is not JSON' });
      }
      if (req.headers['x-amz-invocation-type'] === 'Event') {
        void runAsync(payload);
        return reply(res, 202);
      }
      void run(payload).then((r) => reply(res, 200, r ?? null));
      return true;
    }
    return false;
  }

  return {
    upgrade, serve,
    get size() { return open.size; },
    close: () => {
      closed = true;
      clearInterval(timer);
      for (const t of retryTimers) clearTimeout(t);
      for (const c of open.values()) c.socket.terminate();
      wss.close();
    },
  };
}
