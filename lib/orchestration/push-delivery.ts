/**
 * Push delivery: the records of a partition that became readable go to each push subscription
 * on its topic, as a signed POST (or a Lambda invoke) of `{"topic","partition","records":[…]}`,
 * at most `maxBatchRecords` at a time, from the subscription group's committed offset.
 *
 * Per partition and subscription one batch at a time: a deliverer takes the partition's lease
 * (lib/storage/coordination/push-subscriptions.ts), reads from the committed offset, sends, and on
 * a 2xx commits the group's offset past the batch and releases the lease in one transaction, which
 * an offset reset made meanwhile refuses (the reset wins); then it goes on. A failed attempt is
 * counted with the batch's range, and the batch waits (backoff with jitter) before the same range
 * is tried again, under the same `webhook-id`; the partition's later records wait behind it, so
 * order holds. After `maxRetries` failed retries the batch goes to the dead-letter topic and
 * delivery goes on; with no dead-letter topic it is retried for ever. At least once: a deliverer
 * that dies after a 2xx and before its commit leaves the batch to be read and sent again.
 *
 * What runs it: the same wake as WebSocket deliveries (the function that moved the high watermark
 * invokes the websocket function), and the controller's pass, which wakes every partition with a
 * push subscription so a lost wake or a retry that no new record wakes is delivered anyway.
 * An invocation waits for a retry that falls within its deadline; later ones wait for the pass.
 */
import { randomUUID } from 'node:crypto';
import { asKafkaError } from '../errors.js';
import { logger } from '../logger.js';
import { commit, committed, resetOffsets } from '../groups/coordinator.js';
import { produce } from '../log/produce.js';
import { fetchRecords, listOffset, readFromLeader, type FetchResult } from '../log/read.js';
import { signWebhook } from '../protocol/webhook-signature.js';
import { authorizationEnabled, authorize } from '../security/authorizer.js';
import {
  claimPushDelivery, failPushDelivery, finishPushDelivery, getPushState, getPushSubscription, listPushSubscriptions, pushStateKey,
  releasePushDelivery, type PushBatch, type PushSubscription,
} from '../storage/coordination/push-subscriptions.js';
import { ATTEMPT_TIMEOUT_MS, sendToEndpoint } from './push-endpoints.js';
import { frameRecord } from './websocket-delivery.js';

/** A partition's delivery lease: longer than an attempt, its read and its commit. */
export const PUSH_LEASE_MS = ATTEMPT_TIMEOUT_MS + 20_000;
const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 60_000;
/** How much one attempt reads (its batch is at most `maxBatchRecords` of it). */
const READ_BYTES = 1024 * 1024;
/** How long an instance trusts its list of push subscriptions. */
export const SUBSCRIPTIONS_TTL_MS = 1000;

/** The wait before attempt `attempts + 1` of a batch: exponential from 500 ms to a minute, half of it random ("equal jitter"). */
export function retryDelay(attempts: number, random: () => number = Math.random): number {
  const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, attempts - 1));
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}

let cache: { readonly at: number; readonly subs: readonly PushSubscription[] } | undefined;
/** The push subscriptions, as this instance last read them (at most SUBSCRIPTIONS_TTL_MS ago). */
export async function pushSubscriptions(): Promise<readonly PushSubscription[]> {
  if (cache && Date.now() - cache.at < SUBSCRIPTIONS_TTL_MS) return cache.subs;
  const at = Date.now();
  const subs = await listPushSubscriptions();
  cache = { at, subs };
  return subs;
}

