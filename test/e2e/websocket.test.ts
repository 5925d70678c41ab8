/**
 * WebSocket consume end to end on the shared Lambda-fidelity stack: `ws://…/ws`, the websocket
 * function run as Lambda runs it, woken by the functions that move high watermarks.
 */
import { describe, expect, it } from 'vitest';
import { call, createTopic, uniqueTopic } from '../support/api.js';
import { Client, produce } from '../support/websocket.js';
import { until } from '../support/cluster.js';
import { end, init, send } from '../support/transactions.js';

describe('WebSocket consume', () => {
  it('delivers a partition from earliest, with offsets, timestamps, keys, values and headers, then what is produced later', async () => {
    const topic = uniqueTopic('ws-earliest');
    await createTopic(topic, 2, 3);
    await produce(topic, ['a', 'b', 'c']);
    const c = await Client.open();
    c.send({ action: 'subscribe', topic, partition: 0, offset: 'earliest' });
    expect(await c.frame('subscribed', (f) => f.type === 'subscribed')).toMatchObject({ topic, partition: 0, offset: 0, isolation_level: 'read_uncommitted' });
    await until('the first three records', () => c.values(topic).length >= 3);
    const first = c.frames.find((f) => f.type === 'records')!.records[0];
    expect(first).toMatchObject({ offset: 0, key: null, value: Buffer.from('a').toString('base64'), headers: [{ key: 'h', value: Buffer.from('of-a').toString('base64') }] });
    expect(Math.abs(first.timestamp - Date.now())).toBeLessThan(120_000);
    // Produced after the subscribe: the produce's commit wakes the delivery.
    await produce(topic, ['d', 'e']);
    await until('the records produced later', () => c.values(topic).length >= 5);
    expect(c.values(topic)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(c.offsets(topic)).toEqual([0, 1, 2, 3, 4]);
  });

  it('from latest delivers only what comes after; two subscribers each get every record once, in order', async () => {
    const topic = uniqueTopic('ws-latest');
    await createTopic(topic, 1, 3);
    await produce(topic, ['old']);
    const [x, y] = await Promise.all([Client.open(), Client.open()]);
    for (const c of [x!, y!]) {
      c.send({ action: 'subscribe', topic, partition: 0, offset: 'latest' });
      expect(await c.frame('subscribed', (f) => f.type === 'subscribed')).toMatchObject({ offset: 1 });
    }
    const values = Array.from({ length: 12 }, (_, i) => `v${i}`);
    await produce(topic, values);
    for (const c of [x!, y!]) {
      await until('every record', () => c.values(topic).length >= values.length);
      expect(c.values(topic)).toEqual(values);
    }
  });

  it('answers a bad message with an error frame and keeps the connection: not JSON, unknown action, unknown topic, offset out of range', async () => {
    const topic = uniqueTopic('ws-bad');
    await createTopic(topic, 1, 1);
    const c = await Client.open();
    c.send('not json');
    expect(await c.frame('40002', (f) => f.type === 'error')).toMatchObject({ error_code: 40002 });
    c.send({ action: 'dance' });
    await until('two errors', () => c.frames.filter((f) => f.type === 'error').length >= 2);
    c.send({ action: 'subscribe', topic: 'no-such-topic-here', partition: 0 });
    expect(await c.frame('unknown topic', (f) => f.type === 'error' && f.topic === 'no-such-topic-here')).toMatchObject({ error_code: 40401 });
    c.send({ action: 'subscribe', topic, partition: 0, offset: 99 });
    expect(await c.frame('out of range', (f) => f.type === 'error' && f.error_code === 41601)).toMatchObject({ topic, partition: 0 });
    c.send({ action: 'subscribe', topic, partition: -1 });
    await until('five errors', () => c.frames.filter((f) => f.type === 'error').length >= 5);
    // still open: a good subscribe works
    c.send({ action: 'subscribe', topic, partition: 0, offset: 'earliest' });
    await c.frame('subscribed', (f) => f.type === 'subscribed');
  });

  it('unsubscribe stops the deliveries of that partition', async () => {
    const topic = uniqueTopic('ws-unsub');
    await createTopic(topic, 1, 1);
    const c = await Client.open();
    c.send({ action: 'subscribe', topic, partition: 0, offset: 'latest' });
    await c.frame('subscribed', (f) => f.type === 'subscribed');
    await produce(topic, ['one']);
    await until('the first record', () => c.values(topic).length === 1);
    c.send({ action: 'unsubscribe', topic, partition: 0 });
    await c.frame('unsubscribed', (f) => f.type === 'unsubscribed');
    await produce(topic, ['two']);
    // (a second subscriber proves the wake ran)
    const d = await Client.open();
    d.send({ action: 'subscribe', topic, partition: 0, offset: 'earliest' });
    await until('the second subscriber has both', () => d.values(topic).length === 2);
    expect(c.values(topic)).toEqual(['one']);
  });

  it('read_committed gets a transaction\'s records once it commits and never an aborted one\'s; read_uncommitted gets both', async () => {
    const topic = uniqueTopic('ws-txn');
    await createTopic(topic, 1, 3);
    const [committed, uncommitted] = await Promise.all([Client.open(), Client.open()]);
    committed!.send({ action: 'subscribe', topic, partition: 0, offset: 'earliest', isolation_level: 'read_committed' });
    uncommitted!.send({ action: 'subscribe', topic, partition: 0, offset: 'earliest' });
    for (const c of [committed!, uncommitted!]) await c.frame('subscribed', (f) => f.type === 'subscribed');
    const p = await init(uniqueTopic('ws-tid'));
    expect((await send(p, topic, 0, ['t1', 't2'])).status).toBe(200);
    await until('read_uncommitted sees the open transaction', () => uncommitted!.values(topic).length === 2);
    expect(committed!.values(topic)).toEqual([]);
    expect((await end(p, true)).status).toBe(200);
    await until('read_committed sees the committed transaction', () => committed!.values(topic).length === 2);
    expect((await send(p, topic, 0, ['aborted'])).status).toBe(200);
    expect((await end(p, false)).status).toBe(200);
    await produce(topic, ['plain']);
    await until('both see the record after the aborted transaction', () => committed!.values(topic).includes('plain') && uncommitted!.values(topic).includes('plain'));
    expect(committed!.values(topic)).toEqual(['t1', 't2', 'plain']);
    expect(uncommitted!.values(topic)).toEqual(['t1', 't2', 'aborted', 'plain']);
    // control records take offsets and are never delivered: offsets 2 (commit) and 4 (abort)
    expect(committed!.offsets(topic)).toEqual([0, 1, 5]);
  });

  it('a subscriber waiting with nothing to read holds no function instance', async () => {
    const topic = uniqueTopic('ws-idle');
    await createTopic(topic, 1, 1);
    const c = await Client.open();
    c.send({ action: 'subscribe', topic, partition: 0, offset: 'latest' });
    await c.frame('subscribed', (f) => f.type === 'subscribed');
    // Sampled over 3 s: an environment held for this subscriber would be busy in every sample
    // (other test files' invocations on the shared stack come and go).
    const busy: Set<number>[] = [];
    for (let i = 0; i < 12; i++) {
      const stats = (await call('GET', '/local/lambda')).body as { environments: { fn: string; pid: number; state: string }[] };
      busy.push(new Set(stats.environments.filter((e) => e.fn === 'websocket' && e.state === 'busy').map((e) => e.pid)));
      await new Promise((r) => setTimeout(r, 250));
    }
    expect([...(busy[0] ?? [])].filter((pid) => busy.every((b) => b.has(pid)))).toEqual([]);
    await produce(topic, ['late']);
    await until('the record', () => c.values(topic).length === 1);
  });

  it('a record no WebSocket message can carry ends its subscription with 41301 at its offset, after the records before it', async () => {
    const topic = uniqueTopic('ws-large');
    await createTopic(topic, 1, 1);
    // 100 KB of value is about 133 KB in base64: over API Gateway's 128 KB message.
    await produce(topic, ['small', 'x'.repeat(100_000), 'after']);
    const c = await Client.open();
    c.send({ action: 'subscribe', topic, partition: 0, offset: 'earliest' });
    const error = await c.frame('the error', (f) => f.type === 'error');
    expect(error).toMatchObject({ error_code: 41301, topic, partition: 0, offset: 1, message: expect.stringMatching(/^MESSAGE_TOO_LARGE: the record at offset 1 /) });
    expect(c.values(topic)).toEqual(['small']);
    // Subscribed again after it, the partition goes on.
    c.send({ action: 'subscribe', topic, partition: 0, offset: 2 });
    await until('the record after it', () => c.values(topic).length >= 2);
    expect(c.offsets(topic)).toEqual([0, 2]);
  });
});
