/**
 * The wake of WebSocket and push deliveries: where this instance moves a partition's high watermark (a
 * produce's commit, the replicator's, the controller's), records have become readable, and if the
 * partition has subscribers (or its topic a push subscription) the websocket function is invoked asynchronously (Lambda's `Event`
 * invocation) to deliver them. The function that moved the high watermark waits only for Lambda
 * to accept the invocation (`flushWakes`, before it answers: nothing runs in a frozen instance).
 *
 * Whether a partition has subscribers is cached per instance for PRESENCE_TTL_MS (a Query of at most
 * one item, one read unit, strongly consistent), so a produce costs no read of its own. A subscriber that came after
 * the cache said "none" gets its records with the next wake past the cache's age, and its
 * subscribe delivers everything readable then. Off unless `TRIBUTARY_WEBSOCKET_FUNCTION` names the
 * function.
 */
import { ENVIRONMENT } from '../config.js';
import { logger } from '../logger.js';
import { onHighWatermarkMoved } from '../log/hw-signal.js';
import { hasSubscriptions, listSubscriptions, subscribedPartitions, type SubscribedPartition, type SubscriptionRecord } from '../storage/coordination/connections.js';
import { lastStableOffset, topicPartitionKey, type ReplicaHead } from '../storage/model.js';
import { readHead } from '../storage/replica/head.js';
import { invokeAsync } from '../storage/lambda-invoke.js';
import { cachedBrokers, cachedTopic, replicaStore } from '../cluster/metadata.js';
import { hasPushSubscriptions, pushSubscriptions, SUBSCRIPTIONS_TTL_MS } from './push-delivery.js';
import type { DeliverEvent } from './websocket-delivery.js';

/** How long an instance trusts its answer to "does this partition have subscribers". */
export const PRESENCE_TTL_MS = 1000;

const presence = new Map<string, { readonly has: boolean; readonly at: number }>();
/** Partitions with a wake being sent, and whether another was asked for meanwhile. */
const sending = new Map<string, boolean>();
const pending = new Set<Promise<void>>();

async function hasSubscribers(topicId: string, partition: number): Promise<boolean> {
  const key = `${topicId}#${partition}`;
  const cached = presence.get(key);
  if (cached && Date.now() - cached.at < PRESENCE_TTL_MS) return cached.has;
  // (stamped when asked: a "no" is trusted for PRESENCE_TTL_MS from before the read, never longer)
  const askedAt = Date.now();
  const has = await hasSubscriptions(topicId, partition);
  if (presence.size > 10_000) presence.clear();
  presence.set(key, { has, at: askedAt });
  return has;
}

/** The high watermark each partition last moved to here (sent with its wake; after a truncation, lower than before). */
const movedTo = new Map<string, number>();

async function wake(fn: string, tp: string): Promise<void> {
  const at = tp.lastIndexOf('#');
  const topicId = tp.slice(0, at);
  const partition = Number(tp.slice(at + 1));
  if (!(await hasPushSubscriptions(topicId)) && !(await hasSubscribers(topicId, partition))) return;
  const highWatermark = movedTo.get(tp);
  const event: DeliverEvent = { tributaryDeliver: { topicId, partition, ...(highWatermark !== undefined ? { highWatermark } : {}) } };
  await invokeAsync(fn, event);
}

function moved(tp: string, hw: number): void {
  const fn = process.env[ENVIRONMENT.websocketFunction];
  if (!fn) return;
  if (movedTo.size > 10_000) movedTo.clear();
  movedTo.set(tp, hw);
  if (sending.has(tp)) {
    sending.set(tp, true); // (sent again once the one in flight is accepted)
    return;
  }
  sending.set(tp, false);
  const run = (async () => {
    try {
      do {
        sending.set(tp, false);
        // (one retry: a wake lost here waits for the partition's next move)
        await wake(fn, tp).catch(() => wake(fn, tp));
      } while (sending.get(tp) === true);
    } catch (err) {
      logger.warn({ event: 'websocket-wake-failed', tp, err }, 'waking the WebSocket deliveries failed');
    } finally {
      sending.delete(tp);
    }
  })();
  pending.add(run);
  void run.finally(() => pending.delete(run));
}

