/**
 * Values serialized with a registered schema in Confluent's wire format (wire-format.ts), for
 * produce requests that name a schema (REST Proxy v3's `{"type": "AVRO"|"JSONSCHEMA"|"PROTOBUF",
 * "schema_id" | "subject" ..., "data"}`).
 *
 * The schema is the one with `schema_id`, or the subject's version `schema_version` (default the
 * latest), the subject given or named by the TopicNameStrategy (`<topic>-key`, `<topic>-value`).
 * A value that does not validate is 422/42206 and nothing is written.
 */
import { HttpError } from '../errors.js';
import { listSubjectVersions } from '../storage/coordination/schemas.js';
import { invalidVersion } from './errors.js';
import { InvalidData, checkSubject, type SchemaType } from './model.js';
import { parsedSchema, pickVersion, schemaById } from './registry.js';
import { schemaNotFound } from './errors.js';
import { wireFrame } from './wire-format.js';

/** REST Proxy's names for the registry's types. */
export const PRODUCE_SCHEMA_TYPES: Readonly<Record<string, SchemaType>> = { AVRO: 'AVRO', JSONSCHEMA: 'JSON', PROTOBUF: 'PROTOBUF' };

export interface SchemaData {
  readonly type: string;
  readonly data: unknown;
  readonly schemaId?: number;
  readonly subject?: string;
  readonly subjectNameStrategy?: string;
  readonly schemaVersion?: number;
}

const invalid = (message: string) => new HttpError(422, 42206, message);

/** Subject versions already looked up by one request (`<subject>\u0000<version>` → id): one read per subject, not per record. */
export type SubjectMemo = Map<string, Promise<number>>;

/** The id of the schema a record names (404 with the registry's codes when there is none). */
async function schemaIdFor(d: SchemaData, topic: string, isKey: boolean, where: string, memo: SubjectMemo): Promise<number> {
  if (d.schemaId !== undefined) {
    if ((d.subject ?? d.schemaVersion ?? d.subjectNameStrategy) !== undefined) throw invalid(`${where}: give schema_id, or subject (or subject_name_strategy) with schema_version, not both`);
    return d.schemaId;
  }
  const strategy = (d.subjectNameStrategy ?? 'TOPIC_NAME').toUpperCase();
  if (d.subject === undefined && strategy !== 'TOPIC_NAME') throw invalid(`${where}.subject_name_strategy ${strategy} is not offered; use TOPIC_NAME, or name the subject or the schema_id`);
  const subject = d.subject ?? `${topic}-${isKey ? 'key' : 'value'}`;
  checkSubject(subject);
  if (d.schemaVersion !== undefined && (d.schemaVersion < 1 || d.schemaVersion > 2 ** 31 - 1)) throw invalidVersion(String(d.schemaVersion));
  const key = `${subject}\u0000${d.schemaVersion ?? 'latest'}`;
  let id = memo.get(key);
  if (!id) {
    id = listSubjectVersions(subject).then((versions) => pickVersion(versions, subject, d.schemaVersion ?? 'latest', false).id);
    memo.set(key, id);
  }
  return id;
}

/** The bytes of a key or value serialized with its schema, in Confluent's wire format. */
export async function serializeWithSchema(d: SchemaData, topic: string, isKey: boolean, where: string, memo: SubjectMemo = new Map()): Promise<Buffer> {
  const wanted = PRODUCE_SCHEMA_TYPES[d.type.toUpperCase()];
  if (!wanted) throw invalid(`${where}.type must be AVRO, JSONSCHEMA or PROTOBUF`);
  const id = await schemaIdFor(d, topic, isKey, where, memo);
  const stored = await schemaById(id);
  if (!stored) throw schemaNotFound(`Schema ${id} not found`);
  if (stored.schemaType !== wanted) throw invalid(`${where}: schema ${id} is ${stored.schemaType}, not ${d.type.toUpperCase()}`);
  let payload: Buffer;
  try {
    payload = (await parsedSchema(id)).encode(d.data);
  } catch (err) {
    if (err instanceof InvalidData) throw invalid(`${where}.data does not match schema ${id}: ${err.message}`);
    throw err;
  }
  return wireFrame(id, wanted, payload);
}
