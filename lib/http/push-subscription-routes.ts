/**
 * Push subscription routes (Tributary's own; docs/push-subscriptions.md): create, list, describe
 * and delete the subscriptions that deliver a topic's records to an HTTP endpoint or a Lambda
 * function (lib/orchestration/push-delivery.ts).
 *
 * Access: creating one needs what its deliveries do — TOPIC READ on the topic, GROUP READ on its
 * group (deliveries commit its offsets), TOPIC WRITE on the dead-letter topic; describing or
 * deleting one needs GROUP DESCRIBE or GROUP DELETE on its group; the list shows the ones whose
 * group the caller may DESCRIBE. As Kafka answers a resource the caller may not see, a subscription
 * the caller may not describe or delete is GROUP_AUTHORIZATION_FAILED whether or not it exists (the
 * group is found by reading the subscription, so the two answers must not differ): only a caller
 * who may DESCRIBE every group, and so would see the name listed, is told 404.
 */
import * as z from 'zod';
import { HttpError } from '../errors.js';
import { clusterRecord } from '../cluster/metadata.js';
import {
  createSubscription, deleteSubscription, findSubscription, listSubscriptions, subscriptionStatus, MAX_BATCH_RECORDS, DEFAULT_BATCH_RECORDS,
  type NewSubscription, type PushSubscription, type SubscriptionStatus,
} from '../orchestration/push-subscriptions.js';
import { redactedUrl } from '../orchestration/push-endpoints.js';
import { LAMBDA_ARN } from '../orchestration/push-targets.js';
import { KafkaError } from '../protocol/errors.js';
import { authorizationEnabled, authorize } from '../security/authorizer.js';
import { badRequest, parseJson, topicField, validate, type ApiRequest, type ApiResponse, type RouteHandler } from './api.js';
import { requireAll, topicsIn, visible } from './enforce.js';

const C = '/v3/clusters/{cluster_id}';
const S = `${C}/subscriptions`;

async function checkCluster(req: ApiRequest): Promise<string> {
  const c = await clusterRecord();
  if (req.params.cluster_id !== c.clusterId) throw new HttpError(404, 404, `Cluster ${req.params.cluster_id} cannot be found.`);
  return c.clusterId;
}

/** Names as Kafka's: what a topic (or a group, here) may be called. */
const NAME = /^[a-zA-Z0-9._-]{1,249}$/;
const nameField = z.string().min(1).max(249).regex(NAME, 'letters, digits, ".", "_" and "-" only');
const MAX_HEADERS = 20;
const MAX_HEADER_BYTES = 8192;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Headers a subscription may not set: the ones the delivery writes. */
const RESERVED_HEADERS = new Set(['content-type', 'content-length', 'host', 'user-agent', 'webhook-id', 'webhook-timestamp', 'webhook-signature', 'transfer-encoding', 'connection']);

const endpointSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('http'),
    url: z.string().min(1).max(2048),
    headers: z.record(
      z.string().max(256).regex(HEADER_NAME, 'a header name').refine((h) => !RESERVED_HEADERS.has(h.toLowerCase()), 'a header the delivery sets itself'),
      // (what HTTP allows in a header value: tab, visible ASCII and Latin-1)
      z.string().max(4096).regex(/^[\t\x20-\x7e\x80-\xff]*$/, 'a header value (tab, printable ASCII and Latin-1 only)'),
    ).refine((h) => Object.keys(h).length <= MAX_HEADERS, `at most ${MAX_HEADERS} headers`)
      .refine((h) => Object.entries(h).reduce((n, [k, v]) => n + k.length + v.length, 0) <= MAX_HEADER_BYTES, `at most ${MAX_HEADER_BYTES} bytes of headers`).optional(),
  }).strict(),
  z.object({ type: z.literal('lambda'), function_arn: z.string().min(1).max(256).regex(LAMBDA_ARN, 'a Lambda function ARN') }).strict(),
]);

const createSchema = z.object({
  subscription_name: nameField,
  topic_name: topicField,
  group_id: nameField,
  starting_position: z.enum(['earliest', 'latest']).optional(),
  isolation_level: z.enum(['read_uncommitted', 'read_committed']).optional(),
  endpoint: endpointSchema,
  max_batch_records: z.number().int().min(1).max(MAX_BATCH_RECORDS).optional(),
  max_retries: z.number().int().min(0).max(1000).optional(),
  dead_letter_topic: topicField.optional(),
}).strict();

function view(req: ApiRequest, clusterId: string, s: PushSubscription) {
  return {
    kind: 'KafkaPushSubscription',
    metadata: { self: `${req.baseUrl}/v3/clusters/${clusterId}/subscriptions/${encodeURIComponent(s.name)}` },
    cluster_id: clusterId,
    subscription_name: s.name,
    topic_name: s.topic,
    group_id: s.groupId,
    starting_position: s.startingPosition,
    isolation_level: s.isolation,
    // (header values and the URL's query string may be credentials: answered to no one, as
    // Kafka's DescribeConfigs answers no sensitive config's value whatever the caller's ACLs)
    endpoint: s.endpoint.type === 'http'
      ? { type: 'http', url: redactedUrl(s.endpoint.url), header_names: Object.keys(s.endpoint.headers) }
      : { type: 'lambda', function_arn: s.endpoint.functionArn },
    max_batch_records: s.maxBatchRecords,
    max_retries: s.maxRetries ?? null,
    dead_letter_topic: s.deadLetterTopic ?? null,
    created_at: s.createdAt,
  };
}

