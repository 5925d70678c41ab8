/**
 * Fetch routes: records of a partition from an offset (the Redpanda HTTP Proxy form with an
 * Accept header, and a v3 form with the next offset and high watermark), and partition offsets
 * (Kafka's ListOffsets: earliest, latest, by timestamp).
 */
import { HttpError } from '../errors.js';
import { KafkaError } from '../protocol/errors.js';
import { clusterRecord } from '../cluster/metadata.js';
import { fetchRecords, listOffset, readFromLeader, type FetchResult, type IsolationLevel, type ListedOffset, type OffsetSpec, type ReadTarget } from '../log/read.js';
import type { BatchRecord } from '../protocol/record-batch.js';
import { chargeQuota, chargeQuotaAfter, recordsSize } from '../security/quotas.js';
import { badRequest, errorResponse, intParam, intPathParam, type ApiRequest, type ApiResponse, type RouteHandler } from './api.js';
import {
  MAX_DATE_MS, SCHEMA_FORMATS, isSchemaFormat, jsonArrayWithin, valueReader, wireType, type ReadFormat, type ReadValue,
} from './record-format.js';

/** Default and largest `max_bytes` of a fetch (the response must fit Lambda's 6 MB payload, base64 included). */
export const DEFAULT_FETCH_BYTES = 1_048_576;
export const MAX_FETCH_BYTES = 4_000_000;
/** Longest long poll, under API Gateway's 30 s integration timeout. */
export const MAX_WAIT_MS = 25_000;

