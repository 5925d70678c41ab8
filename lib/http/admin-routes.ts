/**
 * REST Proxy v3 admin routes: clusters, brokers, topics, partitions and topic configs, in
 * Confluent's response shapes (kind, metadata.self, related links) plus Tributary's offsets.
 */
import * as z from 'zod';
import { HttpError } from '../errors.js';
import { KafkaError } from '../protocol/errors.js';
import { brokerLoads, type BrokerLoad } from '../cluster/broker-load.js';
import { clusterRecord } from '../cluster/metadata.js';
import { effectiveConfigs, isTopicConfig } from '../cluster/topic-configs.js';
import { addPartitions, alterTopicConfigs, createTopic, deleteTopic, describeBrokers as listBrokers, describeController, describeTopic, listTopics, type TopicDescription } from '../cluster/topics.js';
import { replicaHeads } from '../log/read.js';
import { deleteRecords } from '../log/retention.js';
import { lastStableOffset, topicPartitionKey, type BrokerRecord, type ClusterRecord, type Lease, type PartitionRecord, type TopicRecord } from '../storage/model.js';
import { anyOf, cluster as clusterAccess, topic } from './access.js';
import { enforce, visible } from './enforce.js';
import { intPathParam, parseJson, validate, type ApiRequest, type ApiResponse, type RouteHandler } from './api.js';

export const ok = (body: unknown, status = 200): ApiResponse => ({ status, body });
const noContent: ApiResponse = { status: 204 };

export async function cluster(req: ApiRequest): Promise<ClusterRecord> {
  const c = await clusterRecord();
  if (req.params.cluster_id !== undefined && req.params.cluster_id !== c.clusterId) {
    throw new HttpError(404, 404, `Cluster ${req.params.cluster_id} cannot be found.`);
  }
  return c;
}

export const clusterUrl = (req: ApiRequest, c: ClusterRecord) => `${req.baseUrl}/v3/clusters/${c.clusterId}`;
export const crn = (c: ClusterRecord, rest = '') => `crn:///kafka=${c.clusterId}${rest}`;
export const list = (kind: string, self: string, data: unknown[]) => ({ kind, metadata: { self, next: null }, data });
export const related = (url: string) => ({ related: url });

function controllerJson(lease: Lease | undefined) {
  return lease ? { controller_id: lease.holder, epoch: lease.epoch, lease_expires_at: new Date(lease.expiresAt).toISOString() } : null;
}

function clusterJson(req: ApiRequest, c: ClusterRecord, lease: Lease | undefined) {
  const base = clusterUrl(req, c);
  return {
    kind: 'KafkaCluster',
    metadata: { self: base, resource_name: crn(c) },
    cluster_id: c.clusterId,
    // The spec's controller is a relationship; Tributary's controller is a lease holder, not a
    // broker, so it points at …/controller and the lease is shown beside it.
    controller: related(`${base}/controller`),
    controller_lease: controllerJson(lease),
    acls: related(`${base}/acls`),
    brokers: related(`${base}/brokers`),
    broker_configs: related(`${base}/broker-configs`),
    consumer_groups: related(`${base}/consumer-groups`),
    topics: related(`${base}/topics`),
    partition_reassignments: related(`${base}/topics/-/partitions/-/reassignment`),
    metadata_version: c.metadataVersion,
  };
}

export function brokerJson(req: ApiRequest, c: ClusterRecord, b: BrokerRecord, load: BrokerLoad | undefined) {
  const self = `${clusterUrl(req, c)}/brokers/${b.brokerId}`;
  return {
    kind: 'KafkaBroker',
    metadata: { self, resource_name: crn(c, `/broker=${b.brokerId}`) },
    cluster_id: c.clusterId,
    broker_id: b.brokerId,
    host: null,
    port: null,
    rack: b.rack,
    // (a broker being removed keeps its liveness in `state` internally; the API shows the removal)
    state: b.decommissioning ? 'decommissioning' : b.state,
    replica_table: b.replicaTable,
    // Tributary's load fields (lib/cluster/broker-load.ts): bytes counts the replica table's tail only.
    replica_count: load?.replicas ?? 0,
    leader_count: load?.leaders ?? 0,
    bytes: load?.bytes ?? null,
    configs: related(`${self}/configs`),
    partition_replicas: related(`${self}/partition-replicas`),
  };
}

