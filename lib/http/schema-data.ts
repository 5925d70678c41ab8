/**
 * REST Proxy v3 keys and values that name a registered schema (`type` AVRO, JSONSCHEMA or
 * PROTOBUF, with `schema_id`, or `subject` / `subject_name_strategy` and `schema_version`):
 * serialized in Confluent's wire format (lib/schemas/serialize.ts) before the record is parsed,
 * so the rest of produce sees bytes. An inline `schema` is not offered: register it first.
 */
import * as z from 'zod';
import { PRODUCE_SCHEMA_TYPES, serializeWithSchema, type SubjectMemo } from '../schemas/serialize.js';
import { invalidPayload, validate } from './api.js';

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
