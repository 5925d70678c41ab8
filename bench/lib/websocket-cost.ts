/**
 * What one WebSocket subscriber waiting on an idle partition costs a month, from API Gateway's and
 * Lambda's prices and the store requests of the code path (docs/websocket.md): no function runs
 * while it waits. It pays connection minutes; a keepalive message every 9 minutes (API Gateway
 * closes a connection idle for 10), each a websocket invocation that touches no store; and a
 * reconnect every 2 hours (API Gateway's connection lifetime): `$connect`, a subscribe, `$disconnect`;
 * and the controller's pass once a minute, which reads whether its partition's subscriptions lag.
 */
import { functionSpec } from '../../lib/functions/catalog.js';
import { PRICE } from './prices.js';

const MONTH_MINUTES = 730 * 60;
const KEEPALIVE_EVERY_MINUTES = 9;
const RECONNECT_EVERY_MINUTES = 120;

/**
 * One reconnect's store requests, counted on the code path (lib/orchestration/websocket-subscriptions.ts,
 * lib/storage/coordination/connections.ts): writes — the connection's Put, the subscribe's Update,
 * the Put of its partition's `ws#subscribed` item, the Put of the subscription (its lease held) and
 * the lease's release, the disconnect's two deletes; strongly consistent reads — the message's connection Get, the
 * start's two head reads, each of the subscribe's two deliveries' Query and head read, the
 * disconnect's Get.
 */
const RECONNECT_WRITE_UNITS = 7;
const RECONNECT_READ_UNITS = 8;
/** Its invocations: $connect, the subscribe message, $disconnect; and their billed time (the subscribe waits out the subscribers cache, 1 s). */
const RECONNECT_INVOCATIONS = 3;
const RECONNECT_BILLED_MS = 1000 + 3 * 50;
/** A keepalive's billed time: no store request. */
const KEEPALIVE_BILLED_MS = 2;
/**
 * The controller's pass, once a minute (lib/orchestration/websocket-wake.ts): the Query of the
 * subscribed partitions, the partition's subscriptions and its leader's head, each eventually
 * consistent (half a unit; the first shared by every subscribed partition, counted whole here).
 */
const PASS_READ_UNITS = 1.5;
const PASSES_EVERY_MINUTES = 1;

export interface IdleSubscriberCost {
  readonly connectionMinutes: number;
  readonly keepalives: number;
  readonly reconnects: number;
  readonly dollarsPerMonth: number;
}

export function idleWebSocketSubscriberMonth(): IdleSubscriberCost {
  const gb = functionSpec('websocket').memoryMb / 1024;
  const keepalives = MONTH_MINUTES / KEEPALIVE_EVERY_MINUTES;
  const reconnects = MONTH_MINUTES / RECONNECT_EVERY_MINUTES;
  const invocation = (ms: number) => PRICE.lambda.request.value + (ms / 1000) * gb * PRICE.lambda.gbSecond.value;
  const keepalive = PRICE.apiGateway.websocketMessage.value + invocation(KEEPALIVE_BILLED_MS);
  const reconnect = RECONNECT_INVOCATIONS * PRICE.lambda.request.value + (RECONNECT_BILLED_MS / 1000) * gb * PRICE.lambda.gbSecond.value
    // (the subscribe message in, the subscribed frame out)
    + 2 * PRICE.apiGateway.websocketMessage.value
    + RECONNECT_WRITE_UNITS * PRICE.dynamodb.wru.value + RECONNECT_READ_UNITS * PRICE.dynamodb.rru.value;
  return {
    connectionMinutes: MONTH_MINUTES, keepalives, reconnects,
    dollarsPerMonth: MONTH_MINUTES * PRICE.apiGateway.websocketConnectionMinute.value + keepalives * keepalive + reconnects * reconnect
      + (MONTH_MINUTES / PASSES_EVERY_MINUTES) * PASS_READ_UNITS * PRICE.dynamodb.rru.value,
  };
}
