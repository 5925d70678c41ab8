/**
 * Consumer groups under /v3: the native group protocol for SDK consumers (KIP-848's
 * ConsumerGroupHeartbeat and offset commit/fetch) and the admin view — list, describe, members,
 * lags, lag summary, delete, reset offsets — in Confluent's v3 shapes.
 */
import * as z from 'zod';
import { HttpError } from '../errors.js';
import { mapLimit } from '../map-limit.js';
import { clusterRecord, partitionCountsKnowing } from '../cluster/metadata.js';
import { ASSIGNORS, type AssignorName } from '../groups/assignors.js';
import * as groups from '../groups/coordinator.js';
import { subscriptionRegex } from '../groups/membership.js';
import { authorizationEnabled } from '../security/authorizer.js';
import { requireAll, topicsIn, visible } from './enforce.js';
import { badRequest, parseJson, topicField, validate, type ApiRequest, type ApiResponse, type RouteHandler } from './api.js';

const ok = (body: unknown, status = 200): ApiResponse => ({ status, body });

async function clusterUrl(req: ApiRequest): Promise<{ clusterId: string; base: string }> {
  const c = await clusterRecord();
  if (req.params.cluster_id !== c.clusterId) throw new HttpError(404, 404, `Cluster ${req.params.cluster_id} cannot be found.`);
  return { clusterId: c.clusterId, base: `${req.baseUrl}/v3/clusters/${c.clusterId}` };
}

const tp = z.object({ topic: topicField, partition: z.number().int().min(0) }).strict();

const heartbeatSchema = z.object({
  member_id: z.string().min(1).max(255).optional(),
  member_epoch: z.number().int().min(-1),
  subscribed_topic_names: z.array(topicField).optional(),
  subscribed_topic_regex: z.string().min(1).optional(),
  owned_partitions: z.array(tp).optional(),
  session_timeout_ms: z.number().int().optional(),
  assignor: z.enum(ASSIGNORS as unknown as [AssignorName, ...AssignorName[]]).optional(),
}).strict();

async function heartbeat(req: ApiRequest): Promise<ApiResponse> {
  await clusterUrl(req);
  const b = validate(heartbeatSchema, parseJson(req.body), 'heartbeat');
  if (b.subscribed_topic_names && b.subscribed_topic_regex !== undefined) throw new HttpError(409, 40903, 'Illegal state: subscribe by topic names or by regex, not both.');
  if (b.subscribed_topic_regex !== undefined) {
    try {
      subscriptionRegex(b.subscribed_topic_regex);
    } catch (err) {
      throw new HttpError(422, 42206, `subscribed_topic_regex is not a valid regular expression (${(err as Error).message.slice(-120)}).`);
    }
  }
  // Kafka's ConsumerGroupHeartbeat (KAFKA-18813): DESCRIBE on every subscribed topic name, else
  // TOPIC_AUTHORIZATION_FAILED and no change; a regex is resolved only over topics the member may DESCRIBE.
  if (b.subscribed_topic_names) await requireAll(req, topicsIn('DESCRIBE', b.subscribed_topic_names));
  const describable = authorizationEnabled()
    ? (topics: readonly string[]) => visible(req, topics, (t) => ({ resourceType: 'TOPIC', resourceName: t }), 'DESCRIBE')
    : undefined;
  const subscription = b.subscribed_topic_names ? { topics: b.subscribed_topic_names } : b.subscribed_topic_regex !== undefined ? { pattern: b.subscribed_topic_regex } : undefined;
  const r = await groups.heartbeat(req.params.group_id ?? '', {
    ...(b.member_id !== undefined ? { memberId: b.member_id } : {}),
    memberEpoch: b.member_epoch,
    ...(subscription ? { subscription } : {}),
    ...(b.owned_partitions ? { owned: b.owned_partitions.map((x) => `${x.topic}#${x.partition}`) } : {}),
    ...(b.session_timeout_ms !== undefined ? { sessionTimeoutMs: b.session_timeout_ms } : {}),
  }, b.assignor ?? 'sticky', describable);
  return ok({
    kind: 'KafkaConsumerGroupHeartbeat',
    member_id: r.memberId, member_epoch: r.memberEpoch, group_epoch: r.groupEpoch,
    assignment: r.assignment, revoking: r.revoking, heartbeat_interval_ms: r.heartbeatIntervalMs,
  });
}

const commitSchema = z.object({
  member_id: z.string().min(1).max(255).optional(),
  member_epoch: z.number().int().optional(),
  offsets: z.array(z.object({ topic: topicField, partition: z.number().int().min(0), offset: z.number().int().min(0), metadata: z.string().optional() }).strict()).min(1),
}).strict();

