/**
 * Delivery to WebSocket subscribers: the records of a partition that became readable go to every
 * connection subscribed to it, each from its own next offset, in offset order, as frames posted
 * through API Gateway's connection management API (locally, the gateway's).
 *
 * One delivery at a time per subscription: a deliverer takes the subscription's lease (a
 * conditional write on its `next`, lib/storage/coordination/connections.ts), posts, then moves
 * `next` and releases the lease in one conditional write. A deliverer that finds a lease held skips
 * that subscription; the holder, having released, reads the partition again, so records that woke
 * the skipper are delivered by the holder. A deliverer that dies holding the lease leaves `next`
 * where it was: the next wake after the lease expires delivers the same records again (at least
 * once; frames carry offsets, and a client drops what it already has).
 */
import { randomUUID } from 'node:crypto';
import { config } from '../config.js';
import { logger } from '../logger.js';
import { asKafkaError } from '../errors.js';
import { fetchRecords, readFromLeader, type FetchResult } from '../log/read.js';
import { authorizationEnabled, authorize } from '../security/authorizer.js';
import { memberReads } from '../groups/coordinator.js';
import {
  claimDelivery, deleteConnection, deleteSubscription, finishDelivery, listSubscriptions, releaseDelivery, type SubscriptionRecord,
} from '../storage/coordination/connections.js';
import { KAFKA_ERRORS, kafkaMessage, restErrorCode } from '../protocol/errors.js';
import { postToConnection } from '../storage/connection-api.js';

/** API Gateway's limit on a message posted to a connection. */
export const MAX_MESSAGE_BYTES = 128 * 1024;
/** Frames of several records stay well under MAX_MESSAGE_BYTES. */
export const MAX_FRAME_BYTES = 96 * 1024;
/** How much one read of a partition takes for its subscribers. */
const READ_BYTES = 1024 * 1024;
/** A delivery's lease: longer than posting one read's frames takes. */
export const DELIVERY_LEASE_MS = 20_000;
/** Rounds of one delivery (each: the subscriptions, a read, the posts); more waits for the next wake. */
const MAX_ROUNDS = 20;

/** What the functions that move a high watermark send (asynchronously) to the websocket function to wake a delivery. */
export interface DeliverEvent {
  /** `highWatermark`: the one the waker moved to, when it knows it (the delivery then takes leases beside its reads). */
  readonly tributaryDeliver: { readonly topicId: string; readonly partition: number; readonly highWatermark?: number };
}

export interface RecordFrame {
  readonly type: 'records';
  readonly topic: string;
  readonly partition: number;
  readonly records: readonly FrameRecord[];
  /** The partition's high watermark and last stable offset when the records were read. */
  readonly high_watermark: number;
  readonly last_stable_offset: number;
  /**
   * Where the subscription goes on after this frame: past its last record, or, in a delivery's
   * last frame, past the control records and aborted records it skipped. A client that knows of
   * readable records past it (the bounds above) and gets no frame for a while subscribes again.
   */
  readonly next_offset: number;
  /** The subscription that delivers them (its `subscribed` frame's): a client that subscribed again drops an older one's frames. */
  readonly subscription_id: string;
}

export interface FrameRecord {
  readonly offset: number;
  readonly timestamp: number;
  readonly key: string | null;
  readonly value: string | null;
  readonly headers: readonly { readonly key: string; readonly value: string | null }[];
}

export interface ErrorFrame {
  readonly type: 'error';
  readonly error_code: number;
  readonly message: string;
  readonly topic?: string;
  readonly partition?: number;
  /** The record a subscription ended at (a record too large to post). */
  readonly offset?: number;
}

/** Posts one frame; false when the connection is gone. */
export const postFrame = (connectionId: string, frame: unknown): Promise<boolean> => postToConnection(connectionId, JSON.stringify(frame));

const b64 = (b: Buffer | null): string | null => (b === null ? null : b.toString('base64'));

/** A record as frames and push deliveries carry it (bytes as base64). */
export const frameRecord = (r: FetchResult['records'][number]): FrameRecord => ({
  offset: r.offset, timestamp: r.timestamp, key: b64(r.key), value: b64(r.value),
  headers: r.headers.map((h) => ({ key: h.key, value: b64(h.value) })),
});

