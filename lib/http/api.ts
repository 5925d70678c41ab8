/**
 * The HTTP layer's vocabulary: a parsed request, a response, Kafka-style errors as REST Proxy
 * error bodies `{error_code, message}`, and strict parsing of bodies and query parameters.
 * Only this folder knows about API Gateway events.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import * as z from 'zod';
import type { ZodType } from 'zod';
import { MAX_TOPIC_NAME_LENGTH } from '../cluster/topics.js';
import { HttpError, asKafkaError } from '../errors.js';
import { logger } from '../logger.js';
import { emitMetric } from '../metrics.js';
import { KAFKA_ERRORS, kafkaMessage, restErrorCode, type KafkaError } from '../protocol/errors.js';
import { decodeBody } from './content-encoding.js';
import { principalOf } from './principal.js';

export interface ApiRequest {
  readonly routeKey: string;
  readonly method: string;
  readonly path: string;
  readonly params: Readonly<Record<string, string>>;
  readonly query: Readonly<Record<string, string>>;
  readonly headers: Readonly<Record<string, string>>;
  /** The body as text ('' when absent), decompressed when it came with a Content-Encoding. */
  readonly body: string;
  /** Scheme, host and stage, for `self` links. */
  readonly baseUrl: string;
  /** The caller's Kafka principal (`User:<name>`, `User:ANONYMOUS` when unauthenticated): lib/http/principal.ts. */
  readonly principal: string;
  /** The caller's address, as ACLs' `host` matches it. */
  readonly host: string;
}

export interface ApiResponse {
  readonly status: number;
  /** An object is sent as JSON; a string as it is. */
  readonly body?: unknown;
  readonly contentType?: string;
  /** Extra response headers (lower-case names), e.g. `retry-after` on a 429. */
  readonly headers?: Readonly<Record<string, string>>;
}

export type RouteHandler = (req: ApiRequest) => Promise<ApiResponse>;

export const JSON_TYPE = 'application/json';

export function toRequest(event: APIGatewayProxyEventV2): ApiRequest {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(event.headers ?? {})) if (v !== undefined) headers[k.toLowerCase()] = v;
  const query: Record<string, string> = {};
  for (const [k, v] of Object.entries(event.queryStringParameters ?? {})) if (v !== undefined) query[k] = v;
  const ctx = event.requestContext;
  const host = headers.host ?? ctx.domainName;
  const proto = headers['x-forwarded-proto'] ?? 'https';
  const stage = ctx.stage && ctx.stage !== '$default' ? `/${ctx.stage}` : '';
  const body = decodeBody(event.body, event.isBase64Encoded, headers['content-encoding']);
  return {
    routeKey: event.routeKey, method: ctx.http.method, path: event.rawPath, params: event.pathParameters as Record<string, string> ?? {},
    query, headers, body, baseUrl: `${proto}://${host}${stage}`,
    principal: principalOf(event), host: ctx.http.sourceIp,
  };
}

export function toResult(res: ApiResponse): APIGatewayProxyStructuredResultV2 {
  if (res.body === undefined) return { statusCode: res.status, headers: { ...res.headers } };
  const text = typeof res.body === 'string' ? res.body : JSON.stringify(res.body);
  return { statusCode: res.status, headers: { ...res.headers, 'content-type': res.contentType ?? JSON_TYPE }, body: text };
}

/** The REST Proxy error body for any error; unexpected errors are logged and become a 500. */
export function errorResponse(err: unknown, contentType = JSON_TYPE): ApiResponse {
  if (err instanceof HttpError) {
    return { status: err.status, contentType, body: { error_code: err.errorCode, message: err.message }, ...(err.headers ? { headers: err.headers } : {}) };
  }
  let kafka: KafkaError;
  try {
    kafka = asKafkaError(err);
  } catch {
    logger.error({ event: 'unhandled-error', err }, 'unhandled error');
    return { status: 500, contentType, body: { error_code: 500, message: 'Internal server error' } };
  }
  const status = KAFKA_ERRORS[kafka.kafkaName].status;
  emitMetric('errors', 1, { ErrorCode: kafka.kafkaName });
  if (status >= 500) logger.warn({ event: 'request-failed', kafkaError: kafka.kafkaName, ...kafka.context, message: kafka.message }, 'request failed');
  return { status, contentType, body: { error_code: restErrorCode(kafka), message: kafkaMessage(kafka) } };
}

