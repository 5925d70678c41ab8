/**
 * Transaction routes (Tributary's own: REST Proxy has none; docs/http-api.md "Transactions"): a
 * transactional producer's init, its partitions and offsets, the end of each transaction; and
 * Kafka's DescribeTransactions, ListTransactions and kafka-transactions.sh's abort; a partition's
 * producers (Kafka's DescribeProducers) and the end of its hanging transactions
 * (lib/orchestration/hanging-transactions.ts; kafka-transactions.sh find-hanging and abort). A
 * transactional produce is an ordinary produce with `transactional_id`, `producer_id` and
 * `producer_epoch` in the query string (produce-routes.ts).
 */
import * as z from 'zod';
import { HttpError } from '../errors.js';
import { clusterRecord, requireTopic } from '../cluster/metadata.js';
import { KafkaError } from '../protocol/errors.js';
import {
  abortTransaction, addOffsets, addPartitions, describeTransaction, endTransaction, initTransactions, listTransactions,
  DEFAULT_TRANSACTION_TIMEOUT_MS, type TxnProducer, type TxnRecord, type TxnState,
} from '../orchestration/transactions.js';
import { describeProducers, endHangingTransactions } from '../orchestration/hanging-transactions.js';
import { badRequest, intPathParam, parseJson, topicField, validate, type ApiRequest, type ApiResponse, type RouteHandler } from './api.js';
import { requireAll, topicsIn, visible } from './enforce.js';

const STATES: readonly TxnState[] = ['Empty', 'Ongoing', 'PrepareCommit', 'PrepareAbort', 'CompleteCommit', 'CompleteAbort'];

async function checkCluster(req: ApiRequest): Promise<string> {
  const c = await clusterRecord();
  if (req.params.cluster_id !== c.clusterId) throw new HttpError(404, 404, `Cluster ${req.params.cluster_id} cannot be found.`);
  return c.clusterId;
}

const body = (req: ApiRequest): unknown => (req.body.trim() === '' ? {} : parseJson(req.body));
const idOf = (req: ApiRequest): string => req.params.transactional_id ?? '';

const producerFields = { producer_id: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER), producer_epoch: z.number().int().min(0).max(32767) };
const producerOf = (req: ApiRequest, b: { producer_id: number; producer_epoch: number }): TxnProducer =>
  ({ transactionalId: idOf(req), producerId: b.producer_id, producerEpoch: b.producer_epoch });

/** A transactional id's state as the API shows it (Kafka's DescribeTransactions fields). */
function view(clusterId: string, r: TxnRecord) {
  return {
    kind: 'KafkaTransaction',
    cluster_id: clusterId,
    transactional_id: r.transactionalId,
    producer_id: r.producerId,
    producer_epoch: r.producerEpoch,
    state: r.state,
    transaction_timeout_ms: r.timeoutMs,
    transaction_start_time_ms: r.state === 'Ongoing' || r.state.startsWith('Prepare') ? r.startedAt ?? null : null,
    topics: [...new Set(r.partitions.map((p) => p.topic))].map((topic) => ({
      topic_name: topic, partitions: r.partitions.filter((p) => p.topic === topic).map((p) => p.partition).sort((a, b) => a - b),
    })),
    groups: Object.keys(r.groups),
  };
}

const initSchema = z.object({ transaction_timeout_ms: z.number().int().optional() }).strict();

/** Kafka's InitProducerId with a transactional id. */
async function init(req: ApiRequest): Promise<ApiResponse> {
  await checkCluster(req);
  const b = validate(initSchema, body(req), 'producer');
  const out = await initTransactions(idOf(req), b.transaction_timeout_ms ?? DEFAULT_TRANSACTION_TIMEOUT_MS);
  return { status: 200, body: { kind: 'KafkaTransactionalProducer', transactional_id: idOf(req), producer_id: out.producerId, producer_epoch: out.producerEpoch } };
}

const partitionsSchema = z.object({
  ...producerFields,
  partitions: z.array(z.object({ topic_name: topicField, partition_id: z.number().int().min(0) }).strict()).min(1).max(1000),
}).strict();

