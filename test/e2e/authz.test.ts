/**
 * ACLs through the enforcement table, end to end: real ACLs created with REST Proxy v3's
 * `POST /v3/clusters/{c}/acls` grant a principal exactly what they name — including the topics
 * a group call reaches without naming them in its path (a heartbeat's subscription, a v2
 * pattern, the partitions a v2 instance reads).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTopic, uniqueTopic, v3 } from '../support/api.js';
import { startAuthGateway, type AuthGateway } from '../support/auth-gateway.js';

let g: AuthGateway;
const granted = uniqueTopic('authz-granted');
const other = uniqueTopic('authz-other');

beforeAll(async () => {
  g = await startAuthGateway();
  await createTopic(granted, 1, 3);
  await createTopic(other, 1, 3);
});
afterAll(async () => {
  await g?.close();
});

const acl = (principal: string, operation: string, resourceName: string, resourceType = 'TOPIC') =>
  g.call('POST', v3('/acls'), g.adminToken, { resource_type: resourceType, resource_name: resourceName, pattern_type: 'LITERAL', principal, host: '*', operation, permission: 'ALLOW' });
const revoke = (principal: string, operation: string, resourceName: string, resourceType = 'TOPIC') =>
  g.call('DELETE', v3(`/acls?${new URLSearchParams({ resource_type: resourceType, resource_name: resourceName, pattern_type: 'LITERAL', principal, host: '*', operation, permission: 'ALLOW' })}`), g.adminToken);
const endOffset = async (t: string) => (await call('GET', v3(`/topics/${t}/partitions/0/offsets`))).body.end_offset as number;
const produce = (t: string, token: string) => g.call('POST', v3(`/topics/${t}/records`), token, { partition_id: 0, value: { type: 'STRING', data: 'x' } });

describe('Enforcement with ACLs', () => {
  it('lets a principal produce only to the topic it has WRITE on; elsewhere nothing is written', async () => {
    const token = await g.user('User:writer');
    expect((await produce(granted, token)).status).toBe(403);
    expect((await acl('User:writer', 'WRITE', granted)).status).toBe(201);
    let status = 403;
    for (let i = 0; i < 100 && status === 403; i++) {
      status = (await produce(granted, token)).status;
      if (status === 403) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
    const before = await endOffset(other);
    const denied = await produce(other, token);
    expect(denied.status).toBe(403);
    expect(denied.body.error_code).toBe(40301);
    expect(await endOffset(other)).toBe(before);
  });

  it('lists only the topics a principal may DESCRIBE (READ implies it), and lets it fetch them', async () => {
    const token = await g.user('User:reader');
    expect((await acl('User:reader', 'READ', granted)).status).toBe(201);
    let names: string[] = [];
    for (let i = 0; i < 100 && !names.includes(granted); i++) {
      names = ((await g.call('GET', v3('/topics'), token)).body.data ?? []).map((t: any) => t.topic_name);
      if (!names.includes(granted)) await new Promise((r) => setTimeout(r, 100));
    }
    expect(names).toContain(granted);
    expect(names).not.toContain(other);
    expect((await g.call('GET', v3(`/topics/${granted}/partitions/0/records?offset=0`), token)).status).toBe(200);
    expect((await g.call('GET', v3(`/topics/${other}/partitions/0/records?offset=0`), token)).status).toBe(403);
    expect((await produce(granted, token)).status).toBe(403);
  });

  it('lets a principal with CREATE on the cluster create a topic, and no one else', async () => {
    const maker = await g.user('User:maker');
    const t = uniqueTopic('authz-created');
    expect((await g.call('POST', v3('/topics'), maker, { topic_name: t, partitions_count: 1 })).status).toBe(403);
    expect((await call('GET', v3(`/topics/${t}`))).status).toBe(404);
    expect((await acl('User:maker', 'CREATE', 'kafka-cluster', 'CLUSTER')).status).toBe(201);
    let status = 403;
    for (let i = 0; i < 100 && status === 403; i++) {
      status = (await g.call('POST', v3('/topics'), maker, { topic_name: t, partitions_count: 1 })).status;
      if (status === 403) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(201);
  });
});

/** Retries `attempt` until `done` says so (ACLs apply within the metadata cache's bound), at most 10 s. */
async function eventually<T>(attempt: () => Promise<T>, done: (r: T) => boolean): Promise<T> {
  let r = await attempt();
  for (let i = 0; i < 100 && !done(r); i++) {
    await new Promise((res) => setTimeout(res, 100));
    r = await attempt();
  }
  return r;
}

/** TRIBUTARY_METADATA_MAX_AGE_MS's default (docs/security.md, "When a change takes effect"), and a margin. */
const ACL_BOUND_MS = 1000 + 200;