let armed = false;
/** Starts waking deliveries from this instance's high watermark moves (once per instance). */
export function armWebSocketWake(): void {
  if (armed) return;
  armed = true;
  onHighWatermarkMoved((tp, hw) => moved(tp, hw));
}

/** Resolves when every wake this instance started has been accepted (or has failed, logged). */
export async function flushWakes(): Promise<void> {
  while (pending.size > 0) await Promise.all([...pending]);
}

/** Time a further round of deliveries needs left before the deadline to be started. */
const OWN_MOVES_MIN_MS = 5000;

/**
 * Runs `deliver` for the partition a wake names, then for each partition whose high watermark
 * this instance moved meanwhile — a batch put on a dead-letter topic — until none is left or the
 * deadline is near (what is left then waits for the controller's pass). The websocket function is
 * not armed to wake itself (it is not in its own `invokes`), so records it makes readable would
 * otherwise wait for the pass. Every round runs; the first failure is thrown at the end.
 */
export async function deliverWithOwnMoves(
  topicId: string, partition: number, highWatermark: number | undefined, deadline: number,
  deliver: (topicId: string, partition: number, highWatermark: number | undefined) => Promise<void>,
): Promise<void> {
  const moved = new Map<string, number>();
  const stop = onHighWatermarkMoved((tp, hw) => moved.set(tp, Math.max(hw, moved.get(tp) ?? 0)));
  let failure: { readonly reason: unknown } | undefined;
  try {
    let round: [string, number | undefined][] = [[`${topicId}#${partition}`, highWatermark]];
    while (round.length > 0) {
      const results = await Promise.allSettled(round.map(([tp, hw]) => {
        const at = tp.lastIndexOf('#');
        return deliver(tp.slice(0, at), Number(tp.slice(at + 1)), hw);
      }));
      const rejected = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (rejected && !failure) failure = { reason: rejected.reason };
      if (Date.now() + OWN_MOVES_MIN_MS >= deadline) break;
      round = [...moved];
      moved.clear();
    }
  } finally {
    stop();
  }
  if (failure) throw failure.reason;
}

/** How many wakes the controller's pass (or a new subscription) has Lambda accept at once. */
export const WAKE_CONCURRENCY = 8;

/**
 * The controller's pass (a wake that was lost for good, a retry that no new record wakes): wakes
 * the delivery of every partition of a topic with a push subscription, then of every partition
 * with a WebSocket subscription that is behind what is readable and not being delivered; answers
 * the wakes sent. At most WAKE_CONCURRENCY reads or invokes are in flight: a pass over many
 * partitions is not one round trip each in turn, nor a burst that Lambda throttles. No partition
 * is checked past `deadline` (the rest wait for the next pass). A failed read or invoke does not
 * stop the others; the first failure is thrown once all were tried.
 */
export async function wakeDeliveries(deadline = Number.POSITIVE_INFINITY): Promise<number> {
  const fn = process.env[ENVIRONMENT.websocketFunction];
  if (!fn) return 0;
  const topics = new Map((await pushSubscriptions()).map((s) => [s.topicId, s.topic]));
  const pushed = (await Promise.all([...topics].map(([topicId, topic]) => partitionWakes(topicId, topic)))).flat();
  // (the push wakes go out whatever the WebSocket checks below meet)
  const sending = eachAtMost(WAKE_CONCURRENCY, pushed, (event) => invokeAsync(fn, event));
  const woken = new Set(pushed.map((e) => `${e.tributaryDeliver.topicId}#${e.tributaryDeliver.partition}`));
  const behind: DeliverEvent[] = [];
  const checked = await subscribedPartitions().then(
    (listed) => eachAtMost(WAKE_CONCURRENCY, listed.filter((p) => !woken.has(`${p.topicId}#${p.partition}`)), async (p) => {
      if (Date.now() >= deadline) return;
      const event = await laggingWake(p);
      if (event) behind.push(event);
    }),
    (reason: unknown) => ({ failure: { reason } }),
  );
  // (after the push wakes: never more than WAKE_CONCURRENCY invokes in flight)
  const pushedOut = await sending;
  const sent = await eachAtMost(WAKE_CONCURRENCY, behind, (event) => invokeAsync(fn, event));
  const failure = pushedOut.failure ?? checked.failure ?? sent.failure;
  if (failure) throw failure.reason;
  return pushed.length + behind.length;
}

