/**
 * REST Proxy v2 consumer API: instances, subscriptions, manual assignments, records, offsets and
 * positions, with Confluent's error codes (40403 instance not found, 40902 instance exists, 40903
 * illegal state, 42204 invalid consumer config). Any Lambda serves any instance.
 */
import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import { HttpError } from '../errors.js';
import { DEFAULT_SESSION_TIMEOUT_MS } from '../groups/coordinator.js';
import * as rest from '../groups/rest-consumer.js';
import { REST_CONSUMER_FORMATS, type ConsumedRecord, type RestConsumerFormat } from '../groups/rest-consumer.js';
import { authorizationEnabled } from '../security/authorizer.js';
import { requireAll, topicsIn, visible } from './enforce.js';
import { chargeQuota, chargeQuotaAfter, recordsSize } from '../security/quotas.js';
import { badRequest, errorResponse, intParam, parseJson, topicField, validate, type ApiRequest, type ApiResponse, type RouteHandler } from './api.js';
import { RESPONSE_RECORDS_BUDGET, responseCost, valueReader } from './record-format.js';
import { isolationParam } from './fetch-routes.js';

const V2 = 'application/vnd.kafka.v2+json';
const ok = (body: unknown, status = 200): ApiResponse => ({ status, body, contentType: V2 });
const noContent: ApiResponse = { status: 204 };

/** Runs a v2 route, turning the instance errors into REST Proxy's codes (and every error into its v2 body). */
const v2 = (route: RouteHandler): RouteHandler => async (req) => {
  try {
    return await route(req);
  } catch (err) {
    if (err instanceof rest.InstanceNotFound) return errorResponse(new HttpError(404, 40403, err.message), V2);
    if (err instanceof rest.InstanceExists) return errorResponse(new HttpError(409, 40902, err.message), V2);
    if (err instanceof rest.IllegalState) return errorResponse(new HttpError(409, 40903, `Illegal state: ${err.message}`), V2);
    return errorResponse(err, V2);
  }
};

const group = (req: ApiRequest) => req.params.group_name ?? '';
const inst = (req: ApiRequest) => req.params.instance ?? '';
const body = (req: ApiRequest): unknown => (req.body.trim() === '' ? {} : parseJson(req.body));

/**
 * With authorization on, which topics a v2 pattern subscription covers: those the principal may
 * READ (a pattern consumer sees only what it may DESCRIBE, and an instance must READ what it is
 * given, else every records call would be refused).
 */
const readable = (req: ApiRequest) => (authorizationEnabled()
  ? (topics: readonly string[]) => visible(req, topics, (t) => ({ resourceType: 'TOPIC', resourceName: t }), 'READ')
  : undefined);

const invalidConfig = (message: string) => new HttpError(422, 42204, `Invalid consumer configuration: ${message}`);

const createSchema = z.object({
  name: z.string().regex(/^[a-zA-Z0-9._-]{1,249}$/, 'names are 1-249 characters of [a-zA-Z0-9._-]').optional(),
  format: z.enum(REST_CONSUMER_FORMATS).optional(),
  'auto.offset.reset': z.enum(['earliest', 'latest', 'none']).optional(),
  'auto.commit.enable': z.union([z.enum(['true', 'false']), z.boolean()]).optional(),
  // Kafka's consumer config: fetch.min.bytes is an int at least 0 (a negative one is 42204, as the REST Proxy answers).
  'fetch.min.bytes': z.union([z.string().regex(/^\d{1,10}$/, 'must be an integer ≥ 0').refine((v) => Number(v) <= 2 ** 31 - 1, 'must be at most 2147483647'), z.number().int().min(0).max(2 ** 31 - 1)]).optional(),
  'consumer.request.timeout.ms': z.union([z.string().regex(/^\d+$/), z.number().int().min(0)]).optional(),
  'session.timeout.ms': z.union([z.string().regex(/^\d+$/), z.number().int().min(0)]).optional(),
}).strict();

async function createInstance(req: ApiRequest): Promise<ApiResponse> {
  const parsed = createSchema.safeParse(body(req));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalidConfig(`${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`);
  }
  const c = parsed.data;
  const id = c.name ?? `rest-consumer-${randomUUID()}`;
  const sessionTimeoutMs = Number(c['session.timeout.ms'] ?? DEFAULT_SESSION_TIMEOUT_MS);
  await rest.createInstance(group(req), id, {
    format: c.format ?? 'binary',
    autoOffsetReset: c['auto.offset.reset'] ?? 'latest',
    autoCommit: String(c['auto.commit.enable'] ?? 'true') === 'true',
    fetchMinBytes: Number(c['fetch.min.bytes'] ?? -1),
    requestTimeoutMs: Number(c['consumer.request.timeout.ms'] ?? 1000),
    sessionTimeoutMs,
  }).catch((err: unknown) => {
    if ((err as { kafkaName?: string }).kafkaName === 'INVALID_SESSION_TIMEOUT') throw invalidConfig((err as Error).message);
    throw err;
  });
  return ok({ instance_id: id, base_uri: `${req.baseUrl}/consumers/${encodeURIComponent(group(req))}/instances/${encodeURIComponent(id)}` });
}

