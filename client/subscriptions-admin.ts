/**
 * The admin client's push subscriptions, over `/v3/clusters/{c}/subscriptions`: the cluster reads a
 * topic as a consumer group and delivers its records, in signed batches, to an HTTPS endpoint or a
 * Lambda function. Admin delegates here; answers are camelCase and typed. A receiver checks each
 * delivery's signature with `verifyWebhook` (lib/protocol/webhook-signature.ts, exported by index.ts).
 */
import type { Connection } from './connection.js';
import { isRetriable, TributaryProtocolError } from './errors.js';
import { withRetry } from './retry.js';

/** Where the first read of a partition the group has no committed offset for starts. */
export type SubscriptionStartingPosition = 'earliest' | 'latest';

/** Whether deliveries carry records of open and aborted transactions (Kafka's `isolation.level`). */
export type SubscriptionIsolationLevel = 'read_uncommitted' | 'read_committed';

/** Where a subscription delivers, as `createSubscription` takes it. */
export type SubscriptionEndpoint =
  | { readonly type: 'http'; readonly url: string; readonly headers?: Readonly<Record<string, string>> }
  | { readonly type: 'lambda'; readonly functionArn: string };

/** Where a subscription delivers, as the cluster describes it: an http endpoint's header names only, never their values. */
export type SubscriptionEndpointDescription =
  | { readonly type: 'http'; readonly url: string; readonly headerNames: string[] }
  | { readonly type: 'lambda'; readonly functionArn: string };

/** What `createSubscription` takes. */
export interface CreateSubscriptionOptions {
  readonly name: string;
  readonly topic: string;
  /** The consumer group whose committed offsets record what was delivered. */
  readonly groupId: string;
  /** @default 'latest' */
  readonly startingPosition?: SubscriptionStartingPosition;
  /** @default 'read_uncommitted' */
  readonly isolationLevel?: SubscriptionIsolationLevel;
  readonly endpoint: SubscriptionEndpoint;
  /** Records per delivery, 1 to 1000. @default 100 */
  readonly maxBatchRecords?: number;
  /** Retries of a failed batch before it is written to `deadLetterTopic` (the two go together). @default retried until delivered */
  readonly maxRetries?: number;
  /** An existing topic, not `topic`, that a batch which used up `maxRetries` is written to. */
  readonly deadLetterTopic?: string;
}

/** A push subscription. */
export interface SubscriptionDescription {
  readonly name: string;
  readonly topic: string;
  readonly groupId: string;
  readonly startingPosition: SubscriptionStartingPosition;
  readonly isolationLevel: SubscriptionIsolationLevel;
  readonly endpoint: SubscriptionEndpointDescription;
  readonly maxBatchRecords: number;
  /** Null: a failed batch is retried until it is delivered. */
  readonly maxRetries: number | null;
  readonly deadLetterTopic: string | null;
  /** Epoch ms. */
  readonly createdAt: number;
}

/** A subscription just created, with the secret that signs its deliveries (shown only here, once). */
export type CreatedSubscription = SubscriptionDescription & { readonly secret: string };

/** One partition's delivery state. */
export interface SubscriptionPartitionState {
  readonly partition: number;
  /** The group's committed offset (the next record to deliver); null while it has none. */
  readonly committedOffset: number | null;
  /** Failed attempts of the batch being delivered. */
  readonly attempts: number;
  /** When a failed batch is tried again (epoch ms); null when none is waiting. */
  readonly nextAttemptAt: number | null;
  readonly lastError: string | null;
}

/** A subscription with each partition's delivery state. */
export type SubscriptionDetails = SubscriptionDescription & { readonly partitions: SubscriptionPartitionState[] };

type Json = Record<string, unknown>;
const enc = encodeURIComponent;
const numberOrNull = (v: unknown): number | null => (typeof v === 'number' ? v : null);
const stringOrNull = (v: unknown): string | null => (typeof v === 'string' ? v : null);

