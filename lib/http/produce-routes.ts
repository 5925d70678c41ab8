/**
 * Produce routes: REST Proxy v3 records (single, streaming mode, `records:batch`) and the v2
 * `POST /topics/{t}[/partitions/{p}]` forms. Each record is validated on its own; a request of
 * one record answers with that record's status, so a bad record is a 4xx and writes nothing.
 */
import * as z from 'zod';
import { HttpError } from '../errors.js';
import { KafkaError } from '../protocol/errors.js';
import { clusterRecord } from '../cluster/metadata.js';
import { produce, produceNoAck, type Accepted, type Acks, type ProduceOutcome, type ProduceRecord } from '../log/produce.js';
import { kafkaMessage, restErrorCode } from '../protocol/errors.js';
import { badRequest, errorResponse, intParam, intPathParam, invalidPayload, parseJson, parseJsonStream, validate, type ApiRequest, type ApiResponse, type RouteHandler } from './api.js';
import { initProducer } from '../cluster/producers.js';
import { produceInTransaction } from '../orchestration/transactions.js';
import { requireAll, type Caller } from './enforce.js';
import { chargeQuota, recordsSize } from '../security/quotas.js';
import { v2SchemaBytes, v2SchemaIds, withSchemaData } from './schema-data.js';
import { MAX_SCHEMA_CHARS } from '../schemas/registry.js';
import {
  base64Bytes, dataBytes, dataSchema, headerList, headersSchema, isSchemaFormat, jsonBytes, timestampMs, type DataType, type SchemaFormat,
} from './record-format.js';

/** Entries allowed in one `records:batch` request (Confluent allows 50). */
export const MAX_BATCH_ENTRIES = 10_000;
/** Records allowed in one streaming v3 or v2 produce request: the same bound as a batch. */
export const MAX_RECORDS_PER_REQUEST = MAX_BATCH_ENTRIES;

const recordSchema = z.object({
  partition_id: z.number().int().nullable().optional(),
  sequence: z.number().int().min(0).max(2 ** 31 - 1).optional(),
  headers: headersSchema,
  key: dataSchema,
  value: dataSchema,
  timestamp: z.union([z.string(), z.number()]).nullable().optional(),
}).strict();

const batchSchema = z.object({
  entries: z.array(z.object({ id: z.union([z.string(), z.number()]) }).passthrough()).min(1).max(MAX_BATCH_ENTRIES),
}).strict();

interface ParsedRecord {
  readonly record: ProduceRecord;
  /** BINARY, JSON, STRING, or the schema type a registered schema serialized it with. */
  readonly keyType: DataType | string | null;
  readonly valueType: DataType | string | null;
}

function parseRecord(raw: unknown): ParsedRecord {
  const r = validate(recordSchema, raw, 'record');
  const key = dataBytes(r.key, 'key');
  const value = dataBytes(r.value, 'value');
  const timestamp = timestampMs(r.timestamp);
  return {
    record: {
      key: key.bytes, value: value.bytes, headers: headerList(r.headers),
      ...(r.partition_id != null ? { partition: r.partition_id } : {}),
      ...(r.sequence !== undefined ? { sequence: r.sequence } : {}),
      ...(timestamp !== undefined ? { timestamp } : {}),
    },
    keyType: key.type,
    valueType: value.type,
  };
}

async function checkCluster(req: ApiRequest): Promise<string> {
  const c = await clusterRecord();
  if (req.params.cluster_id !== undefined && req.params.cluster_id !== c.clusterId) {
    throw new HttpError(404, 404, `Cluster ${req.params.cluster_id} cannot be found.`);
  }
  return c.clusterId;
}

type Parsed = ParsedRecord | { error: unknown };

type Outcome = ProduceOutcome | Accepted;
type Succeeded = Extract<Outcome, { ok: true }>;

/** `acks=0|1|all` (or Kafka's -1 for all); default all, as in Kafka 3. */
export function parseAcks(req: ApiRequest): Acks {
  const raw = req.query.acks;
  if (raw === undefined || raw === 'all' || raw === '-1') return 'all';
  if (raw === '0') return 0;
  if (raw === '1') return 1;
  throw new KafkaError('INVALID_REQUIRED_ACKS', `INVALID_REQUIRED_ACKS: acks must be 0, 1, all or -1, got '${raw}'.`);
}