/**
 * The wake of a WebSocket-subscribed partition when one of its subscriptions is behind what it may
 * read (the high watermark, or the last stable offset for read_committed) with no delivery under
 * way: records made readable whose wake never ran (its invocation and Lambda's retries failed) on a
 * partition nobody writes to again. Two reads, eventually consistent (half a read unit each): the
 * subscriptions and the leader's head — a read a moment stale only moves the wake to the next pass,
 * or sends one the delivery finds nothing to do for.
 */
async function laggingWake(p: SubscribedPartition): Promise<DeliverEvent | undefined> {
  const subscriptions = await listSubscriptions(p.topicId, p.partition, false);
  if (subscriptions.length === 0) return undefined;
  const view = await cachedTopic(p.topic);
  const state = view?.topic.topicId === p.topicId ? view.partitions.find((x) => x.partition === p.partition) : undefined;
  if (!state || state.leader < 0) return undefined;
  // (a leader the controller fenced: the partition gets a new one, and the next pass reads it)
  if ((await cachedBrokers()).find((b) => b.brokerId === state.leader)?.state !== 'alive') return undefined;
  const head = await readHead(await replicaStore(state.leader), topicPartitionKey(p.topicId, p.partition), false);
  const wake: DeliverEvent = { tributaryDeliver: { topicId: p.topicId, partition: p.partition, ...(head ? { highWatermark: head.hw } : {}) } };
  // (another leader's now: the cached view is behind; the delivery reads the partition as it is)
  if (!head || head.role !== 'leader') return wake;
  return lagging(subscriptions, head, Date.now()) ? wake : undefined;
}

/** Whether a subscription is behind what it may read on the leader's `head` with no delivery's lease live at `now`. */
export const lagging = (subscriptions: readonly Pick<SubscriptionRecord, 'next' | 'isolation' | 'leaseUntil'>[], head: Pick<ReplicaHead, 'hw' | 'openTxns'>, now: number): boolean =>
  subscriptions.some((s) => !(s.leaseUntil !== undefined && s.leaseUntil > now) && s.next < (s.isolation === 'read_committed' ? lastStableOffset(head) : head.hw));

/** The wakes of a topic's partitions (none when the topic is gone or was created again under its name). */
async function partitionWakes(topicId: string, topic: string): Promise<DeliverEvent[]> {
  const view = await cachedTopic(topic);
  if (view?.topic.topicId !== topicId) return [];
  return Array.from({ length: view.topic.partitions }, (_, partition) => ({ tributaryDeliver: { topicId, partition } }));
}

/** Runs `work` on each item, at most `n` at a time; every item is tried, the first failure kept. */
async function eachAtMost<T>(n: number, items: readonly T[], work: (item: T) => Promise<unknown>): Promise<{ failure?: { readonly reason: unknown } }> {
  let next = 0;
  let failure: { readonly reason: unknown } | undefined;
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await work(item).catch((reason: unknown) => {
        failure ??= { reason };
      });
    }
  }));
  return failure ? { failure } : {};
}

/** Invokes `fn` with each event, WAKE_CONCURRENCY at a time; throws the first failure once every one was tried. */
async function invokeAll(fn: string, events: readonly DeliverEvent[]): Promise<void> {
  const { failure } = await eachAtMost(WAKE_CONCURRENCY, events, (event) => invokeAsync(fn, event));
  if (failure) throw failure.reason;
}

/**
 * Wakes a new push subscription's partitions once every instance's cached list has it (after
 * SUBSCRIPTIONS_TTL_MS): records produced meanwhile by an instance whose list did not have it yet
 * woke nothing, and are delivered by this wake.
 */
export async function wakeNewSubscription(topicId: string, topic: string): Promise<void> {
  const fn = process.env[ENVIRONMENT.websocketFunction];
  if (!fn) return;
  await new Promise((r) => setTimeout(r, SUBSCRIPTIONS_TTL_MS));
  await invokeAll(fn, await partitionWakes(topicId, topic));
}