function topicJson(req: ApiRequest, c: ClusterRecord, t: TopicRecord) {
  const self = `${clusterUrl(req, c)}/topics/${t.name}`;
  return {
    kind: 'KafkaTopic',
    metadata: { self, resource_name: crn(c, `/topic=${t.name}`) },
    cluster_id: c.clusterId,
    topic_name: t.name,
    topic_id: t.topicId,
    is_internal: false,
    replication_factor: t.replicationFactor,
    partitions_count: t.partitions,
    partitions: related(`${self}/partitions`),
    configs: related(`${self}/configs`),
    partition_reassignments: related(`${self}/partitions/-/reassignment`),
    authorized_operations: [],
  };
}

/** One replica of a partition as Confluent's `KafkaReplica`, with Tributary's replica state and offsets beside it. */
export interface ReplicaView {
  readonly kind: 'KafkaReplica';
  readonly metadata: { readonly self: string; readonly resource_name: string };
  readonly cluster_id: string;
  readonly topic_name: string;
  readonly partition_id: number;
  readonly broker_id: number;
  readonly is_leader: boolean;
  readonly is_in_sync: boolean;
  readonly broker: { readonly related: string };
  /** Tributary's: in-sync, catching-up, snapshotting (a full copy in progress) or unavailable (its store did not answer). */
  readonly state: 'in-sync' | 'catching-up' | 'snapshotting' | 'unavailable';
  readonly log_start_offset: number | null;
  readonly log_end_offset: number | null;
  /** Records behind the leader's log end offset. */
  readonly lag: number | null;
}

/** What the leader's head says of a partition: its high watermark and last stable offset (null when its store does not answer). */
interface LeaderOffsets {
  readonly highWatermark: number | null;
  readonly lastStableOffset: number | null;
}

/** The replicas of some partitions of a topic, read from each replica's store (one batch of reads), and each partition's high watermark and last stable offset. */
export async function replicaViews(req: ApiRequest, c: ClusterRecord, d: TopicDescription, parts: readonly PartitionRecord[]): Promise<Map<number, { replicas: ReplicaView[] } & LeaderOffsets>> {
  const brokers = new Map((await listBrokers()).map((b) => [b.brokerId, b]));
  const heads = await replicaHeads(parts.flatMap((p) => p.replicas.flatMap((id) => {
    const store = brokers.get(id);
    return store ? [{ store, tp: topicPartitionKey(d.topic.topicId, p.partition) }] : [];
  })));
  const out = new Map<number, { replicas: ReplicaView[] } & LeaderOffsets>();
  for (const p of parts) {
    const tp = topicPartitionKey(d.topic.topicId, p.partition);
    const leaderHead = heads.get(`${p.leader}/${tp}`);
    const self = `${clusterUrl(req, c)}/topics/${d.topic.name}/partitions/${p.partition}/replicas`;
    const replicas = p.replicas.map((id): ReplicaView => {
      const h = heads.get(`${id}/${tp}`);
      return {
        kind: 'KafkaReplica',
        metadata: { self: `${self}/${id}`, resource_name: crn(c, `/topic=${d.topic.name}/partition=${p.partition}/replica=${id}`) },
        cluster_id: c.clusterId,
        topic_name: d.topic.name,
        partition_id: p.partition,
        broker_id: id,
        is_leader: id === p.leader,
        is_in_sync: p.isr.includes(id),
        broker: related(`${clusterUrl(req, c)}/brokers/${id}`),
        state: !h ? 'unavailable' : h.snapshotting ? 'snapshotting' : p.isr.includes(id) ? 'in-sync' : 'catching-up',
        log_start_offset: h?.logStartOffset ?? null,
        log_end_offset: h?.leo ?? null,
        lag: h && leaderHead ? Math.max(0, leaderHead.leo - h.leo) : null,
      };
    });
    out.set(p.partition, { replicas, highWatermark: leaderHead?.hw ?? null, lastStableOffset: leaderHead ? lastStableOffset(leaderHead) : null });
  }
  return out;
}

/**
 * Partitions as Confluent's `KafkaPartition`: `replicas` is a relationship (…/replicas); Tributary
 * adds `leader_id`, `leader_epoch`, `isr`, `replica_states` (each replica's state and offsets, as
 * …/replicas answers) and the leader's log start, log end, high watermark and last stable offset.
 */