/** How a request produces: its acks, and the idempotent producer it speaks for, if any. */
interface ProduceMode {
  readonly acks: Acks;
  readonly producer?: { readonly producerId: number; readonly producerEpoch: number };
  /** A transactional producer's id (its records go into its open transaction). */
  readonly transactionalId?: string;
}

/**
 * `acks`, and `producer_id` with `producer_epoch` (both or neither) from the query string; with
 * `transactional_id` too, a transactional producer's (acks=all, as Kafka requires of one).
 */
function produceMode(req: ApiRequest): ProduceMode {
  const acks = parseAcks(req);
  const hasId = req.query.producer_id !== undefined;
  if (hasId !== (req.query.producer_epoch !== undefined)) throw badRequest('Query parameters producer_id and producer_epoch go together.');
  const transactionalId = req.query.transactional_id;
  if (transactionalId !== undefined && (!hasId || acks !== 'all')) throw badRequest('A transactional produce (transactional_id) needs producer_id, producer_epoch and acks=all.');
  if (transactionalId !== undefined && (transactionalId.length === 0 || transactionalId.length > 249)) throw badRequest('Query parameter transactional_id is 1 to 249 characters.');
  if (!hasId) return { acks };
  return {
    acks, producer: { producerId: intParam(req, 'producer_id'), producerEpoch: intParam(req, 'producer_epoch', { max: 32767 }) },
    ...(transactionalId !== undefined ? { transactionalId } : {}),
  };
}

/**
 * Produces with the request's mode: under acks=0 the outcomes carry no offsets and no write errors.
 * The records' bytes are charged to the principal's producer quota first: over it, a 429 and nothing written.
 */
async function produceWith(caller: Caller, mode: ProduceMode, topic: string, records: readonly ProduceRecord[]): Promise<Outcome[]> {
  const withSequence = records.filter((r) => r.sequence !== undefined).length;
  if (mode.producer && withSequence !== records.length) throw invalidPayload('Every record of an idempotent producer (producer_id given) needs a sequence.');
  if (!mode.producer && withSequence > 0) throw invalidPayload('A record sequence needs producer_id and producer_epoch in the query string.');
  if (mode.transactionalId !== undefined) await requireAll(caller, [{ operation: 'WRITE', resourceType: 'TRANSACTIONAL_ID', resourceName: mode.transactionalId }]);
  await chargeQuota(caller.principal, 'produce', recordsSize(records));
  if (mode.transactionalId !== undefined && mode.producer) return produceInTransaction({ transactionalId: mode.transactionalId, ...mode.producer }, topic, records);
  const opts = { acks: mode.acks, ...(mode.producer ? { producer: mode.producer } : {}) };
  return mode.acks === 0 ? produceNoAck(topic, records, opts) : produce(topic, records, opts);
}

function deliveryReport(clusterId: string, topic: string, p: ParsedRecord, o: Succeeded) {
  return {
    error_code: o.offset === null ? 202 : 200,
    cluster_id: clusterId,
    topic_name: topic,
    partition_id: o.partition,
    offset: o.offset,
    timestamp: o.timestamp === null ? null : new Date(o.timestamp).toISOString(),
    key: p.record.key ? { type: p.keyType ?? 'BINARY', size: p.record.key.length } : null,
    value: p.record.value ? { type: p.valueType ?? 'BINARY', size: p.record.value.length } : null,
  };
}

/** Parses each raw record (serializing what names a registered schema), produces the valid ones, and pairs every input with its result. */
async function produceAll(caller: Caller, mode: ProduceMode, topic: string, raws: readonly unknown[]): Promise<{ parsed: Parsed; outcome?: Outcome }[]> {
  const memo = new Map<string, Promise<number>>();
  const parsed: Parsed[] = await Promise.all(raws.map(async (raw): Promise<Parsed> => {
    try {
      const s = await withSchemaData(raw, topic, memo);
      const p = parseRecord(s.raw);
      return { ...p, ...(s.keyType ? { keyType: s.keyType } : {}), ...(s.valueType ? { valueType: s.valueType } : {}) };
    } catch (error) {
      return { error };
    }
  }));
  const valid = parsed.filter((p): p is ParsedRecord => !('error' in p));
  const outcomes = valid.length > 0 ? await produceWith(caller, mode, topic, valid.map((p) => p.record)) : [];
  const byRecord = new Map(valid.map((p, i) => [p, outcomes[i]]));
  return parsed.map((p) => ({ parsed: p, outcome: 'error' in p ? undefined : byRecord.get(p) }));
}

