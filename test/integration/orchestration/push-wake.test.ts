/**
 * The controller's wake pass over push subscriptions, against the shared stack's stores, with this
 * worker's Lambda API pointed at a stand-in that holds each Invoke a while and counts how many it
 * holds at once (what is measured is the caller's concurrency, so the stand-in is Lambda's API
 * only: subscriptions and topics are the stack's).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENVIRONMENT } from '../../../lib/config.js';
import { WAKE_CONCURRENCY, wakeDeliveries } from '../../../lib/orchestration/websocket-wake.js';
import { requireTopic } from '../../../lib/cluster/metadata.js';
import { putConnection, putSubscription } from '../../../lib/storage/coordination/connections.js';
import { getPushSubscription } from '../../../lib/storage/coordination/push-subscriptions.js';
import { call, createTopic, uniqueTopic, v3 } from '../../support/api.js';

const HOLD_MS = 150;
let server: Server;
let inFlight = 0;
let most = 0;
const invoked: { topicId: string; partition: number }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      inFlight++;
      most = Math.max(most, inFlight);
      invoked.push((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { tributaryDeliver: { topicId: string; partition: number } }).tributaryDeliver);
      setTimeout(() => {
        inFlight--;
        res.writeHead(202).end();
      }, HOLD_MS);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('Function: wakeDeliveries', () => {
  it('wakes every partition of every push-subscribed topic and a lagging WebSocket subscription\'s, several at once and never more than WAKE_CONCURRENCY', async () => {
    const topic = uniqueTopic('push-wake-pass');
    await createTopic(topic, 12, 1);
    const name = `${topic}-sub`;
    const created = await call('POST', v3('/subscriptions'), { subscription_name: name, topic_name: topic, group_id: `${topic}-g`, endpoint: { type: 'http', url: 'http://127.0.0.1:9/hook' } });
    expect(created.status, created.text).toBe(201);
    // A WebSocket subscription behind its partition's high watermark (its records came before it):
    // its wake goes out once the push wakes are, never beside them.
    const wsTopic = `${topic}-ws`;
    await createTopic(wsTopic, 1, 1);
    expect((await call('POST', v3(`/topics/${wsTopic}/records`), { partition_id: 0, value: { type: 'STRING', data: 'r' } })).status).toBe(200);
    const { topicId: wsTopicId } = (await requireTopic(wsTopic)).topic;
    const connectionId = `push-wake-${Date.now()}`;
    await putConnection(connectionId, 'User:test');
    await putSubscription({ connectionId, topic: wsTopic, topicId: wsTopicId, partition: 0, next: 0, isolation: 'read_uncommitted', principal: 'User:test', host: '' });
    // (this worker's invokes go to the stand-in from here; the stack's own are its own)
    process.env[ENVIRONMENT.lambdaEndpoint] = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const sent = await wakeDeliveries();
    const { topicId } = (await getPushSubscription(name))!;
    expect(sent).toBeGreaterThanOrEqual(13);
    expect(invoked).toHaveLength(sent);
    expect(invoked.filter((e) => e.topicId === topicId).map((e) => e.partition).sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, p) => p));
    expect(invoked.filter((e) => e.topicId === wsTopicId)).toHaveLength(1);
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(WAKE_CONCURRENCY);
    expect((await call('DELETE', v3(`/subscriptions/${name}`))).status).toBe(204);
  });
});