export async function partitionsJson(req: ApiRequest, c: ClusterRecord, d: TopicDescription, only?: PartitionRecord[]) {
  const parts = only ?? d.partitions;
  const views = await replicaViews(req, c, d, parts);
  return parts.map((p) => {
    const self = `${clusterUrl(req, c)}/topics/${d.topic.name}/partitions/${p.partition}`;
    const { replicas, highWatermark, lastStableOffset: stable } = views.get(p.partition) ?? { replicas: [], highWatermark: null, lastStableOffset: null };
    const leader = replicas.find((r) => r.broker_id === p.leader);
    return {
      kind: 'KafkaPartition',
      metadata: { self, resource_name: crn(c, `/topic=${d.topic.name}/partition=${p.partition}`) },
      cluster_id: c.clusterId,
      topic_name: d.topic.name,
      partition_id: p.partition,
      // (the spec's leader is a relationship or absent: a partition without a leader has none)
      ...(p.leader >= 0 ? { leader: related(`${clusterUrl(req, c)}/brokers/${p.leader}`) } : {}),
      leader_id: p.leader >= 0 ? p.leader : null,
      leader_epoch: p.leaderEpoch,
      isr: [...p.isr],
      replicas: related(`${self}/replicas`),
      replica_states: replicas.map((r) => ({
        broker_id: r.broker_id, is_leader: r.is_leader, is_in_sync: r.is_in_sync, state: r.state,
        log_start_offset: r.log_start_offset, log_end_offset: r.log_end_offset, lag: r.lag,
      })),
      log_start_offset: leader?.log_start_offset ?? null,
      log_end_offset: leader?.log_end_offset ?? null,
      high_watermark: highWatermark,
      last_stable_offset: stable,
      reassignment: related(`${self}/reassignment`),
    };
  });
}

function configJson(req: ApiRequest, c: ClusterRecord, t: TopicRecord, e: ReturnType<typeof effectiveConfigs>[number]) {
  return {
    kind: 'KafkaTopicConfig',
    metadata: { self: `${clusterUrl(req, c)}/topics/${t.name}/configs/${e.name}`, resource_name: crn(c, `/topic=${t.name}/config=${e.name}`) },
    cluster_id: c.clusterId,
    topic_name: t.name,
    name: e.name,
    value: e.value,
    is_default: e.isDefault,
    is_read_only: false,
    is_sensitive: false,
    source: e.isDefault ? 'DEFAULT_CONFIG' : 'DYNAMIC_TOPIC_CONFIG',
    synonyms: [
      ...(e.isDefault ? [] : [{ name: e.name, value: e.value, source: 'DYNAMIC_TOPIC_CONFIG' }]),
      { name: e.name, value: effectiveConfigs({}).find((d) => d.name === e.name)?.value, source: 'DEFAULT_CONFIG' },
    ],
  };
}