const partitionNotFound = (req: ApiRequest) => () =>
  new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${req.params.partition_id} not found.`, { partition: req.params.partition_id });

/** Runs a read against the partition's leader, following it through a failover (lib/log/read.ts). */
function onLeader<T>(req: ApiRequest, read: (t: ReadTarget) => Promise<T>): Promise<T> {
  const partition = intPathParam(req, 'partition_id', partitionNotFound(req));
  return readFromLeader(req.params.topic_name ?? '', partition, read);
}

/** `isolation_level=read_uncommitted|read_committed` (Kafka's consumer setting; read_uncommitted by default, as Kafka's). */
export function isolationParam(req: ApiRequest): IsolationLevel {
  const raw = req.query.isolation_level ?? 'read_uncommitted';
  if (raw !== 'read_uncommitted' && raw !== 'read_committed') throw badRequest(`Query parameter 'isolation_level' must be read_uncommitted or read_committed, got '${raw}'.`);
  return raw;
}

function fetchParams(req: ApiRequest) {
  return {
    offset: intParam(req, 'offset'),
    maxBytes: intParam(req, 'max_bytes', { default: DEFAULT_FETCH_BYTES, min: 1, max: MAX_FETCH_BYTES }),
    maxWaitMs: intParam(req, 'timeout', { default: 0, max: MAX_WAIT_MS }),
    isolation: isolationParam(req),
  };
}

const headersOut = (r: BatchRecord) => r.headers.map((h) => ({ name: h.key, value: h.value ? h.value.toString('base64') : null }));

/** The embedded format a v2 reader asked for (Accept header); binary by default. */
function acceptFormat(req: ApiRequest): { format: ReadFormat; type: string } {
  const accept = (req.headers.accept ?? '').toLowerCase();
  for (const format of ['json', ...Object.keys(SCHEMA_FORMATS)] as ReadFormat[]) {
    const type = `application/vnd.kafka.${format}.v2+json`;
    if (accept.includes(type)) return { format, type };
  }
  if (accept === '' || accept.includes('*/*') || accept.includes('application/vnd.kafka.binary.v2+json') || accept.includes('application/json')) {
    return { format: 'binary', type: 'application/vnd.kafka.binary.v2+json' };
  }
  throw new HttpError(406, 406, `HTTP 406 Not Acceptable: use application/vnd.kafka.{binary,json,avro,jsonschema,protobuf}.v2+json, not '${accept}'.`);
}

async function v2Records(req: ApiRequest): Promise<ApiResponse> {
  const { format, type } = acceptFormat(req);
  try {
    const params = fetchParams(req);
    await chargeQuota(req.principal, 'fetch', 0);
    const result = await onLeader(req, (t) => fetchRecords(t, params));
    const partition = intPathParam(req, 'partition_id', partitionNotFound(req));
    const read = await valueReader(format, result.records.flatMap((r) => [r.key, r.value]));
    // (as many as fit the function's response: the reader asks again from the last offset it got)
    const sent = jsonArrayWithin(result.records, (r) => ({
      topic: req.params.topic_name,
      key: r.key === null ? null : read(r.key, `key at offset ${r.offset}`).data,
      value: r.value === null ? null : read(r.value, `value at offset ${r.offset}`).data,
      partition,
      offset: r.offset,
      timestamp: r.timestamp,
      headers: headersOut(r),
    }));
    await chargeQuotaAfter(req.principal, 'fetch', recordsSize(result.records.slice(0, sent.count)));
    return { status: 200, contentType: type, body: sent.json };
  } catch (err) {
    return errorResponse(err, type);
  }
}

function v3Format(req: ApiRequest): ReadFormat {
  const f = (req.query.format ?? 'binary').toLowerCase();
  if (f !== 'binary' && f !== 'json' && f !== 'string' && !isSchemaFormat(f)) {
    throw badRequest(`Query parameter 'format' must be binary, json, string, avro, jsonschema or protobuf, got '${req.query.format}'.`);
  }
  return f;
}

/**
 * `undecodable=binary`: a key or value the format cannot read (not JSON; not in the wire format,
 * its schema missing or of another type) comes back as BINARY instead of failing the whole read,
 * so a page of mixed records (string keys, Avro values) is read at once. Absent: the 406.
 */
function v3Undecodable(req: ApiRequest): boolean {
  const u = req.query.undecodable;
  if (u !== undefined && u !== 'binary') throw badRequest(`Query parameter 'undecodable' must be binary, got '${u}'.`);
  return u === 'binary';
}

/** A v3 key or value: `{type, data}`, with the writer's `schema_id` when read through the registry. */
function v3Data(format: ReadFormat, v: ReadValue): { type: string; data: unknown; schema_id?: number } {
  if (!isSchemaFormat(format)) return { type: wireType(format), data: v.data };
  return { type: SCHEMA_FORMATS[format].type, schema_id: v.schemaId as number, data: v.data };
}

async function checkCluster(req: ApiRequest): Promise<string> {
  const c = await clusterRecord();
  if (req.params.cluster_id !== c.clusterId) throw new HttpError(404, 404, `Cluster ${req.params.cluster_id} cannot be found.`);
  return c.clusterId;
}

async function v3Records(req: ApiRequest): Promise<ApiResponse> {
  const clusterId = await checkCluster(req);
  const format = v3Format(req);
  const asBinary = v3Undecodable(req);
  const params = fetchParams(req);
  // Consumer bytes are charged after the read (Kafka throttles fetches after the fact): over the
  // quota, this answer is sent and the principal's next fetch gets the 429.
  await chargeQuota(req.principal, 'fetch', 0);
  const result: FetchResult = await onLeader(req, (t) => fetchRecords(t, params));
  const partition = intPathParam(req, 'partition_id', partitionNotFound(req));
  const read = await valueReader(format, result.records.flatMap((r) => [r.key, r.value]));
  const data = (b: Buffer | null, where: string) => {
    if (b === null) return null;
    try {
      return v3Data(format, read(b, where));
    } catch (err) {
      if (asBinary && err instanceof HttpError && err.status === 406) return { type: 'BINARY', data: b.toString('base64') };
      throw err;
    }
  };
  // As many records as fit the function's response (small records grow 2–3× as JSON and base64);
  // `next_offset` follows the last one sent.
  const records = jsonArrayWithin(result.records, (r) => ({
    partition_id: partition,
    offset: r.offset,
    timestamp: new Date(r.timestamp).toISOString(),
    key: data(r.key, `key at offset ${r.offset}`),
    value: data(r.value, `value at offset ${r.offset}`),
    headers: headersOut(r),
  }));
  await chargeQuotaAfter(req.principal, 'fetch', recordsSize(result.records.slice(0, records.count)));
  const last = result.records[records.count - 1];
  const nextOffset = records.count < result.records.length && last ? last.offset + 1 : result.nextOffset;
  const head = JSON.stringify({ kind: 'KafkaRecordList', cluster_id: clusterId, topic_name: req.params.topic_name, partition_id: partition });
  const tail = JSON.stringify({ next_offset: nextOffset, high_watermark: result.highWatermark, last_stable_offset: result.lastStableOffset, log_start_offset: result.logStartOffset });
  return { status: 200, body: `${head.slice(0, -1)},"records":${records.json},${tail.slice(1)}` };
}

/** `timestamp=earliest|latest|-2|-1|<epoch ms>|<ISO 8601>` (Kafka's -2 earliest, -1 latest). */
function offsetSpec(raw: string | undefined): OffsetSpec {
  if (raw === undefined || raw === '' || raw === 'latest' || raw === '-1') return 'latest';
  if (raw === 'earliest' || raw === '-2') return 'earliest';
  // Beyond a Date's range (±8.64e15 ms) the offset cannot be stored or shown as a date-time.
  if (/^\d+$/.test(raw) && Number(raw) <= MAX_DATE_MS) return { timestamp: Number(raw) };
  if (/^\d{4}-\d{2}-\d{2}T/.test(raw) && !Number.isNaN(Date.parse(raw))) return { timestamp: Date.parse(raw) };
  throw badRequest(`Query parameter 'timestamp' must be earliest, latest, epoch milliseconds or an ISO 8601 date-time, got '${raw}'.`);
}

/** The end a reader at `isolation` sees (Kafka's ListOffsets latest): the high watermark, or for read_committed the last stable offset. */
const endFor = (latest: ListedOffset, isolation: IsolationLevel): number | null =>
  (isolation === 'read_committed' ? latest.lastStableOffset ?? latest.offset : latest.offset);

async function v3Offsets(req: ApiRequest): Promise<ApiResponse> {
  const clusterId = await checkCluster(req);
  const spec = offsetSpec(req.query.timestamp);
  const isolation = isolationParam(req);
  const [found, earliest, latest] = await onLeader(req, (t) => Promise.all([listOffset(t, spec), listOffset(t, 'earliest'), listOffset(t, 'latest')]));
  return {
    status: 200,
    body: {
      kind: 'KafkaPartitionOffsets',
      cluster_id: clusterId,
      topic_name: req.params.topic_name,
      partition_id: Number(req.params.partition_id),
      spec: typeof spec === 'string' ? spec : new Date(spec.timestamp).toISOString(),
      offset: spec === 'latest' ? endFor(found, isolation) : found.offset,
      timestamp: found.timestamp === null ? null : new Date(found.timestamp).toISOString(),
      beginning_offset: earliest.offset,
      end_offset: endFor(latest, isolation),
      last_stable_offset: latest.lastStableOffset ?? null,
    },
  };
}

/** Confluent's listKafkaPartitionOffsets: the earliest and latest offsets (`offset_type=earliest_and_latest`, the only type). */
async function v3PartitionOffset(req: ApiRequest): Promise<ApiResponse> {
  const clusterId = await checkCluster(req);
  const type = req.query.offset_type ?? 'earliest_and_latest';
  if (type !== 'earliest_and_latest') throw new HttpError(400, 400, `offset_type:${type} is invalid`);
  const partition = intPathParam(req, 'partition_id', partitionNotFound(req));
  const [earliest, latest] = await onLeader(req, (t) => Promise.all([listOffset(t, 'earliest'), listOffset(t, 'latest')]));
  const topic = req.params.topic_name ?? '';
  const path = `/v3/clusters/${clusterId}/topics/${topic}/partitions/${partition}/offset`;
  return {
    status: 200,
    body: {
      kind: 'KafkaPartitionWithOffsets',
      metadata: { self: `${req.baseUrl}${path}?offset_type=${type}`, resource_name: `crn:///kafka=${clusterId}/topic=${topic}/partition=${partition}/offset_type=${type}` },
      cluster_id: clusterId,
      topic_name: topic,
      partition_id: partition,
      earliest_offset: earliest.offset,
      latest_offset: latest.offset,
    },
  };
}

async function v2Offsets(req: ApiRequest): Promise<ApiResponse> {
  const type = 'application/vnd.kafka.v2+json';
  try {
    const isolation = isolationParam(req);
    const [earliest, latest] = await onLeader(req, (t) => Promise.all([listOffset(t, 'earliest'), listOffset(t, 'latest')]));
    return { status: 200, contentType: type, body: { beginning_offset: earliest.offset, end_offset: endFor(latest, isolation) } };
  } catch (err) {
    return errorResponse(err, type);
  }
}

export const fetchRoutes: Record<string, RouteHandler> = {
  'GET /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/records': v3Records,
  'GET /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/offsets': v3Offsets,
  'GET /v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/offset': v3PartitionOffset,
  'GET /topics/{topic_name}/partitions/{partition_id}/records': v2Records,
  'GET /topics/{topic_name}/partitions/{partition_id}/offsets': v2Offsets,
};
