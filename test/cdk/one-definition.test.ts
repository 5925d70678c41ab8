/**
 * One definition: the routes the local gateway serves (lib/http/routes.ts) and the tables the local
 * stack creates (lib/storage/tables.ts) are exactly what the synthesized template deploys — every
 * one of them, with the same function, key schema and stream, and nothing else.
 */
import { DescribeTableCommand, DynamoDBClient, ListTablesCommand, type TableDescription } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { deployedFunctions } from '../../cdk/cluster.js';
import { STATIC_ROUTES, staticRouteKey } from '../../lib/http/static-routes.js';
import { DEFAULT_ROUTE, ROUTES, routeKey } from '../../lib/http/routes.js';
import { DEFAULT_TABLE_PREFIX, coordinationTableSpec, replicaTableSpec, type TableSpec } from '../../lib/storage/tables.js';
import { logicalId, resourcesOf, synth, type Synthesized } from './synth.js';

const sorted = <T>(xs: T[]): T[] => [...xs].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
const expectedRoutes = () => sorted([...[...ROUTES, DEFAULT_ROUTE].map((r) => [routeKey(r), r.fn]), ...STATIC_ROUTES.map((r) => [staticRouteKey(r), r.fn])]);

/** Function logical id → catalog name. */
const functionNames = (s: Synthesized): Map<string, string> =>
  new Map(deployedFunctions(s.stack.cluster.settings).map((f) => [logicalId(s, (s.stack.cluster.functions as Record<string, any>)[f.name]), f.name]));

/** A table as both sides describe it: name, keys with their types, stream view. */
interface Shape { name: string; keys: string[]; stream: string | null }
const shapeOfSpec = (t: TableSpec): Shape => ({
  name: t.name,
  keys: [`HASH ${t.partitionKey.name} ${t.partitionKey.type}`, `RANGE ${t.sortKey.name} ${t.sortKey.type}`],
  stream: t.stream ?? null,
});
const shapeOfTemplate = (t: any): Shape => {
  const types = new Map<string, string>(t.AttributeDefinitions.map((a: any) => [a.AttributeName, a.AttributeType]));
  return {
    name: t.TableName,
    keys: t.KeySchema.map((k: any) => `${k.KeyType} ${k.AttributeName} ${types.get(k.AttributeName)}`),
    stream: t.StreamSpecification?.StreamViewType ?? null,
  };
};
const shapeOfLive = (t: TableDescription): Shape => {
  const types = new Map((t.AttributeDefinitions ?? []).map((a) => [a.AttributeName, a.AttributeType]));
  return {
    name: t.TableName ?? '',
    keys: (t.KeySchema ?? []).map((k) => `${k.KeyType} ${k.AttributeName} ${types.get(k.AttributeName)}`),
    stream: t.StreamSpecification?.StreamEnabled ? (t.StreamSpecification.StreamViewType ?? null) : null,
  };
};
const templateTables = (s: Synthesized): Shape[] => sorted(resourcesOf(s, 'AWS::DynamoDB::Table').map(([, t]) => shapeOfTemplate(t)));
const specTables = (brokers: number, prefix: string): Shape[] =>
  sorted([coordinationTableSpec(prefix), ...Array.from({ length: brokers }, (_, i) => replicaTableSpec(i + 1, prefix))].map(shapeOfSpec));

describe('One definition: routes', () => {
  it('serves every route of the route table, the catch-all and the console\'s static routes, with their functions on the HTTP API — and no other', () => {
    const s = synth({ brokers: 1 });
    const names = functionNames(s);
    const integrations = new Map(resourcesOf(s, 'AWS::ApiGatewayV2::Integration'));
    // (the WebSocket API's routes: test/cdk/websocket.test.ts)
    const httpApi = logicalId(s, s.stack.cluster.api);
    const served = resourcesOf(s, 'AWS::ApiGatewayV2::Route').filter(([, r]) => r.ApiId?.Ref === httpApi).map(([, r]) => {
      const integration = integrations.get(r.Target['Fn::Join'][1][1].Ref);
      return [r.RouteKey, names.get(integration.IntegrationUri['Fn::GetAtt'][0])];
    });
    expect(sorted(served)).toEqual(expectedRoutes());
  });

  it('serves the same routes with the same functions on the REST API, and sends everything else to the catch-all', () => {
    const s = synth({ brokers: 1, apiType: 'rest' });
    const names = functionNames(s);
    const resources = new Map(resourcesOf(s, 'AWS::ApiGateway::Resource'));
    const pathOf = (ref: any): string => {
      if (ref['Fn::GetAtt']?.[1] === 'RootResourceId') return '';
      const r = resources.get(ref.Ref);
      return `${pathOf(r.ParentId)}/${r.PathPart}`;
    };
    const methods = resourcesOf(s, 'AWS::ApiGateway::Method').map(([, m]) => {
      const arn = m.Integration.Uri['Fn::Join'][1].find((x: any) => x['Fn::GetAtt']);
      return { method: m.HttpMethod as string, path: pathOf(m.ResourceId) || '/', fn: names.get(arn['Fn::GetAtt'][0]) };
    });
    expect(sorted(methods.filter((m) => m.method !== 'ANY').map((m) => [`${m.method} ${m.path}`, m.fn])))
      .toEqual(sorted([...ROUTES.map((r) => [routeKey(r), r.fn]), ...STATIC_ROUTES.map((r) => [staticRouteKey(r), r.fn])]));
    const catchAll = methods.filter((m) => m.method === 'ANY');
    expect(new Set(catchAll.map((m) => m.fn))).toEqual(new Set([DEFAULT_ROUTE.fn]));
    // Every resource (and the root, and the greedy proxy) answers other methods as `$default` would.
    expect(sorted(catchAll.map((m) => m.path))).toEqual(sorted(['/', ...[...resources.keys()].map((id) => pathOf({ Ref: id }))]));
    expect(catchAll.map((m) => m.path)).toContain('/{proxy+}');
  });
});

describe('One definition: tables', () => {
  it('deploys exactly the tables of tables.ts for N brokers, with the same key schema and stream', () => {
    for (const brokers of [1, 5]) {
      const s = synth({ brokers, tablePrefix: DEFAULT_TABLE_PREFIX });
      expect(templateTables(s), `${brokers} brokers`).toEqual(specTables(brokers, DEFAULT_TABLE_PREFIX));
    }
  });

  it('deploys the tables the running local stack created, and no others', async () => {
    // The shared local stack (test/support/global-setup.ts): 3 brokers, the default prefix.
    const db = new DynamoDBClient({ endpoint: process.env.AWS_ENDPOINT_URL_DYNAMODB, maxAttempts: 2 });
    try {
      const names = ((await db.send(new ListTablesCommand({}))).TableNames ?? []).filter((n) => n.startsWith(`${DEFAULT_TABLE_PREFIX}-`));
      const live = await Promise.all(names.map(async (TableName) => shapeOfLive((await db.send(new DescribeTableCommand({ TableName }))).Table ?? {})));
      const s = synth({ brokers: 3, tablePrefix: DEFAULT_TABLE_PREFIX });
      expect(sorted(live)).toEqual(templateTables(s));
    } finally {
      db.destroy();
    }
  });
});
