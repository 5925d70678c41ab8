/**
 * One deliverer per subscription, on the shared stack: a WebSocket client subscribes through the
 * gateway (the websocket function runs as Lambda runs it); this test takes the subscription's lease
 * itself, as a second deliverer would, and drives the interleavings.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { ENVIRONMENT } from '../../../lib/config.js';
import { replicaStore, requireTopic } from '../../../lib/cluster/metadata.js';
import { createAcls } from '../../../lib/security/acl-admin.js';
import { dynamo } from '../../../lib/storage/clients.js';
import { deliverPartition } from '../../../lib/orchestration/websocket-delivery.js';
import { subscribe } from '../../../lib/orchestration/websocket-subscriptions.js';
import { wakeDeliveries } from '../../../lib/orchestration/websocket-wake.js';
import { subscriptionsPk } from '../../../lib/storage/tables.js';
import { claimDelivery, finishDelivery, getConnection, listSubscriptions, putConnection, putSubscription, subscribedPartitions } from '../../../lib/storage/coordination/connections.js';
import { baseUrl, call, createTopic, uniqueTopic, v3 } from '../../support/api.js';
import { until } from '../../support/cluster.js';
import { hookStoreClient } from '../../support/store-hooks.js';

async function subscribed(topic: string) {
  const ws = new WebSocket(`${baseUrl().replace(/^http/, 'ws')}/ws`);
  const frames: any[] = [];
  ws.on('message', (d) => frames.push(JSON.parse(String(d))));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  ws.send(JSON.stringify({ action: 'subscribe', topic, partition: 0, offset: 'latest' }));
  await until('subscribed', () => frames.some((f) => f.type === 'subscribed'));
  const { topicId } = (await requireTopic(topic)).topic;
  const [sub] = await listSubscriptions(topicId, 0);
  const offsets = () => frames.filter((f) => f.type === 'records').flatMap((f) => f.records.map((r: any) => r.offset as number));
  return { ws, topicId, sub: sub!, offsets, frames };
}

const produce = async (topic: string, n: number) => {
  for (let i = 0; i < n; i++) expect((await call('POST', v3(`/topics/${topic}/records`), { partition_id: 0, value: { type: 'STRING', data: `v${i}` } })).status).toBe(200);
};

describe('WebSocket delivery: one deliverer per subscription', () => {
  it('a wake that finds the lease held delivers nothing; the holder, once it releases, delivers it all once, in order', async () => {
    const topic = uniqueTopic('ws-lease');
    await createTopic(topic, 1, 1);
    const s = await subscribed(topic);
    try {
      expect(await claimDelivery(s.sub, 'other', 60_000)).toBe(true);
      // a second claim of the same subscription loses
      expect(await claimDelivery(s.sub, 'third', 60_000)).toBe(false);
      await produce(topic, 3);
      // the produces' wakes ran the function's deliverer: it skipped the leased subscription
      await new Promise((r) => setTimeout(r, 1500));
      expect(s.offsets()).toEqual([]);
      // `other` releases without delivering, then reads again, as a holder does
      expect(await finishDelivery(s.sub, 'other', s.sub.next)).toBe(true);
      await deliverPartition(s.topicId, 0, Date.now() + 10_000);
      await until('the three records', () => s.offsets().length >= 3);
      expect(s.offsets()).toEqual([0, 1, 2]);
      const [after] = await listSubscriptions(s.topicId, 0);
      expect(after).toMatchObject({ next: 3 });
      expect(after?.deliverer).toBeUndefined();
    } finally {
      s.ws.close();
    }
  });

  it('records whose wake was lost for good, on a partition nobody writes to again, are delivered by the controller\'s pass; a pass finds the partition listed', async () => {
    const topic = uniqueTopic('ws-lost-wake');
    await createTopic(topic, 1, 1);
    const s = await subscribed(topic);
    try {
      expect((await subscribedPartitions()).some((p) => p.topicId === s.topicId && p.partition === 0)).toBe(true);
      // The produces' wakes run while another deliverer holds the lease, which then goes without a
      // delivery (as a deliverer that failed and released it): nothing more wakes the partition.
      expect(await claimDelivery(s.sub, 'other', 60_000)).toBe(true);
      await produce(topic, 3);
      await new Promise((r) => setTimeout(r, 1500));
      expect(await finishDelivery(s.sub, 'other', s.sub.next)).toBe(true);
      await new Promise((r) => setTimeout(r, 1000));
      expect(s.offsets()).toEqual([]);
      expect(await wakeDeliveries()).toBeGreaterThanOrEqual(1);
      await until('the three records', () => s.offsets().length >= 3);
      expect(s.offsets()).toEqual([0, 1, 2]);
    } finally {
      s.ws.close();
    }
  });

  it('woken with the high watermark, a delivery takes the lease beside its read: released when the read finds nothing; lost to a held lease, it posts nothing', async () => {
    const topic = uniqueTopic('ws-eager');
    await createTopic(topic, 1, 1);
    const s = await subscribed(topic);
    try {
      // The wake says 5, but nothing is past `next`: the lease taken beside the read is released.
      await deliverPartition(s.topicId, 0, Date.now() + 10_000, 5);
      const [idle] = await listSubscriptions(s.topicId, 0);
      expect(idle).toMatchObject({ next: 0 });
      expect(idle?.deliverer).toBeUndefined();
      // Another deliverer holds the lease: the eager claim loses, and nothing is posted.
      expect(await claimDelivery(idle!, 'other', 60_000)).toBe(true);
      await produce(topic, 2);
      await new Promise((r) => setTimeout(r, 1000)); // (the produces' own wakes skip it too)
      await deliverPartition(s.topicId, 0, Date.now() + 10_000, 2);
      expect(s.offsets()).toEqual([]);
      const [held] = await listSubscriptions(s.topicId, 0);
      expect(held).toMatchObject({ next: 0, deliverer: 'other' });
      expect(await finishDelivery(held!, 'other', 0)).toBe(true);
      await deliverPartition(s.topicId, 0, Date.now() + 10_000, 2);
      await until('both records', () => s.offsets().length >= 2);
      expect(s.offsets()).toEqual([0, 1]);
    } finally {
      s.ws.close();
    }
  });

  it('a deliverer that dies holding the lease: once it expires another takes it, and the dead one\'s late finish writes nothing', async () => {
    const topic = uniqueTopic('ws-expired');
    await createTopic(topic, 1, 1);
    const s = await subscribed(topic);
    try {
      const now = Date.now();
      expect(await claimDelivery(s.sub, 'dead', 1000, now)).toBe(true);
      // past the lease: another deliverer claims it
      expect(await claimDelivery(s.sub, 'next', 60_000, now + 2000)).toBe(true);
      expect(await finishDelivery(s.sub, 'dead', 99)).toBe(false);
      const [held] = await listSubscriptions(s.topicId, 0);
      expect(held).toMatchObject({ next: 0, deliverer: 'next' });
      expect(await finishDelivery(s.sub, 'next', 0)).toBe(true);
      await produce(topic, 2);
      await until('both records', () => s.offsets().length >= 2);
      expect(s.offsets()).toEqual([0, 1]);
    } finally {
      s.ws.close();
    }
  });

  it('a connection API Gateway says is gone (410) loses its connection and subscription items at the next delivery', async () => {
    const topic = uniqueTopic('ws-gone');
    await createTopic(topic, 1, 1);
    const { topicId } = (await requireTopic(topic)).topic;
    // a connection whose $disconnect never ran: its items stayed
    await putConnection('GoneConnection0=', 'User:ANONYMOUS');
    await putSubscription({ connectionId: 'GoneConnection0=', topic, topicId, partition: 0, next: 0, isolation: 'read_uncommitted', principal: 'User:ANONYMOUS', host: '' });
    await produce(topic, 1);
    await deliverPartition(topicId, 0, Date.now() + 10_000);
    await until('the gone connection\'s items are removed', async () => (await listSubscriptions(topicId, 0)).length === 0 && (await getConnection('GoneConnection0=')) === undefined);
  });

  it('a delivery that fails after its claim releases the lease at once, leaves next where it was, and fails', async () => {
    // the connection API answers 500 for every post, as API Gateway may: not gone, not delivered
    const failing = createServer((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json', 'x-amzn-errortype': 'InternalServerErrorException' });
      res.end('{"message":"InternalServerError"}');
    });
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
    const endpoint = process.env[ENVIRONMENT.websocketEndpoint];
    const topic = uniqueTopic('ws-fails');
    await createTopic(topic, 1, 1);
    try {
      // the record is produced before the subscription exists, so no wake of the stack's races this delivery
      await produce(topic, 1);
      const { topicId } = (await requireTopic(topic)).topic;
      await putConnection('FailingConnection0=', 'User:ANONYMOUS');
      await putSubscription({ connectionId: 'FailingConnection0=', topic, topicId, partition: 0, next: 0, isolation: 'read_uncommitted', principal: 'User:ANONYMOUS', host: '' });
      process.env[ENVIRONMENT.websocketEndpoint] = `http://127.0.0.1:${(failing.address() as AddressInfo).port}`;
      await expect(deliverPartition(topicId, 0, Date.now() + 10_000)).rejects.toThrow(/InternalServerError/);
      const [after] = await listSubscriptions(topicId, 0);
      expect(after).toMatchObject({ next: 0 });
      expect(after?.deliverer).toBeUndefined();
    } finally {
      process.env[ENVIRONMENT.websocketEndpoint] = endpoint;
      failing.close();
    }
  });

  it('a deliverer that read the subscription before a subscribe again cannot claim the new one, even at the same offset', async () => {
    const topic = uniqueTopic('ws-resub');
    await createTopic(topic, 1, 1);
    const s = await subscribed(topic);
    try {
      s.ws.send(JSON.stringify({ action: 'subscribe', topic, partition: 0, offset: 'latest', isolation_level: 'read_committed' }));
      await until('the second subscribe', async () => (await listSubscriptions(s.topicId, 0))[0]?.isolation === 'read_committed');
      const [now] = await listSubscriptions(s.topicId, 0);
      expect(now!.next).toBe(s.sub.next);
      expect(await claimDelivery(s.sub, 'stale', 60_000)).toBe(false);
      expect(await claimDelivery(now!, 'current', 60_000)).toBe(true);
    } finally {
      s.ws.close();
    }
  });
  it('a delivery woken while a subscribe has stored its subscription but not yet answered posts nothing before `subscribed`, and nothing is lost', async () => {
    // A client takes only the frames of subscriptions it was answered for: records posted before
    // their `subscribed` would be dropped by it while `next` moved past them on the server.
    const topic = uniqueTopic('ws-before-answer');
    await createTopic(topic, 1, 1);
    await produce(topic, 3);
    const s = await subscribed(topic); // (at the log end: nothing delivered yet)
    try {
      const pk = subscriptionsPk(s.topicId, 0);
      let woken = false;
      // Drive the interleaving: right after the subscribe's Put stores the new subscription, a wake's deliverer runs.
      hookStoreClient(undefined, 'initialize', (next, context) => async (args) => {
        const out = await next(args);
        if (!woken && String(context.commandName).includes('Put') && JSON.stringify(args.input).includes(pk)) {
          woken = true;
          await deliverPartition(s.topicId, 0, Date.now() + 10_000, 3);
        }
        return out;
      });
      await subscribe({ connectionId: s.sub.connectionId, principal: 'User:ANONYMOUS', host: '', topic, partition: 0, offset: 0, isolation: 'read_uncommitted' }, Date.now() + 10_000);
      expect(woken).toBe(true);
      const answered = s.frames.findIndex((f) => f.type === 'subscribed' && f.offset === 0);
      expect(answered).toBeGreaterThanOrEqual(0);
      const gen = s.frames[answered].subscription_id as string;
      const first = s.frames.findIndex((f) => f.type === 'records' && f.subscription_id === gen);
      expect(first, 'a records frame of the subscription came before its subscribed frame').toBeGreaterThan(answered);
      expect(s.frames.slice(answered).filter((f) => f.type === 'records' && f.subscription_id === gen).flatMap((f) => f.records.map((r: any) => r.offset))).toEqual([0, 1, 2]);
      const [after] = await listSubscriptions(s.topicId, 0);
      expect(after).toMatchObject({ next: 3 });
      expect(after?.deliverer).toBeUndefined();
    } finally {
      s.ws.close();
    }
  });
});

describe('WebSocket subscribe at an offset', () => {
  it('between the high watermark and the log end (a new leader\'s high watermark behind what was delivered) waits as a fetch would; past the log end is 41601', async () => {
    const topic = uniqueTopic('ws-above-hw');
    await createTopic(topic, 1, 1);
    await produce(topic, 3);
    const view = await requireTopic(topic);
    const store = await replicaStore(view.partitions[0]!.leader!);
    const tp = `${view.topic.topicId}#0`;
    const setHw = (hw: number) => dynamo(store.endpoint).send(new UpdateCommand({
      TableName: store.replicaTable, Key: { tp, off: -1 }, UpdateExpression: 'SET hw = :hw', ExpressionAttributeValues: { ':hw': hw },
    }));
    // The leader holds offsets 0–2 and has committed only offset 0, as a new leader may.
    await setHw(1);
    const ws = new WebSocket(`${baseUrl().replace(/^http/, 'ws')}/ws`);
    const frames: any[] = [];
    ws.on('message', (d) => frames.push(JSON.parse(String(d))));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    try {
      ws.send(JSON.stringify({ action: 'subscribe', topic, partition: 0, offset: 4 }));
      await until('the error', () => frames.some((f) => f.type === 'error'));
      expect(frames.find((f) => f.type === 'error')).toMatchObject({ error_code: 41601, message: expect.stringContaining('(0 to 3)') });
      ws.send(JSON.stringify({ action: 'subscribe', topic, partition: 0, offset: 3 }));
      await until('subscribed', () => frames.some((f) => f.type === 'subscribed'));
      expect(frames.find((f) => f.type === 'subscribed')).toMatchObject({ offset: 3 });
      // Once the high watermark passes it, the subscription delivers from there.
      await setHw(3);
      await produce(topic, 1);
      await until('offset 3 delivered', () => frames.some((f) => f.type === 'records'));
      expect(frames.filter((f) => f.type === 'records').flatMap((f) => f.records.map((r: any) => r.offset))).toEqual([3]);
    } finally {
      ws.close();
    }
  });
});

describe('WebSocket delivery under ACLs', () => {
  it('checks READ with the host the client subscribed from: an ACL for that host keeps the subscription, one from another host ends', async () => {
    const topic = uniqueTopic('ws-acl-host');
    await createTopic(topic, 1, 1);
    const { topicId } = (await requireTopic(topic)).topic;
    const principal = `User:${topic}`;
    await createAcls([{ resourceType: 'TOPIC', resourceName: topic, patternType: 'LITERAL', principal, host: '10.0.0.7', operation: 'READ', permission: 'ALLOW' }]);
    const saved = process.env.TRIBUTARY_AUTH;
    process.env.TRIBUTARY_AUTH = 'acl';
    try {
      for (const [id, host] of [['HostAllowed0=', '10.0.0.7'], ['HostOther000=', '10.0.0.8']] as const) {
        await putConnection(id, principal);
        await putSubscription({ connectionId: id, topic, topicId, partition: 0, next: 0, isolation: 'read_uncommitted', principal, host });
      }
      await deliverPartition(topicId, 0, Date.now() + 10_000);
      expect((await listSubscriptions(topicId, 0)).map((x) => x.connectionId)).toEqual(['HostAllowed0=']);
    } finally {
      if (saved === undefined) delete process.env.TRIBUTARY_AUTH;
      else process.env.TRIBUTARY_AUTH = saved;
    }
  });
});