async function commitOffsets(req: ApiRequest): Promise<ApiResponse> {
  await clusterUrl(req);
  const b = validate(commitSchema, parseJson(req.body), 'commit');
  if ((b.member_id === undefined) !== (b.member_epoch === undefined)) throw new HttpError(400, 40002, 'member_id and member_epoch go together.');
  await requireAll(req, topicsIn('READ', b.offsets.map((o) => o.topic)));
  const fence = b.member_id !== undefined ? { memberId: b.member_id, memberEpoch: b.member_epoch as number } : null;
  const r = await groups.commit(req.params.group_id ?? '', b.offsets, fence);
  return ok({ kind: 'KafkaOffsetCommit', kept: r.kept });
}

async function getOffsets(req: ApiRequest): Promise<ApiResponse> {
  const { clusterId } = await clusterUrl(req);
  // Kafka's OffsetFetch require_stable: a read_committed consumer waits for offsets a transaction holds.
  const stable = req.query.require_stable;
  if (stable !== undefined && stable !== 'true' && stable !== 'false') throw badRequest(`Query parameter 'require_stable' is true or false; got '${stable}'.`);
  const list = await groups.committed(req.params.group_id ?? '', undefined, { requireStable: stable === 'true' });
  return ok({
    kind: 'KafkaConsumerGroupOffsetList', cluster_id: clusterId, consumer_group_id: req.params.group_id,
    data: list.map((o) => ({ topic_name: o.topic, partition_id: o.partition, offset: o.offset, metadata: o.metadata, committed_at: new Date(o.committedAt).toISOString() })),
  });
}

type Member = groups.GroupDescription['members'][number];

const groupSelf = (base: string, groupId: string) => `${base}/consumer-groups/${groupId}`;
const crnOf = (clusterId: string, rest: string) => `crn:///kafka=${clusterId}/consumer-group=${rest}`;
/** Who a member is to Kafka tools: REST Proxy v2 instances, or the native protocol's SDK consumers (no client id is sent). */
const clientIdOf = (m: Member | undefined) => (!m ? '' : m.rest ? 'rest-proxy' : 'tributary');

/**
 * Confluent's `KafkaConsumerGroup`. Every member speaks the native (KIP-848) protocol, REST
 * instances included: `type` CONSUMER, never mixed. Tributary has no coordinator broker (any
 * function serves any group through the coordination table), so `coordinator` points at the
 * cluster; `group_epoch` is Tributary's.
 */
function groupJson(base: string, clusterId: string, d: groups.GroupDescription) {
  const self = groupSelf(base, d.groupId);
  return {
    kind: 'KafkaConsumerGroup',
    metadata: { self, resource_name: crnOf(clusterId, d.groupId) },
    cluster_id: clusterId,
    consumer_group_id: d.groupId,
    is_simple: false,
    partition_assignor: d.assignor,
    state: d.state.toUpperCase(),
    type: 'CONSUMER',
    is_mixed_consumer_group: false,
    coordinator: { related: base },
    group_epoch: d.groupEpoch,
    consumers: { related: `${self}/consumers` },
    lag_summary: { related: `${self}/lag-summary` },
  };
}

/** A member's subscription as it asked for it (a pattern's resolved topics stay internal). */
const subscriptionJson = (s: Member['subscription']) => (s === null ? null : s.pattern !== undefined ? { pattern: s.pattern } : { topics: s.topics ?? [] });

/** Confluent's `KafkaConsumer`; Tributary adds the member's epoch, liveness, subscription, assigned partitions and session. */
function consumerJson(base: string, clusterId: string, d: groups.GroupDescription, m: Member) {
  const self = `${groupSelf(base, d.groupId)}/consumers/${m.memberId}`;
  return {
    kind: 'KafkaConsumer',
    metadata: { self, resource_name: crnOf(clusterId, `${d.groupId}/consumer=${m.memberId}`) },
    cluster_id: clusterId, consumer_group_id: d.groupId, consumer_id: m.memberId, instance_id: m.rest ? m.memberId : null,
    client_id: clientIdOf(m), assignments: { related: `${self}/assignments` },
    member_epoch: m.memberEpoch, expired: m.expired, subscription: subscriptionJson(m.subscription), assigned_partitions: m.assignment,
    last_heartbeat_at: new Date(m.lastHeartbeatAt).toISOString(), session_timeout_ms: m.sessionTimeoutMs,
  };
}

function assignmentJson(base: string, clusterId: string, d: groups.GroupDescription, m: Member, tp: { topic: string; partition: number }) {
  const group = groupSelf(base, d.groupId);
  return {
    kind: 'KafkaConsumerAssignment',
    metadata: {
      self: `${group}/consumers/${m.memberId}/assignments/${tp.topic}/partitions/${tp.partition}`,
      resource_name: crnOf(clusterId, `${d.groupId}/consumer=${m.memberId}/assignment=${tp.topic}/partition=${tp.partition}`),
    },
    cluster_id: clusterId, consumer_group_id: d.groupId, consumer_id: m.memberId, topic_name: tp.topic, partition_id: tp.partition,
    partition: { related: `${base}/topics/${tp.topic}/partitions/${tp.partition}` },
    lag: { related: `${group}/lags/${tp.topic}/partitions/${tp.partition}` },
  };
}

