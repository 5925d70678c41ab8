/**
 * What the fuzzer knows of each route: valid path parameter values, valid bodies and queries (from
 * the e2e tests and REST Proxy v3's OpenAPI examples), the Content-Type it expects, and guards that
 * keep cases off the shared stack's cluster-wide state (its brokers and cluster configs, which
 * other test files read while this one runs) and off unbounded work (a topic grown to 10,000
 * partitions). A guard only ever turns a case that would succeed into one that must fail or only
 * validate; it never hides a case that would fail.
 */
import type { RouteSpec } from '../../lib/http/routes.js';
import { routeKey } from '../../lib/http/routes.js';

export interface FuzzContext {
  readonly clusterId: string;
  /** The topic most cases aim at: 3 partitions, replication factor 3, a few records. */
  readonly topic: string;
  /** The topic DELETE aims at, recreated after each deletion. */
  readonly victim: string;
  /** A topic name that does not exist (POST topics validates it only). */
  readonly newTopic: string;
  readonly group: string;
  readonly memberId: string;
  /** A REST Proxy v2 consumer group and instance. */
  readonly v2Group: string;
  readonly instance: string;
  /** The broker ids registered (never removed by a case). */
  readonly brokers: readonly number[];
  /** A schema registry subject with a version, and its schema's id. */
  readonly subject: string;
  readonly schemaId: number;
}

/** The schema the fuzzer's subject starts with, and ones that may follow it. */
export const FUZZ_SCHEMA = JSON.stringify({ type: 'record', name: 'Fuzz', namespace: 'tributary.fuzz', fields: [{ name: 'id', type: 'long' }] });

export interface RouteFuzz {
  readonly route: RouteSpec;
  readonly key: string;
  readonly params: Readonly<Record<string, readonly string[]>>;
  readonly bodies: readonly unknown[];
  /** Whether valid requests carry a body (GETs and DELETEs mostly do not). */
  readonly hasBody: boolean;
  readonly contentTypes: readonly string[];
  readonly queries: readonly (readonly [string, string][])[];
  /** Rewrites a case that could touch cluster-wide state; gets the decoded path parameters and the body text. */
  readonly guard?: (params: Record<string, string>, body: string | undefined) => { params: Record<string, string>; body: string | undefined };
  /** Rewrites a case's query the same way (a filter that must stay narrow). */
  readonly guardQuery?: (query: [string, string][]) => [string, string][];
}

const TOPIC_CONFIGS = ['retention.ms', 'max.message.bytes', 'cleanup.policy', 'min.insync.replicas', 'inline.max.bytes', 'segment.bytes', 'compression.type'];
export const BROKER_CONFIGS = ['auto.leader.rebalance.enable', 'leader.imbalance.per.broker.percentage', 'leader.imbalance.check.interval.seconds',
  'leader.replication.throttled.rate', 'follower.replication.throttled.rate', 'tributary.balancer.enable'];

const asObject = (body: string | undefined): Record<string, unknown> | undefined => {
  try {
    const v = JSON.parse(body ?? '') as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? v as Record<string, unknown> : undefined;
  } catch {
    return undefined;
  }
};

/** `validate_only: true` unless the field is there with another type (the request then fails anyway). */
const validateOnly = (params: Record<string, string>, body: string | undefined) => {
  const o = asObject(body);
  if (!o || (o.validate_only !== undefined && typeof o.validate_only !== 'boolean')) return { params, body };
  return { params, body: reserialize({ ...o, validate_only: true }, body) };
};

/**
 * JSON text of a guarded body; the body as it was when it nests too deep to serialize again — no
 * route takes a nested value where a guard looks (every such field is a number, a boolean or a
 * string), so that request is refused anyway.
 */
const reserialize = (v: unknown, body: string | undefined): string | undefined => {
  try {
    return JSON.stringify(v);
  } catch {
    return body;
  }
};

/**
 * ACLs and client quotas are cluster-wide: an ACL for `User:*` (DENY wins) or a quota on
 * `User:ANONYMOUS` or `<default>` would reach the files that test authorization and quotas
 * beside this one. Cases name the fuzzer's own principal instead.
 */