function endpointDescription(e: Json | undefined): SubscriptionEndpointDescription {
  if (e?.type === 'lambda') return { type: 'lambda', functionArn: String(e.function_arn) };
  return { type: 'http', url: String(e?.url ?? ''), headerNames: Array.isArray(e?.header_names) ? (e.header_names as unknown[]).map(String) : [] };
}

/** A `KafkaPushSubscription` answer as a SubscriptionDescription. */
export function subscriptionDescription(s: Json): SubscriptionDescription {
  return {
    name: String(s.subscription_name),
    topic: String(s.topic_name),
    groupId: String(s.group_id),
    startingPosition: (s.starting_position === 'earliest' ? 'earliest' : 'latest'),
    isolationLevel: (s.isolation_level === 'read_committed' ? 'read_committed' : 'read_uncommitted'),
    endpoint: endpointDescription(s.endpoint as Json | undefined),
    maxBatchRecords: Number(s.max_batch_records),
    maxRetries: numberOrNull(s.max_retries),
    deadLetterTopic: stringOrNull(s.dead_letter_topic),
    createdAt: Number(s.created_at),
  };
}

function partitionState(p: Json): SubscriptionPartitionState {
  return {
    partition: Number(p.partition_id),
    committedOffset: numberOrNull(p.committed_offset),
    attempts: Number(p.attempts ?? 0),
    nextAttemptAt: numberOrNull(p.next_attempt_at),
    lastError: stringOrNull(p.last_error),
  };
}

function createBody(o: CreateSubscriptionOptions): Json {
  const e = o.endpoint;
  return {
    subscription_name: o.name,
    topic_name: o.topic,
    group_id: o.groupId,
    ...(o.startingPosition !== undefined ? { starting_position: o.startingPosition } : {}),
    ...(o.isolationLevel !== undefined ? { isolation_level: o.isolationLevel } : {}),
    endpoint: e.type === 'lambda'
      ? { type: 'lambda', function_arn: e.functionArn }
      : { type: 'http', url: e.url, ...(e.headers !== undefined ? { headers: e.headers } : {}) },
    ...(o.maxBatchRecords !== undefined ? { max_batch_records: o.maxBatchRecords } : {}),
    ...(o.maxRetries !== undefined ? { max_retries: o.maxRetries } : {}),
    ...(o.deadLetterTopic !== undefined ? { dead_letter_topic: o.deadLetterTopic } : {}),
  };
}

/**
 * Creates a subscription; resolves with it and its signing secret. Not retried: a create whose
 * answer was lost would be refused as existing (400, 40002) when repeated.
 */
export async function createSubscription(conn: Connection, o: CreateSubscriptionOptions): Promise<CreatedSubscription> {
  const r = (await conn.transport.call<Json>('POST', await conn.v3('/subscriptions'), { body: createBody(o) })).body;
  return { ...subscriptionDescription(r), secret: String(r.secret) };
}

/** Every subscription. */
export async function listSubscriptions(conn: Connection): Promise<SubscriptionDescription[]> {
  const r = await conn.call<{ data?: Json[] }>('GET', await conn.v3('/subscriptions'));
  return (r.data ?? []).map(subscriptionDescription);
}

/** One subscription and its partitions' delivery state; an unknown name rejects at once (404). */
export async function describeSubscription(conn: Connection, name: string): Promise<SubscriptionDetails> {
  const path = await conn.v3(`/subscriptions/${enc(name)}`);
  const final = (e: unknown) => e instanceof TributaryProtocolError && e.status === 404;
  const r = await withRetry(async () => (await conn.transport.call<Json>('GET', path)).body, conn.retry, (e) => isRetriable(e) && !final(e));
  return { ...subscriptionDescription(r), partitions: Array.isArray(r.partitions) ? (r.partitions as Json[]).map(partitionState) : [] };
}

/** Deletes a subscription: its deliveries stop; its group's committed offsets stay. An unknown name rejects (404). */
export async function deleteSubscription(conn: Connection, name: string): Promise<void> {
  await conn.transport.call('DELETE', await conn.v3(`/subscriptions/${enc(name)}`));
}