/** Kafka's AddPartitionsToTxn. */
async function partitions(req: ApiRequest): Promise<ApiResponse> {
  await checkCluster(req);
  const b = validate(partitionsSchema, body(req), 'partitions');
  await requireAll(req, topicsIn('WRITE', b.partitions.map((p) => p.topic_name)));
  // (as Kafka's AddPartitionsToTxn: a partition that does not exist joins nothing)
  for (const name of new Set(b.partitions.map((p) => p.topic_name))) {
    const view = await requireTopic(name);
    const missing = b.partitions.find((p) => p.topic_name === name && p.partition_id >= view.topic.partitions);
    if (missing) throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `UNKNOWN_TOPIC_OR_PARTITION: topic ${name} has no partition ${missing.partition_id}.`, { topic: name });
  }
  await addPartitions(producerOf(req, b), b.partitions.map((p) => ({ topic: p.topic_name, partition: p.partition_id })));
  return { status: 204, body: '' };
}

const offsetsSchema = z.object({
  ...producerFields,
  group_id: z.string().min(1).max(249),
  offsets: z.array(z.object({
    topic_name: topicField, partition_id: z.number().int().min(0), offset: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER), metadata: z.string().max(4096).optional(),
  }).strict()).min(1).max(1000),
  consumer: z.object({ member_id: z.string().min(1), generation_id: z.number().int() }).strict().optional(),
}).strict();

/** Kafka's AddOffsetsToTxn with TxnOffsetCommit: offsets committed only if the transaction commits. */
async function offsets(req: ApiRequest): Promise<ApiResponse> {
  await checkCluster(req);
  const b = validate(offsetsSchema, body(req), 'offsets');
  await requireAll(req, [{ operation: 'READ', resourceType: 'GROUP', resourceName: b.group_id }, ...topicsIn('READ', b.offsets.map((o) => o.topic_name))]);
  await addOffsets(
    producerOf(req, b), b.group_id,
    b.offsets.map((o) => ({ topic: o.topic_name, partition: o.partition_id, offset: o.offset, ...(o.metadata !== undefined ? { metadata: o.metadata } : {}) })),
    b.consumer && { memberId: b.consumer.member_id, generationId: b.consumer.generation_id },
  );
  return { status: 204, body: '' };
}

const endSchema = z.object({ ...producerFields, commit: z.boolean() }).strict();

/** Kafka's EndTxn: the answer carries the epoch for the producer's next transaction. */
async function end(req: ApiRequest): Promise<ApiResponse> {
  await checkCluster(req);
  const b = validate(endSchema, body(req), 'end');
  const out = await endTransaction(producerOf(req, b), b.commit);
  return { status: 200, body: { kind: 'KafkaTransactionalProducer', transactional_id: idOf(req), producer_id: out.producerId, producer_epoch: out.producerEpoch } };
}

async function describe(req: ApiRequest): Promise<ApiResponse> {
  const clusterId = await checkCluster(req);
  return { status: 200, body: view(clusterId, await describeTransaction(idOf(req))) };
}

/** Kafka's ListTransactions: `state` filters (comma-separated or repeated). */
async function list(req: ApiRequest): Promise<ApiResponse> {
  const clusterId = await checkCluster(req);
  const states = (req.query.state ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
  const unknown = states.find((s) => !STATES.includes(s as TxnState));
  if (unknown !== undefined) throw badRequest(`Query parameter 'state' takes ${STATES.join(', ')}; got '${unknown}'.`);
  const all = await listTransactions(states as TxnState[]);
  const shown = await visible(req, all, (r) => ({ resourceType: 'TRANSACTIONAL_ID', resourceName: r.transactionalId }));
  shown.sort((a, b) => a.transactionalId.localeCompare(b.transactionalId));
  return { status: 200, body: { kind: 'KafkaTransactionList', data: shown.map((r) => view(clusterId, r)) } };
}

/** kafka-transactions.sh abort: the id's producer is fenced and its open transaction aborted. */
async function abort(req: ApiRequest): Promise<ApiResponse> {
  const clusterId = await checkCluster(req);
  return { status: 200, body: view(clusterId, await abortTransaction(idOf(req))) };
}

/** The partition of a partition route; UNKNOWN_TOPIC_OR_PARTITION when the topic has no such partition. */
async function partitionOf(req: ApiRequest): Promise<{ topic: string; partition: number }> {
  const topic = req.params.topic_name ?? '';
  const notFound = () => new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `UNKNOWN_TOPIC_OR_PARTITION: topic ${topic} has no partition ${req.params.partition_id}.`, { topic });
  const partition = intPathParam(req, 'partition_id', notFound);
  if (partition >= (await requireTopic(topic)).topic.partitions) throw notFound();
  return { topic, partition };
}

