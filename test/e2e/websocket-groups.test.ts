/**
 * Consumer group subscriptions over the WebSocket API, end to end on the shared Lambda-fidelity
 * stack: the group assigns the partitions, the member's heartbeats are the client's messages,
 * commits are the group's, a member that stops heartbeating or disconnects leaves.
 */
import { describe, expect, it } from 'vitest';
import { call, createTopic, uniqueTopic, v3 } from '../support/api.js';
import { until } from '../support/cluster.js';
import { Client, produce, type Frame } from '../support/websocket.js';

const subscribedParts = (c: Client, group: string): number[] =>
  c.frames.filter((f) => f.type === 'subscribed' && f.group_id === group && f.partition !== undefined).map((f) => f.partition as number);
const isGroupFrame = (group: string) => (f: Frame) => f.type === 'subscribed' && f.group_id === group && f.member_id !== undefined;

describe('WebSocket group subscriptions', () => {
  it('the group assigns the partitions; a member starts at the committed offsets, commits for the group and leaves', async () => {
    const topic = uniqueTopic('wsg-commit');
    const group = `g-${topic}`;
    await createTopic(topic, 2, 3);
    await produce(topic, ['a', 'b'], 0);
    await produce(topic, ['c'], 1);
    const first = await Client.open();
    first.send({ action: 'subscribe', topic, group_id: group, offset: 'earliest' });
    const joined = await first.frame('joined', isGroupFrame(group));
    expect(joined).toMatchObject({ topics: [topic], member_epoch: expect.any(Number), heartbeat_interval_ms: expect.any(Number), session_timeout_ms: 45_000 });
    await until('both partitions subscribed', () => subscribedParts(first, group).length === 2);
    await until('every record', () => first.values(topic, 0).length === 2 && first.values(topic, 1).length === 1);
    first.send({ action: 'commit', topic, partition: 0, offset: 2 });
    expect(await first.frame('committed', (f) => f.type === 'committed')).toMatchObject({ group_id: group, topic, partition: 0, offset: 2 });
    const offsets = await call('GET', v3(`/consumer-groups/${group}/offsets`));
    expect(offsets.status, offsets.text).toBe(200);
    expect(JSON.stringify(offsets.body)).toContain('"offset":2');
    first.send({ action: 'unsubscribe', group_id: group });
    await first.frame('left', (f) => f.type === 'unsubscribed' && f.group_id === group && f.topic === undefined);
    expect(first.frames.filter((f) => f.type === 'unsubscribed' && f.partition !== undefined).map((f) => f.partition).sort()).toEqual([0, 1]);

    // A new member: partition 0 from the committed 2, partition 1 (nothing committed) from earliest.
    const second = await Client.open();
    second.send({ action: 'subscribe', topic, group_id: group, offset: 'earliest' });
    await until('both partitions subscribed', () => subscribedParts(second, group).length === 2);
    expect(second.frames.filter((f) => f.type === 'subscribed' && f.partition !== undefined).map((f) => [f.partition, f.offset]).sort()).toEqual([[0, 2], [1, 0]]);
    await produce(topic, ['d'], 0);
    await until('the record after the commit', () => second.values(topic, 0).length === 1);
    expect(second.values(topic, 0)).toEqual(['d']);
    expect(second.offsets(topic, 0)).toEqual([2]);
  });

  it('two members share the partitions: a partition moves once its owner\'s heartbeat gives it up, and each record reaches one member', async () => {
    const topic = uniqueTopic('wsg-share');
    const group = `g-${topic}`;
    await createTopic(topic, 2, 3);
    const [x, y] = await Promise.all([Client.open(), Client.open()]);
    x.send({ action: 'subscribe', topic, group_id: group, offset: 'earliest' });
    await until('x has both', () => subscribedParts(x, group).length === 2);
    y.send({ action: 'subscribe', topic, group_id: group, offset: 'earliest' });
    await y.frame('y joined', isGroupFrame(group));
    // x learns at its heartbeat that one partition is y's, and gives it up; y's heartbeat takes it.
    x.send({ action: 'heartbeat' });
    const given = await x.frame('x gives one up', (f) => f.type === 'unsubscribed' && f.group_id === group && f.partition !== undefined);
    await until('y owns the partition x gave up', async () => {
      y.send({ action: 'heartbeat' });
      await new Promise((r) => setTimeout(r, 300));
      return subscribedParts(y, group).includes(given.partition);
    }, { ms: 20_000 });
    await produce(topic, ['p0'], 0);
    await produce(topic, ['p1'], 1);
    const kept = given.partition === 0 ? 1 : 0;
    await until('each record at its partition\'s owner', () => x.values(topic, kept).length === 1 && y.values(topic, given.partition).length === 1);
    expect(x.values(topic, given.partition)).toEqual([]);
    expect(y.values(topic, kept)).toEqual([]);
    // A commit of the partition x gave up is fenced.
    x.send({ action: 'commit', topic, partition: given.partition, offset: 1 });
    expect(await x.frame('fenced', (f) => f.type === 'error')).toMatchObject({ error_code: 40901 });
  });

  it('a member that stops heartbeating stops getting records after its session, and joins again at its next heartbeat; a disconnect leaves at once', async () => {
    const topic = uniqueTopic('wsg-session');
    const group = `g-${topic}`;
    await createTopic(topic, 1, 3);
    const c = await Client.open();
    c.send({ action: 'subscribe', topic, group_id: group, offset: 'earliest', session_timeout_ms: 1000 });
    await until('subscribed', () => subscribedParts(c, group).length === 1);
    await new Promise((r) => setTimeout(r, 1500));
    await produce(topic, ['late']);
    expect(await c.frame('session ran out', (f) => f.type === 'error')).toMatchObject({ error_code: 40403, topic, partition: 0, group_id: group });
    expect(c.values(topic)).toEqual([]);
    c.send({ action: 'heartbeat' });
    await until('subscribed again', () => subscribedParts(c, group).length === 2);
    await until('the record', () => c.values(topic).length === 1);

    const d = await Client.open();
    const other = `${group}-d`;
    d.send({ action: 'subscribe', topic, group_id: other });
    await d.frame('joined', isGroupFrame(other));
    d.ws.close();
    await until('the member left the group', async () => {
      const r = await call('GET', v3(`/consumer-groups/${other}/consumers`));
      return r.status === 200 && r.body.data.length === 0;
    });
  });

  it('refuses what a group member cannot do, with 40002, and keeps the connection', async () => {
    const topic = uniqueTopic('wsg-bad');
    await createTopic(topic, 1, 1);
    const c = await Client.open();
    c.send({ action: 'commit', topic, partition: 0, offset: 1 });
    expect(await c.frame('commit without a group', (f) => f.type === 'error')).toMatchObject({ error_code: 40002 });
    c.send({ action: 'heartbeat' });
    c.send({ action: 'subscribe', topic, partition: 0, group_id: 'g' });
    c.send({ action: 'subscribe', topic, group_id: 'g', offset: 5 });
    c.send({ action: 'subscribe', topic, group_id: 'bad group id!' });
    await until('five errors', () => c.frames.filter((f) => f.type === 'error').length === 5);
    expect(c.frames.filter((f) => f.type === 'error').map((f) => f.error_code)).toEqual([40002, 40002, 40002, 40002, 40002]);
    c.send({ action: 'subscribe', topic, group_id: `g-${topic}` });
    await c.frame('joined', isGroupFrame(`g-${topic}`));
    c.send({ action: 'subscribe', topic, group_id: `h-${topic}` });
    expect(await c.frame('a second group', (f) => f.type === 'error' && /one group per connection/.test(f.message))).toMatchObject({ error_code: 40002 });
  });
});
