/**
 * The WebSocket API's function: `$connect` (the authorizer has let the caller in: its connection is
 * stored), `$disconnect` (its connection and subscriptions go), `$default` (the client's JSON
 * messages), and the deliveries that the functions moving high watermarks wake it for
 * (lib/http/websocket-wake.ts). API Gateway holds the sockets; this function runs only when a
 * message arrives or there is something to send, never while a subscriber waits.
 *
 * Client messages (JSON text frames; docs/websocket.md):
 * - `{"action":"subscribe","topic":t,"partition":p,"offset":"earliest"|"latest"|n,"isolation_level":…}`
 *   → `{"type":"subscribed",topic,partition,offset}`, then `records` frames from that offset;
 * - `{"action":"subscribe","topic":t,"group_id":g,"offset":"earliest"|"latest",…}` → the connection
 *   joins group g (lib/orchestration/websocket-groups.ts): `{"type":"subscribed",group_id,member_id,…}`,
 *   then `subscribed` and `records` frames for each partition the group assigns it;
 * - `{"action":"heartbeat"}` (a group member's, every `heartbeat_interval_ms`), `{"action":"commit",
 *   "topic":t,"partition":p,"offset":n}` → `{"type":"committed",…}`, `{"action":"unsubscribe","group_id":g}`;
 * - `{"action":"unsubscribe","topic":t,"partition":p}` → `{"type":"unsubscribed",topic,partition}`;
 * - `{"action":"ping"}`: a keepalive, answered by nothing and costing no store request.
 * A message that cannot be served gets `{"type":"error","error_code":…,"message":…}` with REST
 * Proxy's codes, and changes nothing.
 */
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { HttpError } from '../errors.js';
import { logger } from '../logger.js';
import type { IsolationLevel } from '../log/read.js';
import { authorizationEnabled, requireAccess } from '../security/authorizer.js';
import { deliverPartition, deliveryDeadline, errorFrame, postFrame, type DeliverEvent } from '../orchestration/websocket-delivery.js';
import { deliverPush } from '../orchestration/push-delivery.js';
import { deliverWithOwnMoves } from '../orchestration/websocket-wake.js';
import { connect, disconnect, isConnected, subscribe, unsubscribe } from '../orchestration/websocket-subscriptions.js';
import {
  commitGroup, connection, heartbeatGroup, leaveGroup, leaveOnDisconnect, subscribeGroup, type GroupSubscribe,
} from '../orchestration/websocket-groups.js';
import { principalOfWebSocket } from './principal.js';

/** What API Gateway sends for each route of a WebSocket API (the fields used here). */
export interface WebSocketEvent {
  readonly requestContext: {
    readonly routeKey: string;
    readonly connectionId: string;
    readonly eventType?: 'CONNECT' | 'MESSAGE' | 'DISCONNECT';
    readonly identity?: { readonly sourceIp?: string; readonly userArn?: string };
    readonly authorizer?: Readonly<Record<string, unknown>>;
  };
  readonly body?: string | null;
  readonly isBase64Encoded?: boolean;
}

export interface WebSocketResult {
  readonly statusCode: number;
  readonly body?: string;
}

/** A client's message that cannot be served: sent back as an error frame. */
class Refused extends HttpError {}
const refuse = (message: string): Refused => new Refused(400, 40002, message);

interface SubscribeMessage {
  readonly topic: string;
  readonly partition: number;
  readonly offset: 'earliest' | 'latest' | number;
  readonly isolation: IsolationLevel;
}

function isPing(body: string | null | undefined): boolean {
  if (!body || body.length > 100) return false;
  try {
    return (JSON.parse(body) as { action?: unknown }).action === 'ping';
  } catch {
    return false;
  }
}

function parseMessage(body: string | null | undefined): Record<string, unknown> {
  let msg: unknown;
  try {
    msg = JSON.parse(body ?? '');
  } catch {
    throw refuse('A message must be a JSON object with an "action".');
  }
  if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) throw refuse('A message must be a JSON object with an "action".');
  return msg as Record<string, unknown>;
}

