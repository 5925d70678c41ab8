/**
 * Push subscriptions on the shared stack (Lambda-fidelity: the produce function's wake invokes the
 * websocket function, which delivers): a local HTTP receiver that fails its first deliveries gets
 * every record, in order per partition, signed; a batch that always fails goes to the dead-letter
 * topic; the group's offsets are committed past what was delivered.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { produce as produceRecords } from '../../../lib/log/produce.js';
import { deliverPush } from '../../../lib/orchestration/push-delivery.js';
import { wakeDeliveries } from '../../../lib/orchestration/websocket-wake.js';
import { verifyWebhook } from '../../../lib/protocol/webhook-signature.js';
import {
  claimPushDelivery, failPushDelivery, finishPushDelivery, getPushState, getPushSubscription, pushStateKey, releasePushDelivery,
} from '../../../lib/storage/coordination/push-subscriptions.js';
import { call, createTopic, expectError, readRecords, uniqueTopic, v3 } from '../../support/api.js';
import { until } from '../../support/cluster.js';

interface Delivery {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly status: number;
}

/** A receiver whose answer for each request `answer` decides (by path and how many came before on it). */
function receiver(answer: (path: string, nth: number) => number) {
  const deliveries: Delivery[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '';
      const status = answer(path, deliveries.filter((d) => d.path === path).length);
      deliveries.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), status });
      res.writeHead(status).end();
    });
  });
  return {
    deliveries,
    start: () => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve)),
    url: (path: string) => `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const produce = async (topic: string, partition: number, values: readonly string[]) => {
  const r = await call('POST', v3(`/topics/${topic}/records:batch`), { entries: values.map((v, i) => ({ id: String(i), partition_id: partition, value: { type: 'STRING', data: v } })) });
  expect(r.status, r.text).toBe(207);
  expect(r.body.failures).toEqual([]);
};

/** The offsets of each partition in the deliveries a receiver accepted, in the order it accepted them. */
function accepted(deliveries: readonly Delivery[], path: string): Map<number, number[]> {
  const out = new Map<number, number[]>();
  for (const d of deliveries.filter((x) => x.path === path && x.status < 300)) {
    const b = JSON.parse(d.body) as { partition: number; records: { offset: number }[] };
    out.set(b.partition, [...(out.get(b.partition) ?? []), ...b.records.map((r) => r.offset)]);
  }
  return out;
}

describe('push subscriptions', () => {
  // (fails the first two deliveries to /flaky, every delivery to /broken)
  const rx = receiver((path, nth) => (path === '/broken' || (path === '/flaky' && nth < 2) ? 500 : 204));
  beforeAll(() => rx.start());
  afterAll(() => rx.stop());

  it('deliver every record to an endpoint that fails at first: in order per partition, duplicates only of retried batches, signed, and the group\'s offsets committed', async () => {
    const topic = uniqueTopic('push');
    await createTopic(topic, 2, 1);
    await produce(topic, 0, ['before']);
    const created = await call('POST', v3('/subscriptions'), {
      subscription_name: `${topic}-sub`, topic_name: topic, group_id: `${topic}-g`, starting_position: 'earliest',
      endpoint: { type: 'http', url: rx.url('/flaky'), headers: { authorization: 'Bearer receiver-token' } }, max_batch_records: 3,
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({
      kind: 'KafkaPushSubscription', subscription_name: `${topic}-sub`, topic_name: topic, group_id: `${topic}-g`, starting_position: 'earliest',
      isolation_level: 'read_uncommitted', endpoint: { type: 'http', url: rx.url('/flaky'), header_names: ['authorization'] },
      max_batch_records: 3, max_retries: null, dead_letter_topic: null, secret: expect.stringMatching(/^whsec_/),
    });
    const secret = created.body.secret as string;
    await produce(topic, 0, ['a', 'b', 'c', 'd', 'e']);
    await produce(topic, 1, ['x', 'y', 'z', 'w']);
    await until('every record delivered', () => {
      const got = accepted(rx.deliveries, '/flaky');
      return (got.get(0)?.length ?? 0) >= 6 && (got.get(1)?.length ?? 0) >= 4;
    }, 30_000);
    const got = accepted(rx.deliveries, '/flaky');
    // no record lost, none delivered twice once accepted, each partition in offset order
    expect(got.get(0)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(got.get(1)).toEqual([0, 1, 2, 3]);
    // each failed batch was sent again as it was: the same records under the same webhook-id
    const flaky = rx.deliveries.filter((d) => d.path === '/flaky');
    const batch = (d: Delivery) => JSON.parse(d.body) as { partition: number; records: { offset: number }[] };
    const failed = flaky.filter((d) => d.status >= 300);
    expect(failed).toHaveLength(2);
    for (const f of failed) {
      const retried = flaky.find((d) => d.status < 300 && batch(d).partition === batch(f).partition && batch(d).records[0]?.offset === batch(f).records[0]?.offset);
      expect(retried, f.body).toBeDefined();
      expect(batch(retried!).records.map((r) => r.offset)).toEqual(batch(f).records.map((r) => r.offset));
      expect(retried!.headers['webhook-id']).toBe(f.headers['webhook-id']);
    }
    for (const d of flaky) {
      expect(d.headers.authorization).toBe('Bearer receiver-token');
      expect(d.headers['content-type']).toBe('application/json');
      expect(await verifyWebhook(secret, d.headers as Record<string, string>, d.body)).toBe(true);
      // a forgery: the same headers over another body, or another secret
      expect(await verifyWebhook(secret, d.headers as Record<string, string>, d.body.replace('"partition"', '"partition" '))).toBe(false);
      expect(await verifyWebhook('whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', d.headers as Record<string, string>, d.body)).toBe(false);
    }
    const first = JSON.parse(flaky.find((d) => d.status < 300)!.body);
    expect(first.topic).toBe(topic);
    expect(first.records[0]).toEqual({ offset: expect.any(Number), timestamp: expect.any(Number), key: null, value: expect.any(String), headers: [] });
    // the group's offsets: past everything delivered, and the subscription's state clear
    await until('offsets committed', async () => {
      const d = await call('GET', v3(`/subscriptions/${topic}-sub`));
      return d.body.partitions?.[0]?.committed_offset === 6 && d.body.partitions?.[1]?.committed_offset === 4;
    });
    const described = await call('GET', v3(`/subscriptions/${topic}-sub`));
    expect(described.body.partitions).toEqual([
      { partition_id: 0, committed_offset: 6, attempts: 0, next_attempt_at: null, last_error: null },
      { partition_id: 1, committed_offset: 4, attempts: 0, next_attempt_at: null, last_error: null },
    ]);
    expect(described.body.secret).toBeUndefined();
    const lag = await call('GET', v3(`/consumer-groups/${topic}-g/lags`));
    expect(lag.status).toBe(200);
    expect((lag.body.data as { lag: number }[]).every((l) => l.lag === 0)).toBe(true);
    expect((await call('DELETE', v3(`/subscriptions/${topic}-sub`))).status).toBe(204);
    expectError(await call('GET', v3(`/subscriptions/${topic}-sub`)), 404, 404);
  });

  it('a batch that always fails goes to the dead-letter topic after max_retries, and delivery goes on', async () => {
    const topic = uniqueTopic('push-dlq');
    const dlq = `${topic}-dlq`;
    await createTopic(topic, 1, 1);
    await createTopic(dlq, 1, 1);
    const created = await call('POST', v3('/subscriptions'), {
      subscription_name: `${topic}-sub`, topic_name: topic, group_id: `${topic}-g`,
      endpoint: { type: 'http', url: rx.url('/broken') }, max_retries: 1, dead_letter_topic: dlq,
    });
    expect(created.status, created.text).toBe(201);
    await produce(topic, 0, ['p', 'q']);
    await until('the batch dead-lettered', async () => (await readRecords(v3(`/topics/${dlq}/partitions/0/records`))).length >= 2, 30_000);
    const dead = await readRecords(v3(`/topics/${dlq}/partitions/0/records`));
    expect(dead.map((r) => r.value.data)).toEqual(['p', 'q']);
    const header = (r: any, key: string) => Buffer.from(r.headers.find((h: any) => h.name === key)?.value ?? '', 'base64').toString();
    expect(dead.map((r) => header(r, 'tributary.push.offset'))).toEqual(['0', '1']);
    expect(header(dead[0], 'tributary.push.topic')).toBe(topic);
    expect(header(dead[0], 'tributary.push.error')).toMatch(/HTTP 500/);
    // the first attempt and one retry, then the dead-letter topic
    expect(rx.deliveries.filter((d) => d.path === '/broken')).toHaveLength(2);
    await until('offsets committed past the dead-lettered batch', async () => (await call('GET', v3(`/subscriptions/${topic}-sub`))).body.partitions?.[0]?.committed_offset === 2);
  });

  it('records put on a dead-letter topic are delivered to its own push subscription by the invocation that put them there, without waiting for the controller\'s pass', async () => {
    const topic = uniqueTopic('push-dlq-wake');
    const dlq = `${topic}-dlq`;
    await createTopic(topic, 1, 1);
    await createTopic(dlq, 1, 1);
    // (the shared stack runs no controller: without the fix only its pass would deliver them)
    for (const [name, t, path, extra] of [[`${dlq}-sub`, dlq, '/dlq-sub', {}], [`${topic}-sub`, topic, '/broken', { max_retries: 0, dead_letter_topic: dlq }]] as const) {
      const created = await call('POST', v3('/subscriptions'), { subscription_name: name, topic_name: t, group_id: `${name}-g`, endpoint: { type: 'http', url: rx.url(path) }, ...extra });
      expect(created.status, created.text).toBe(201);
    }
    // (past the creations' own wakes: from here only the produce's wake runs a delivery)
    await new Promise((r) => setTimeout(r, 2500));
    await produce(topic, 0, ['m', 'n']);
    await until('the dead-lettered records delivered from the dead-letter topic', () => (accepted(rx.deliveries, '/dlq-sub').get(0)?.length ?? 0) >= 2, 15_000);
    expect(accepted(rx.deliveries, '/dlq-sub').get(0)).toEqual([0, 1]);
    for (const name of [`${topic}-sub`, `${dlq}-sub`]) expect((await call('DELETE', v3(`/subscriptions/${name}`))).status).toBe(204);
  });

  it('starting_position latest (the default) delivers what is produced after the subscription, not before', async () => {
    const topic = uniqueTopic('push-latest');
    await createTopic(topic, 1, 1);
    await produce(topic, 0, ['old']);
    expect((await call('POST', v3('/subscriptions'), { subscription_name: `${topic}-sub`, topic_name: topic, group_id: `${topic}-g`, endpoint: { type: 'http', url: rx.url('/latest') } })).status).toBe(201);
    await produce(topic, 0, ['new']);
    await until('the new record', () => (accepted(rx.deliveries, '/latest').get(0)?.length ?? 0) >= 1, 30_000);
    expect(accepted(rx.deliveries, '/latest').get(0)).toEqual([1]);
  });

  it('bad input is refused with a 4xx and stores nothing', async () => {
    const topic = uniqueTopic('push-bad');
    await createTopic(topic, 1, 1);
    const base = { subscription_name: `${topic}-sub`, topic_name: topic, group_id: 'g', endpoint: { type: 'http', url: rx.url('/x') } };
    const cases: [unknown, number, number][] = [
      [{ ...base, endpoint: { type: 'http', url: 'not a url' } }, 400, 40002],
      [{ ...base, endpoint: { type: 'http', url: 'ftp://example.com/' } }, 400, 40002],
      [{ ...base, endpoint: { type: 'http', url: rx.url('/x'), headers: { 'webhook-signature': 'v1,forged' } } }, 422, 42206],
      [{ ...base, endpoint: { type: 'lambda', function_arn: 'not-an-arn' } }, 422, 42206],
      [{ ...base, max_retries: 3 }, 400, 40002],
      [{ ...base, dead_letter_topic: topic }, 400, 40002],
      [{ ...base, group_id: 'has space' }, 422, 42206],
      [{ ...base, endpoint: { type: 'http', url: rx.url('/x'), headers: { authorization: 'Bearer €' } } }, 422, 42206],
      [{ ...base, endpoint: { type: 'http', url: rx.url('/x'), headers: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`x-h${i}`, 'v'])) } }, 422, 42206],
      [{ ...base, max_batch_records: 0 }, 422, 42206],
      [{ ...base, subscription_name: 'has space' }, 422, 42206],
      [{ ...base, topic_name: uniqueTopic('absent') }, 404, 40401],
      [{ ...base, dead_letter_topic: topic, max_retries: 1 }, 400, 40002],
      [{ ...base, extra: 1 }, 422, 42206],
    ];
    for (const [body, status, code] of cases) {
      const r = await call('POST', v3('/subscriptions'), body);
      expect(r.status, `${JSON.stringify(body)} → ${r.text}`).toBe(status);
      expect(r.body.error_code, JSON.stringify(body)).toBe(code);
    }
    expect((await call('GET', v3('/subscriptions'))).body.data.some((s: any) => s.topic_name === topic)).toBe(false);
    expect((await call('POST', v3('/subscriptions'), base)).status).toBe(201);
    expectError(await call('POST', v3('/subscriptions'), base), 400, 40002, /already exists/);
    // another subscription of the same group on the same topic
    expectError(await call('POST', v3('/subscriptions'), { ...base, subscription_name: `${topic}-other` }), 400, 40002, /own/);
    expectError(await call('GET', v3(`/subscriptions/${'x'.repeat(2000)}`)), 404, 404);
    expect((await call('DELETE', v3(`/subscriptions/${topic}-sub`))).status).toBe(204);
    expectError(await call('DELETE', v3(`/subscriptions/${topic}-sub`)), 404, 404);
  });

  it('records no wake announced (lost, or its delivery found the lease of a deliverer that died) are delivered by the controller\'s pass once the lease has expired', async () => {
    const topic = uniqueTopic('push-repair');
    await createTopic(topic, 1, 1);
    const name = `${topic}-sub`;
    expect((await call('POST', v3('/subscriptions'), { subscription_name: name, topic_name: topic, group_id: `${topic}-g`, endpoint: { type: 'http', url: rx.url('/repair') } })).status).toBe(201);
    const key = pushStateKey((await getPushSubscription(name))!);
    // (the creation's own first delivery has run: it found nothing and let the lease go)
    await until('the first delivery', async () => {
      const state = await getPushState(key, 0);
      return state !== undefined && state.deliverer === undefined;
    });
    // a deliverer that dies holding the partition's lease; a record produced by this process, which sends no wake
    expect(await claimPushDelivery(key, 0, 'dead', 2000)).toBeDefined();
    expect(await produceRecords(topic, [{ partition: 0, key: null, value: Buffer.from('r'), headers: [] }], { acks: 1 })).toMatchObject([{ ok: true, offset: 0 }]);
    await new Promise((r) => setTimeout(r, 2500));
    expect(accepted(rx.deliveries, '/repair').get(0)).toBeUndefined();
    expect(await wakeDeliveries()).toBeGreaterThanOrEqual(1);
    await until('the pass delivered it', () => (accepted(rx.deliveries, '/repair').get(0)?.length ?? 0) >= 1, 30_000);
    expect(accepted(rx.deliveries, '/repair').get(0)).toEqual([0]);
    expect((await call('DELETE', v3(`/subscriptions/${name}`))).status).toBe(204);
  });
});

describe('push delivery: a batch and its retries, a reset during a delivery', () => {
  const topicIdOf = async (name: string) => (await getPushSubscription(name))!.topicId;
  /** The creation's own first delivery has run (it found nothing and let the lease go): from here on only this test delivers. */
  const settled = async (name: string) => {
    const key = pushStateKey((await getPushSubscription(name))!);
    await until('the first delivery', async () => {
      const state = await getPushState(key, 0);
      return state !== undefined && state.deliverer === undefined;
    });
    return key;
  };
  const produceHere = async (topic: string, values: readonly string[]) => {
    // (produced by this process, which sends no wake: only the deliveries this test runs deliver)
    const out = await produceRecords(topic, values.map((v) => ({ partition: 0, key: null, value: Buffer.from(v), headers: [] })), { acks: 1 });
    expect(out.every((o) => o.ok)).toBe(true);
  };
  const offsetsOf = (d: Delivery) => (JSON.parse(d.body) as { records: { offset: number }[] }).records.map((r) => r.offset);

  it('where a batch fails and more records become readable before its retry, the retry sends the same range under the same webhook-id, and the new records go in the next batch', async () => {
    const rx = receiver((_path, nth) => (nth === 0 ? 500 : 204));
    await rx.start();
    try {
      const topic = uniqueTopic('push-same-batch');
      await createTopic(topic, 1, 1);
      const name = `${topic}-sub`;
      const created = await call('POST', v3('/subscriptions'), { subscription_name: name, topic_name: topic, group_id: `${topic}-g`, starting_position: 'earliest', endpoint: { type: 'http', url: rx.url('/grow') }, max_batch_records: 10 });
      expect(created.status, created.text).toBe(201);
      const key = await settled(name);
      await produceHere(topic, ['a', 'b']);
      // one attempt, refused; its retry falls past this short deadline
      await deliverPush(await topicIdOf(name), 0, Date.now() + 5000);
      expect(rx.deliveries.map(offsetsOf)).toEqual([[0, 1]]);
      const failedState = await getPushState(key, 0);
      expect(failedState).toMatchObject({ attempts: 1 });
      await produceHere(topic, ['c', 'd']);
      await new Promise((r) => setTimeout(r, Math.max(0, failedState!.retryAt! - Date.now())));
      await deliverPush(await topicIdOf(name), 0, Date.now() + 20_000);
      expect(rx.deliveries.map(offsetsOf)).toEqual([[0, 1], [0, 1], [2, 3]]);
      const [first, retry, next] = rx.deliveries;
      expect(retry!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
      expect(next!.headers['webhook-id']).not.toBe(first!.headers['webhook-id']);
      expect(await getPushState(key, 0)).toEqual({ partition: 0, attempts: 0 });
      expect((await call('GET', v3(`/subscriptions/${name}`))).body.partitions[0]).toMatchObject({ committed_offset: 4, attempts: 0 });
      expect((await call('DELETE', v3(`/subscriptions/${name}`))).status).toBe(204);
    } finally {
      await rx.stop();
    }
  });

  it('where an offset reset lands while a batch is being delivered, the reset wins: the delivery\'s commit is refused and delivery goes on from the reset offset', async () => {
    const topic = uniqueTopic('push-reset-race');
    const group = `${topic}-g`;
    let resetOnNext = false;
    const seen: number[][] = [];
    // (the reset is made from inside the delivery: after the batch was read and sent, before its commit)
    const server: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { records: { offset: number }[] }).records.map((r) => r.offset));
        if (!resetOnNext) return void res.writeHead(204).end();
        resetOnNext = false;
        void call('POST', v3(`/consumer-groups/${group}/offsets:reset`), { topics: [topic], to: 'earliest' }).then((r) => {
          expect(r.status, r.text).toBe(200);
          res.writeHead(204).end();
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      await createTopic(topic, 1, 1);
      const name = `${topic}-sub`;
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/race`;
      const created = await call('POST', v3('/subscriptions'), { subscription_name: name, topic_name: topic, group_id: group, starting_position: 'earliest', endpoint: { type: 'http', url }, max_batch_records: 10 });
      expect(created.status, created.text).toBe(201);
      await settled(name);
      await produceHere(topic, ['a', 'b', 'c']);
      await deliverPush(await topicIdOf(name), 0, Date.now() + 20_000);
      expect(seen).toEqual([[0, 1, 2]]);
      await produceHere(topic, ['d', 'e']);
      resetOnNext = true;
      await deliverPush(await topicIdOf(name), 0, Date.now() + 20_000);
      // the batch in flight, then everything again from the reset offset
      expect(seen).toEqual([[0, 1, 2], [3, 4], [0, 1, 2, 3, 4]]);
      expect((await call('GET', v3(`/subscriptions/${name}`))).body.partitions[0]).toMatchObject({ committed_offset: 5, attempts: 0 });
      expect((await call('DELETE', v3(`/subscriptions/${name}`))).status).toBe(204);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('push delivery leases', () => {
  it('one deliverer at a time; a retry waits for its time; a late finish or release of a lost lease writes nothing', async () => {
    const name = uniqueTopic('push-lease');
    const now = Date.now();
    expect(await claimPushDelivery(name, 0, 'a', 60_000, now)).toMatchObject({ partition: 0, attempts: 0, deliverer: 'a' });
    // lost the race: another holds the lease
    expect(await claimPushDelivery(name, 0, 'b', 60_000, now + 1)).toBeUndefined();
    expect(await finishPushDelivery(name, 0, 'b')).toBe('lease-lost');
    expect(await releasePushDelivery(name, 0, 'b')).toBe(false);
    // a failure counts the attempt and holds the batch until retryAt
    expect(await failPushDelivery(name, 0, 'a', 1, now + 5000, 'HTTP 500', { from: 3, next: 7 })).toBe(true);
    expect(await getPushState(name, 0)).toMatchObject({ attempts: 1, retryAt: now + 5000, lastError: 'HTTP 500', batch: { from: 3, next: 7 } });
    expect(await claimPushDelivery(name, 0, 'b', 60_000, now + 4999)).toBeUndefined();
    expect(await claimPushDelivery(name, 0, 'b', 1000, now + 5000)).toMatchObject({ attempts: 1 });
    // b's lease expired: c takes it, and b's late finish changes nothing
    expect(await claimPushDelivery(name, 0, 'c', 60_000, now + 7000)).toMatchObject({ attempts: 1 });
    expect(await finishPushDelivery(name, 0, 'b')).toBe('lease-lost');
    expect(await getPushState(name, 0)).toMatchObject({ attempts: 1, deliverer: 'c' });
    expect(await finishPushDelivery(name, 0, 'c')).toBe('done');
    const done = await getPushState(name, 0);
    expect(done).toEqual({ partition: 0, attempts: 0 });
  });
});
