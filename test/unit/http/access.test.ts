/** The access column of lib/http/routes.ts: every route says what Kafka operation it needs. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { AccessCheck, AccessRule } from '../../../lib/http/access.js';
import { CLUSTER_RESOURCE } from '../../../lib/http/access.js';
import { DEFAULT_ROUTE, ROUTES, routeKey } from '../../../lib/http/routes.js';

const KINDS = new Set(['checks', 'anyOf', 'anyTopic', 'open', 'filtered', 'inBody']);
const params = { cluster_id: 'c', topic_name: 'orders', partition_id: '0', group_id: 'g1', group_name: 'g2', broker_id: '1', name: 'x', consumer_id: 'm', instance: 'i', transactional_id: 'tx', subject: 'orders-value', id: '1', version: '1' };

const rule = (method: string, path: string): AccessRule => {
  const r = ROUTES.find((x) => x.method === method && x.path === path);
  if (!r) throw new Error(`no route ${method} ${path}`);
  return r.access;
};
const checks = (a: AccessRule): readonly AccessCheck[] => (a.kind === 'checks' ? a.checks(params) : a.kind === 'inBody' ? checks(a.rule) : []);
const C = '/v3/clusters/{cluster_id}';
const T = `${C}/topics/{topic_name}`;
const P = `${T}/partitions/{partition_id}`;
const G = `${C}/consumer-groups/{group_id}`;

describe('Table: ROUTES access', () => {
  it('gives every route (the catch-all 404 excepted) an access rule of a known kind', () => {
    const missing = ROUTES.filter((r) => !r.access || !KINDS.has((r.access as { kind?: string }).kind ?? '')).map(routeKey);
    expect(missing).toEqual([]);
    expect(DEFAULT_ROUTE.access.kind).toBe('open');
  });

  it('names a resource in every check, from the route\'s own path parameters', () => {
    for (const r of ROUTES) {
      for (const c of checks(r.access)) {
        expect(c.resourceName, routeKey(r)).not.toBe('');
        if (c.resourceType === 'TOPIC') expect(r.path, routeKey(r)).toContain('{topic_name}');
        if (c.resourceType === 'GROUP') expect(r.path, routeKey(r)).toMatch(/\{group_(id|name)\}/);
        if (c.resourceType === 'CLUSTER') expect(c.resourceName).toBe(CLUSTER_RESOURCE);
        if (c.resourceType === 'TRANSACTIONAL_ID') expect(r.path, routeKey(r)).toContain('{transactional_id}');
        if (c.resourceType === 'SUBJECT') expect(r.path, routeKey(r)).toContain('{subject}');
      }
    }
  });

  it('leaves unchecked only what Kafka answers to anyone (the cluster id) and the filtered lists', () => {
    const open = ROUTES.filter((r) => r.access.kind === 'open').map(routeKey);
    expect(open).toEqual([`GET /v3/clusters`, `GET ${C}`, 'GET /schemas/types']);
    const filtered = ROUTES.filter((r) => r.access.kind === 'filtered').map(routeKey).sort();
    expect(filtered).toEqual([`GET ${C}/consumer-groups`, `GET ${C}/metadata`, `GET ${C}/topics`, `GET ${C}/topics/-/configs`, `GET ${C}/transactions`, `GET ${C}/subscriptions`, 'GET /topics', 'GET /subjects'].sort());
  });

  it('follows Kafka\'s operation per API', () => {
    const one = (m: string, p: string) => checks(rule(m, p)).map((c) => `${c.resourceType} ${c.operation}`).join(', ');
    expect(one('POST', `${T}/records`)).toBe('TOPIC WRITE');
    expect(one('POST', `${T}/records:batch`)).toBe('TOPIC WRITE');
    expect(one('POST', '/topics/{topic_name}')).toBe('TOPIC WRITE');
    expect(one('GET', `${P}/records`)).toBe('TOPIC READ');
    expect(one('GET', '/topics/{topic_name}/partitions/{partition_id}/records')).toBe('TOPIC READ');
    expect(one('GET', `${P}/offsets`)).toBe('TOPIC DESCRIBE');
    expect(one('GET', T)).toBe('TOPIC DESCRIBE');
    expect(one('DELETE', T)).toBe('TOPIC DELETE');
    expect(one('PATCH', T)).toBe('TOPIC ALTER');
    expect(one('POST', `${P}/records:delete`)).toBe('TOPIC DELETE');
    expect(one('GET', `${T}/configs`)).toBe('TOPIC DESCRIBE_CONFIGS');
    expect(one('POST', `${T}/configs:alter`)).toBe('TOPIC ALTER_CONFIGS');
    expect(one('PUT', `${C}/broker-configs/{name}`)).toBe('CLUSTER ALTER_CONFIGS');
    expect(one('GET', `${C}/brokers`)).toBe('CLUSTER DESCRIBE');
    expect(one('POST', `${C}/brokers`)).toBe('CLUSTER ALTER');
    expect(one('POST', P)).toBe('CLUSTER ALTER');
    expect(one('PATCH', `${P}/reassignment`)).toBe('CLUSTER ALTER');
    expect(one('POST', `${G}/heartbeat`)).toBe('GROUP READ');
    expect(one('POST', `${G}/offsets:commit`)).toBe('GROUP READ');
    expect(one('GET', `${G}/offsets`)).toBe('GROUP DESCRIBE');
    expect(one('GET', `${G}/lags`)).toBe('GROUP DESCRIBE');
    expect(one('DELETE', G)).toBe('GROUP DELETE');
    expect(one('POST', `${G}/offsets:reset`)).toBe('GROUP READ');
    expect(one('GET', '/consumers/{group_name}/instances/{instance}/records')).toBe('GROUP READ');
    const X = `${C}/transactions/{transactional_id}`;
    expect(one('POST', `${X}/producer`)).toBe('TRANSACTIONAL_ID WRITE');
    expect(one('POST', `${X}/partitions`)).toBe('TRANSACTIONAL_ID WRITE');
    expect(one('POST', `${X}/offsets`)).toBe('TRANSACTIONAL_ID WRITE');
    expect(one('POST', `${X}/end`)).toBe('TRANSACTIONAL_ID WRITE');
    expect(one('GET', X)).toBe('TRANSACTIONAL_ID DESCRIBE');
    expect(one('POST', `${X}/abort`)).toBe('CLUSTER ALTER');
    const S = '/subjects/{subject}';
    expect(one('GET', `${S}/versions`)).toBe('SUBJECT READ');
    expect(one('GET', `${S}/versions/{version}`)).toBe('SUBJECT READ');
    expect(one('POST', `${S}/versions`)).toBe('SUBJECT WRITE');
    expect(one('POST', S)).toBe('SUBJECT READ');
    expect(one('DELETE', S)).toBe('SUBJECT DELETE');
    expect(one('DELETE', `${S}/versions/{version}`)).toBe('SUBJECT DELETE');
    expect(one('GET', '/config/{subject}')).toBe('SUBJECT DESCRIBE_CONFIGS');
    expect(one('PUT', '/config/{subject}')).toBe('SUBJECT ALTER_CONFIGS');
    expect(one('PUT', '/config')).toBe('CLUSTER ALTER_CONFIGS');
    expect(one('PUT', '/mode')).toBe('CLUSTER ALTER_CONFIGS');
    expect(one('POST', '/compatibility/subjects/{subject}/versions/{version}')).toBe('SUBJECT READ');
    const init = rule('POST', `${C}/producers`);
    expect(init.kind).toBe('anyOf');
    expect(init.describe).toBe('WRITE on any TOPIC or CLUSTER IDEMPOTENT_WRITE');
  });

  it('lists every body-dependent check in routes.ts\'s doc comment, and the handler makes it', () => {
    const doc = readFileSync('lib/http/routes.ts', 'utf8').split('\nimport ')[0] ?? '';
    const inBody = ROUTES.filter((r) => r.access.kind === 'inBody');
    expect(inBody.map(routeKey)).toHaveLength(24);
    for (const r of inBody) {
      const tail = r.path.split('/').slice(-1)[0] as string;
      expect(doc, routeKey(r)).toContain(tail.replace(/^\{.*\}$/, ''));
    }
    const source = (f: string) => readFileSync(`lib/http/${f}`, 'utf8');
    expect(source('admin-routes.ts')).toMatch(/enforce\(anyOf\(clusterAccess\('CREATE'\), topic\('CREATE'\)\)/);
    expect(source('group-routes.ts').match(/requireAll\(req, topicsIn\('READ'/g)).toHaveLength(2);
    expect(source('group-routes.ts').match(/requireAll\(req, topicsIn\('DESCRIBE', b\.subscribed_topic_names\)/g)).toHaveLength(1);
    expect(source('consumer-routes.ts').match(/requireAll\(req, topicsIn\('READ'/g)).toHaveLength(6);
    // Patterns are resolved over what the principal may use: DESCRIBE for a v3 regex (Kafka's rule), READ for a v2 topic_pattern.
    expect(source('group-routes.ts')).toMatch(/visible\(req, topics, .*'DESCRIBE'\)/);
    expect(source('consumer-routes.ts')).toMatch(/visible\(req, topics, .*'READ'\)/);
    expect(source('transaction-routes.ts')).toMatch(/requireAll\(req, topicsIn\('WRITE'/);
    expect(source('transaction-routes.ts')).toMatch(/requireAll\(req, \[\{ operation: 'READ', resourceType: 'GROUP'.*topicsIn\('READ'/);
    const push = source('push-subscription-routes.ts');
    expect(push).toMatch(/requireAll\(req, \[\s*\.\.\.topicsIn\('READ', \[b\.topic_name\]\),\s*\{ operation: 'READ', resourceType: 'GROUP', resourceName: b\.group_id \},\s*\.\.\.topicsIn\('WRITE'/);
    expect(push).toMatch(/authorizedSubscription\(req, 'DESCRIBE'\)/);
    expect(push).toMatch(/authorizedSubscription\(req, 'DELETE'\)/);
    expect(push).toMatch(/authorize\(\{ \.\.\.caller, operation, resourceType: 'GROUP', resourceName: s\.groupId \}\)/);
    expect(push).toMatch(/visible\(req, await listSubscriptions\(\), \(s\) => \(\{ resourceType: 'GROUP'/);
    const registry = source('schema-registry-routes.ts');
    expect(registry.match(/await readableInput\(req\)/g)).toHaveLength(4);
    expect(registry).toMatch(/requireAll\(req, input\.references\.map\(\(r\) => \(\{ operation: 'READ', \.\.\.asSubject\(r\.subject\)/);
    expect(registry.match(/await readableId\(req\)/g)).toHaveLength(4);
    expect(registry).toMatch(/visible\(req, holders, asSubject, 'READ'\)/);
    expect(registry).toMatch(/visible\(req, await listSubjects\(.*\), asSubject, 'READ'\)/);
  });
});
