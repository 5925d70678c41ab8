/**
 * REST Proxy v3 replica routes: a partition's replicas, one replica, and every replica a broker
 * holds, in Confluent's `KafkaReplica` shape with Tributary's replica state and offsets beside it.
 */
import { HttpError } from '../errors.js';
import { describeBrokers, describeTopic, listTopics } from '../cluster/topics.js';
import { intPathParam, type ApiRequest, type RouteHandler } from './api.js';
import { cluster, clusterUrl, list, ok, partitionNotFound, replicaViews } from './v3-admin.js';

const P = '/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}';
const brokerNotFound = (req: ApiRequest) => () => new HttpError(404, 404, `Broker ${req.params.broker_id} cannot be found.`);

async function replicasOf(req: ApiRequest) {
  const c = await cluster(req);
  const d = await describeTopic(req.params.topic_name ?? '');
  const id = intPathParam(req, 'partition_id', partitionNotFound(req));
  const p = d.partitions[id];
  if (!p) throw partitionNotFound(req)();
  const views = await replicaViews(req, c, d, [p]);
  return { c, d, p, replicas: views.get(p.partition)?.replicas ?? [] };
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
  // Every partition replica the broker holds (Confluent's searchReplicasByBroker).
  'GET /v3/clusters/{cluster_id}/brokers/{broker_id}/partition-replicas': async (req) => {
    const c = await cluster(req);
    const id = intPathParam(req, 'broker_id', brokerNotFound(req));
    if (!(await describeBrokers()).some((b) => b.brokerId === id)) throw brokerNotFound(req)();
    const topics = await listTopics();
    const perTopic = await Promise.all(topics.map(async (d) => {
      const parts = d.partitions.filter((p) => p.replicas.includes(id));
      if (parts.length === 0) return [];
      const views = await replicaViews(req, c, d, parts);
      return parts.flatMap((p) => (views.get(p.partition)?.replicas ?? []).filter((r) => r.broker_id === id));
    }));
    return ok(list('KafkaReplicaList', `${clusterUrl(req, c)}/brokers/${id}/partition-replicas`, perTopic.flat()));
  },
};