/** 400/40002: the request is malformed (not JSON, a bad query parameter...). */
export const badRequest = (message: string): HttpError => new HttpError(400, 40002, message);
/** 422/42206: well-formed JSON whose content is invalid. */
export const invalidPayload = (message: string): HttpError => new HttpError(422, 42206, message);

/**
 * A topic a body names (commits, resets, subscriptions, assignments, seeks): at most
 * MAX_TOPIC_NAME_LENGTH characters, as no topic can have a longer name — and a longer one is more
 * than a DynamoDB key or attribute name may hold.
 */
export const topicField = z.string().min(1).max(MAX_TOPIC_NAME_LENGTH);

export function parseJson(body: string): unknown {
  if (body.trim() === '') throw badRequest('The request body is empty; a JSON document was expected.');
  try {
    return JSON.parse(body);
  } catch (err) {
    throw badRequest(`Malformed JSON: ${(err as Error).message}`);
  }
}

/** JSON's whitespace (RFC 8259); `\s` would also let U+00A0, U+2028 or a BOM pass between documents. */
const JSON_WHITESPACE = /[ \t\n\r]/;

/**
 * Splits a body of concatenated JSON documents (REST Proxy's streaming mode: `{...}{...}` or one
 * per line) and parses each.
 */
export function parseJsonStream(body: string): unknown[] {
  const docs: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') {
      // Between documents a string is garbage, not something to skip.
      if (depth === 0) throw badRequest(`Malformed JSON: unexpected '"' at position ${i}; each record is a JSON object`);
      inString = true;
    } else if (c === '{' || c === '[') {
      if (depth === 0) start = i;
      depth++;
    } else if (c === '}' || c === ']') {
      depth--;
      if (depth < 0) throw badRequest(`Malformed JSON: unexpected '${c}' at position ${i}`);
      if (depth === 0) docs.push(parseJson(body.slice(start, i + 1)));
    } else if (depth === 0 && !JSON_WHITESPACE.test(c as string)) {
      throw badRequest(`Malformed JSON: unexpected '${c}' at position ${i}`);
    }
  }
  if (depth !== 0 || inString) throw badRequest('Malformed JSON: unexpected end of input');
  if (docs.length === 0) throw badRequest('The request body is empty; a JSON document was expected.');
  return docs;
}

/** Validates parsed JSON against a schema; 422/42206 naming the first problem and where it is. */
export function validate<T>(schema: ZodType<T>, value: unknown, what: string): T {
  const out = schema.safeParse(value);
  if (out.success) return out.data;
  const issue = out.error.issues[0];
  const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
  throw invalidPayload(`Invalid ${what}${where}: ${issue?.message ?? 'invalid'}`);
}

/** A non-negative integer query parameter; 400/40002 for anything else. */
export function intParam(req: ApiRequest, name: string, opts: { default?: number; min?: number; max?: number } = {}): number {
  const raw = req.query[name];
  if (raw === undefined || raw === '') {
    if (opts.default === undefined) throw badRequest(`Query parameter '${name}' is required.`);
    return opts.default;
  }
  if (!/^-?\d+$/.test(raw)) throw badRequest(`Query parameter '${name}' must be an integer, got '${raw}'.`);
  const n = Number(raw);
  const min = opts.min ?? 0;
  if (!Number.isSafeInteger(n) || n < min) throw badRequest(`Query parameter '${name}' must be an integer ≥ ${min}, got '${raw}'.`);
  return opts.max !== undefined ? Math.min(n, opts.max) : n;
}

/** A path parameter that must be a non-negative integer (partition and broker ids). */
export function intPathParam(req: ApiRequest, name: string, notFound: () => Error): number {
  const raw = req.params[name] ?? '';
  if (!/^\d{1,9}$/.test(raw)) throw notFound();
  return Number(raw);
}
