/**
 * ACLs through the enforcement table, end to end: real ACLs created with REST Proxy v3's
 * `POST /v3/clusters/{c}/acls` grant a principal exactly what they name.
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