const subscriptionSchema = z.object({
  topics: z.array(topicField).min(1).optional(),
  topic_pattern: z.string().min(1).optional(),
}).strict();

async function subscribe(req: ApiRequest): Promise<ApiResponse> {
  const s = validate(subscriptionSchema, body(req), 'subscription');
  if (s.topics && s.topic_pattern !== undefined) throw new rest.IllegalState('Subscription to topics, partitions and pattern are mutually exclusive.');
  if (!s.topics && s.topic_pattern === undefined) throw badRequest('A subscription needs topics or topic_pattern.');
  await requireAll(req, topicsIn('READ', s.topics ?? []));
  await rest.subscribe(group(req), inst(req), s.topics ? { topics: s.topics } : { pattern: s.topic_pattern as string }, readable(req));
  return noContent;
}

async function getSubscription(req: ApiRequest): Promise<ApiResponse> {
  const s = await rest.subscription(group(req), inst(req));
  return ok(s?.pattern !== undefined ? { topics: [], topic_pattern: s.pattern } : { topics: s?.topics ?? [] });
}

const partitionsSchema = z.object({ partitions: z.array(z.object({ topic: topicField, partition: z.number().int().min(0) }).strict()) }).strict();

async function assign(req: ApiRequest): Promise<ApiResponse> {
  const partitions = validate(partitionsSchema, body(req), 'assignment').partitions;
  await requireAll(req, topicsIn('READ', partitions.map((p) => p.topic)));
  await rest.assignManually(group(req), inst(req), partitions);
  return noContent;
}

async function getAssignments(req: ApiRequest): Promise<ApiResponse> {
  return ok({ partitions: await rest.assignments(group(req), inst(req)) });
}

/** The embedded format a reader asked for must be the instance's (Confluent's 40601). */
function acceptFormat(req: ApiRequest, format: RestConsumerFormat): string {
  const accept = (req.headers.accept ?? '').toLowerCase();
  const type = `application/vnd.kafka.${format}.v2+json`;
  if (accept === '' || accept.includes('*/*') || accept.includes(type) || accept.includes('application/json')) return type;
  throw new HttpError(406, 40601, `The requested embedded data format does not match the deserializer for this consumer instance (${format}).`);
}

async function records(req: ApiRequest): Promise<ApiResponse> {
  const cfg = await rest.instanceConfig(group(req), inst(req));
  const type = acceptFormat(req, cfg.format);
  const timeoutMs = intParam(req, 'timeout', { default: cfg.requestTimeoutMs, max: 25_000 });
  const maxBytes = intParam(req, 'max_bytes', { default: 1_048_576, min: 1, max: 4_000_000 });
  const isolation = isolationParam(req);
  // Consumer bytes are charged after the poll, as for a fetch (lib/http/fetch-routes.ts).
  await chargeQuota(req.principal, 'fetch', 0);
  // Each record is rendered once: the poll stops where the answer would pass the function's
  // response limit (and keeps those positions), and the body is the rendered records.
  const rendered = new Map<ConsumedRecord, string>();
  let read: Awaited<ReturnType<typeof valueReader>> | undefined;
  const prepare = async (got: readonly Pick<ConsumedRecord, 'key' | 'value'>[]) => {
    read = await valueReader(cfg.format, got.flatMap((r) => [r.key, r.value]));
  };
  const data = (b: Buffer | null, where: string) => (b === null ? null : (read as NonNullable<typeof read>)(b, where).data);
  const cost = (r: ConsumedRecord) => {
    const text = JSON.stringify({
      topic: r.topic,
      key: data(r.key, `key at ${r.topic}-${r.partition}@${r.offset}`),
      value: data(r.value, `value at ${r.topic}-${r.partition}@${r.offset}`),
      partition: r.partition,
      offset: r.offset,
      timestamp: r.timestamp,
      headers: r.headers.map((h) => ({ name: h.key, value: h.value ? h.value.toString('base64') : null })),
    });
    rendered.set(r, text);
    return responseCost(text) + 1;
  };
  // TOPIC READ on every topic read, at every read (Kafka's Fetch): a revoked ACL refuses the whole
  // call (403, 40301), as Confluent's REST Proxy answers its consumer's TopicAuthorizationException.
  const access = { mayRead: (topics: readonly string[]) => requireAll(req, topicsIn('READ', topics)), topicFilter: readable(req) };
  const got = await rest.poll(group(req), inst(req), { timeoutMs, maxBytes, isolation, response: { bytes: RESPONSE_RECORDS_BUDGET - 2, cost, prepare }, access });
  await chargeQuotaAfter(req.principal, 'fetch', recordsSize(got));
  return { status: 200, contentType: type, body: `[${got.map((r) => rendered.get(r)).join(',')}]` };
}

