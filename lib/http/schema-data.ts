/**
 * Produce with schemas, serialized in Confluent's wire format (lib/schemas/serialize.ts) before
 * the records are parsed, so the rest of produce sees bytes:
 * - REST Proxy v3 keys and values that name a registered schema (`type` AVRO, JSONSCHEMA or
 *   PROTOBUF, with `schema_id`, or `subject` / `subject_name_strategy` and `schema_version`). An
 *   inline `schema` is not offered: register it first.
 * - REST Proxy v2's `avro`, `jsonschema` and `protobuf` embedded formats: the request's
 *   `key_schema_id` / `value_schema_id`, or its `key_schema` / `value_schema` text, registered
 *   under `<topic>-key` / `<topic>-value` (the caller needs SUBJECT WRITE there, as for any
 *   registration). Keys without a key schema are 42201, values without a value schema 42202,
 *   and data its schema does not take is 42203: nothing is written.
 */
import * as z from 'zod';
import { BoundedCache } from '../bounded-cache.js';
import { HttpError } from '../errors.js';
import { register } from '../schemas/registry.js';
import { PRODUCE_SCHEMA_TYPES, serializeWithSchema, type SubjectMemo } from '../schemas/serialize.js';
import { invalidPayload, validate, type ApiRequest } from './api.js';
import { requireAll } from './enforce.js';
import { SCHEMA_FORMATS, type SchemaFormat } from './record-format.js';

const schemaDataSchema = z.object({
  type: z.string(),
  data: z.unknown().optional(),
  schema_id: z.number().int().min(1).max(2 ** 31 - 1).optional(),
  subject: z.string().min(1).max(249).optional(),
  subject_name_strategy: z.string().max(64).optional(),
  schema_version: z.number().int().optional(),
  schema: z.undefined({ message: 'an inline schema is not offered; register it, then name its schema_id or subject' }).optional(),
}).strict();

const namesSchema = (v: unknown): v is { type: string } =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && typeof (v as { type?: unknown }).type === 'string'
  && (v as { type: string }).type.toUpperCase() in PRODUCE_SCHEMA_TYPES;

/** The record with its schema-typed key and value serialized to BINARY, and the types they had. */
export async function withSchemaData(raw: unknown, topic: string, memo: SubjectMemo): Promise<{ raw: unknown; keyType?: string; valueType?: string }> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return { raw };
  const record = raw as Record<string, unknown>;
  const out: Record<string, unknown> = { ...record };
  const types: { keyType?: string; valueType?: string } = {};
  for (const field of ['key', 'value'] as const) {
    const v = record[field];
    if (!namesSchema(v)) continue;
    const d = validate(schemaDataSchema, v, field);
    if (d.data === undefined || d.data === null) throw invalidPayload(`${field}.data is required with type ${d.type}.`);
    const bytes = await serializeWithSchema({
      type: d.type, data: d.data,
      ...(d.schema_id !== undefined ? { schemaId: d.schema_id } : {}),
      ...(d.subject !== undefined ? { subject: d.subject } : {}),
      ...(d.subject_name_strategy !== undefined ? { subjectNameStrategy: d.subject_name_strategy } : {}),
      ...(d.schema_version !== undefined ? { schemaVersion: d.schema_version } : {}),
    }, topic, field === 'key', field, memo);
    out[field] = { type: 'BINARY', data: bytes.toString('base64') };
    types[field === 'key' ? 'keyType' : 'valueType'] = d.type.toUpperCase();
  }
  return { raw: out, ...types };
}

/**
 * The ids this instance registered (or found) schema texts of v2 produces under, by subject, type
 * and text: as Confluent's REST Proxy, a schema text sent again is not registered again, so a
 * stream of v2 produces that each carry their schema costs the registry nothing after the first.
 * 1,000 texts and 8 Mi characters at most.
 */
const registeredTexts = new BoundedCache<string, number>(1_000, 8 * 1024 * 1024);

/** A v2 schema produce body's schema fields. */
export interface V2Schemas {
  readonly key_schema?: string | null | undefined;
  readonly key_schema_id?: number | null | undefined;
  readonly value_schema?: string | null | undefined;
  readonly value_schema_id?: number | null | undefined;
}

/**
 * The schema ids a v2 produce in a schema format writes its keys and values with (null for a
 * side no record uses). A schema text is registered first (or found, when the subject has it).
 */
export async function v2SchemaIds(
  req: ApiRequest, format: SchemaFormat, topic: string, body: V2Schemas, uses: { readonly keys: boolean; readonly values: boolean },
): Promise<{ key: number | null; value: number | null }> {
  const idOf = async (side: 'key' | 'value', text: string | null | undefined, id: number | null | undefined): Promise<number | null> => {
    if (id !== undefined && id !== null) {
      if (text !== undefined && text !== null) throw new HttpError(422, 42203, `Give ${side}_schema or ${side}_schema_id, not both.`);
      return id;
    }
    if (text === undefined || text === null) {
      if (!(side === 'key' ? uses.keys : uses.values)) return null;
      throw side === 'key'
        ? new HttpError(422, 42201, 'Request includes keys but does not include key schema')
        : new HttpError(422, 42202, 'Request includes values but does not include value schema');
    }
    const subject = `${topic}-${side}`;
    await requireAll(req, [{ operation: 'WRITE', resourceType: 'SUBJECT', resourceName: subject }]);
    const schemaType = SCHEMA_FORMATS[format].schemaType;
    const memo = `${subject}\0${schemaType}\0${text}`;
    const known = registeredTexts.get(memo);
    if (known !== undefined) return known;
    const registered = (await register(subject, { schema: text, schemaType, references: [] })).id;
    registeredTexts.set(memo, registered, memo.length);
    return registered;
  };
  const key = await idOf('key', body.key_schema, body.key_schema_id);
  const value = await idOf('value', body.value_schema, body.value_schema_id);
  return { key, value };
}

/** A v2 key or value in a schema format, in the wire format of schema `id` (42203 when the schema does not take it). */
export async function v2SchemaBytes(format: SchemaFormat, id: number | null, data: unknown, topic: string, isKey: boolean, where: string): Promise<Buffer | null> {
  if (data === undefined || data === null || id === null) return null;
  try {
    return await serializeWithSchema({ type: SCHEMA_FORMATS[format].type, data, schemaId: id }, topic, isKey, where);
  } catch (err) {
    if (err instanceof HttpError && err.status === 422) throw new HttpError(422, 42203, `Conversion of JSON to Object failed: ${err.message}`);
    throw err;
  }
}