/** One read's records as frames of at most MAX_FRAME_BYTES each (one record alone may make a frame; no record, an empty one). */
export function recordFrames(topic: string, partition: number, read: Pick<FetchResult, 'records' | 'highWatermark' | 'lastStableOffset' | 'nextOffset'>, subscriptionId: string): RecordFrame[] {
  const frame = (records: FrameRecord[], next: number): RecordFrame => ({
    type: 'records', topic, partition, records, high_watermark: read.highWatermark, last_stable_offset: read.lastStableOffset, next_offset: next, subscription_id: subscriptionId,
  });
  const overhead = Buffer.byteLength(JSON.stringify(frame([], read.nextOffset)));
  const frames: RecordFrame[] = [];
  let batch: FrameRecord[] = [];
  let bytes = overhead;
  for (const r of read.records) {
    const out = frameRecord(r);
    const size = Buffer.byteLength(JSON.stringify(out)) + 1;
    if (batch.length > 0 && bytes + size > MAX_FRAME_BYTES) {
      frames.push(frame(batch, (batch.at(-1) as FrameRecord).offset + 1));
      batch = [];
      bytes = overhead;
    }
    batch.push(out);
    bytes += size;
  }
  // (a read of nothing but control records or aborted ones still moves the subscription on: an empty frame says so)
  if (batch.length > 0 || frames.length === 0) frames.push(frame(batch, read.nextOffset));
  return frames;
}

/** An error frame for what a read or a check threw (REST Proxy's error codes). */
export function errorFrame(err: unknown, where?: { topic: string; partition: number }): ErrorFrame {
  const k = asKafkaError(err);
  return { type: 'error', error_code: restErrorCode(k), message: kafkaMessage(k), ...(where ?? {}) };
}

type Outcome = 'delivered' | 'released' | 'idle' | 'skipped';

/** Why a subscription may not be delivered now (its member is no longer live or owns the partition elsewhere, its READ was revoked): the frame that ends it, or undefined. */
async function refusal(s: SubscriptionRecord): Promise<Record<string, unknown> | undefined> {
  const where = { topic: s.topic, partition: s.partition };
  if (s.groupId !== undefined && s.memberId !== undefined) {
    const reads = await memberReads(s.groupId, s.memberId, where);
    // (a group's partition is delivered only to its live owner: another member may read it now)
    if (reads === 'expired') return { type: 'error', error_code: 40403, message: `UNKNOWN_MEMBER_ID: member ${s.memberId} is not in group ${s.groupId} (its session ran out: no heartbeat within its session timeout); send a heartbeat to join again.`, ...where, group_id: s.groupId };
    if (reads === 'not-owned') return { type: 'unsubscribed', ...where, group_id: s.groupId };
  }
  if (authorizationEnabled() && !(await authorize({ principal: s.principal, host: s.host, operation: 'READ', resourceType: 'TOPIC', resourceName: s.topic }))) {
    // (an ACL revoked since the subscribe: the subscription ends, as a consumer's next fetch would fail)
    return { type: 'error', error_code: 40301, message: `TOPIC_AUTHORIZATION_FAILED: ${s.principal} is not authorized to READ topic ${s.topic}.`, ...where };
  }
  return undefined;
}

/**
 * One subscription's turn in a round (see the file's comment). The read starts at once, beside the
 * checks; with `eager` (the wake said the high watermark is past `next`, so there is something to
 * deliver) the lease is taken beside them too. An eager lease that finds nothing to deliver is
 * released and answers `released`: like any holder that releases, its deliverer reads again (a
 * wake that skipped the lease meanwhile left its records to it).
 */