const partitionsView = (status: readonly SubscriptionStatus[]) => status.map((p) => ({
  partition_id: p.partition, committed_offset: p.committedOffset ?? null, attempts: p.attempts, next_attempt_at: p.retryAt ?? null, last_error: p.lastError ?? null,
}));

async function create(req: ApiRequest): Promise<ApiResponse> {
  const clusterId = await checkCluster(req);
  const b = validate(createSchema, req.body.trim() === '' ? {} : parseJson(req.body), 'subscription');
  await requireAll(req, [
    ...topicsIn('READ', [b.topic_name]),
    { operation: 'READ', resourceType: 'GROUP', resourceName: b.group_id },
    ...topicsIn('WRITE', b.dead_letter_topic === undefined ? [] : [b.dead_letter_topic]),
  ]);
  if ((b.max_retries === undefined) !== (b.dead_letter_topic === undefined)) {
    // (as documented: without a dead-letter topic a batch is retried for ever; one without the other would mean nothing)
    throw badRequest('"max_retries" and "dead_letter_topic" go together: without them, a batch is retried until it is delivered.');
  }
  const wanted: NewSubscription = {
    name: b.subscription_name, topic: b.topic_name, groupId: b.group_id,
    startingPosition: b.starting_position ?? 'latest', isolation: b.isolation_level ?? 'read_uncommitted',
    endpoint: b.endpoint.type === 'http' ? { type: 'http', url: b.endpoint.url, headers: b.endpoint.headers ?? {} } : { type: 'lambda', functionArn: b.endpoint.function_arn },
    maxBatchRecords: b.max_batch_records ?? DEFAULT_BATCH_RECORDS,
    ...(b.max_retries !== undefined ? { maxRetries: b.max_retries } : {}),
    ...(b.dead_letter_topic !== undefined ? { deadLetterTopic: b.dead_letter_topic } : {}),
    principal: req.principal,
  };
  const created = await createSubscription(wanted);
  return { status: 201, body: { ...view(req, clusterId, created), secret: created.secret } };
}

async function list(req: ApiRequest): Promise<ApiResponse> {
  const clusterId = await checkCluster(req);
  const subs = await visible(req, await listSubscriptions(), (s) => ({ resourceType: 'GROUP', resourceName: s.groupId }));
  return {
    status: 200,
    body: { kind: 'KafkaPushSubscriptionList', metadata: { self: `${req.baseUrl}/v3/clusters/${clusterId}/subscriptions` }, data: subs.map((s) => view(req, clusterId, s)) },
  };
}

/** The path's subscription name; one no subscription can have is not found. */
function nameOf(req: ApiRequest): string {
  const name = req.params.subscription_name ?? '';
  if (!NAME.test(name)) throw new HttpError(404, 404, 'Subscription cannot be found.');
  return name;
}

/**
 * The path's subscription, once the caller is found to hold `operation` on its group (see the
 * file's comment): GROUP_AUTHORIZATION_FAILED otherwise, the same answer for a name that exists and
 * one that does not, naming neither the group nor whether it exists.
 */
async function authorizedSubscription(req: ApiRequest, operation: 'DESCRIBE' | 'DELETE'): Promise<PushSubscription> {
  const name = nameOf(req);
  const s = await findSubscription(name);
  const notFound = () => new HttpError(404, 404, `Subscription ${name} cannot be found.`);
  if (!authorizationEnabled()) {
    if (!s) throw notFound();
    return s;
  }
  const caller = { principal: req.principal, host: req.host };
  if (s && (await authorize({ ...caller, operation, resourceType: 'GROUP', resourceName: s.groupId }))) return s;
  // (a wildcard check: such a caller lists every subscription, so an unknown name tells it nothing new)
  if (!s && (await authorize({ ...caller, operation: 'DESCRIBE', resourceType: 'GROUP', resourceName: '*' }))) throw notFound();
  throw new KafkaError('GROUP_AUTHORIZATION_FAILED', `${req.principal} is not authorized to ${operation} the group of subscription ${name}.`, {
    principal: req.principal, operation, resourceType: 'GROUP', subscription: name,
  });
}

async function describe(req: ApiRequest): Promise<ApiResponse> {
  const clusterId = await checkCluster(req);
  const s = await authorizedSubscription(req, 'DESCRIBE');
  return { status: 200, body: { ...view(req, clusterId, s), partitions: partitionsView(await subscriptionStatus(s)) } };
}

async function remove(req: ApiRequest): Promise<ApiResponse> {
  await checkCluster(req);
  await deleteSubscription(await authorizedSubscription(req, 'DELETE'));
  return { status: 204, body: '' };
}

export const pushSubscriptionRoutes: Record<string, RouteHandler> = {
  [`POST ${S}`]: create,
  [`GET ${S}`]: list,
  [`GET ${S}/{subscription_name}`]: describe,
  [`DELETE ${S}/{subscription_name}`]: remove,
};