function topicAndPartition(msg: Record<string, unknown>): { topic: string; partition: number } {
  const { topic, partition } = msg;
  if (typeof topic !== 'string' || topic === '') throw refuse('"topic" must be a topic name.');
  if (typeof partition !== 'number' || !Number.isInteger(partition) || partition < 0) throw refuse('"partition" must be a partition number (an integer of 0 or more).');
  return { topic, partition };
}

function parseIsolation(msg: Record<string, unknown>): IsolationLevel {
  const isolation = msg.isolation_level ?? 'read_uncommitted';
  if (isolation !== 'read_uncommitted' && isolation !== 'read_committed') throw refuse('"isolation_level" must be read_uncommitted or read_committed.');
  return isolation;
}

function parseSubscribe(msg: Record<string, unknown>): SubscribeMessage {
  const { topic, partition } = topicAndPartition(msg);
  const offset = msg.offset ?? 'latest';
  if (offset !== 'earliest' && offset !== 'latest' && !(typeof offset === 'number' && Number.isSafeInteger(offset) && offset >= 0)) {
    throw refuse('"offset" must be "earliest", "latest" or an offset (an integer of 0 or more).');
  }
  return { topic, partition, offset, isolation: parseIsolation(msg) };
}

function groupId(msg: Record<string, unknown>): string {
  if (typeof msg.group_id !== 'string') throw refuse('"group_id" must be a consumer group id.');
  return msg.group_id;
}

function parseGroupSubscribe(msg: Record<string, unknown>): Omit<GroupSubscribe, 'connectionId' | 'principal' | 'host'> {
  const { topic } = msg;
  if (typeof topic !== 'string' || topic === '') throw refuse('"topic" must be a topic name.');
  if (msg.partition !== undefined) throw refuse('A group subscription names a topic, not a partition: the group assigns its partitions.');
  const reset = msg.offset ?? 'latest';
  if (reset !== 'earliest' && reset !== 'latest') throw refuse('"offset" of a group subscription is where a partition with no committed offset starts: "earliest" or "latest".');
  const session = msg.session_timeout_ms;
  if (session !== undefined && typeof session !== 'number') throw refuse('"session_timeout_ms" must be a number of milliseconds.');
  return { groupId: groupId(msg), topic, reset, isolation: parseIsolation(msg), ...(session !== undefined ? { sessionTimeoutMs: session } : {}) };
}

/** Who sent a message, and from where (ACLs may name a host). */
const caller = (event: WebSocketEvent) => ({ principal: principalOfWebSocket(event), host: event.requestContext.identity?.sourceIp ?? '' });

async function requireRead(event: WebSocketEvent, resourceType: 'TOPIC' | 'GROUP', resourceName: string): Promise<void> {
  if (authorizationEnabled()) await requireAccess({ ...caller(event), operation: 'READ', resourceType, resourceName });
}

async function onSubscribe(event: WebSocketEvent, msg: Record<string, unknown>, deadline: number): Promise<void> {
  const connectionId = event.requestContext.connectionId;
  if (msg.group_id !== undefined) {
    const g = parseGroupSubscribe(msg);
    await requireRead(event, 'GROUP', g.groupId);
    await requireRead(event, 'TOPIC', g.topic);
    return subscribeGroup({ ...g, connectionId, ...caller(event) }, deadline);
  }
  const s = parseSubscribe(msg);
  await requireRead(event, 'TOPIC', s.topic);
  await subscribe({ ...s, connectionId, ...caller(event) }, deadline);
}