async function deliverOne(s: SubscriptionRecord, me: string, read: (offset: number, isolation: SubscriptionRecord['isolation']) => Promise<FetchResult>, eager: boolean): Promise<Outcome> {
  if (s.leaseUntil !== undefined && s.leaseUntil > Date.now()) return 'skipped';
  const where = { topic: s.topic, partition: s.partition };
  const reading = read(s.next, s.isolation).then((result) => ({ result }), (err: unknown) => ({ err }));
  const claiming = eager ? claimDelivery(s, me, DELIVERY_LEASE_MS).then((ok) => ({ ok }), (err: unknown) => ({ err })) : undefined;
  /** Whether the eager claim took the lease; its failure is thrown (the invocation fails, for Lambda to retry). */
  const claimed = async (): Promise<boolean> => {
    const c = await claiming;
    if (c && 'err' in c) throw c.err;
    return c?.ok === true;
  };
  /** Whether the lease is accounted for: held for the posts below, released, or gone with the subscription. */
  let settled = false;
  try {
    const refused = await refusal(s);
    if (refused) {
      settled = true;
      await deleteSubscription(s.connectionId, s.topicId, s.partition);
      await postFrame(s.connectionId, refused);
      return 'delivered';
    }
    const got = await reading;
    if ('err' in got) {
      const k = asKafkaError(got.err);
      if (k.kafkaName !== 'OFFSET_OUT_OF_RANGE') throw got.err;
      // (retention or DeleteRecords went past it: the subscription cannot go on from there)
      settled = true;
      await deleteSubscription(s.connectionId, s.topicId, s.partition);
      await postFrame(s.connectionId, errorFrame(k, where));
      return 'delivered';
    }
    const { result } = got;
    if (result.nextOffset <= s.next) {
      settled = true;
      if (!(await claimed())) return 'idle';
      await releaseDelivery(s, me);
      return 'released';
    }
    settled = true;
    if (!(await (claiming ? claimed() : claimDelivery(s, me, DELIVERY_LEASE_MS)))) return 'skipped';
  } finally {
    // (an eager lease taken while the checks or the read failed goes at once)
    if (claiming && !settled) {
      const c = await claiming;
      if ('ok' in c && c.ok) await releaseDelivery(s, me).catch(() => undefined);
    }
  }
  const { result } = (await reading) as { result: FetchResult };
  try {
    for (const frame of recordFrames(s.topic, s.partition, result, s.gen)) {
      const bytes = Buffer.byteLength(JSON.stringify(frame));
      if (bytes > MAX_MESSAGE_BYTES) {
        // (one record that no message can carry: the subscription ends at it rather than stall there)
        const [r] = frame.records;
        await deleteSubscription(s.connectionId, s.topicId, s.partition);
        await postFrame(s.connectionId, {
          type: 'error', error_code: KAFKA_ERRORS.MESSAGE_TOO_LARGE.restCode,
          message: `MESSAGE_TOO_LARGE: the record at offset ${r?.offset} is ${bytes} bytes as a frame, over the ${MAX_MESSAGE_BYTES} a WebSocket message may carry; read it over HTTP and subscribe again from the offset after it.`,
          ...where, offset: r?.offset,
        } satisfies ErrorFrame);
        return 'delivered';
      }
      if (!(await postFrame(s.connectionId, frame))) {
        // (gone: the subscription goes too, even where the connection's item no longer lists it)
        await Promise.all([deleteConnection(s.connectionId), deleteSubscription(s.connectionId, s.topicId, s.partition)]);
        return 'delivered';
      }
    }
    await finishDelivery(s, me, result.nextOffset);
  } catch (err) {
    // (the lease goes at once, so the next wake, or Lambda's retry of this one, delivers again)
    await releaseDelivery(s, me).catch(() => undefined);
    throw err;
  }
  return 'delivered';
}

/**
 * Delivers what is readable of one partition to its subscribers (see the file's comment), until a
 * round finds nothing to deliver or `deadline` (epoch ms) passes; answers the rounds it ran.
 * A subscription whose delivery failed has its lease released, and the failure is thrown once
 * the others are done.
 */
export async function deliverPartition(topicId: string, partition: number, deadline: number, highWatermark?: number): Promise<number> {
  const me = randomUUID();
  let rounds = 0;
  let failure: unknown;
  for (; rounds < MAX_ROUNDS && Date.now() < deadline; rounds++) {
    const subs = await listSubscriptions(topicId, partition);
    const first = subs[0];
    if (!first) break;
    const reads = new Map<string, Promise<FetchResult>>();
    const read = (offset: number, isolation: SubscriptionRecord['isolation']): Promise<FetchResult> => {
      const key = `${offset}/${isolation}`;
      let r = reads.get(key);
      if (!r) {
        r = readFromLeader(first.topic, partition, (t) => fetchRecords(t, { offset, maxBytes: READ_BYTES, maxWaitMs: 0, isolation }));
        reads.set(key, r);
      }
      return r;
    };
    const outcomes = await Promise.all(subs.map((s) => deliverOne(s, me, read, rounds === 0 && highWatermark !== undefined && s.next < highWatermark).catch((err: unknown) => {
      logger.warn({ event: 'websocket-delivery-failed', connectionId: s.connectionId, topic: s.topic, partition, err }, 'delivery to a connection failed');
      failure ??= err;
      return 'skipped' as const;
    })));
    if (!outcomes.includes('delivered') && !outcomes.includes('released')) break;
  }
  // A failed delivery fails the invocation: Lambda retries an asynchronous one (the wake).
  if (failure !== undefined) throw failure;
  return rounds;
}

export const deliveryDeadline = (remainingMs: number): number => Date.now() + Math.min(remainingMs - 2000, config().requestTimeoutMs);
