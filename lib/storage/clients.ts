/**
 * AWS SDK clients, built once per process and endpoint. Every client has explicit connect and
 * request timeouts and bounded attempts: a paused store must fail a request, not hang it (a
 * paused store accepts connections and never answers); and a call made while serving a request
 * is aborted at the request's answer-by time.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { Agent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import { config } from '../config.js';
import { answerBySignal } from '../deadline.js';
import { countCapacity, countS3Requests, traceStoreCalls } from './metering.js';

const documentClients = new Map<string, DynamoDBDocumentClient>();
let s3: S3Client | undefined;

/**
 * Every call made while serving a request carries an abort signal tied to the request's
 * answer-by time (lib/deadline.ts), unless the caller passed its own.
 */
function abortAtAnswerBy<C extends DynamoDBDocumentClient | S3Client>(client: C): C {
  const send = client.send.bind(client) as (command: unknown, options?: { abortSignal?: AbortSignal }) => Promise<unknown>;
  (client as { send: unknown }).send = (command: unknown, options?: { abortSignal?: AbortSignal }) => {
    const abortSignal = options?.abortSignal ?? answerBySignal();
    return send(command, abortSignal ? { ...options, abortSignal } : options);
  };
  return client;
}

/**
 * How long a pooled connection of the stage PUT's client may sit idle and still be used. Servers
 * close idle keep-alive connections (s3rver about 6 s after its last answer, DynamoDB Local after
 * 30 s). A process that was frozen in between (a function environment between invocations) has not
 * read the close yet: the request it sends on that socket fails with `socket hang up` or
 * `read ECONNRESET`. The other clients' retries mend that (and their connections outlive a quiet
 * spell, as the SDK's do); a stage PUT is sent once (s3ClientSingleAttempt), so it would fail.
 */
export const IDLE_SOCKET_MS = 4_000;

type AddRequest = (this: Agent, ...args: unknown[]) => void;

/**
 * A keep-alive agent that never hands out a socket idle for longer than `idleMs`: it destroys
 * such sockets as it picks one for a request, by the monotonic clock, which runs on while the
 * process is frozen (an idle timer would fire only after the thawed process has already reused
 * the socket). Node's agent skips destroyed sockets at the front of its free list and takes one
 * from the back; sockets join the list as they are freed, so by a clock that never steps back the
 * stale ones are always the front.
 */
export function freshSocketAgent<A extends typeof Agent | typeof HttpsAgent>(Base: A, idleMs: number): InstanceType<A> {
  const idleSince = new WeakMap<Socket, number>();
  const baseAddRequest = (Base.prototype as unknown as { addRequest: AddRequest }).addRequest;
  const Fresh = class extends (Base as typeof Agent) {
    // (Node's agent returns whether it keeps the socket; its typings say void)
    override keepSocketAlive(socket: Socket): boolean {
      const keep = (super.keepSocketAlive as (s: Socket) => boolean).call(this, socket);
      if (keep) idleSince.set(socket, performance.now());
      return keep;
    }

    /** Node's agent calls this to give a request a socket: a free one if it has one, else a new one. */
    addRequest(...args: unknown[]): void {
      const now = performance.now();
      for (const sockets of Object.values(this.freeSockets)) {
        for (const socket of sockets ?? []) if (now - (idleSince.get(socket) ?? now) > idleMs) socket.destroy();
      }
      baseAddRequest.call(this, ...args);
    }
  };
  return new Fresh({ keepAlive: true, maxSockets: 64 }) as InstanceType<A>;
}

/**
 * The HTTP handler of every store client: connect and request timeouts, keep-alive connections;
 * with `idleMs`, none reused after sitting idle longer (freshSocketAgent).
 */
export function storeRequestHandler(idleMs?: number): NodeHttpHandler {
  const c = config();
  const agent = <A extends typeof Agent | typeof HttpsAgent>(Base: A) => (idleMs === undefined ? new Base({ keepAlive: true, maxSockets: 64 }) : freshSocketAgent(Base, idleMs));
  return new NodeHttpHandler({
    connectionTimeout: c.storeConnectTimeoutMs,
    requestTimeout: c.storeTimeoutMs,
    // Without this the handler only warns and keeps waiting on a store that never answers.
    throwOnRequestTimeout: true,
    httpAgent: agent(Agent),
    httpsAgent: agent(HttpsAgent),
  });
}

/**
 * The document client for a DynamoDB endpoint; `undefined` means the SDK's default resolution
 * (`AWS_ENDPOINT_URL_DYNAMODB`, `AWS_ENDPOINT_URL`, or the regional endpoint).
 */
export function dynamo(endpoint?: string): DynamoDBDocumentClient {
  const key = endpoint ?? '';
  let client = documentClients.get(key);
  if (!client) {
    const base = new DynamoDBClient({
      ...(endpoint ? { endpoint } : {}),
      maxAttempts: config().storeMaxAttempts,
      requestHandler: storeRequestHandler(),
    });
    client = DynamoDBDocumentClient.from(base, {
      marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
      unmarshallOptions: { wrapNumbers: false },
    });
    countCapacity(client);
    traceStoreCalls(client, 'dynamodb');
    abortAtAnswerBy(client);
    documentClients.set(key, client);
  }
  return client;
}

export function s3Client(): S3Client {
  if (!s3) {
    s3 = new S3Client({
      forcePathStyle: config().s3ForcePathStyle,
      maxAttempts: config().storeMaxAttempts,
      requestHandler: storeRequestHandler(),
    });
    countS3Requests(s3);
    traceStoreCalls(s3, 's3');
    abortAtAnswerBy(s3);
  }
  return s3;
}

let s3Once: S3Client | undefined;
/**
 * An S3 client that sends each request once: for a write whose repeat is not harmless (a stage
 * PUT sent again after a round committed and deleted the first copy would put it back). With no
 * retry to mend a connection the server closed while the process was frozen, it never reuses one
 * idle for more than IDLE_SOCKET_MS.
 */
export function s3ClientSingleAttempt(): S3Client {
  if (!s3Once) {
    s3Once = new S3Client({
      forcePathStyle: config().s3ForcePathStyle,
      maxAttempts: 1,
      requestHandler: storeRequestHandler(IDLE_SOCKET_MS),
    });
    countS3Requests(s3Once);
    traceStoreCalls(s3Once, 's3');
    abortAtAnswerBy(s3Once);
  }
  return s3Once;
}

/** Drop every cached client (tests and the local stack, after endpoints change). */
export function resetClients(): void {
  for (const c of documentClients.values()) c.destroy();
  documentClients.clear();
  s3?.destroy();
  s3 = undefined;
  s3Once?.destroy();
  s3Once = undefined;
}