export const partitionNotFound = (req: ApiRequest) => () =>
  new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${req.params.partition_id} not found.`, { partition: req.params.partition_id });

const createTopicBody = z.object({
  topic_name: z.string(),
  partitions_count: z.number().int().optional(),
  replication_factor: z.number().int().optional(),
  configs: z.array(z.object({ name: z.string(), value: z.union([z.string(), z.number(), z.boolean()]).nullable() }).strict()).optional(),
  validate_only: z.boolean().optional(),
}).strict();

// Kafka's SET needs a value; DELETE .../configs/{name} resets.
const configValueBody = z.object({ value: z.union([z.string(), z.number(), z.boolean()]) }).strict();
const alterConfigsBody = z.object({
  data: z.array(z.object({
    name: z.string(),
    value: z.union([z.string(), z.number(), z.boolean()]).nullable().optional(),
    operation: z.enum(['SET', 'DELETE', 'set', 'delete']).optional(),
  }).strict()),
  validate_only: z.boolean().optional(),
}).strict();

// Kafka's DeleteRecords: the offset below which records go (-1: the high watermark).
const deleteRecordsBody = z.object({ offset: z.number().int() }).strict();

const T = '/v3/clusters/{cluster_id}/topics/{topic_name}';
const topicResource = (t: { topic: { name: string } }) => ({ resourceType: 'TOPIC' as const, resourceName: t.topic.name });

export const adminRoutes: Record<string, RouteHandler> = {
  'GET /v3/clusters': async (req) => {
    const c = await cluster(req);
    return ok(list('KafkaClusterList', `${req.baseUrl}/v3/clusters`, [clusterJson(req, c, await describeController())]));
  },
  'GET /v3/clusters/{cluster_id}': async (req) => ok(clusterJson(req, await cluster(req), await describeController())),
  // Tributary's own: the controller lease (who holds it, its epoch, when it expires).
  'GET /v3/clusters/{cluster_id}/controller': async (req) => {
    const c = await cluster(req);
    const lease = await describeController();
    return ok({
      kind: 'KafkaController',
      metadata: { self: `${clusterUrl(req, c)}/controller`, resource_name: crn(c, '/controller') },
      cluster_id: c.clusterId,
      ...(controllerJson(lease) ?? { controller_id: null, epoch: null, lease_expires_at: null }),
    });
  },
  // For clients that route themselves: brokers, every partition's leader and epoch, and a version to watch.
  'GET /v3/clusters/{cluster_id}/metadata': async (req) => {
    const c = await cluster(req);
    const [lease, brokers, topics] = await Promise.all([describeController(), listBrokers(), listTopics().then((ts) => visible(req, ts, topicResource))]);
    return ok({
      kind: 'KafkaClusterMetadata',
      cluster_id: c.clusterId,
      metadata_version: (await cluster(req)).metadataVersion,
      controller: controllerJson(lease),
      brokers: brokers.map((b) => ({ broker_id: b.brokerId, rack: b.rack, state: b.decommissioning ? 'decommissioning' : b.state })),
      topics: topics.map((t) => ({
        topic_name: t.topic.name,
        topic_id: t.topic.topicId,
        partitions: t.partitions.map((p) => ({
          partition_id: p.partition, leader_id: p.leader >= 0 ? p.leader : null, leader_epoch: p.leaderEpoch, replicas: p.replicas, isr: p.isr,
        })),
      })),
    });
  },
  'GET /v3/clusters/{cluster_id}/brokers': async (req) => {
    const c = await cluster(req);
    const [brokers, loads] = await Promise.all([listBrokers(), brokerLoads()]);
    return ok(list('KafkaBrokerList', `${clusterUrl(req, c)}/brokers`, brokers.map((b) => brokerJson(req, c, b, loads.get(b.brokerId)))));
  },
  'GET /v3/clusters/{cluster_id}/brokers/{broker_id}': async (req) => {
    const c = await cluster(req);
    const notFound = () => new HttpError(404, 404, `Broker ${req.params.broker_id} cannot be found.`);
    const id = intPathParam(req, 'broker_id', notFound);
    const b = (await listBrokers()).find((x) => x.brokerId === id);
    if (!b) throw notFound();
    return ok(brokerJson(req, c, b, (await brokerLoads([id])).get(id)));
  },
  'GET /v3/clusters/{cluster_id}/topics': async (req) => {
    const c = await cluster(req);
    const topics = await visible(req, await listTopics(), topicResource);
    return ok(list('KafkaTopicList', `${clusterUrl(req, c)}/topics`, topics.map((t) => topicJson(req, c, t.topic))));
  },
  'POST /v3/clusters/{cluster_id}/topics': async (req) => {
    const c = await cluster(req);
    const body = validate(createTopicBody, parseJson(req.body), 'topic');
    // Kafka's CreateTopics: CLUSTER CREATE, or CREATE on the topic (TOPIC_AUTHORIZATION_FAILED when neither).
    await enforce(anyOf(clusterAccess('CREATE'), topic('CREATE')), { topic_name: body.topic_name }, req);
    const created = await createTopic({
      name: body.topic_name,
      partitions: body.partitions_count === undefined || body.partitions_count === -1 ? undefined : body.partitions_count,
      replicationFactor: body.replication_factor === undefined || body.replication_factor === -1 ? undefined : body.replication_factor,
      configs: (body.configs ?? []).filter((x) => x.value !== null),
      validateOnly: body.validate_only ?? false,
    });
    return ok(topicJson(req, c, created.topic), 201);
  },
  [`GET ${T}`]: async (req) => {
    const c = await cluster(req);
    return ok(topicJson(req, c, (await describeTopic(req.params.topic_name ?? '')).topic));
  },
  [`DELETE ${T}`]: async (req) => {
    await cluster(req);
    await deleteTopic(req.params.topic_name ?? '');
    return noContent;
  },
  // REST Proxy v3's UpdatePartitionCount: grows the topic (Kafka's CreatePartitions).
  [`PATCH ${T}`]: async (req) => {
    const c = await cluster(req);
    const body = validate(z.object({ partitions_count: z.number().int() }).strict(), parseJson(req.body), 'partition count update');
    const grown = await addPartitions(req.params.topic_name ?? '', body.partitions_count);
    return ok(topicJson(req, c, grown.topic));
  },
  [`GET ${T}/partitions`]: async (req) => {
    const c = await cluster(req);
    const d = await describeTopic(req.params.topic_name ?? '');
    return ok(list('KafkaPartitionList', `${clusterUrl(req, c)}/topics/${d.topic.name}/partitions`, await partitionsJson(req, c, d)));
  },
  [`GET ${T}/partitions/{partition_id}`]: async (req) => {
    const c = await cluster(req);
    const d = await describeTopic(req.params.topic_name ?? '');
    const id = intPathParam(req, 'partition_id', partitionNotFound(req));
    const p = d.partitions[id];
    if (!p) throw partitionNotFound(req)();
    return ok((await partitionsJson(req, c, d, [p]))[0]);
  },
  [`POST ${T}/partitions/{partition_id}/records:delete`]: async (req) => {
    await cluster(req);
    const d = await describeTopic(req.params.topic_name ?? '');
    const id = intPathParam(req, 'partition_id', partitionNotFound(req));
    if (!d.partitions[id]) throw partitionNotFound(req)();
    const body = validate(deleteRecordsBody, parseJson(req.body), 'DeleteRecords request');
    const { lowWatermark } = await deleteRecords(d.topic.name, id, body.offset);
    return ok({ partition_id: id, low_watermark: lowWatermark });
  },
  [`GET ${T}/configs`]: async (req) => {
    const c = await cluster(req);
    const { topic } = await describeTopic(req.params.topic_name ?? '');
    return ok(list('KafkaTopicConfigList', `${clusterUrl(req, c)}/topics/${topic.name}/configs`,
      effectiveConfigs(topic.configs).map((e) => configJson(req, c, topic, e))));
  },
  // Every topic's configs in one list (Confluent's listKafkaAllTopicConfigs).
  'GET /v3/clusters/{cluster_id}/topics/-/configs': async (req) => {
    const c = await cluster(req);
    const topics = await visible(req, await listTopics(), topicResource, 'DESCRIBE_CONFIGS');
    return ok(list('KafkaTopicConfigList', `${clusterUrl(req, c)}/topics/-/configs`,
      topics.flatMap(({ topic }) => effectiveConfigs(topic.configs).map((e) => configJson(req, c, topic, e)))));
  },
  [`GET ${T}/configs/{name}`]: async (req) => {
    const c = await cluster(req);
    const { topic } = await describeTopic(req.params.topic_name ?? '');
    const e = effectiveConfigs(topic.configs).find((x) => x.name === req.params.name);
    if (!e) throw new HttpError(404, 404, `Config ${req.params.name} cannot be found.`);
    return ok(configJson(req, c, topic, e));
  },
  [`PUT ${T}/configs/{name}`]: async (req) => {
    await cluster(req);
    const body = validate(configValueBody, parseJson(req.body), 'config');
    await alterTopicConfigs(req.params.topic_name ?? '', [{ name: req.params.name ?? '', value: body.value }]);
    return noContent;
  },
  [`DELETE ${T}/configs/{name}`]: async (req) => {
    await cluster(req);
    const name = req.params.name ?? '';
    if (!isTopicConfig(name)) throw new HttpError(404, 404, `Config ${name} cannot be found.`);
    await alterTopicConfigs(req.params.topic_name ?? '', [{ name, value: null }]);
    return noContent;
  },
  [`POST ${T}/configs:alter`]: async (req) => {
    await cluster(req);
    const body = validate(alterConfigsBody, parseJson(req.body), 'config alteration');
    const changes = body.data.map((d) => ({ name: d.name, value: d.operation?.toUpperCase() === 'DELETE' ? null : d.value ?? null }));
    if (body.validate_only) {
      await describeTopic(req.params.topic_name ?? '');
      const { checkTopicConfigs } = await import('../cluster/topic-configs.js');
      checkTopicConfigs(changes.filter((x) => x.value !== null));
    } else {
      await alterTopicConfigs(req.params.topic_name ?? '', changes);
    }
    return noContent;
  },
  $default: async (req) => {
    // `/ui/` may not match the console's `/ui/{proxy+}` in API Gateway (a greedy variable wants a
    // segment) and come here: send it, with its query (an OIDC sign-in's code), to a path that does.
    if ((req.method === 'GET' || req.method === 'HEAD') && /\/ui\/$/.test(req.path)) {
      const query = new URLSearchParams(req.query).toString();
      return { status: 302, headers: { location: `index.html${query ? `?${query}` : ''}`, 'cache-control': 'no-cache' } };
    }
    throw new HttpError(404, 404, `HTTP 404 Not Found: no route for ${req.method} ${req.path}`);
  },
};