/**
 * Confluent's `KafkaConsumerLag` for every partition the group has committed an offset for (as
 * the REST Proxy does: a partition with no committed offset has no lag to show).
 */
async function lagsJson(base: string, clusterId: string, g: string) {
  const [d, lags] = await Promise.all([groups.describeGroup(g), groups.groupLag(g)]);
  const members = new Map(d.members.map((m) => [m.memberId, m]));
  return lags.flatMap((l) => {
    if (l.currentOffset === null) return [];
    const m = l.memberId !== null ? members.get(l.memberId) : undefined;
    return [{
      kind: 'KafkaConsumerLag',
      metadata: { self: `${groupSelf(base, g)}/lags/${l.topic}/partitions/${l.partition}`, resource_name: crnOf(clusterId, `${g}/lag=${l.topic}/partition=${l.partition}`) },
      cluster_id: clusterId, consumer_group_id: g, topic_name: l.topic, partition_id: l.partition,
      current_offset: l.currentOffset, log_end_offset: l.logEndOffset, last_stable_offset: l.lastStableOffset, lag: l.lag,
      consumer_id: l.memberId ?? '', instance_id: m?.rest ? m.memberId : null, client_id: clientIdOf(m),
    }];
  });
}

const notFound = (message: string) => new HttpError(404, 404, message);

async function memberOf(req: ApiRequest) {
  const { clusterId, base } = await clusterUrl(req);
  const d = await groups.describeGroup(req.params.group_id ?? '');
  const m = d.members.find((x) => x.memberId === req.params.consumer_id);
  if (!m) throw notFound(`Consumer ${req.params.consumer_id} of group ${d.groupId} cannot be found.`);
  return { clusterId, base, d, m };
}

const resetSchema = z.object({
  partitions: z.array(tp).optional(),
  topics: z.array(topicField).optional(),
  to: z.union([
    z.enum(['earliest', 'latest']),
    z.object({ offset: z.number().int().min(0) }).strict(),
    z.object({ timestamp: z.union([z.string(), z.number().int().min(0)]) }).strict(),
    z.object({ shift_by: z.number().int() }).strict(),
  ]),
}).strict();

async function resetOffsets(req: ApiRequest): Promise<ApiResponse> {
  await clusterUrl(req);
  const b = validate(resetSchema, parseJson(req.body), 'reset');
  const g = req.params.group_id ?? '';
  const counts = await partitionCountsKnowing(b.topics ?? []);
  const partitions = b.partitions ?? (b.topics ?? []).flatMap((t) => {
    if (counts[t] === undefined) throw new HttpError(404, 40401, `Topic ${t} not found.`);
    return Array.from({ length: counts[t] as number }, (_, partition) => ({ topic: t, partition }));
  });
  if (partitions.length === 0) throw new HttpError(400, 40002, 'Name the partitions or topics to reset.');
  await requireAll(req, topicsIn('READ', partitions.map((p) => p.topic)));
  const to = b.to;
  const spec: groups.ResetSpec = typeof to === 'string' ? to
    : 'offset' in to ? { offset: to.offset }
      : 'shift_by' in to ? { shiftBy: to.shift_by }
        : { timestamp: typeof to.timestamp === 'number' ? to.timestamp : Date.parse(to.timestamp) };
  if (typeof spec === 'object' && 'timestamp' in spec && Number.isNaN(spec.timestamp)) throw new HttpError(400, 40002, 'timestamp must be ISO 8601 or epoch milliseconds.');
  const out = await groups.resetOffsets(g, partitions, spec);
  return ok({ kind: 'KafkaConsumerGroupOffsetList', consumer_group_id: g, data: out.map((o) => ({ topic_name: o.topic, partition_id: o.partition, offset: o.offset })) });
}

const G = '/v3/clusters/{cluster_id}/consumer-groups/{group_id}';
/** How many groups the group listing describes at once. */
const GROUP_READS_IN_FLIGHT = 16;