const FUZZ_PRINCIPAL = 'User:fuzz';
const ownPrincipal = (v: unknown): unknown => (typeof v === 'string' && v.startsWith('User:') ? FUZZ_PRINCIPAL : v);
const ownAclBody = (params: Record<string, string>, body: string | undefined) => {
  const o = asObject(body);
  if (!o) return { params, body };
  const own = (x: unknown) => (x !== null && typeof x === 'object' && !Array.isArray(x) ? { ...x as Record<string, unknown>, principal: ownPrincipal((x as Record<string, unknown>).principal) } : x);
  return { params, body: reserialize(Array.isArray(o.data) ? { ...o, data: o.data.map(own) } : own(o), body) };
};
const ownQuotaPrincipal = (params: Record<string, string>, body: string | undefined) => ({ params: { ...params, principal: String(ownPrincipal(params.principal)) === FUZZ_PRINCIPAL || params.principal === '<default>' ? FUZZ_PRINCIPAL : params.principal ?? '' }, body });

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

export function catalog(routes: readonly RouteSpec[], ctx: FuzzContext): RouteFuzz[] {
  const T = ctx.topic;
  const tp = [{ topic: T, partition: 0 }, { topic: T, partition: 2 }];
  const brokerIds = ctx.brokers.map(String);
  const defaults: Record<string, readonly string[]> = {
    cluster_id: [ctx.clusterId], topic_name: [T], partition_id: ['0', '1', '2'], broker_id: brokerIds, name: TOPIC_CONFIGS,
    group_id: [ctx.group], consumer_id: [ctx.memberId], group_name: [ctx.v2Group], instance: [ctx.instance],
    subject: [ctx.subject], version: ['1', 'latest', '-1'], id: [String(ctx.schemaId)],
  };
  const SR = ['application/vnd.schemaregistry.v1+json', 'application/vnd.schemaregistry+json', 'application/json'];
  const evolved = JSON.stringify({ ...JSON.parse(FUZZ_SCHEMA), fields: [{ name: 'id', type: 'long' }, { name: 'note', type: ['null', 'string'], default: null }] });
  const schemaBodies = [{ schema: FUZZ_SCHEMA }, { schema: evolved, schemaType: 'AVRO', references: [] },
    { schemaType: 'JSON', schema: '{"type":"object","properties":{"a":{"type":"string"}}}' },
    { schemaType: 'PROTOBUF', schema: 'syntax = "proto3";\nmessage Fuzz { int64 id = 1; }' },
    // (the same message as a serialized FileDescriptorProto, as Confluent's JavaScript serializer registers it)
    { schemaType: 'PROTOBUF', schema: 'CgpmdXp6LnByb3RvIhIKBEZ1enoSCgoCaWQYASABKANiBnByb3RvMw==' }];
  // The global level and the mode are read by every other file's registrations: a case may only fail to change them.
  const invalidWhenValid = (field: string, valid: readonly string[]) => (params: Record<string, string>, body: string | undefined) => {
    const o = asObject(body);
    return o && typeof o[field] === 'string' && valid.includes(o[field] as string) ? { params, body: reserialize({ ...o, [field]: `${o[field]}-fuzz` }, body) } : { params, body };
  };
  const BIN = 'application/vnd.kafka.binary.v2+json';
  const JSONV2 = 'application/vnd.kafka.json.v2+json';
  const V2 = 'application/vnd.kafka.v2+json';
  const SCHEMA_V2 = ['avro', 'jsonschema', 'protobuf'].map((f) => `application/vnd.kafka.${f}.v2+json`);
  const schemaRecords = [{ value_schema_id: ctx.schemaId, records: [{ value: { id: 1 } }] },
    { value_schema: FUZZ_SCHEMA, records: [{ value: { id: 2 }, partition: 0 }] },
    { key_schema: '{"type":"string"}', value_schema_id: ctx.schemaId, records: [{ key: 'k', value: { id: 3 } }] }];
  const record = { value: { type: 'STRING', data: 'hello' } };
  const records = [record, { partition_id: 1, key: { type: 'JSON', data: { user: 'a' } }, value: { type: 'BINARY', data: 'aGVsbG8=' }, headers: [{ name: 'h', value: 'aGk=' }], timestamp: '2026-01-01T00:00:00Z' },
    { key: { type: 'STRING', data: 'k' }, value: { data: [1, 2, 3] }, timestamp: 1767225600000 },
    // (a value serialized with the fuzzer's registered schema)
    { value: { type: 'AVRO', subject: ctx.subject, data: { id: 1 } } }, { value: { type: 'AVRO', schema_id: ctx.schemaId, data: { id: 2 } } }];

  type Spec = Partial<Omit<RouteFuzz, 'route' | 'key'>>;
  const specs: Record<string, Spec> = {
    'POST /v3/clusters/{cluster_id}/broker-configs:alter': {
      bodies: [{ data: [{ name: 'leader.imbalance.per.broker.percentage', value: '10' }, { name: 'auto.leader.rebalance.enable', operation: 'DELETE' }], validate_only: true }],
      guard: validateOnly,
    },
    'PUT /v3/clusters/{cluster_id}/broker-configs/{name}': {
      params: { name: BROKER_CONFIGS }, bodies: [{ value: '10' }, { value: 'false' }, { value: 20 }],
      // A known config only with a value of the wrong kind: every broker config is a number or a boolean.
      guard: (params, body) => (BROKER_CONFIGS.includes(params.name ?? '') && asObject(body) ? { params, body: JSON.stringify({ value: 'not a value' }) } : { params, body }),
    },
    'DELETE /v3/clusters/{cluster_id}/broker-configs/{name}': {
      params: { name: BROKER_CONFIGS },
      guard: (params, body) => (BROKER_CONFIGS.includes(params.name ?? '') ? { params: { ...params, name: `${params.name}.fuzz` }, body } : { params, body }),
    },
    'GET /v3/clusters/{cluster_id}/broker-configs/{name}': { params: { name: BROKER_CONFIGS } },
    'GET /v3/clusters/{cluster_id}/acls': {
      queries: [[], [['resource_type', 'TOPIC'], ['pattern_type', 'MATCH'], ['resource_name', ctx.topic]], [['principal', FUZZ_PRINCIPAL], ['operation', 'ANY'], ['permission', 'ALLOW']]],
    },
    'POST /v3/clusters/{cluster_id}/acls': {
      bodies: [{ resource_type: 'TOPIC', resource_name: ctx.topic, pattern_type: 'LITERAL', principal: FUZZ_PRINCIPAL, host: '*', operation: 'READ', permission: 'ALLOW' },
        { resource_type: 'GROUP', resource_name: 'fuzz-', pattern_type: 'PREFIXED', principal: FUZZ_PRINCIPAL, host: '127.0.0.1', operation: 'ALL', permission: 'DENY' }],
      guard: ownAclBody,
    },
    'POST /v3/clusters/{cluster_id}/acls:batch': {
      bodies: [{ data: [{ resource_type: 'CLUSTER', resource_name: 'kafka-cluster', pattern_type: 'LITERAL', principal: FUZZ_PRINCIPAL, host: '*', operation: 'DESCRIBE', permission: 'ALLOW' }] }],
      guard: ownAclBody,
    },
    'DELETE /v3/clusters/{cluster_id}/acls': {
      queries: [[['resource_type', 'ANY'], ['pattern_type', 'ANY'], ['operation', 'ANY'], ['permission', 'ANY'], ['principal', FUZZ_PRINCIPAL]]],
      // Only the fuzzer's own ACLs: a filter always names its principal.
      guardQuery: (q) => [...q.filter(([k]) => k !== 'principal'), ['principal', FUZZ_PRINCIPAL]],
    },
    'GET /v3/clusters/{cluster_id}/client-quotas/{principal}': { params: { principal: [FUZZ_PRINCIPAL, '<default>', 'User:nobody'] } },
    'PUT /v3/clusters/{cluster_id}/client-quotas/{principal}': {
      params: { principal: [FUZZ_PRINCIPAL] }, bodies: [{ producer_byte_rate: 1048576 }, { consumer_byte_rate: 2097152, request_rate: 100 }],
      guard: ownQuotaPrincipal,
    },
    'DELETE /v3/clusters/{cluster_id}/client-quotas/{principal}': { params: { principal: [FUZZ_PRINCIPAL] }, guard: ownQuotaPrincipal },
    'GET /v3/clusters/{cluster_id}/brokers/{broker_id}/configs/{name}': { params: { name: BROKER_CONFIGS } },
    'POST /v3/clusters/{cluster_id}/topics': {
      bodies: [{ topic_name: ctx.newTopic, partitions_count: 3, replication_factor: 3, configs: [{ name: 'retention.ms', value: '86400000' }], validate_only: true },
        { topic_name: ctx.newTopic, partitions_count: -1, replication_factor: -1, validate_only: true }, { topic_name: T }],
      guard: validateOnly,
    },
    'DELETE /v3/clusters/{cluster_id}/topics/{topic_name}': { params: { topic_name: [ctx.victim] } },
    'PATCH /v3/clusters/{cluster_id}/topics/{topic_name}': {
      bodies: [{ partitions_count: 4 }, { partitions_count: 3 }],
      // At most 8 partitions: a grown topic costs every later case more.
      guard: (params, body) => {
        const o = asObject(body);
        return o && isInt(o.partitions_count) && o.partitions_count > 8 && o.partitions_count <= 10_000 ? { params, body: reserialize({ ...o, partitions_count: 10_001 }, body) } : { params, body };
      },
    },
    'POST /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/records:delete': { bodies: [{ offset: 1 }, { offset: -1 }, { offset: 0 }] },
    'POST /v3/clusters/{cluster_id}/topics/{topic_name}/configs:alter': {
      bodies: [{ data: [{ name: 'max.message.bytes', value: '2000000' }, { name: 'retention.ms', operation: 'DELETE' }] }, { data: [{ name: 'retention.ms', value: 3600000 }], validate_only: true }],
    },
    'PUT /v3/clusters/{cluster_id}/topics/{topic_name}/configs/{name}': { bodies: [{ value: '3600000' }, { value: 'delete' }, { value: 1048576 }] },
    'POST /v3/clusters/{cluster_id}/brokers': {
      bodies: [{ broker_id: 1 }, { broker_id: 2, rack: null }],
      // Registers no new broker: only an id already registered passes.
      guard: (params, body) => {
        if ((body ?? '').trim() === '') return { params, body: JSON.stringify({ broker_id: ctx.brokers[0] }) };
        const o = asObject(body);
        if (o && (o.broker_id === undefined || (isInt(o.broker_id) && o.broker_id >= 0 && !ctx.brokers.includes(o.broker_id)))) {
          return { params, body: reserialize({ ...o, broker_id: ctx.brokers[0] }, body) };
        }
        return { params, body };
      },
    },
    'DELETE /v3/clusters/{cluster_id}/brokers/{broker_id}': {
      // Removes no broker: a registered id becomes one that is not.
      guard: (params, body) => (/^\d{1,9}$/.test(params.broker_id ?? '') && ctx.brokers.includes(Number(params.broker_id)) ? { params: { ...params, broker_id: '9999' }, body } : { params, body }),
    },
    'PATCH /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/reassignment': { bodies: [{ replicas: [1, 2, 3] }, { replicas: [2, 3, 1] }, { replicas: [3, 1, 2] }] },
    'POST /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}': { bodies: [{ election_type: 'PREFERRED' }, {}, { election_type: 'UNCLEAN' }] },
    'POST /v3/clusters/{cluster_id}/topics/{topic_name}/records': {
      bodies: records, queries: [[], [['acks', '1']], [['acks', 'all']], [['acks', '0']]],
    },
    'POST /v3/clusters/{cluster_id}/topics/{topic_name}/records:batch': {
      bodies: [{ entries: [{ id: '1', ...record }, { id: 2, partition_id: 1, value: { type: 'JSON', data: [1] } }] }],
    },
    'POST /v3/clusters/{cluster_id}/producers': { bodies: [{}] },
    'GET /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/records': {
      queries: [[['offset', '0']], [['offset', '1'], ['max_bytes', '1000'], ['format', 'string']], [['offset', '0'], ['format', 'json'], ['timeout', '10']],
        [['offset', '0'], ['format', 'avro']], [['offset', '0'], ['format', 'jsonschema'], ['isolation_level', 'read_committed']], [['offset', '1'], ['format', 'protobuf']], [['offset', '0'], ['format', 'avro'], ['undecodable', 'binary']]],
    },
    'GET /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/offsets': {
      queries: [[['timestamp', 'earliest']], [['timestamp', 'latest']], [['timestamp', '1767225600000']], [['timestamp', 'max_timestamp']], [['timestamp', 'latest'], ['isolation_level', 'read_committed']]],
    },
    'GET /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/offset': { queries: [[], [['offset_type', 'earliest']], [['offset_type', 'latest']]] },
    'GET /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/segments': {
      queries: [[], [['state', 'all']], [['state', 'live'], ['from_offset', '0']], [['state', 'pending'], ['from_offset', '100']]],
    },
    'POST /v3/clusters/{cluster_id}/consumer-groups/{group_id}/heartbeat': {
      bodies: [{ member_epoch: 0, subscribed_topic_names: [T], session_timeout_ms: 120_000 }, { member_id: ctx.memberId, member_epoch: 1, owned_partitions: tp },
        { member_id: ctx.memberId, member_epoch: -1 }, { member_epoch: 0, subscribed_topic_regex: 'fuzz-.*', assignor: 'range' }],
    },
    'POST /v3/clusters/{cluster_id}/consumer-groups/{group_id}/offsets:commit': {
      bodies: [{ offsets: [{ topic: T, partition: 0, offset: 1 }] }, { offsets: [{ topic: T, partition: 1, offset: 0, metadata: 'm' }], member_id: ctx.memberId, member_epoch: 1 }],
    },
    'POST /v3/clusters/{cluster_id}/consumer-groups/{group_id}/offsets:reset': {
      bodies: [{ topics: [T], to: 'earliest' }, { partitions: tp, to: { offset: 0 } }, { topics: [T], to: { shift_by: -1 } }, { topics: [T], to: { timestamp: '2026-01-01T00:00:00Z' } }],
    },
    'POST /consumers/{group_name}': {
      contentTypes: [V2], bodies: [{ name: 'fuzz-extra', format: 'json', 'auto.offset.reset': 'earliest', 'consumer.request.timeout.ms': 10 }, {}, { format: 'binary', 'auto.commit.enable': 'false', 'fetch.min.bytes': '1' },
        { format: 'avro' }, { format: 'jsonschema', 'auto.offset.reset': 'latest' }, { format: 'protobuf' }],
    },
    'POST /consumers/{group_name}/instances/{instance}/subscription': { contentTypes: [V2], bodies: [{ topics: [T] }, { topic_pattern: 'fuzz-.*' }] },
    'POST /consumers/{group_name}/instances/{instance}/assignments': { contentTypes: [V2], bodies: [{ partitions: tp }] },
    'POST /consumers/{group_name}/instances/{instance}/offsets': { contentTypes: [V2], bodies: [{ offsets: [{ topic: T, partition: 0, offset: 0 }] }, {}] },
    'GET /consumers/{group_name}/instances/{instance}/offsets': { contentTypes: [V2], bodies: [{ partitions: tp }], hasBody: true, queries: [[], [['topic', T], ['partition', '0']]] },
    'POST /consumers/{group_name}/instances/{instance}/positions': { contentTypes: [V2], bodies: [{ offsets: [{ topic: T, partition: 0, offset: 0 }] }, { timestamps: [{ topic: T, partition: 0, timestamp: 0 }] }] },
    'POST /consumers/{group_name}/instances/{instance}/positions/beginning': { contentTypes: [V2], bodies: [{ partitions: tp }] },
    'POST /consumers/{group_name}/instances/{instance}/positions/end': { contentTypes: [V2], bodies: [{ partitions: tp }] },
    'GET /consumers/{group_name}/instances/{instance}/records': { queries: [[['timeout', '0']], [['timeout', '10'], ['max_bytes', '1000']]], contentTypes: [BIN, JSONV2, ...SCHEMA_V2] },
    'POST /topics/{topic_name}': {
      contentTypes: [BIN, JSONV2, ...SCHEMA_V2],
      bodies: [{ records: [{ value: 'aGVsbG8=' }, { key: 'a2V5', value: 'dg==', partition: 0 }] }, { records: [{ value: { a: 1 } }, { key: 'k', value: [1] }] }, ...schemaRecords],
    },
    'POST /topics/{topic_name}/partitions/{partition_id}': {
      contentTypes: [BIN, JSONV2, ...SCHEMA_V2], bodies: [{ records: [{ value: 'aGVsbG8=' }] }, { records: [{ value: { a: 1 } }] }, ...schemaRecords],
    },
    'GET /topics/{topic_name}/partitions/{partition_id}/records': { queries: [[['offset', '0']], [['offset', '1'], ['count', '2']]] },
    'GET /topics/{topic_name}/partitions/{partition_id}/offsets': { queries: [[], [['timestamp', 'earliest']], [['isolation_level', 'read_committed']]] },
  };

  for (const key of ['POST /subjects/{subject}/versions', 'POST /subjects/{subject}', 'POST /compatibility/subjects/{subject}/versions/{version}', 'POST /compatibility/subjects/{subject}/versions']) {
    specs[key] = { contentTypes: SR, bodies: schemaBodies, queries: [[], [['normalize', 'true']], [['verbose', 'true']], [['deleted', 'true']]] };
  }
  for (const key of ['GET /subjects', 'GET /subjects/{subject}/versions', 'GET /subjects/{subject}/versions/{version}', 'GET /subjects/{subject}/versions/{version}/schema',
    'GET /schemas/ids/{id}/subjects', 'GET /schemas/ids/{id}/versions', 'GET /schemas/ids/{id}', 'GET /schemas/ids/{id}/schema']) specs[key] = { queries: [[], [['deleted', 'true']], [['format', 'serialized']]] };
  for (const key of ['DELETE /subjects/{subject}', 'DELETE /subjects/{subject}/versions/{version}']) specs[key] = { queries: [[], [['permanent', 'true']]] };
  specs['GET /config/{subject}'] = { queries: [[], [['defaultToGlobal', 'true']]] };
  specs['PUT /config/{subject}'] = { contentTypes: SR, bodies: [{ compatibility: 'FULL' }, { compatibility: 'NONE' }, { compatibility: 'BACKWARD_TRANSITIVE' }] };
  specs['PUT /config'] = { contentTypes: SR, bodies: [{ compatibility: 'BACKWARD' }], guard: invalidWhenValid('compatibility', ['NONE', 'BACKWARD', 'BACKWARD_TRANSITIVE', 'FORWARD', 'FORWARD_TRANSITIVE', 'FULL', 'FULL_TRANSITIVE']) };
  specs['PUT /mode'] = { contentTypes: SR, bodies: [{ mode: 'READWRITE' }], guard: invalidWhenValid('mode', ['READWRITE', 'READONLY']) };
  // (DELETE /config puts the global level back to its default, BACKWARD, which no file changes: the guard above keeps it so)

  return routes.map((route) => {
    const key = routeKey(route);
    const s = specs[key] ?? {};
    const params: Record<string, readonly string[]> = {};
    for (const m of route.path.matchAll(/\{(\w+)\}/g)) params[m[1] as string] = s.params?.[m[1] as string] ?? defaults[m[1] as string] ?? ['x'];
    return {
      route, key, params,
      bodies: s.bodies ?? [],
      hasBody: s.hasBody ?? (s.bodies !== undefined && route.method !== 'GET'),
      contentTypes: s.contentTypes ?? ['application/json'],
      queries: s.queries ?? [[]],
      ...(s.guard ? { guard: s.guard } : {}),
    };
  });
}
