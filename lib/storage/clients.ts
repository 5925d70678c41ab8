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

function handler(): NodeHttpHandler {
  const c = config();
  return new NodeHttpHandler({
    connectionTimeout: c.storeConnectTimeoutMs,
    requestTimeout: c.storeTimeoutMs,
    // Without this the handler only warns and keeps waiting on a store that never answers.
    throwOnRequestTimeout: true,
    httpAgent: new Agent({ keepAlive: true, maxSockets: 64 }),
    httpsAgent: new HttpsAgent({ keepAlive: true, maxSockets: 64 }),
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
      requestHandler: handler(),
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
      requestHandler: handler(),
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
 * PUT sent again after a round committed and deleted the first copy would put it back).
 */
export function s3ClientSingleAttempt(): S3Client {
  if (!s3Once) {
    s3Once = new S3Client({
      forcePathStyle: config().s3ForcePathStyle,
      maxAttempts: 1,
      requestHandler: handler(),
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