describe('Enforcement on the topics a group call reaches', () => {
  const prefix = uniqueTopic('authz-grp');
  const readable = `${prefix}-readable`;
  const hidden = `${prefix}-hidden`;
  const pattern = `${prefix}-.*`;
  const heartbeat = (group: string, token: string, body: Record<string, unknown>) => g.call('POST', v3(`/consumer-groups/${group}/heartbeat`), token, body);
  const v2 = (method: string, p: string, token: string, body?: unknown) => g.call(method, p, token, body);
  const topicsOf = (tps: { topic: string }[] | undefined) => [...new Set((tps ?? []).map((x) => x.topic))].sort();

  beforeAll(async () => {
    await createTopic(readable, 2, 3);
    await createTopic(hidden, 2, 3);
  });

  it('refuses a v3 heartbeat subscribing to a topic the member may not DESCRIBE, and writes nothing', async () => {
    const group = uniqueTopic('authz-hb');
    const token = await g.user('User:hb-names');
    expect((await acl('User:hb-names', 'READ', group, 'GROUP')).status).toBe(201);
    expect((await acl('User:hb-names', 'READ', readable)).status).toBe(201);
    const joined = await eventually(() => heartbeat(group, token, { member_epoch: 0, subscribed_topic_names: [readable] }), (r) => r.status === 200);
    expect(joined.status).toBe(200);
    const { member_id, member_epoch, group_epoch } = joined.body;

    // A new member naming the hidden topic: refused, no member joins.
    const refusedJoin = await heartbeat(group, token, { member_epoch: 0, subscribed_topic_names: [readable, hidden] });
    expect(refusedJoin.status).toBe(403);
    expect(refusedJoin.body).toMatchObject({ error_code: 40301, message: expect.stringContaining('TOPIC_AUTHORIZATION_FAILED') });
    // The member changing its subscription to include it: refused, the epoch does not move.
    const refusedChange = await heartbeat(group, token, { member_id, member_epoch, subscribed_topic_names: [hidden] });
    expect(refusedChange.status).toBe(403);
    expect(refusedChange.body.error_code).toBe(40301);

    const members = (await g.call('GET', v3(`/consumer-groups/${group}/consumers`), g.adminToken)).body.data;
    expect(members.map((m: any) => m.consumer_id)).toEqual([member_id]);
    expect(members[0].subscription).toEqual({ topics: [readable] });
    expect((await g.call('GET', v3(`/consumer-groups/${group}`), g.adminToken)).body.group_epoch).toBe(group_epoch);
  });

  it('resolves a v3 heartbeat\'s subscribed_topic_regex only over topics the member may DESCRIBE', async () => {
    const group = uniqueTopic('authz-hb-re');
    const token = await g.user('User:hb-regex');
    expect((await acl('User:hb-regex', 'READ', group, 'GROUP')).status).toBe(201);
    expect((await acl('User:hb-regex', 'DESCRIBE', readable)).status).toBe(201);
    const joined = await eventually(() => heartbeat(group, token, { member_epoch: 0, subscribed_topic_regex: pattern }), (r) => r.status === 200);
    expect(joined.status).toBe(200);
    expect(topicsOf(joined.body.assignment)).toEqual([readable]);
    expect(joined.body.assignment).toHaveLength(2);
  });

  it('gives a v2 topic_pattern subscription only the matching topics the principal may READ', async () => {
    const group = uniqueTopic('authz-v2-re');
    const token = await g.user('User:v2-pattern');
    expect((await acl('User:v2-pattern', 'READ', group, 'GROUP')).status).toBe(201);
    expect((await acl('User:v2-pattern', 'READ', readable)).status).toBe(201);
    // DESCRIBE alone does not make a topic part of a v2 pattern subscription: the instance could not read it.
    expect((await acl('User:v2-pattern', 'DESCRIBE', hidden)).status).toBe(201);
    const created = await eventually(() => v2('POST', `/consumers/${group}`, token, { name: 'i1', format: 'json', 'auto.offset.reset': 'earliest' }), (r) => r.status === 200);
    expect(created.status).toBe(200);
    const base = `/consumers/${group}/instances/i1`;
    expect((await v2('POST', `${base}/subscription`, token, { topic_pattern: pattern })).status).toBe(204);
    const polled = await v2('GET', `${base}/records?timeout=2000`, token);
    expect(polled.status).toBe(200);
    const assigned = (await v2('GET', `${base}/assignments`, token)).body.partitions;
    expect(topicsOf(assigned)).toEqual([readable]);
    expect(assigned).toHaveLength(2);
  });

  it('refuses a v2 instance\'s records call within the ACL bound once READ on a topic it reads is revoked, and returns nothing', async () => {
    const topic = uniqueTopic('authz-revoked');
    await createTopic(topic, 1, 3);
    for (let i = 0; i < 3; i++) await g.call('POST', v3(`/topics/${topic}/records`), g.adminToken, { partition_id: 0, value: { type: 'JSON', data: { n: i } } });
    const group = uniqueTopic('authz-v2-revoke');
    const token = await g.user('User:v2-revoked');
    expect((await acl('User:v2-revoked', 'READ', group, 'GROUP')).status).toBe(201);
    expect((await acl('User:v2-revoked', 'READ', topic)).status).toBe(201);
    expect((await eventually(() => v2('POST', `/consumers/${group}`, token, { name: 'i1', format: 'json', 'auto.offset.reset': 'earliest' }), (r) => r.status === 200)).status).toBe(200);
    const base = `/consumers/${group}/instances/i1`;
    expect((await v2('POST', `${base}/subscription`, token, { topics: [topic] })).status).toBe(204);
    const first = await eventually(() => v2('GET', `${base}/records?timeout=1000`, token), (r) => r.status === 200 && r.body.length === 3);
    expect(first.body.map((r: any) => r.value)).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }]);

    expect((await revoke('User:v2-revoked', 'READ', topic)).status).toBe(200);
    await new Promise((r) => setTimeout(r, ACL_BOUND_MS));
    for (let i = 3; i < 5; i++) await g.call('POST', v3(`/topics/${topic}/records`), g.adminToken, { partition_id: 0, value: { type: 'JSON', data: { n: i } } });
    const refused = await v2('GET', `${base}/records?timeout=500`, token);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error_code: 40301, message: expect.stringContaining('TOPIC_AUTHORIZATION_FAILED') });
    // Nothing was read for it, and the previous poll's positions were not auto-committed by the refused call.
    expect((await g.call('GET', v3(`/consumer-groups/${group}/offsets`), g.adminToken)).body.data).toEqual([]);
  });
});