/** Whether a topic has any push subscription (this instance's cached list). */
export async function hasPushSubscriptions(topicId: string): Promise<boolean> {
  return (await pushSubscriptions()).some((s) => s.topicId === topicId);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Where a partition's delivery starts: the group's committed offset, else the subscription's
 * starting position, committed then so that it holds. A partition the topic did not have when the
 * subscription was created starts at the earliest offset: its first records are what woke it.
 */
export async function startingOffset(s: PushSubscription, partition: number): Promise<number> {
  const [c] = await committed(s.groupId, [{ topic: s.topic, partition }]);
  if (c) return c.offset;
  const position = partition < s.partitions ? s.startingPosition : 'earliest';
  const listed = await readFromLeader(s.topic, partition, (t) => listOffset(t, position));
  const at = position === 'latest' && s.isolation === 'read_committed' ? listed.lastStableOffset ?? listed.offset ?? 0 : listed.offset ?? 0;
  // (never backwards: a deliverer that got here first may have delivered past it already)
  await commit(s.groupId, [{ topic: s.topic, partition, offset: at }], null);
  return at;
}

type Outcome = 'delivered' | 'idle' | 'failed';

/** The dead-letter records of a batch: each record as it was, with headers naming where it came from and why it failed. */
function deadLetters(s: PushSubscription, partition: number, records: FetchResult['records'], error: string) {
  const h = (key: string, value: string) => ({ key, value: Buffer.from(value) });
  return records.map((r) => ({
    key: r.key, value: r.value, timestamp: r.timestamp,
    headers: [...r.headers, h('tributary.push.subscription', s.name), h('tributary.push.topic', s.topic), h('tributary.push.partition', String(partition)), h('tributary.push.offset', String(r.offset)), h('tributary.push.error', error.slice(0, 500))],
  }));
}

/** A delivery's attempts so far at the partition it holds the lease of, and the batch they sent. */
interface Claim {
  readonly s: PushSubscription;
  readonly partition: number;
  readonly me: string;
  readonly key: string;
  readonly attempts: number;
  readonly batch?: PushBatch;
}

const failed = async (c: Claim, error: string, batch = c.batch): Promise<Outcome> => {
  const n = c.attempts + 1;
  await failPushDelivery(c.key, c.partition, c.me, n, Date.now() + retryDelay(n), error, batch);
  logger.warn({ event: 'push-delivery-failed', subscription: c.s.name, partition: c.partition, attempts: n, from: batch?.from, next: batch?.next, error }, 'a push delivery failed; it is retried');
  return 'failed';
};

/**
 * The batch to send from `from`: the one the attempts so far sent, again, when it is still the
 * one at the committed offset (so a retry has the same records and `webhook-id`, and attempts
 * count one batch); else at most `maxBatchRecords` of what was read. `claim` is the claim with
 * the attempts of that batch: none when the failed one was another's (a reset moved the offset).
 */
function batchOf(c: Claim, from: number, result: FetchResult): { claim: Claim; records: FetchResult['records']; next: number } {
  const again = c.batch?.from === from && c.batch.next <= result.nextOffset ? c.batch : undefined;
  if (again) return { claim: c, records: result.records.filter((r) => r.offset < again.next), next: again.next };
  if (c.batch) logger.info({ event: 'push-batch-changed', subscription: c.s.name, partition: c.partition, was: c.batch, from }, 'the batch that failed is no longer the one at the committed offset; its attempts are not counted');
  const claim: Claim = { ...c, attempts: c.batch ? 0 : c.attempts, batch: undefined };
  const records = result.records.slice(0, c.s.maxBatchRecords);
  const last = records.at(-1);
  return { claim, records, next: records.length < result.records.length && last ? last.offset + 1 : result.nextOffset };
}

/** One attempt at the partition's next batch, under the lease (see the file's comment), sent before `deadline`. */
async function attempt(c: Claim, deadline: number): Promise<Outcome> {
  const { s, partition, me, key } = c;
  if (authorizationEnabled() && !(await authorize({ principal: s.principal, host: '', operation: 'READ', resourceType: 'TOPIC', resourceName: s.topic }))) {
    return failed(c, `TOPIC_AUTHORIZATION_FAILED: ${s.principal} may not READ topic ${s.topic}`);
  }
  const from = await startingOffset(s, partition);
  let result: FetchResult;
  try {
    result = await readFromLeader(s.topic, partition, (t) => fetchRecords(t, { offset: from, maxBytes: READ_BYTES, maxWaitMs: 0, isolation: s.isolation }));
  } catch (err) {
    if (asKafkaError(err).kafkaName !== 'OFFSET_OUT_OF_RANGE') throw err;
    // (retention went past the committed offset, or an unclean election cut the log below it: as a
    // consumer's auto.offset.reset, which may move the offset back)
    const [to] = await resetOffsets(s.groupId, [{ topic: s.topic, partition }], s.startingPosition);
    logger.warn({ event: 'push-offset-reset', subscription: s.name, partition, from, to: to?.offset }, 'the committed offset was outside the log; delivery goes on from the starting position');
    await finishPushDelivery(key, partition, me);
    return 'delivered';
  }
  if (result.nextOffset <= from) {
    await releasePushDelivery(key, partition, me);
    return 'idle';
  }
  const { claim, records, next } = batchOf(c, from, result);
  const batch: PushBatch = { from, next };
  if (records.length > 0) {
    const body = JSON.stringify({ topic: s.topic, partition, records: records.map(frameRecord) });
    const id = `msg_${s.name}_${s.createdAt}_${partition}_${from}_${next}`;
    // (what is left for the commit and the release after the send)
    const sent = await sendToEndpoint(s.endpoint, body, await signWebhook(s.secret, id, Date.now() / 1000, body), deadline - Date.now() - FINISH_MS);
    if (!sent.ok) {
      if (s.maxRetries === undefined || claim.attempts + 1 <= s.maxRetries || s.deadLetterTopic === undefined) return failed(claim, sent.error, batch);
      const outcomes = await produce(s.deadLetterTopic, deadLetters(s, partition, records, sent.error), { acks: 'all' });
      const refused = outcomes.find((o) => !o.ok);
      // (some records refused: the batch is tried again, endpoint first, after the backoff; a
      // dead-letter topic can hold a record twice, never lose one)
      if (refused && !refused.ok) return failed(claim, `the dead-letter topic ${s.deadLetterTopic} refused the batch: ${refused.error.message}`, batch);
      logger.warn({ event: 'push-dead-lettered', subscription: s.name, partition, from, next, deadLetterTopic: s.deadLetterTopic }, 'a batch went to the dead-letter topic');
    }
  }
  const finished = await finishPushDelivery(key, partition, me, { groupId: s.groupId, topic: s.topic, topicId: s.topicId, from, next });
  if (finished === 'offset-moved') {
    // (a reset during the delivery: it wins, and delivery goes on from where it put the offset)
    logger.info({ event: 'push-commit-overtaken', subscription: s.name, partition, from, next }, 'the committed offset moved during the delivery (a reset); delivery goes on from it');
    await finishPushDelivery(key, partition, me);
  }
  return finished === 'lease-lost' ? 'idle' : 'delivered';
}

/** Time kept after a send for the commit and the release. */
const FINISH_MS = 3000;

/**
 * Delivers one subscription's partition until nothing is left, a retry falls past `deadline`, the
 * lease is another's, or the subscription is gone (deleted, or deleted and created again: each
 * round reads it again, so a delivery that began under the old one stops).
 */
async function deliverSubscription(cached: PushSubscription, partition: number, deadline: number): Promise<void> {
  const me = randomUUID();
  const key = pushStateKey(cached);
  while (Date.now() + FINISH_MS + 1000 < deadline) {
    const s = await getPushSubscription(cached.name);
    if (s?.createdAt !== cached.createdAt) return;
    const claimed = await claimPushDelivery(key, partition, me, PUSH_LEASE_MS);
    if (!claimed) {
      // (a retry waiting: wait for it here when it falls within this invocation, else leave it to the next wake or pass)
      const state = await getPushState(key, partition);
      const leased = state?.leaseUntil !== undefined && state.leaseUntil > Date.now();
      if (leased || state?.retryAt === undefined || state.retryAt + ATTEMPT_TIMEOUT_MS >= deadline) return;
      await sleep(Math.max(0, state.retryAt - Date.now()));
      continue;
    }
    const c: Claim = { s, partition, me, key, attempts: claimed.attempts, ...(claimed.batch ? { batch: claimed.batch } : {}) };
    let outcome: Outcome;
    try {
      outcome = await attempt(c, deadline);
    } catch (err) {
      // (a store, a read, a refused commit: counted as an attempt, so it backs off and shows in describe)
      await failed(c, asKafkaError(err).message).catch(() => releasePushDelivery(key, partition, me).catch(() => undefined));
      throw err;
    }
    if (outcome === 'idle') return;
  }
}

/**
 * Delivers what is readable of one partition to the push subscriptions on its topic (see the
 * file's comment) until each is idle, waits past `deadline` (epoch ms), or is another's to deliver.
 * A subscription whose delivery threw (a store, a read) is logged; the throw counts as a failed
 * attempt, and the next wake or pass tries again after its backoff.
 */
export async function deliverPush(topicId: string, partition: number, deadline: number): Promise<void> {
  const subs = (await pushSubscriptions()).filter((s) => s.topicId === topicId);
  await Promise.all(subs.map((s) => deliverSubscription(s, partition, deadline).catch((err: unknown) => {
    logger.warn({ event: 'push-delivery-error', subscription: s.name, partition, err }, 'push delivery stopped; the next wake or pass goes on');
  })));
}