/** A group member's messages: its ACL on the group is checked at each, as Kafka checks a heartbeat's and a commit's. */
async function onGroupMessage(event: WebSocketEvent, msg: Record<string, unknown>, deadline: number): Promise<void> {
  // (one read of the connection serves the ACL check and the message)
  const c = await connection(event.requestContext.connectionId);
  const group = c.group?.groupId;
  if (group === undefined) throw refuse(`"${String(msg.action)}" needs a group subscription: subscribe with "group_id" first.`);
  if (msg.group_id !== undefined && msg.group_id !== group) throw refuse(`This connection is a member of group ${group}, not ${String(msg.group_id)}.`);
  await requireRead(event, 'GROUP', group);
  switch (msg.action) {
    case 'heartbeat':
      return heartbeatGroup(c, caller(event).host, deadline);
    case 'commit': {
      const { topic, partition } = topicAndPartition(msg);
      const { offset, metadata } = msg;
      if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0) throw refuse('"offset" must be the next offset to read (an integer of 0 or more).');
      if (metadata !== undefined && typeof metadata !== 'string') throw refuse('"metadata" must be a string.');
      await requireRead(event, 'TOPIC', topic);
      return commitGroup(c, { topic, partition, offset, ...(metadata !== undefined ? { metadata } : {}) });
    }
    default:
      return leaveGroup(c);
  }
}

async function onMessage(event: WebSocketEvent, deadline: number): Promise<void> {
  const connectionId = event.requestContext.connectionId;
  let msg: Record<string, unknown> | undefined;
  try {
    msg = parseMessage(event.isBase64Encoded && event.body ? Buffer.from(event.body, 'base64').toString('utf8') : event.body);
    switch (msg.action) {
      case 'subscribe':
        return await onSubscribe(event, msg, deadline);
      case 'unsubscribe': {
        if (msg.group_id !== undefined && msg.topic === undefined) return await onGroupMessage(event, msg, deadline);
        const { topic, partition } = topicAndPartition(msg);
        return await unsubscribe(event.requestContext.connectionId, topic, partition);
      }
      case 'heartbeat':
      case 'commit':
        return await onGroupMessage(event, msg, deadline);
      default:
        throw refuse(`Unknown action ${JSON.stringify(msg.action)}: use "subscribe", "unsubscribe", "heartbeat", "commit" or "ping".`);
    }
  } catch (err) {
    const where = msg && typeof msg.topic === 'string' && typeof msg.partition === 'number' ? { topic: msg.topic, partition: msg.partition } : undefined;
    const frame = err instanceof HttpError
      ? { type: 'error', error_code: err.errorCode, message: err.message, ...(where ?? {}) }
      : errorFrame(err, where);
    if (frame.error_code === 500) logger.error({ event: 'websocket-message-failed', connectionId, err }, 'a WebSocket message failed');
    await postFrame(connectionId, frame);
  }
}

/** The function's entry: a route of the WebSocket API, or a delivery wake. */
export async function websocketHandler(event: WebSocketEvent | DeliverEvent, context: Pick<Context, 'getRemainingTimeInMillis'>): Promise<WebSocketResult> {
  const deadline = deliveryDeadline(context.getRemainingTimeInMillis());
  if ('tributaryDeliver' in event) {
    const { topicId, partition, highWatermark } = event.tributaryDeliver;
    // (push delivery logs its own failures; a WebSocket delivery's fails the invocation, for Lambda to retry)
    await deliverWithOwnMoves(topicId, partition, highWatermark, deadline, async (t, p, hw) => {
      const [ws] = await Promise.allSettled([deliverPartition(t, p, deadline, hw), deliverPush(t, p, deadline)]);
      if (ws.status === 'rejected') throw ws.reason;
    });
    return { statusCode: 200 };
  }
  const { routeKey, connectionId } = event.requestContext;
  switch (routeKey) {
    case '$connect':
      await connect(connectionId, principalOfWebSocket(event));
      return { statusCode: 200 };
    case '$disconnect':
      await leaveOnDisconnect(connectionId);
      await disconnect(connectionId);
      return { statusCode: 200 };
    default:
      // (a keepalive against API Gateway's 10-minute idle timeout: nothing to read, nothing to answer)
      if (isPing(event.body)) return { statusCode: 200 };
      // (the connection's item tells a message on a connection this function never saw connect)
      if (!(await isConnected(connectionId))) {
        await postFrame(connectionId, { type: 'error', error_code: 40101, message: 'This connection is not known (it was closed); connect again.' });
        return { statusCode: 200 };
      }
      await onMessage(event, deadline);
      return { statusCode: 200 };
  }
}

export const handler = middy<WebSocketEvent | DeliverEvent, WebSocketResult>().handler(websocketHandler);
export type { DeliverEvent };
