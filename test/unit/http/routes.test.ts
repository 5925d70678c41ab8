import { describe, expect, it } from 'vitest';
import { parseJsonStream } from '../../../lib/http/api.js';
import { fetchRoutes } from '../../../lib/http/fetch-routes.js';
import { produceRoutes } from '../../../lib/http/produce-routes.js';
import { matchRoute, routeKey, ROUTES } from '../../../lib/http/routes.js';
import { adminRoutes } from '../../../lib/http/admin-routes.js';
import { rebalanceRoutes } from '../../../lib/http/rebalance-routes.js';
import { clusterConfigRoutes } from '../../../lib/http/cluster-config-routes.js';
import { clientQuotaRoutes } from '../../../lib/http/client-quota-routes.js';
import { replicaRoutes } from '../../../lib/http/replica-routes.js';
import { v2MetadataRoutes } from '../../../lib/http/metadata-routes.js';
import { aclRoutes } from '../../../lib/http/acl-routes.js';
import { consumerRoutes } from '../../../lib/http/consumer-routes.js';
import { groupRoutes } from '../../../lib/http/group-routes.js';
import { transactionRoutes } from '../../../lib/http/transaction-routes.js';
import { pushSubscriptionRoutes } from '../../../lib/http/push-subscription-routes.js';
import { schemaRegistryRoutes } from '../../../lib/http/schema-registry-routes.js';

describe('Table: ROUTES', () => {
  it('has a handler for every route in its function, and no handler without a route', () => {
    const handlers = { admin: { ...adminRoutes, ...aclRoutes, ...clientQuotaRoutes, ...clusterConfigRoutes, ...rebalanceRoutes, ...replicaRoutes, ...v2MetadataRoutes, ...schemaRegistryRoutes }, produce: { ...produceRoutes, ...transactionRoutes }, fetch: fetchRoutes, groups: { ...consumerRoutes, ...groupRoutes, ...pushSubscriptionRoutes } };
    for (const r of ROUTES) expect(handlers[r.fn][routeKey(r)], routeKey(r)).toBeTypeOf('function');
    for (const [fn, table] of Object.entries(handlers)) {
      for (const key of Object.keys(table)) {
        if (key === '$default') continue;
        expect(ROUTES.some((r) => r.fn === fn && routeKey(r) === key), `${fn}: ${key}`).toBe(true);
      }
    }
  });
});

describe('Function: matchRoute', () => {
  it('matches path variables and decodes them', () => {
    const m = matchRoute('GET', '/v3/clusters/abc/topics/my%2Etopic/partitions/2');
    expect(m?.route.path).toBe('/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}');
    expect(m?.pathParameters).toEqual({ cluster_id: 'abc', topic_name: 'my.topic', partition_id: '2' });
  });

  it('prefers literal segments over variables, and tells records from records:batch', () => {
    expect(matchRoute('POST', '/v3/clusters/c/topics/t/records:batch')?.route.path).toMatch(/records:batch$/);
    expect(matchRoute('POST', '/v3/clusters/c/topics/t/records')?.route.path).toMatch(/records$/);
    expect(matchRoute('POST', '/v3/clusters/c/topics/t/configs:alter')?.route.path).toMatch(/configs:alter$/);
    expect(matchRoute('GET', '/v3/clusters/c/topics/-/configs')?.route.path).toBe('/v3/clusters/{cluster_id}/topics/-/configs');
    expect(matchRoute('GET', '/v3/clusters/c/brokers/-/configs')?.route.path).toBe('/v3/clusters/{cluster_id}/brokers/-/configs');
    expect(matchRoute('GET', '/schemas/types')?.route.path).toBe('/schemas/types');
    expect(matchRoute('GET', '/subjects/a%2Fb.proto/versions/latest')?.pathParameters).toEqual({ subject: 'a/b.proto', version: 'latest' });
  });

  it('does not match other methods, extra segments or undecodable parameters', () => {
    expect(matchRoute('PATCH', '/v3/clusters')).toBeUndefined();
    expect(matchRoute('GET', '/v3/clusters/c/topics/t/partitions/0/records/extra')).toBeUndefined();
    expect(matchRoute('GET', '/v3/clusters/%E0%A4%A')).toBeUndefined();
  });
});

describe('Function: parseJsonStream', () => {
  it('splits concatenated and newline-separated documents, minding braces inside strings', () => {
    expect(parseJsonStream('{"a":"}{"}{"b":[1,{"c":2}]}\n {"d":"\\"}"}')).toEqual([{ a: '}{' }, { b: [1, { c: 2 }] }, { d: '"}' }]);
  });

  it.each(['', '   ', '{', '{"a":1}}', 'x', '{"a":1} 5', '{"a":}'])('rejects %j with a 400', (body) => {
    expect(() => parseJsonStream(body)).toThrow(expect.objectContaining({ status: 400, errorCode: 40002 }));
  });
});
