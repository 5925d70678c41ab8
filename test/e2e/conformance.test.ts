/**
 * Conformance with Confluent's REST Proxy v3 OpenAPI document (test/conformance/): every v3
 * operation Tributary serves is called over HTTP against the shared stack — answers and
 * representative errors — and each JSON body is validated against the spec's response schema.
 * A route added to lib/http/routes.ts that the spec describes fails here until this file calls it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { matchRoute, routeKey, ROUTES } from '../../lib/http/routes.js';
import { call, createTopic, uniqueTopic, v3, type Reply } from '../support/api.js';
import { OpenApiValidator } from '../support/openapi.js';

const spec = OpenApiValidator.fromFile();
/** Route keys (lib/http/routes.ts) this file has called and validated. */
const exercised = new Set<string>();

/**
 * v3 routes that are Tributary's own (no operation in the spec, so no schema to check): the
 * native group protocol, fetch, ListOffsets, DeleteRecords, producer ids, brokers joining and
 * leaving, reassignments and elections, the balancer, the metadata view, the controller lease, client quotas,
 * a partition's S3 segments, transactions and push subscriptions.
 */
const EXTENSIONS = [
  'GET /v3/clusters/{cluster_id}/controller',
  'GET /v3/clusters/{cluster_id}/metadata',
  'POST /v3/clusters/{cluster_id}/brokers',
  'DELETE /v3/clusters/{cluster_id}/brokers/{broker_id}',
  'GET /v3/clusters/{cluster_id}/balancer',
  'PATCH /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/reassignment',
  'DELETE /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/reassignment',
  'POST /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}',
  'POST /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/records:delete',
  'POST /v3/clusters/{cluster_id}/producers',
  'GET /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/records',
  'GET /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/offsets',
  'GET /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/segments',
  'POST /v3/clusters/{cluster_id}/consumer-groups/{group_id}/heartbeat',
  'POST /v3/clusters/{cluster_id}/consumer-groups/{group_id}/offsets:commit',
  'GET /v3/clusters/{cluster_id}/consumer-groups/{group_id}/offsets',
  'POST /v3/clusters/{cluster_id}/consumer-groups/{group_id}/offsets:reset',
  'DELETE /v3/clusters/{cluster_id}/consumer-groups/{group_id}',
  'GET /v3/clusters/{cluster_id}/client-quotas',
  'GET /v3/clusters/{cluster_id}/client-quotas/{principal}',
  'PUT /v3/clusters/{cluster_id}/client-quotas/{principal}',
  'DELETE /v3/clusters/{cluster_id}/client-quotas/{principal}',
  'GET /v3/clusters/{cluster_id}/transactions',
  'GET /v3/clusters/{cluster_id}/transactions/{transactional_id}',
  'POST /v3/clusters/{cluster_id}/transactions/{transactional_id}/producer',
  'POST /v3/clusters/{cluster_id}/transactions/{transactional_id}/partitions',
  'POST /v3/clusters/{cluster_id}/transactions/{transactional_id}/offsets',
  'POST /v3/clusters/{cluster_id}/transactions/{transactional_id}/end',
  'POST /v3/clusters/{cluster_id}/subscriptions',
  'GET /v3/clusters/{cluster_id}/subscriptions',
  'GET /v3/clusters/{cluster_id}/subscriptions/{subscription_name}',
  'DELETE /v3/clusters/{cluster_id}/subscriptions/{subscription_name}',
  'POST /v3/clusters/{cluster_id}/transactions/{transactional_id}/abort',
  'GET /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/producers',
  'POST /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/hanging-transactions:end',
];

/** Calls a route, validates the answer against the spec, and records the route as exercised. */
async function check(method: string, path: string, status: number, body?: unknown): Promise<Reply> {
  const r = await call(method, path, body);
  const m = matchRoute(method, path.split('?')[0] as string);
  if (m) exercised.add(routeKey(m.route));
  const result = spec.validate(method, path, r.status, r.body);
  expect(result.operation, `${method} ${path} is not a spec operation`).toBeDefined();
  expect(result.errors, `${method} ${path} → ${r.status} ${r.text.slice(0, 400)} (against ${result.checkedAgainst})`).toEqual([]);
  expect(r.status, `${method} ${path}: ${r.text.slice(0, 400)}`).toBe(status);
  if (status >= 400) expect(r.body).toEqual({ error_code: expect.any(Number), message: expect.any(String) });
  return r;
}

