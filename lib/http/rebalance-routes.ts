/**
 * REST Proxy v3 routes that change where partitions live: brokers joining and leaving,
 * reassignments (Kafka's AlterPartitionReassignments and ListPartitionReassignments, in
 * Confluent's `KafkaReassignment` shape), leader elections (Kafka's ElectLeaders) and the
 * self-balancer's status.
 */
import * as z from 'zod';
import { HttpError } from '../errors.js';
import { KafkaError } from '../protocol/errors.js';
import { brokerLoads } from '../cluster/broker-load.js';
import { addBroker, removeBroker } from '../cluster/brokers.js';
import { electLeaderOf } from '../cluster/leadership.js';
import { balancerStatus } from '../cluster/balancer.js';
import { cancelReassignment, reassigning, startReassignment } from '../cluster/reassignment.js';
import { describeTopic, listTopics, type TopicDescription } from '../cluster/topics.js';
import type { ClusterRecord, PartitionRecord } from '../storage/model.js';
import { intPathParam, parseJson, validate, type ApiRequest, type RouteHandler } from './api.js';
import { brokerJson, cluster, clusterUrl, crn, list, ok, partitionNotFound, partitionsJson, related } from './admin-routes.js';

function reassignmentJson(req: ApiRequest, c: ClusterRecord, topic: string, p: PartitionRecord) {
  const partition = `${clusterUrl(req, c)}/topics/${topic}/partitions/${p.partition}`;
  return {
    kind: 'KafkaReassignment',
    metadata: { self: `${partition}/reassignment`, resource_name: crn(c, `/topic=${topic}/partition=${p.partition}/reassignment`) },
    cluster_id: c.clusterId,
    topic_name: topic,
    partition_id: p.partition,
    adding_replicas: [...(p.addingReplicas ?? [])],
    removing_replicas: [...(p.removingReplicas ?? [])],
    replicas: related(`${partition}/replicas`),
  };
}

const reassignments = (req: ApiRequest, c: ClusterRecord, topics: readonly TopicDescription[]) =>
  topics.flatMap((t) => t.partitions.filter(reassigning).map((p) => reassignmentJson(req, c, t.topic.name, p)));

async function partitionOf(req: ApiRequest): Promise<{ d: TopicDescription; p: PartitionRecord }> {
  const d = await describeTopic(req.params.topic_name ?? '');
  const id = intPathParam(req, 'partition_id', partitionNotFound(req));
  const p = d.partitions[id];
  if (!p) throw partitionNotFound(req)();
  return { d, p };
}

const addBrokerBody = z.object({ broker_id: z.number().int().min(0).optional(), rack: z.string().min(1).max(255).nullable().optional() }).strict();
const reassignBody = z.object({ replicas: z.array(z.number().int()).min(1) }).strict();
const electBody = z.object({ election_type: z.enum(['PREFERRED', 'UNCLEAN']).optional() }).strict();

const T = '/v3/clusters/{cluster_id}/topics/{topic_name}';
const P = `${T}/partitions/{partition_id}`;

export const rebalanceRoutes: Record<string, RouteHandler> = {
  // Registers a broker (its table: the deployment's in AWS, a new store in the local stack): 201,
  // or 200 when it was registered already as given. The balancer then moves its share to it.
  'POST /v3/clusters/{cluster_id}/brokers': async (req) => {
    const c = await cluster(req);
    const body = validate(addBrokerBody, req.body.trim() ? parseJson(req.body) : {}, 'broker');
    const { broker, created } = await addBroker({ ...(body.broker_id !== undefined ? { brokerId: body.broker_id } : {}), ...(body.rack !== undefined ? { rack: body.rack } : {}) });
    return ok(brokerJson(req, c, broker, (await brokerLoads([broker.brokerId])).get(broker.brokerId)), created ? 201 : 200);
  },
  // Removes a broker: 202; its state reads `decommissioning` while the balancer drains it, then it is gone (404).
  'DELETE /v3/clusters/{cluster_id}/brokers/{broker_id}': async (req) => {
    const c = await cluster(req);
    const id = intPathParam(req, 'broker_id', () => new HttpError(404, 404, `Broker ${req.params.broker_id} cannot be found.`));
    const broker = await removeBroker(id);
    return ok(brokerJson(req, c, broker, (await brokerLoads([id])).get(id)), 202);
  },
  'GET /v3/clusters/{cluster_id}/balancer': async (req) => {
    const c = await cluster(req);
    const s = await balancerStatus();
    return ok({
      kind: 'KafkaBalancer',
      metadata: { self: `${clusterUrl(req, c)}/balancer`, resource_name: crn(c, '/balancer') },
      cluster_id: c.clusterId,
      status: s.status,
      moves_done: s.movesDone,
      moves_total: s.movesTotal,
      last_plan_at: s.lastPlanAt !== undefined ? new Date(s.lastPlanAt).toISOString() : null,
    });
  },
  'GET /v3/clusters/{cluster_id}/topics/-/partitions/-/reassignment': async (req) => {
    const c = await cluster(req);
    return ok(list('KafkaReassignmentList', `${clusterUrl(req, c)}/topics/-/partitions/-/reassignment`, reassignments(req, c, await listTopics())));
  },
  [`GET ${T}/partitions/-/reassignment`]: async (req) => {
    const c = await cluster(req);
    const d = await describeTopic(req.params.topic_name ?? '');
    return ok(list('KafkaReassignmentList', `${clusterUrl(req, c)}/topics/${d.topic.name}/partitions/-/reassignment`, reassignments(req, c, [d])));
  },
  [`GET ${P}/reassignment`]: async (req) => {
    const c = await cluster(req);
    const { d, p } = await partitionOf(req);
    if (!reassigning(p)) throw new KafkaError('NO_REASSIGNMENT_IN_PROGRESS', `No reassignment is in progress for partition ${p.partition} of ${d.topic.name}.`);
    return ok(reassignmentJson(req, c, d.topic.name, p));
  },
  // Starts (or redirects) a reassignment: 202, it completes in the background; a reorder of the
  // same replicas applies at once (200).
  [`PATCH ${P}/reassignment`]: async (req) => {
    const c = await cluster(req);
    const { d, p } = await partitionOf(req);
    const body = validate(reassignBody, parseJson(req.body), 'reassignment');
    const next = await startReassignment(d.topic.name, p.partition, body.replicas);
    return ok(reassignmentJson(req, c, d.topic.name, next), reassigning(next) ? 202 : 200);
  },
  [`DELETE ${P}/reassignment`]: async (req) => {
    await cluster(req);
    const { d, p } = await partitionOf(req);
    await cancelReassignment(d.topic.name, p.partition);
    return { status: 204 };
  },
  // ElectLeaders: POST .../partitions/{p}:elect-leader. API Gateway matches a path variable only
  // as a whole segment, so the route is POST .../partitions/{partition_id} and the action is the
  // variable's suffix.
  [`POST ${P}`]: async (req) => {
    const c = await cluster(req);
    const [id, action] = (req.params.partition_id ?? '').split(':');
    if (action !== 'elect-leader') throw new HttpError(404, 404, `HTTP 404 Not Found: no route for ${req.method} ${req.path}`);
    const { d } = await partitionOf({ ...req, params: { ...req.params, partition_id: id ?? '' } });
    const body = validate(electBody, req.body.trim() ? parseJson(req.body) : {}, 'leader election');
    const next = await electLeaderOf(d.topic.name, Number(id), body.election_type ?? 'PREFERRED');
    return ok((await partitionsJson(req, c, d, [next]))[0]);
  },
};
