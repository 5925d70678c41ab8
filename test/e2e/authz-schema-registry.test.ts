/**
 * The schema registry's ACLs, end to end with authorization on: SUBJECT READ, WRITE, DELETE and
 * ALTER_CONFIGS on a subject grant exactly those calls; schemas by id need READ on a subject that
 * holds them (or CLUSTER DESCRIBE); references need READ on their subjects; lists show the
 * subjects the caller may READ.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v3 } from '../support/api.js';
import { startAuthGateway, type AuthGateway } from '../support/auth-gateway.js';

let g: AuthGateway;
const tag = `${process.pid}-${Date.now().toString(36)}`;
const mine = `authz-sr-${tag}-mine`;
const theirs = `authz-sr-${tag}-theirs`;
const schema = (name: string) => JSON.stringify({ type: 'record', name, namespace: 'tributary.authz', fields: [{ name: 'a', type: 'string' }] });
let theirId: number;

beforeAll(async () => {
  g = await startAuthGateway();
  const r = await g.call('POST', `/subjects/${theirs}/versions`, g.adminToken, { schema: schema('Theirs') });
  expect(r.status, r.text).toBe(200);
  theirId = r.body.id;
});
afterAll(async () => {
  await g?.close();
});

const acl = (principal: string, operation: string, resourceName: string, resourceType = 'SUBJECT') =>
  g.call('POST', v3('/acls'), g.adminToken, { resource_type: resourceType, resource_name: resourceName, pattern_type: 'LITERAL', principal, host: '*', operation, permission: 'ALLOW' });

/** Retries until the status is no longer 403 (ACLs apply within the metadata cache's bound), at most 10 s. */
async function eventually(attempt: () => ReturnType<AuthGateway['call']>) {
  let r = await attempt();
  for (let i = 0; i < 100 && r.status === 403; i++) {
    await new Promise((res) => setTimeout(res, 100));
    r = await attempt();
  }
  return r;
}

describe('Schema registry ACLs', () => {
  it('grants registration with SUBJECT WRITE, reading with READ, deleting with DELETE, levels with ALTER_CONFIGS, each on its subject only', async () => {
    const p = `User:sr-${tag}`;
    const token = await g.user(p);
    const register = () => g.call('POST', `/subjects/${mine}/versions`, token, { schema: schema('Mine') });
    const denied = await register();
    expect(denied.status).toBe(403);
    expect(denied.body.error_code).toBe(40301);
    expect((await g.call('GET', `/subjects/${mine}/versions`, g.adminToken)).status).toBe(404);

    expect((await acl(p, 'WRITE', mine)).status).toBe(201);
    const registered = await eventually(register);
    expect(registered.status, registered.text).toBe(200);
    expect((await g.call('GET', `/subjects/${mine}/versions`, token)).status).toBe(403);
    expect((await g.call('POST', `/subjects/${theirs}/versions`, token, { schema: schema('Theirs') })).status).toBe(403);

    expect((await acl(p, 'READ', mine)).status).toBe(201);
    const versions = await eventually(() => g.call('GET', `/subjects/${mine}/versions`, token));
    expect(versions.body).toEqual([1]);
    expect((await g.call('GET', '/subjects', token)).body).toEqual([mine]);
    expect((await g.call('GET', `/schemas/ids/${registered.body.id}`, token)).status).toBe(200);
    expect((await g.call('GET', `/schemas/ids/${theirId}`, token)).status).toBe(403);
    expect((await g.call('GET', `/subjects/${theirs}/versions/1`, token)).status).toBe(403);
    expect((await g.call('GET', '/schemas/types', token)).status).toBe(200);

    // A reference to a subject it may not READ: refused, nothing registered.
    const withRef = { schema: JSON.stringify({ type: 'record', name: 'Both', namespace: 'tributary.authz', fields: [{ name: 't', type: 'tributary.authz.Theirs' }] }), references: [{ name: 'tributary.authz.Theirs', subject: theirs, version: 1 }] };
    expect((await g.call('POST', `/subjects/${mine}/versions`, token, withRef)).status).toBe(403);
    expect((await g.call('GET', `/subjects/${mine}/versions`, token)).body).toEqual([1]);

    expect((await g.call('PUT', `/config/${mine}`, token, { compatibility: 'NONE' })).status).toBe(403);
    expect((await acl(p, 'ALTER_CONFIGS', mine)).status).toBe(201);
    expect((await eventually(() => g.call('PUT', `/config/${mine}`, token, { compatibility: 'NONE' }))).status).toBe(200);
    // ALTER_CONFIGS implies DESCRIBE_CONFIGS, as in Kafka.
    expect((await g.call('GET', `/config/${mine}`, token)).body).toEqual({ compatibilityLevel: 'NONE' });
    expect((await g.call('PUT', '/config', token, { compatibility: 'NONE' })).status).toBe(403);

    expect((await g.call('DELETE', `/subjects/${mine}`, token)).status).toBe(403);
    expect((await acl(p, 'DELETE', mine)).status).toBe(201);
    expect((await eventually(() => g.call('DELETE', `/subjects/${mine}`, token))).body).toEqual([1]);
  });
});

describe('v2 produce with schemas under ACLs', () => {
  it('writes by schema id with TOPIC WRITE alone; registering its schema text needs SUBJECT WRITE on <topic>-value, and a denial writes nothing', async () => {
    const topic = `authz-sr-${tag}-v2`;
    expect((await g.call('POST', v3('/topics'), g.adminToken, { topic_name: topic, partitions_count: 1, replication_factor: 3 })).status).toBe(201);
    const p = `User:sr-v2-${tag}`;
    const token = await g.user(p);
    expect((await acl(p, 'WRITE', topic, 'TOPIC')).status).toBe(201);
    const produce = (body: unknown) => fetch(`${g.gateway.url}/topics/${topic}/partitions/0`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/vnd.kafka.avro.v2+json' }, body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    const byId = await eventually(() => produce({ value_schema_id: theirId, records: [{ value: { a: 'x' } }] }) as never);
    expect(byId.status, JSON.stringify(byId.body)).toBe(200);
    const inline = { value_schema: schema('Inline'), records: [{ value: { a: 'y' } }] };
    const denied = await produce(inline);
    expect(denied.status).toBe(403);
    expect(denied.body.error_code).toBe(40301);
    expect((await g.call('GET', `/subjects/${topic}-value/versions`, g.adminToken)).status).toBe(404);
    expect((await acl(p, 'WRITE', `${topic}-value`)).status).toBe(201);
    const allowed = await eventually(() => produce(inline) as never);
    expect(allowed.status, JSON.stringify(allowed.body)).toBe(200);
    expect(allowed.body.offsets[0].offset).toBe(1);
  });
});