/** Kafka's DescribeProducers: the producers with state on the partition's leader; `hanging` when its open transaction's coordinator decided it. */
async function producers(req: ApiRequest): Promise<ApiResponse> {
  const clusterId = await checkCluster(req);
  const { topic, partition } = await partitionOf(req);
  const list = await describeProducers(topic, partition);
  // (a transactional id is shown only to whom may DESCRIBE it, as the transactions list shows them)
  const ids = new Set((await visible(req, list.flatMap((p) => (p.transactionalId === undefined ? [] : [p.transactionalId])), (id) =>
    ({ resourceType: 'TRANSACTIONAL_ID', resourceName: id }))));
  return {
    status: 200,
    body: {
      kind: 'KafkaPartitionProducerList',
      data: list.map((p) => ({
        kind: 'KafkaPartitionProducer', cluster_id: clusterId, topic_name: topic, partition_id: partition,
        producer_id: p.producerId, producer_epoch: p.producerEpoch, last_sequence: p.lastSequence,
        current_transaction_start_offset: p.currentTransactionStartOffset,
        transactional_id: p.transactionalId !== undefined && ids.has(p.transactionalId) ? p.transactionalId : null, hanging: p.hanging,
      })),
    },
  };
}

const endHangingSchema = z.object({
  producer_id: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
  start_offset: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
}).strict();

/**
 * kafka-transactions.sh abort --topic --partition [--start-offset | --producer-id]: ends the
 * partition's hanging transactions (those the body names) with the markers their coordinator
 * decided. An open transaction its coordinator has not decided is left (abort it by its id).
 */
async function endHanging(req: ApiRequest): Promise<ApiResponse> {
  const clusterId = await checkCluster(req);
  const { topic, partition } = await partitionOf(req);
  const b = validate(endHangingSchema, body(req), 'hanging-transactions');
  const { ended, errors } = await endHangingTransactions([{ topic, partition }], {
    ...(b.producer_id !== undefined ? { producerId: b.producer_id } : {}), ...(b.start_offset !== undefined ? { startOffset: b.start_offset } : {}),
  });
  if (errors.length > 0) throw errors[0];
  return {
    status: 200,
    body: {
      kind: 'KafkaHangingTransactionList',
      data: ended.map((e) => ({
        kind: 'KafkaHangingTransaction', cluster_id: clusterId, topic_name: topic, partition_id: partition, producer_id: e.producerId,
        start_offset: e.startOffset, marker: e.commit ? 'COMMIT' : 'ABORT', marker_epoch: e.markerEpoch, marker_offset: e.markerOffset,
      })),
    },
  };
}

const X = '/v3/clusters/{cluster_id}/transactions/{transactional_id}';
const P = '/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}';
export const transactionRoutes: Record<string, RouteHandler> = {
  'GET /v3/clusters/{cluster_id}/transactions': list,
  [`GET ${X}`]: describe,
  [`POST ${X}/producer`]: init,
  [`POST ${X}/partitions`]: partitions,
  [`POST ${X}/offsets`]: offsets,
  [`POST ${X}/end`]: end,
  [`POST ${X}/abort`]: abort,
  [`GET ${P}/producers`]: producers,
  [`POST ${P}/hanging-transactions:end`]: endHanging,
};
