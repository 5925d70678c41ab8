/**
 * WebSocket connections and their partition subscriptions, as the websocket function's routes
 * change them (lib/http/websocket.ts): a connection stored at `$connect` and removed with its
 * subscriptions at `$disconnect`; a subscription stored from its start offset, then delivered.
 */
import { randomUUID } from 'node:crypto';
import { requireTopic } from '../cluster/metadata.js';
import { KafkaError } from '../protocol/errors.js';
import { listOffset, readFromLeader, type IsolationLevel } from '../log/read.js';
import {
  ConnectionGone, deleteConnection, deleteSubscription, getConnection, putConnection, putSubscription, releaseDelivery, type SubscriptionRecord,
} from '../storage/coordination/connections.js';
import { DELIVERY_LEASE_MS, deliverPartition, postFrame } from './websocket-delivery.js';
import { PRESENCE_TTL_MS } from './websocket-wake.js';

export { deleteConnection as disconnect, putConnection as connect };

/** Whether `$connect` stored the connection (and `$disconnect` has not removed it). */
export const isConnected = async (connectionId: string): Promise<boolean> => (await getConnection(connectionId)) !== undefined;

export interface Subscribe {
  readonly connectionId: string;
  readonly principal: string;
  /** The client's address, which ACLs on a host match (at the subscribe and at every delivery). */
  readonly host: string;
  readonly topic: string;
  readonly partition: number;
  readonly offset: 'earliest' | 'latest' | number;
  readonly isolation: IsolationLevel;
  /** The consumer group member the partition is assigned to (lib/orchestration/websocket-groups.ts); absent for a partition subscription. */
  readonly member?: { readonly groupId: string; readonly memberId: string };
}

/**
 * Subscribes a connection to a partition from Kafka's earliest or latest (for read_committed, the
 * last stable offset) or an offset within the log — from the log start to the leader's log end, so
 * a resume from the last delivered offset on a new leader whose high watermark has not caught up
 * yet waits as a fetch would (else OFFSET_OUT_OF_RANGE, as a fetch from it);
 * answers `subscribed`, then delivers what is readable until `deadline`. No records frame of the
 * subscription is posted before its `subscribed` frame.
 *
 * Then it delivers once more, PRESENCE_TTL_MS after the subscription was stored: an instance that
 * asked "does this partition have subscribers" before it was stored trusts its "no" until then,
 * so a high watermark it moves meanwhile wakes nobody; that second delivery reads past it, and
 * every move after it wakes the deliveries.
 */
export async function subscribe(s: Subscribe, deadline: number): Promise<void> {
  const view = await requireTopic(s.topic);
  const { next, high, stable } = await readFromLeader(s.topic, s.partition, async (t) => {
    const [earliest, latest] = await Promise.all([listOffset(t, 'earliest'), listOffset(t, 'latest')]);
    const start = earliest.offset ?? 0;
    const bounds = { high: latest.offset ?? 0, stable: latest.lastStableOffset ?? latest.offset ?? 0 };
    if (s.offset === 'earliest') return { next: start, ...bounds };
    if (s.offset === 'latest') return { next: s.isolation === 'read_committed' ? bounds.stable : bounds.high, ...bounds };
    const end = latest.logEndOffset ?? bounds.high;
    if (s.offset < start || s.offset > end) {
      throw new KafkaError('OFFSET_OUT_OF_RANGE', `Offset ${s.offset} is not within the log of ${s.topic} partition ${s.partition} (${start} to ${end}).`, { topic: s.topic });
    }
    return { next: s.offset, ...bounds };
  });
  // Stored with its delivery lease held here: a wake's deliverer that comes before the answer skips
  // it (a client drops the records of a subscription it was not answered for, while `next` would
  // move past them); released after the answer, then delivered from here, which reads past what woke it.
  const me = randomUUID();
  let sub: SubscriptionRecord;
  try {
    sub = await putSubscription({
      connectionId: s.connectionId, topic: s.topic, topicId: view.topic.topicId, partition: s.partition, next, isolation: s.isolation, principal: s.principal, host: s.host,
      ...(s.member ? { groupId: s.member.groupId, memberId: s.member.memberId } : {}),
    }, { lease: { deliverer: me, ms: DELIVERY_LEASE_MS } });
  } catch (err) {
    if (err instanceof ConnectionGone) return; // (closed meanwhile: nothing to answer)
    throw err;
  }
  const storedAt = Date.now();
  try {
    await postFrame(s.connectionId, {
      type: 'subscribed', topic: s.topic, partition: s.partition, offset: next, isolation_level: s.isolation, subscription_id: sub.gen,
      high_watermark: high, last_stable_offset: stable,
      ...(s.member ? { group_id: s.member.groupId } : {}),
    });
  } finally {
    await releaseDelivery(sub, me);
  }
  await deliverPartition(view.topic.topicId, s.partition, deadline);
  const wait = storedAt + PRESENCE_TTL_MS - Date.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  await deliverPartition(view.topic.topicId, s.partition, deadline);
}

/** Ends a connection's subscription to a partition and answers `unsubscribed` (with the group's id when the group assigned it). */
export async function unsubscribe(connectionId: string, topic: string, partition: number, groupId?: string): Promise<void> {
  const view = await requireTopic(topic);
  await deleteSubscription(connectionId, view.topic.topicId, partition);
  await postFrame(connectionId, { type: 'unsubscribed', topic, partition, ...(groupId !== undefined ? { group_id: groupId } : {}) });
}