function errorOf(entry: { parsed: Parsed; outcome?: Outcome }): ApiResponse | undefined {
  if ('error' in entry.parsed) return errorResponse(entry.parsed.error);
  if (entry.outcome && !entry.outcome.ok) return errorResponse(entry.outcome.error);
  return undefined;
}

async function v3Records(req: ApiRequest): Promise<ApiResponse> {
  const clusterId = await checkCluster(req);
  const topic = req.params.topic_name ?? '';
  const mode = produceMode(req);
  const raws = parseJsonStream(req.body);
  if (raws.length > MAX_RECORDS_PER_REQUEST) throw invalidPayload(`A request carries at most ${MAX_RECORDS_PER_REQUEST} records, got ${raws.length}; split it.`);
  const results = await produceAll(req, mode, topic, raws);
  const reports = results.map((entry) => {
    const failed = errorOf(entry);
    if (failed) return failed;
    const report = deliveryReport(clusterId, topic, entry.parsed as ParsedRecord, entry.outcome as Succeeded);
    return { status: report.error_code, body: report };
  });
  if (reports.length === 1) return reports[0] as ApiResponse;
  // Streaming mode: one delivery report per record, in order, one JSON document per line.
  return { status: 200, body: reports.map((r) => JSON.stringify(r.body)).join('\n') + '\n', contentType: 'application/json' };
}

async function v3Batch(req: ApiRequest): Promise<ApiResponse> {
  const clusterId = await checkCluster(req);
  const topic = req.params.topic_name ?? '';
  const raw = parseJson(req.body);
  const body = validate(batchSchema, raw, 'batch');
  // Records are validated as sent: zod's copy of an entry drops a "__proto__" key the strict record schema must see.
  const entries = (raw as { entries: Record<string, unknown>[] }).entries;
  const ids = body.entries.map((e) => String(e.id));
  const duplicate = ids.find((id, i) => ids.indexOf(id) !== i);
  if (duplicate !== undefined) throw new HttpError(400, 40002, `Duplicate entry id '${duplicate}' in batch.`);
  const results = await produceAll(req, produceMode(req), topic, entries.map(({ id: _id, ...rest }) => rest));
  const successes: unknown[] = [];
  const failures: unknown[] = [];
  results.forEach((entry, i) => {
    const failed = errorOf(entry);
    if (failed) failures.push({ id: ids[i], ...(failed.body as object) });
    else successes.push({ id: ids[i], ...deliveryReport(clusterId, topic, entry.parsed as ParsedRecord, entry.outcome as Succeeded) });
  });
  return { status: 207, body: { successes, failures } };
}

// --- v2 -------------------------------------------------------------------------------------

export const V2_TYPE = 'application/vnd.kafka.v2+json';

/** The embedded format of a v2 produce body, from its Content-Type. */
function v2Format(req: ApiRequest): 'binary' | 'json' | SchemaFormat {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === 'application/vnd.kafka.binary.v2+json') return 'binary';
  if (type === 'application/vnd.kafka.json.v2+json' || type === 'application/json' || type === 'application/vnd.kafka.v2+json') return 'json';
  const named = /^application\/vnd\.kafka\.([a-z]+)\.v2\+json$/.exec(type)?.[1];
  if (named !== undefined && isSchemaFormat(named)) return named;
  throw new HttpError(415, 415, `HTTP 415 Unsupported Media Type: use application/vnd.kafka.{binary,json,avro,jsonschema,protobuf}.v2+json, not '${type}'.`);
}

const schemaText = z.string().min(1).max(MAX_SCHEMA_CHARS).nullable().optional();
const schemaId = z.number().int().min(1).max(2 ** 31 - 1).nullable().optional();