const offsetsSchema = z.object({
  offsets: z.array(z.object({ topic: topicField, partition: z.number().int().min(0), offset: z.number().int().min(0), metadata: z.string().optional() }).strict()).optional(),
}).strict();

async function commitOffsets(req: ApiRequest): Promise<ApiResponse> {
  const b = validate(offsetsSchema, body(req), 'offsets');
  await requireAll(req, topicsIn('READ', (b.offsets ?? []).map((o) => o.topic)));
  await rest.commitInstance(group(req), inst(req), b.offsets);
  return noContent;
}

async function getOffsets(req: ApiRequest): Promise<ApiResponse> {
  // Confluent sends the partitions as a GET body; `?topic=&partition=` works too.
  const fromQuery = req.query.topic !== undefined ? [{ topic: req.query.topic, partition: intParam(req, 'partition') }] : undefined;
  const partitions = fromQuery ?? validate(partitionsSchema, body(req), 'partitions').partitions;
  const found = await rest.committedFor(group(req), inst(req), partitions);
  return ok({ offsets: found.map((o) => ({ topic: o.topic, partition: o.partition, offset: o.offset, metadata: o.metadata })) });
}

const seekSchema = z.object({
  offsets: z.array(z.object({ topic: topicField, partition: z.number().int().min(0), offset: z.number().int().min(0) }).strict()).optional(),
  timestamps: z.array(z.object({ topic: topicField, partition: z.number().int().min(0), timestamp: z.union([z.string(), z.number().int().min(0)]) }).strict()).optional(),
}).strict();

async function seek(req: ApiRequest): Promise<ApiResponse> {
  const b = validate(seekSchema, body(req), 'positions');
  if ((b.offsets === undefined) === (b.timestamps === undefined)) throw badRequest('Give either offsets or timestamps.');
  await requireAll(req, topicsIn('READ', [...(b.offsets ?? []), ...(b.timestamps ?? [])].map((o) => o.topic)));
  if (b.offsets) await rest.seek(group(req), inst(req), { kind: 'offsets', offsets: b.offsets });
  else {
    const timestamps = (b.timestamps ?? []).map((t) => {
      const ms = typeof t.timestamp === 'number' ? t.timestamp : Date.parse(t.timestamp);
      if (Number.isNaN(ms)) throw badRequest(`timestamp ${t.timestamp} is not ISO 8601 or epoch milliseconds.`);
      return { topic: t.topic, partition: t.partition, timestamp: ms };
    });
    await rest.seek(group(req), inst(req), { kind: 'timestamps', timestamps });
  }
  return noContent;
}

const seekTo = (kind: 'beginning' | 'end'): RouteHandler => async (req) => {
  const partitions = validate(partitionsSchema, body(req), 'partitions').partitions;
  await requireAll(req, topicsIn('READ', partitions.map((p) => p.topic)));
  await rest.seek(group(req), inst(req), { kind, partitions });
  return noContent;
};

const C = '/consumers/{group_name}';
const I = `${C}/instances/{instance}`;

export const consumerRoutes: Record<string, RouteHandler> = {
  [`POST ${C}`]: v2(createInstance),
  [`DELETE ${I}`]: v2(async (req) => {
    await rest.deleteInstance(group(req), inst(req));
    return noContent;
  }),
  [`POST ${I}/subscription`]: v2(subscribe),
  [`GET ${I}/subscription`]: v2(getSubscription),
  [`DELETE ${I}/subscription`]: v2(async (req) => {
    await rest.unsubscribe(group(req), inst(req));
    return noContent;
  }),
  [`POST ${I}/assignments`]: v2(assign),
  [`GET ${I}/assignments`]: v2(getAssignments),
  [`GET ${I}/records`]: v2(records),
  [`POST ${I}/offsets`]: v2(commitOffsets),
  [`GET ${I}/offsets`]: v2(getOffsets),
  [`POST ${I}/positions`]: v2(seek),
  [`POST ${I}/positions/beginning`]: v2(seekTo('beginning')),
  [`POST ${I}/positions/end`]: v2(seekTo('end')),
};