const T = uniqueTopic('conf');
const GONE = uniqueTopic('conf-gone');
const GROUP = uniqueTopic('conf-g');
let member = { member_id: '', member_epoch: 0 };
let assigned: { topic: string; partition: number }[] = [];

beforeAll(async () => {
  await createTopic(T, 2, 3);
  const hb = (body: unknown) => call('POST', v3(`/consumer-groups/${GROUP}/heartbeat`), body);
  const joined = (await hb({ member_epoch: 0, subscribed_topic_names: [T], session_timeout_ms: 120_000 })).body;
  const settled = (await hb({ member_id: joined.member_id, member_epoch: joined.member_epoch, owned_partitions: joined.assignment })).body;
  member = { member_id: settled.member_id, member_epoch: settled.member_epoch };
  assigned = settled.assignment;
  expect(assigned).toHaveLength(2);
});

afterAll(async () => {
  await call('POST', v3(`/consumer-groups/${GROUP}/heartbeat`), { ...member, member_epoch: -1 });
});

describe('Conformance: REST Proxy v3 responses validate against Confluent\'s OpenAPI document', () => {
  it('clusters and brokers', async () => {
    await check('GET', '/v3/clusters', 200);
    const c = await check('GET', v3(), 200);
    expect(c.body.controller.related).toMatch(/\/controller$/);
    await check('GET', '/v3/clusters/no-such-cluster', 404);
    await check('GET', v3('/brokers'), 200);
    await check('GET', v3('/brokers/1'), 200);
    await check('GET', v3('/brokers/99'), 404);
    await check('GET', v3('/brokers/1/partition-replicas'), 200);
    await check('GET', v3('/brokers/99/partition-replicas'), 404);
  });

  it('broker and cluster configs', async () => {
    const all = await check('GET', v3('/brokers/-/configs'), 200);
    expect(all.body.data.filter((x: any) => x.name === 'broker.id').map((x: any) => x.broker_id).sort()).toEqual([1, 2, 3]);
    const one = await check('GET', v3('/brokers/2/configs'), 200);
    expect(one.body.data.find((x: any) => x.name === 'broker.id')).toMatchObject({ value: '2', is_read_only: true, source: 'STATIC_BROKER_CONFIG' });
    await check('GET', v3('/brokers/2/configs/broker.id'), 200);
    await check('GET', v3('/brokers/2/configs/no.such.config'), 404);
    await check('GET', v3('/brokers/99/configs'), 404);
    const cluster = await check('GET', v3('/broker-configs'), 200);
    const name = cluster.body.data[0].name as string;
    await check('GET', v3(`/broker-configs/${name}`), 200);
    await check('GET', v3('/broker-configs/no.such.config'), 404);
    // Writes are checked through their refusals and validate_only, so the shared cluster's configs stay as they are.
    await check('POST', v3('/broker-configs:alter'), 204, { data: [{ name, value: cluster.body.data[0].value }], validate_only: true });
    await check('POST', v3('/broker-configs:alter'), 400, { data: [{ name: 'no.such.config', value: '1' }] });
    await check('PUT', v3('/broker-configs/no.such.config'), 400, { value: '1' });
    await check('DELETE', v3('/broker-configs/no.such.config'), 404);
  });

  it('topics, partitions, replicas and offsets', async () => {
    await check('GET', v3('/topics'), 200);
    await check('POST', v3('/topics'), 201, { topic_name: GONE, partitions_count: 1, replication_factor: 1 });
    await check('POST', v3('/topics'), 400, { topic_name: GONE, partitions_count: 1, replication_factor: 1 });
    await check('POST', v3('/topics'), 422, { topic_name: 7 });
    await check('GET', v3(`/topics/${T}`), 200);
    await check('GET', v3('/topics/no-such-topic'), 404);
    await check('PATCH', v3(`/topics/${GONE}`), 200, { partitions_count: 2 });
    await check('PATCH', v3(`/topics/${GONE}`), 400, { partitions_count: 1 });
    await check('DELETE', v3(`/topics/${GONE}`), 204);
    await check('DELETE', v3(`/topics/${GONE}`), 404);

    const parts = await check('GET', v3(`/topics/${T}/partitions`), 200);
    expect(parts.body.data[0].replica_states).toHaveLength(3);
    await check('GET', v3(`/topics/${T}/partitions/0`), 200);
    await check('GET', v3(`/topics/${T}/partitions/9`), 404);
    const replicas = await check('GET', v3(`/topics/${T}/partitions/0/replicas`), 200);
    expect(replicas.body.data.map((r: any) => r.broker_id).sort()).toEqual([1, 2, 3]);
    const leader = replicas.body.data.find((r: any) => r.is_leader);
    expect(leader).toMatchObject({ kind: 'KafkaReplica', is_in_sync: true, state: 'in-sync' });
    await check('GET', v3(`/topics/${T}/partitions/0/replicas/${leader.broker_id}`), 200);
    await check('GET', v3(`/topics/${T}/partitions/0/replicas/99`), 404);
    await check('GET', v3(`/topics/${T}/partitions/9/replicas`), 404);

    const off = await check('GET', v3(`/topics/${T}/partitions/0/offset`), 200);
    expect(off.body).toMatchObject({ kind: 'KafkaPartitionWithOffsets', earliest_offset: 0 });
    await check('GET', v3(`/topics/${T}/partitions/0/offset?offset_type=earliest_and_latest`), 200);
    await check('GET', v3(`/topics/${T}/partitions/0/offset?offset_type=sometimes`), 400);
    await check('GET', v3(`/topics/${T}/partitions/9/offset`), 404);

    await check('GET', v3('/topics/-/partitions/-/reassignment'), 200);
    await check('GET', v3(`/topics/${T}/partitions/-/reassignment`), 200);
    await check('GET', v3(`/topics/${T}/partitions/0/reassignment`), 404);
  });

  it('topic configs', async () => {
    await check('GET', v3(`/topics/${T}/configs`), 200);
    await check('GET', v3(`/topics/${T}/configs/retention.ms`), 200);
    await check('GET', v3(`/topics/${T}/configs/no.such.config`), 404);
    await check('PUT', v3(`/topics/${T}/configs/retention.ms`), 204, { value: '3600000' });
    await check('PUT', v3(`/topics/${T}/configs/retention.ms`), 400, { value: 'soon' });
    await check('DELETE', v3(`/topics/${T}/configs/retention.ms`), 204);
    await check('DELETE', v3(`/topics/${T}/configs/no.such.config`), 404);
    await check('POST', v3(`/topics/${T}/configs:alter`), 204, { data: [{ name: 'retention.ms', value: '7200000' }, { name: 'retention.ms', operation: 'DELETE' }] });
    await check('POST', v3(`/topics/${T}/configs:alter`), 422, { data: 'nope' });
    const every = await check('GET', v3('/topics/-/configs'), 200);
    expect(every.body.data.some((x: any) => x.topic_name === T)).toBe(true);
  });

  it('produce', async () => {
    const one = await check('POST', v3(`/topics/${T}/records`), 200, { partition_id: 0, key: { type: 'STRING', data: 'k' }, value: { type: 'JSON', data: { n: 1 } } });
    expect(one.body.error_code).toBe(200);
    await check('POST', v3(`/topics/${T}/records`), 422, { value: { type: 'NOPE', data: 1 } });
    await check('POST', v3(`/topics/no-such-topic/records`), 404, { value: { type: 'STRING', data: 'x' } });
    await check('POST', v3(`/topics/${T}/records:batch`), 207, { entries: [{ id: 'a', partition_id: 1, value: { type: 'STRING', data: 'x' } }, { id: 'b', value: { type: 'STRING', data: 'y' } }] });
  });

  it('consumer groups, consumers, assignments and lags', async () => {
    const commit = await call('POST', v3(`/consumer-groups/${GROUP}/offsets:commit`), { ...member, offsets: assigned.map((tp) => ({ ...tp, offset: 0 })) });
    expect(commit.status, commit.text).toBe(200);
    await check('GET', v3('/consumer-groups'), 200);
    const g = await check('GET', v3(`/consumer-groups/${GROUP}`), 200);
    expect(g.body).toMatchObject({ type: 'CONSUMER', is_mixed_consumer_group: false, coordinator: { related: expect.any(String) } });
    await check('GET', v3('/consumer-groups/no-such-group'), 404);
    const consumers = await check('GET', v3(`/consumer-groups/${GROUP}/consumers`), 200);
    expect(consumers.body.data.map((m: any) => m.consumer_id)).toEqual([member.member_id]);
    const id = member.member_id;
    await check('GET', v3(`/consumer-groups/${GROUP}/consumers/${id}`), 200);
    await check('GET', v3(`/consumer-groups/${GROUP}/consumers/nobody`), 404);
    const assignments = await check('GET', v3(`/consumer-groups/${GROUP}/consumers/${id}/assignments`), 200);
    expect(assignments.body.data.map((a: any) => a.partition_id).sort()).toEqual([0, 1]);
    await check('GET', v3(`/consumer-groups/${GROUP}/consumers/${id}/assignments/${T}/partitions/0`), 200);
    await check('GET', v3(`/consumer-groups/${GROUP}/consumers/${id}/assignments/${T}/partitions/9`), 404);
    const lags = await check('GET', v3(`/consumer-groups/${GROUP}/lags`), 200);
    expect(lags.body.data.map((l: any) => l.consumer_id)).toEqual([id, id]);
    const lag = await check('GET', v3(`/consumer-groups/${GROUP}/lags/${T}/partitions/0`), 200);
    expect(lag.body).toMatchObject({ current_offset: 0, consumer_id: id, client_id: 'tributary' });
    await check('GET', v3(`/consumer-groups/${GROUP}/lags/${T}/partitions/9`), 404);
    const summary = await check('GET', v3(`/consumer-groups/${GROUP}/lag-summary`), 200);
    expect(summary.body.total_lag).toBe(lags.body.data.reduce((n: number, l: any) => n + l.lag, 0));
    expect(summary.body.max_lag_consumer.related).toMatch(new RegExp(`/consumers/${id}$`));
    await check('GET', v3('/consumer-groups/no-such-group/lag-summary'), 404);
  });

  it('ACLs', async () => {
    const principal = `User:${GROUP}`;
    const acl = { resource_type: 'TOPIC', resource_name: T, pattern_type: 'LITERAL', principal, host: '*', operation: 'READ', permission: 'ALLOW' };
    await check('POST', v3('/acls'), 201, acl);
    await check('POST', v3('/acls'), 400, { ...acl, resource_type: 'CLUSTER' });
    // Confluent's server answers a batch create 204 (CreateAclBatchAction); its OpenAPI document lists 201 only.
    const batch = await call('POST', v3('/acls:batch'), { data: [{ ...acl, operation: 'WRITE' }] });
    expect(batch.status, batch.text).toBe(204);
    expect(batch.text).toBe('');
    exercised.add(`POST /v3/clusters/{cluster_id}/acls:batch`);
    await check('POST', v3('/acls:batch'), 400, { data: [{ ...acl, operation: 'ANY' }] });
    const found = await check('GET', v3(`/acls?principal=${encodeURIComponent(principal)}`), 200);
    expect(found.body.data).toHaveLength(2);
    await check('GET', v3('/acls?resource_type=NOPE'), 400);
    const filter = `resource_type=TOPIC&pattern_type=MATCH&resource_name=${T}&operation=ANY&permission=ANY&principal=${encodeURIComponent(principal)}`;
    const deleted = await check('DELETE', v3(`/acls?${filter}`), 200);
    expect(deleted.body.data).toHaveLength(2);
    await check('DELETE', v3('/acls?resource_type=TOPIC'), 400);
  });

  it("answers the spec's operations it does not serve with the spec's 404 error shape", async () => {
    for (const [method, path, body] of [
      ['POST', v3('/brokers/1/configs:alter'), { data: [] }],
      ['PUT', v3('/brokers/1/configs/log.retention.ms'), { value: '1' }],
      ['DELETE', v3('/brokers/1/configs/log.retention.ms'), undefined],
    ] as const) {
      const r = await call(method, path, body);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body).toEqual({ error_code: 404, message: expect.stringMatching(/404/) });
      expect(spec.validate(method, path, r.status, r.body).errors).toEqual([]);
    }
  });

  it('has called every v3 route that the spec describes, and every other v3 route is a listed extension', () => {
    const v3Routes = ROUTES.filter((r) => r.path.startsWith('/v3'));
    const inSpec = v3Routes.filter((r) => spec.find(r.method, r.path) !== undefined).map(routeKey);
    expect(inSpec.filter((k) => !exercised.has(k))).toEqual([]);
    expect(v3Routes.filter((r) => spec.find(r.method, r.path) === undefined).map(routeKey).sort()).toEqual([...EXTENSIONS].sort());
  });
});