const v2Schema = z.object({
  records: z.array(z.object({
    key: z.unknown().optional(),
    value: z.unknown().optional(),
    partition: z.number().int().nullable().optional(),
  }).strict()).min(1).max(MAX_RECORDS_PER_REQUEST),
  key_schema: schemaText, key_schema_id: schemaId, value_schema: schemaText, value_schema_id: schemaId,
}).strict();

function v2Bytes(v: unknown, format: 'binary' | 'json', where: string): Buffer | null {
  if (v === undefined || v === null) return null;
  return format === 'binary' ? base64Bytes(v, where) : jsonBytes(v, where);
}

async function v2Produce(req: ApiRequest, partition?: number): Promise<ApiResponse> {
  const mode = produceMode(req);
  const format = v2Format(req);
  const topic = req.params.topic_name ?? '';
  const body = validate(v2Schema, parseJson(req.body), 'records');
  const present = (v: unknown) => v !== undefined && v !== null;
  if (!isSchemaFormat(format) && [body.key_schema, body.key_schema_id, body.value_schema, body.value_schema_id].some(present)) {
    throw invalidPayload(`Schemas are for the avro, jsonschema and protobuf formats, not ${format}.`);
  }
  const ids = isSchemaFormat(format)
    ? await v2SchemaIds(req, format, topic, body, { keys: body.records.some((r) => present(r.key)), values: body.records.some((r) => present(r.value)) })
    : { key: null, value: null };
  const bytes = (v: unknown, isKey: boolean, where: string) => (isSchemaFormat(format)
    ? v2SchemaBytes(format, isKey ? ids.key : ids.value, v, topic, isKey, where)
    : Promise.resolve(v2Bytes(v, format, where)));
  const records: ProduceRecord[] = await Promise.all(body.records.map(async (r, i) => ({
    key: await bytes(r.key, true, `records.${i}.key`),
    value: await bytes(r.value, false, `records.${i}.value`),
    headers: [],
    ...(partition !== undefined ? { partition } : r.partition != null ? { partition: r.partition } : {}),
  })));
  const outcomes = await produceWith(req, mode, topic, records);
  if (outcomes.length === 1 && !outcomes[0]?.ok) return errorResponse((outcomes[0] as { error: KafkaError }).error, V2_TYPE);
  return {
    status: mode.acks === 0 ? 202 : 200,
    contentType: V2_TYPE,
    body: {
      key_schema_id: ids.key,
      value_schema_id: ids.value,
      offsets: outcomes.map((o) => o.ok
        ? { partition: o.partition, offset: o.offset, error_code: null, error: null }
        : { partition: o.partition ?? null, offset: null, error_code: restErrorCode(o.error), error: kafkaMessage(o.error) }),
    },
  };
}

const partitionNotFound = (req: ApiRequest) => () =>
  new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${req.params.partition_id} not found.`, { partition: req.params.partition_id });

const initProducerBody = z.object({ producer_id: z.number().int().min(0).optional() }).strict();

/** Kafka's InitProducerId: a new idempotent producer, or the next epoch of an existing one (fencing the old). */
async function initProducerRoute(req: ApiRequest): Promise<ApiResponse> {
  await checkCluster(req);
  const body = validate(initProducerBody, req.body.trim() === '' ? {} : parseJson(req.body), 'producer');
  const out = await initProducer(body.producer_id);
  return { status: 200, body: { kind: 'KafkaProducerId', producer_id: out.producerId, producer_epoch: out.producerEpoch } };
}

export const produceRoutes: Record<string, RouteHandler> = {
  'POST /v3/clusters/{cluster_id}/producers': initProducerRoute,
  'POST /v3/clusters/{cluster_id}/topics/{topic_name}/records': v3Records,
  'POST /v3/clusters/{cluster_id}/topics/{topic_name}/records:batch': v3Batch,
  'POST /topics/{topic_name}': (req) => v2Produce(req),
  'POST /topics/{topic_name}/partitions/{partition_id}': (req) => v2Produce(req, intPathParam(req, 'partition_id', partitionNotFound(req))),
};
