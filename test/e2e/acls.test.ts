/**
 * REST Proxy v3's ACL operations through the shared stack's HTTP API: create (one and batch,
 * idempotent), list with filters (MATCH and ANY), delete by filter, and bad input that is
 * refused with 400/40002 and stores nothing.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { call, uniqueTopic, v3 } from '../support/api.js';

const T = uniqueTopic('acl-e2e');
const ALICE = `User:${T}-alice`;
const acl = (over: Record<string, string> = {}) => ({
  resource_type: 'TOPIC', resource_name: T, pattern_type: 'LITERAL', principal: ALICE, host: '*', operation: 'READ', permission: 'ALLOW', ...over,
});
const q = (params: Record<string, string>) => `?${new URLSearchParams(params).toString()}`;
const strip = (d: any) => {
  const { kind: _k, metadata: _m, cluster_id: _c, ...rest } = d;
  return rest;
};
const listFor = async (params: Record<string, string>) => {
  const r = await call('GET', v3(`/acls${q(params)}`));
  expect(r.status, r.text).toBe(200);
  return r.body.data.map(strip);
};

afterAll(async () => {
  await call('DELETE', v3(`/acls${q({ resource_type: 'ANY', pattern_type: 'ANY', operation: 'ANY', permission: 'ANY', principal: ALICE })}`));
});

describe('Feature: ACLs through REST Proxy v3 routes', () => {
  it('creates one ACL (201), again without a duplicate, and lists it with its self link', async () => {
    expect((await call('POST', v3('/acls'), acl())).status).toBe(201);
    expect((await call('POST', v3('/acls'), acl())).status).toBe(201);
    const r = await call('GET', v3(`/acls${q({ principal: ALICE })}`));
    expect(r.body.kind).toBe('KafkaAclList');
    expect(r.body.data).toHaveLength(1);
    const [one] = r.body.data;
    expect(one).toMatchObject({ kind: 'KafkaAcl', ...acl(), cluster_id: expect.any(String) });
    // the self link finds exactly this ACL
    const self = new URL(one.metadata.self);
    const again = await call('GET', `${self.pathname}${self.search}`);
    expect(again.body.data.map(strip)).toEqual([acl()]);
  });

  it('creates a batch (204) and lists by filters: MATCH finds every pattern that applies, ANY only the exact name', async () => {
    const batch = [
      acl({ operation: 'WRITE', permission: 'DENY', host: '10.1.2.3' }),
      acl({ resource_name: `${T}-`, pattern_type: 'PREFIXED' }),
      acl({ resource_name: '*', principal: ALICE }),
      acl({ resource_type: 'GROUP', resource_name: `${T}-g`, operation: 'read' }),
      acl({ resource_type: 'CLUSTER', resource_name: 'kafka-cluster', operation: 'DESCRIBE' }),
    ];
    const r = await call('POST', v3('/acls:batch'), { data: batch });
    expect(r.status, r.text).toBe(204);
    expect(await listFor({ principal: ALICE })).toHaveLength(6);
    expect(await listFor({ principal: ALICE, resource_type: 'GROUP' })).toEqual([acl({ resource_type: 'GROUP', resource_name: `${T}-g`, operation: 'READ' })]);
    const matching = await listFor({ principal: ALICE, resource_type: 'TOPIC', resource_name: `${T}-x`, pattern_type: 'MATCH' });
    expect(matching.map((a: any) => `${a.pattern_type}:${a.resource_name}`).sort()).toEqual([`LITERAL:*`, `PREFIXED:${T}-`]);
    const anyPattern = await listFor({ principal: ALICE, resource_name: `${T}-`, pattern_type: 'ANY' });
    expect(anyPattern).toEqual([acl({ resource_name: `${T}-`, pattern_type: 'PREFIXED' })]);
    expect(await listFor({ principal: ALICE, operation: 'WRITE', permission: 'DENY', host: '10.1.2.3' })).toHaveLength(1);
    // REST Proxy's order: resource type first
    expect((await listFor({ principal: ALICE })).map((a: any) => a.resource_type)).toEqual(['CLUSTER', 'GROUP', 'TOPIC', 'TOPIC', 'TOPIC', 'TOPIC']);
  });

  it('deletes by filter and answers the deleted ACLs; the same delete again answers none', async () => {
    const filter = { resource_type: 'TOPIC', resource_name: T, pattern_type: 'MATCH', operation: 'ANY', permission: 'ANY', principal: ALICE };
    const r = await call('DELETE', v3(`/acls${q(filter)}`));
    expect(r.status, r.text).toBe(200);
    // the LITERAL name, the DENY on it, and LITERAL '*' apply to T; the PREFIXED `${T}-` does not
    expect(r.body.data.map(strip).map((a: any) => `${a.resource_name}/${a.operation}`).sort()).toEqual(['*/READ', `${T}/READ`, `${T}/WRITE`]);
    expect(r.body.data[0]).toMatchObject({ kind: 'KafkaAcl', metadata: { self: expect.stringContaining('/acls?') } });
    expect((await call('DELETE', v3(`/acls${q(filter)}`))).body).toEqual({ data: [] });
    expect(await listFor({ principal: ALICE })).toHaveLength(3);
  });

  it('refuses bad input with 400/40002 and stores nothing', async () => {
    const before = await listFor({ principal: ALICE });
    const bad: [string, string, unknown][] = [
      ['POST', '/acls', acl({ resource_type: 'NOPE' })],
      ['POST', '/acls', acl({ operation: 'ANY' })],
      ['POST', '/acls', acl({ pattern_type: 'MATCH' })],
      ['POST', '/acls', acl({ principal: 'alice' })],
      ['POST', '/acls', acl({ host: 'example.com' })],
      ['POST', '/acls', acl({ resource_type: 'CLUSTER', resource_name: 'other' })],
      ['POST', '/acls', '{not json'],
      ['POST', '/acls', [acl()]],
      ['POST', '/acls:batch', { data: [acl({ resource_name: `${T}-ok` }), acl({ permission: 'MAYBE' })] }],
      ['POST', '/acls:batch', { data: 'x' }],
      ['GET', `/acls${q({ resource_type: 'NOPE' })}`, undefined],
      ['GET', `/acls${q({ pattern_type: 'UNKNOWN' })}`, undefined],
      ['DELETE', `/acls${q({ resource_type: 'TOPIC', pattern_type: 'ANY', operation: 'ANY' })}`, undefined],
    ];
    for (const [method, path, body] of bad) {
      const r = await call(method, v3(path), body);
      expect(r.status, `${method} ${path} ${JSON.stringify(body)}: ${r.text}`).toBe(400);
      expect(r.body).toEqual({ error_code: 40002, message: expect.any(String) });
    }
    expect(await listFor({ principal: ALICE })).toEqual(before);
    expect((await call('GET', '/v3/clusters/nope/acls')).status).toBe(404);
  });
});
