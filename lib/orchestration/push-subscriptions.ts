/**
 * Push subscriptions as the API manages them: creating one (its topic, dead-letter topic and
 * endpoint checked, its secret made, its group's starting offsets committed), listing, describing
 * with each partition's delivery state, deleting. Delivery: push-delivery.ts.
 */
import { HttpError } from '../errors.js';
import { requireTopic } from '../cluster/metadata.js';
import { committed } from '../groups/coordinator.js';
import { KafkaError } from '../protocol/errors.js';
import { newWebhookSecret } from '../protocol/webhook-signature.js';
import {
  createPushSubscription, deletePushSubscription, getPushSubscription, listPushStates, listPushSubscriptions, pushStateKey, type PushSubscription,
} from '../storage/coordination/push-subscriptions.js';
import { startingOffset } from './push-delivery.js';
import { lambdaTargetProblem, urlProblem } from './push-endpoints.js';
import { wakeNewSubscription } from './websocket-wake.js';

export type { PushSubscription };
export const DEFAULT_BATCH_RECORDS = 100;
export const MAX_BATCH_RECORDS = 1000;

export type NewSubscription = Omit<PushSubscription, 'topicId' | 'secret' | 'createdAt' | 'partitions'>;

export interface SubscriptionStatus {
  readonly partition: number;
  readonly committedOffset?: number;
  readonly attempts: number;
  readonly retryAt?: number;
  readonly lastError?: string;
}

/** Stores a subscription and commits its group's starting offsets where it has none; answers it with its secret. */
export async function createSubscription(n: NewSubscription): Promise<PushSubscription> {
  const view = await requireTopic(n.topic);
  if (n.deadLetterTopic !== undefined) {
    if (n.deadLetterTopic === n.topic) throw new HttpError(400, 40002, 'The dead-letter topic must not be the subscribed topic.');
    await requireTopic(n.deadLetterTopic);
  }
  if (n.endpoint.type === 'http') {
    const problem = urlProblem(n.endpoint.url);
    if (problem) throw new HttpError(400, 40002, `The endpoint's url ${problem}.`);
  } else {
    const problem = lambdaTargetProblem(n.endpoint.functionArn);
    if (problem) throw new KafkaError('POLICY_VIOLATION', `POLICY_VIOLATION: function ${n.endpoint.functionArn} ${problem}.`, { functionArn: n.endpoint.functionArn });
  }
  const all = await listPushSubscriptions();
  // (two subscriptions committing one group's offsets of one topic would each skip what the other delivered)
  const sharing = all.find((x) => x.groupId === n.groupId && x.topic === n.topic && x.name !== n.name);
  if (sharing) throw new HttpError(400, 40002, `Group ${n.groupId} already delivers topic ${n.topic} for subscription ${sharing.name}: give this one a group of its own.`);
  const s: PushSubscription = { ...n, topicId: view.topic.topicId, partitions: view.topic.partitions, secret: newWebhookSecret(), createdAt: Date.now() };
  if (!(await createPushSubscription(s))) throw new HttpError(400, 40002, `Subscription ${n.name} already exists.`);
  try {
    // (pinned now: `latest` means what is produced from here on, not from the first delivery)
    await Promise.all(Array.from({ length: view.topic.partitions }, (_, p) => startingOffset(s, p)));
    await wakeNewSubscription(s.topicId, s.topic);
  } catch (err) {
    // (answered as failed: nothing of it stays, but the offsets pinned, which a create again pins the same way)
    await deletePushSubscription(s).catch(() => undefined);
    throw err;
  }
  return s;
}

export async function listSubscriptions(): Promise<PushSubscription[]> {
  return listPushSubscriptions();
}

/** The subscription of this name, if there is one (who may see it is the caller's to decide first: lib/http/push-subscription-routes.ts). */
export async function findSubscription(name: string): Promise<PushSubscription | undefined> {
  return getPushSubscription(name);
}

/** A subscription's partitions' state: the group's committed offsets and each partition's delivery state. */
export async function subscriptionStatus(s: PushSubscription): Promise<SubscriptionStatus[]> {
  const view = await requireTopic(s.topic).catch(() => undefined);
  const count = view?.topic.topicId === s.topicId ? view.topic.partitions : 0;
  const [offsets, states] = await Promise.all([committed(s.groupId), listPushStates(pushStateKey(s))]);
  const partitions: SubscriptionStatus[] = [];
  for (let p = 0; p < count; p++) {
    const offset = offsets.find((o) => o.topic === s.topic && o.partition === p);
    const state = states.find((x) => x.partition === p);
    partitions.push({
      partition: p, attempts: state?.attempts ?? 0,
      ...(offset ? { committedOffset: offset.offset } : {}),
      ...(state?.retryAt !== undefined ? { retryAt: state.retryAt } : {}),
      ...(state?.lastError !== undefined ? { lastError: state.lastError } : {}),
    });
  }
  return partitions;
}

/** Deletes a subscription (its group's committed offsets stay, as a Kafka group's do). */
export async function deleteSubscription(s: PushSubscription): Promise<void> {
  await deletePushSubscription(s);
}