export const groupRoutes: Record<string, RouteHandler> = {
  'GET /v3/clusters/{cluster_id}/consumer-groups': async (req) => {
    const { clusterId, base } = await clusterUrl(req);
    const ids = await visible(req, await groups.listGroups(), (id) => ({ resourceType: 'GROUP', resourceName: id }));
    const described = await mapLimit(ids, GROUP_READS_IN_FLIGHT, (id) => groups.describeGroup(id).catch(() => undefined));
    return ok({ kind: 'KafkaConsumerGroupList', metadata: { self: `${base}/consumer-groups`, next: null }, data: described.flatMap((d) => (d ? [groupJson(base, clusterId, d)] : [])) });
  },
  [`GET ${G}`]: async (req) => {
    const { clusterId, base } = await clusterUrl(req);
    return ok(groupJson(base, clusterId, await groups.describeGroup(req.params.group_id ?? '')));
  },
  [`DELETE ${G}`]: async (req) => {
    await clusterUrl(req);
    await groups.deleteGroup(req.params.group_id ?? '');
    return { status: 204 };
  },
  [`GET ${G}/consumers`]: async (req) => {
    const { clusterId, base } = await clusterUrl(req);
    const d = await groups.describeGroup(req.params.group_id ?? '');
    return ok({
      kind: 'KafkaConsumerList', metadata: { self: `${groupSelf(base, d.groupId)}/consumers`, next: null },
      data: d.members.map((m) => consumerJson(base, clusterId, d, m)),
    });
  },
  [`GET ${G}/consumers/{consumer_id}`]: async (req) => {
    const { clusterId, base, d, m } = await memberOf(req);
    return ok(consumerJson(base, clusterId, d, m));
  },
  [`GET ${G}/consumers/{consumer_id}/assignments`]: async (req) => {
    const { clusterId, base, d, m } = await memberOf(req);
    return ok({
      kind: 'KafkaConsumerAssignmentList', metadata: { self: `${groupSelf(base, d.groupId)}/consumers/${m.memberId}/assignments`, next: null },
      data: m.assignment.map((tp) => assignmentJson(base, clusterId, d, m, tp)),
    });
  },
  [`GET ${G}/consumers/{consumer_id}/assignments/{topic_name}/partitions/{partition_id}`]: async (req) => {
    const { clusterId, base, d, m } = await memberOf(req);
    const tp = m.assignment.find((x) => x.topic === req.params.topic_name && String(x.partition) === req.params.partition_id);
    if (!tp) throw notFound(`Consumer ${m.memberId} is not assigned partition ${req.params.partition_id} of ${req.params.topic_name}.`);
    return ok(assignmentJson(base, clusterId, d, m, tp));
  },
  [`GET ${G}/lags`]: async (req) => {
    const { clusterId, base } = await clusterUrl(req);
    const g = req.params.group_id ?? '';
    return ok({ kind: 'KafkaConsumerLagList', metadata: { self: `${groupSelf(base, g)}/lags`, next: null }, data: await lagsJson(base, clusterId, g) });
  },
  [`GET ${G}/lags/{topic_name}/partitions/{partition_id}`]: async (req) => {
    const { clusterId, base } = await clusterUrl(req);
    const g = req.params.group_id ?? '';
    const lag = (await lagsJson(base, clusterId, g)).find((l) => l.topic_name === req.params.topic_name && String(l.partition_id) === req.params.partition_id);
    if (!lag) throw notFound(`Group ${g} has no committed offset for partition ${req.params.partition_id} of ${req.params.topic_name}.`);
    return ok(lag);
  },
  // The partition furthest behind and the sum over all (404 while the group has committed nothing, as the REST Proxy answers).
  [`GET ${G}/lag-summary`]: async (req) => {
    const { clusterId, base } = await clusterUrl(req);
    const g = req.params.group_id ?? '';
    const lags = await lagsJson(base, clusterId, g);
    const max = lags.reduce<(typeof lags)[number] | undefined>((a, b) => (!a || b.lag > a.lag ? b : a), undefined);
    if (!max) throw notFound(`Consumer group ${g} has no committed offsets.`);
    return ok({
      kind: 'KafkaConsumerGroupLagSummary',
      metadata: { self: `${groupSelf(base, g)}/lag-summary`, resource_name: crnOf(clusterId, `${g}/lag-summary`) },
      cluster_id: clusterId, consumer_group_id: g,
      max_lag_consumer_id: max.consumer_id, max_lag_instance_id: max.instance_id, max_lag_client_id: max.client_id,
      max_lag_topic_name: max.topic_name, max_lag_partition_id: max.partition_id, max_lag: max.lag,
      total_lag: lags.reduce((n, l) => n + l.lag, 0),
      max_lag_consumer: { related: `${groupSelf(base, g)}/consumers/${max.consumer_id}` },
      max_lag_partition: { related: `${base}/topics/${max.topic_name}/partitions/${max.partition_id}` },
    });
  },
  [`POST ${G}/heartbeat`]: heartbeat,
  [`POST ${G}/offsets:commit`]: commitOffsets,
  [`GET ${G}/offsets`]: getOffsets,
  [`POST ${G}/offsets:reset`]: resetOffsets,
};
