/**
 * REST Proxy v3 replica routes: a partition's replicas, one replica, and every replica a broker
 * holds, in Confluent's `KafkaReplica` shape with Tributary's replica state and offsets beside it;
 * and Tributary's own view of where a partition's log is: its S3 segments (`…/segments`).
 */
import { HttpError } from '../errors.js';
import { mapLimit } from '../map-limit.js';
import { replicaStore } from '../cluster/metadata.js';
import { describeBrokers, describeTopic, listTopics } from '../cluster/topics.js';
import { describeTieredLog, type SegmentInfo, type SegmentStateFilter } from '../log/segment-list.js';
import { badRequest, intParam, intPathParam, type ApiRequest, type RouteHandler } from './api.js';
import { cluster, clusterUrl, list, ok, partitionNotFound, replicaViews } from './admin-routes.js';

const P = '/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}';
const brokerNotFound = (req: ApiRequest) => () => new HttpError(404, 404, `Broker ${req.params.broker_id} cannot be found.`);

/** The cluster, the topic and the partition a partition route names (404s for unknown ones). */
async function partitionOf(req: ApiRequest) {
  const c = await cluster(req);
  const d = await describeTopic(req.params.topic_name ?? '');
  const id = intPathParam(req, 'partition_id', partitionNotFound(req));
  const p = d.partitions[id];
  if (!p) throw partitionNotFound(req)();
  return { c, d, id, p };
}

async function replicasOf(req: ApiRequest) {
  const { c, d, p } = await partitionOf(req);
  const views = await replicaViews(req, c, d, [p]);
  return { c, d, p, replicas: views.get(p.partition)?.replicas ?? [] };
}

/** How many topics' replica heads a broker's replica listing reads at once. */
const TOPICS_IN_FLIGHT = 8;
const SEGMENT_STATES: readonly SegmentStateFilter[] = ['live', 'pending', 'deleted', 'all'];
const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

/** `state=live|pending|deleted|all` (default live: the segments that are part of the log); 400/40002 for anything else. */
function segmentState(req: ApiRequest): SegmentStateFilter {
  const raw = req.query.state;
  if (raw === undefined || raw === '') return 'live';
  const state = SEGMENT_STATES.find((s) => s === raw.toLowerCase());
  if (!state) throw badRequest(`Query parameter 'state' must be live, pending, deleted or all, got '${raw}'.`);
  return state;
}

/**
 * A partition's segments (docs/tiered-log.md, "Seeing the tiers"): Tributary's `KafkaSegment`, one
 * per registry item in base offset order, with `end_offset` exclusive (the last batch's last offset
 * + 1, as the registry keeps it). Beside the list, the leader's `log_start_offset`,
 * `local_log_start_offset` (KIP-405's name: where the replica tables' tail starts, the tiered part
 * ends), `high_watermark` and `log_end_offset`, null when the leader's store does not answer.
 * Pages of SEGMENT_PAGE segments; `metadata.next` carries `from_offset` for the next one.
 */
async function segmentsOf(req: ApiRequest) {
  const { c, d, id, p } = await partitionOf(req);
  const state = segmentState(req);
  const fromOffset = intParam(req, 'from_offset', { default: 0 });
  const leader = p.leader >= 0 ? await replicaStore(p.leader).catch(() => undefined) : undefined;
  const view = await describeTieredLog(d.topic.topicId, id, leader, { state, fromOffset });
  const self = `${clusterUrl(req, c)}/topics/${d.topic.name}/partitions/${id}/segments`;
  const stateQuery = req.query.state ? `state=${state}` : '';
  const withQuery = (...q: string[]) => (q.some((x) => x) ? `${self}?${q.filter((x) => x).join('&')}` : self);
  const segment = (s: SegmentInfo) => ({
    kind: 'KafkaSegment',
    cluster_id: c.clusterId,
    topic_name: d.topic.name,
    partition_id: id,
    base_offset: s.baseOffset,
    end_offset: s.endOffset,
    size_bytes: s.sizeBytes ?? null,
    record_count: s.recordCount ?? null,
    batch_count: s.batchCount ?? null,
    min_timestamp: iso(s.minTimestamp),
    max_timestamp: iso(s.maxTimestamp),
    state: s.state,
    generation: s.generation,
    object_key: s.key,
    created_at: iso(s.createdAt),
    deleted_at: iso(s.deletedAt),
  });
  return {
    kind: 'KafkaSegmentList',
    metadata: {
      self: withQuery(stateQuery, fromOffset > 0 ? `from_offset=${fromOffset}` : ''),
      next: view.nextBaseOffset === undefined ? null : withQuery(stateQuery, `from_offset=${view.nextBaseOffset}`),
    },
    log_start_offset: view.logStartOffset,
    local_log_start_offset: view.localLogStartOffset,
    high_watermark: view.highWatermark,
    log_end_offset: view.logEndOffset,
    data: view.segments.map(segment),
  };
}

export const replicaRoutes: Record<string, RouteHandler> = {
  [`GET ${P}/replicas`]: async (req) => {
    const { c, d, p, replicas } = await replicasOf(req);
    return ok(list('KafkaReplicaList', `${clusterUrl(req, c)}/topics/${d.topic.name}/partitions/${p.partition}/replicas`, replicas));
  },
  [`GET ${P}/replicas/{broker_id}`]: async (req) => {
    const { replicas } = await replicasOf(req);
    const id = intPathParam(req, 'broker_id', brokerNotFound(req));
    const r = replicas.find((x) => x.broker_id === id);
    if (!r) throw new HttpError(404, 404, `Replica ${req.params.broker_id} of partition ${req.params.partition_id} of ${req.params.topic_name} cannot be found.`);
    return ok(r);
  },
  [`GET ${P}/segments`]: async (req) => ok(await segmentsOf(req)),
  // Every partition replica the broker holds (Confluent's searchReplicasByBroker).
  'GET /v3/clusters/{cluster_id}/brokers/{broker_id}/partition-replicas': async (req) => {
    const c = await cluster(req);
    const id = intPathParam(req, 'broker_id', brokerNotFound(req));
    if (!(await describeBrokers()).some((b) => b.brokerId === id)) throw brokerNotFound(req)();
    const topics = await listTopics();
    const perTopic = await mapLimit(topics, TOPICS_IN_FLIGHT, async (d) => {
      const parts = d.partitions.filter((p) => p.replicas.includes(id));
      if (parts.length === 0) return [];
      const views = await replicaViews(req, c, d, parts);
      return parts.flatMap((p) => (views.get(p.partition)?.replicas ?? []).filter((r) => r.broker_id === id));
    });
    return ok(list('KafkaReplicaList', `${clusterUrl(req, c)}/brokers/${id}/partition-replicas`, perTopic.flat()));
  },
};
