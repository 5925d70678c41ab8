/**
 * REST Proxy v2 metadata reads — `GET /topics`, `/topics/{t}`, `/topics/{t}/partitions[/{p}]`
 * and `/brokers` — in v2's shapes (kafka-rest's GetTopicResponse, GetPartitionResponse and
 * BrokerList) and its error codes (40401 topic, 40402 partition).
 */
import { KafkaError } from '../protocol/errors.js';
import { effectiveConfigs } from '../cluster/topic-configs.js';
import { describeBrokers, describeTopic, listTopicNames } from '../cluster/topics.js';
import type { PartitionRecord } from '../storage/model.js';
import { visible } from './enforce.js';
import { errorResponse, intPathParam, type ApiRequest, type ApiResponse, type RouteHandler } from './api.js';

const V2 = 'application/vnd.kafka.v2+json';

/** Runs a v2 read: its body and errors go out as v2 JSON. */
const v2 = (route: (req: ApiRequest) => Promise<unknown>): RouteHandler => async (req) => {
  try {
    return { status: 200, contentType: V2, body: await route(req) } satisfies ApiResponse;
  } catch (err) {
    return errorResponse(err, V2);
  }
};

const partitionJson = (p: PartitionRecord) => ({
  partition: p.partition,
  leader: p.leader >= 0 ? p.leader : -1,
  replicas: p.replicas.map((broker) => ({ broker, leader: broker === p.leader, in_sync: p.isr.includes(broker) })),
});

const partitionNotFound = (req: ApiRequest) => () =>
  new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${req.params.partition_id} not found.`, { partition: req.params.partition_id });

export const v2MetadataRoutes: Record<string, RouteHandler> = {
  'GET /topics': v2(async (req) => visible(req, await listTopicNames(), (name) => ({ resourceType: 'TOPIC', resourceName: name }))),
  'GET /topics/{topic_name}': v2(async (req) => {
    const d = await describeTopic(req.params.topic_name ?? '');
    return {
      name: d.topic.name,
      configs: Object.fromEntries(effectiveConfigs(d.topic.configs).map((e) => [e.name, e.value])),
      partitions: d.partitions.map(partitionJson),
    };
  }),
  'GET /topics/{topic_name}/partitions': v2(async (req) => (await describeTopic(req.params.topic_name ?? '')).partitions.map(partitionJson)),
  'GET /topics/{topic_name}/partitions/{partition_id}': v2(async (req) => {
    const d = await describeTopic(req.params.topic_name ?? '');
    const p = d.partitions[intPathParam(req, 'partition_id', partitionNotFound(req))];
    if (!p) throw partitionNotFound(req)();
    return partitionJson(p);
  }),
  'GET /brokers': v2(async () => ({ brokers: (await describeBrokers()).map((b) => b.brokerId).sort((a, b) => a - b) })),
};
