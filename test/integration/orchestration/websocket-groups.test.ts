/**
 * A WebSocket connection's group membership against its failure paths, on the shared stack: the
 * membership write that loses to a `$disconnect`, and a heartbeat that finds an assigned
 * partition's subscription missing (an invocation cut short before writing it, or a delivery that
 * ended it) and subscribes it again from the committed offset.
 */
import { describe, expect, it } from 'vitest';
import { requireTopic } from '../../../lib/cluster/metadata.js';
import { heartbeatHooks } from '../../../lib/groups/coordinator.js';
import { websocketHandler } from '../../../lib/http/websocket.js';
import { connection, leaveGroup } from '../../../lib/orchestration/websocket-groups.js';
import { createAcls } from '../../../lib/security/acl-admin.js';
import {
  deleteConnection, deleteSubscription, getConnection, listSubscriptions, putConnection, setConnectionGroup,
} from '../../../lib/storage/coordination/connections.js';
import { call, createTopic, uniqueTopic, v3 } from '../../support/api.js';
import { until } from '../../support/cluster.js';
import { Client, produce } from '../../support/websocket.js';

describe('WebSocket group membership: failure paths', () => {
  it('the membership write loses its races: to a $disconnect, a leave, another join, a later heartbeat (false, nothing written)', async () => {
    const id = `test-${uniqueTopic('conn')}`;
    await putConnection(id, 'User:alice');
    const g = { groupId: 'g', memberId: 'm', memberEpoch: 3, topics: ['t'], reset: 'latest' as const, isolation: 'read_uncommitted' as const, sessionTimeoutMs: 45_000, parts: ['t#1', 't#0'] };
    expect(await setConnectionGroup(id, g, null)).toBe(true);
    expect((await getConnection(id))?.group).toEqual({ ...g, parts: ['t#0', 't#1'] });
    // a second join, another member's write, and an earlier epoch's answer all lose
    expect(await setConnectionGroup(id, { ...g, memberId: 'other' }, null)).toBe(false);
    expect(await setConnectionGroup(id, { ...g, memberId: 'other', memberEpoch: 9 }, 'other')).toBe(false);
    expect(await setConnectionGroup(id, { ...g, memberEpoch: 2, parts: [] }, 'm')).toBe(false);
    expect((await getConnection(id))?.group).toEqual({ ...g, parts: ['t#0', 't#1'] });
    expect(await setConnectionGroup(id, { ...g, memberEpoch: 4, parts: [] }, 'm')).toBe(true);
    expect((await getConnection(id))?.group).toMatchObject({ memberEpoch: 4, parts: [] });
    // a leave; then a heartbeat's late answer cannot bring the membership back
    expect(await setConnectionGroup(id, null, 'm')).toBe(true);
    expect(await setConnectionGroup(id, { ...g, memberEpoch: 5 }, 'm')).toBe(false);
    expect((await getConnection(id))?.group).toBeUndefined();
    await deleteConnection(id);
    expect(await setConnectionGroup(id, g, null)).toBe(false);
    expect(await getConnection(id)).toBeUndefined();
  });

  it('a group subscription needs READ on the group and on the topic (40301, nothing joined)', async () => {
    const topic = uniqueTopic('wsg-acl');
    const group = `g-${topic}`;
    await createTopic(topic, 1, 1);
    // A real connection (its frames reach this client), whose messages this test hands to the
    // handler itself as another principal, with authorization on.
    const c = await Client.open();
    c.send({ action: 'subscribe', topic, partition: 0 });
    await c.frame('subscribed', (f) => f.type === 'subscribed');
    const { topicId } = (await requireTopic(topic)).topic;
    const connectionId = (await listSubscriptions(topicId, 0))[0]!.connectionId;
    const principal = `User:${topic}`;
    const send = (msg: unknown) => websocketHandler(
      { requestContext: { routeKey: '$default', connectionId, authorizer: { principal }, identity: { sourceIp: '10.0.0.7' } }, body: JSON.stringify(msg) },
      { getRemainingTimeInMillis: () => 20_000 },
    );
    const saved = process.env.TRIBUTARY_AUTH;
    process.env.TRIBUTARY_AUTH = 'acl';
    const acl = (resourceType: 'TOPIC' | 'GROUP', resourceName: string) => ({ resourceType, resourceName, patternType: 'LITERAL' as const, principal, host: '*', operation: 'READ' as const, permission: 'ALLOW' as const });
    try {
      await send({ action: 'subscribe', topic, group_id: group });
      expect(await c.frame('no group READ', (f) => f.type === 'error')).toMatchObject({ error_code: 40301, message: expect.stringContaining('GROUP_AUTHORIZATION_FAILED') });
      await createAcls([acl('GROUP', group)]);
      await new Promise((r) => setTimeout(r, 1100)); // (the ACL cache's age)
      await send({ action: 'subscribe', topic, group_id: group });
      await until('no topic READ', () => c.frames.filter((f) => f.type === 'error').length === 2);
      expect(c.frames.filter((f) => f.type === 'error')[1]).toMatchObject({ error_code: 40301, message: expect.stringContaining('TOPIC_AUTHORIZATION_FAILED') });
      const members = await call('GET', v3(`/consumer-groups/${group}/consumers`));
      expect(members.status === 404 || members.body.data.length === 0, members.text).toBe(true);
      await createAcls([acl('TOPIC', topic)]);
      await new Promise((r) => setTimeout(r, 1100));
      await send({ action: 'subscribe', topic, group_id: group });
      await c.frame('joined', (f) => f.type === 'subscribed' && f.member_id !== undefined);
    } finally {
      if (saved === undefined) delete process.env.TRIBUTARY_AUTH;
      else process.env.TRIBUTARY_AUTH = saved;
    }
  });

  it('a heartbeat that a leave overtakes does not join again: no member nobody serves', async () => {
    const topic = uniqueTopic('wsg-ghost');
    const group = `g-${topic}`;
    await createTopic(topic, 1, 1);
    const c = await Client.open();
    c.send({ action: 'subscribe', topic, group_id: group, offset: 'earliest' });
    await c.frame('partition subscribed', (f) => f.type === 'subscribed' && f.partition === 0);
    const { topicId } = (await requireTopic(topic)).topic;
    const connectionId = (await listSubscriptions(topicId, 0))[0]!.connectionId;
    let left = false;
    // The leave runs after the heartbeat read the group and before it writes.
    heartbeatHooks.afterRead = async (g) => {
      if (g !== group || left) return;
      left = true;
      await leaveGroup(await connection(connectionId));
    };
    try {
      await websocketHandler(
        { requestContext: { routeKey: '$default', connectionId, identity: { sourceIp: '127.0.0.1' } }, body: JSON.stringify({ action: 'heartbeat' }) },
        { getRemainingTimeInMillis: () => 20_000 },
      );
    } finally {
      heartbeatHooks.afterRead = undefined;
    }
    expect(left).toBe(true);
    expect((await getConnection(connectionId))?.group).toBeUndefined();
    const members = await call('GET', v3(`/consumer-groups/${group}/consumers`));
    expect(members.body.data).toEqual([]);
    expect(await listSubscriptions(topicId, 0)).toEqual([]);
  });

  it('a heartbeat subscribes again an assigned partition whose subscription is missing, from the committed offset', async () => {
    const topic = uniqueTopic('wsg-repair');
    const group = `g-${topic}`;
    await createTopic(topic, 1, 1);
    await produce(topic, ['a', 'b']);
    const c = await Client.open();
    c.send({ action: 'subscribe', topic, group_id: group, offset: 'earliest' });
    await until('both records', () => c.values(topic).length === 2);
    c.send({ action: 'commit', topic, partition: 0, offset: 2 });
    await c.frame('committed', (f) => f.type === 'committed');
    const { topicId } = (await requireTopic(topic)).topic;
    const [sub] = await listSubscriptions(topicId, 0);
    expect(sub).toMatchObject({ groupId: group, next: 2 });
    // The subscription goes, as if the invocation that would have written it was cut short.
    await deleteSubscription(sub!.connectionId, topicId, 0);
    await produce(topic, ['c']);
    await new Promise((r) => setTimeout(r, 1000));
    expect(c.values(topic)).toEqual(['a', 'b']);
    c.send({ action: 'heartbeat' });
    await until('subscribed again', () => c.frames.filter((f) => f.type === 'subscribed' && f.partition === 0).length === 2);
    expect(c.frames.filter((f) => f.type === 'subscribed' && f.partition === 0).at(-1)).toMatchObject({ offset: 2, group_id: group });
    await until('the record produced meanwhile', () => c.values(topic).length === 3);
    expect(c.values(topic)).toEqual(['a', 'b', 'c']);
  });
});
