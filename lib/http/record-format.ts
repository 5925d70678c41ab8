/**
 * Keys, values and headers between their REST Proxy JSON forms and Kafka's bytes:
 * `{type: BINARY|JSON|STRING, data}` in v3, base64 or embedded JSON in v2 (by content type).
 */
import { z } from 'zod';
import type { RecordHeader } from '../protocol/record-batch.js';
import { HttpError } from '../errors.js';
import { invalidPayload } from './api.js';

export type DataType = 'BINARY' | 'JSON' | 'STRING';
export type WireFormat = 'binary' | 'json' | 'string';

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Strict base64 (RFC 4648 with padding); 422 for anything else. */
export function base64Bytes(data: unknown, where: string): Buffer {
  if (typeof data !== 'string' || !BASE64.test(data)) throw invalidPayload(`${where} must be base64-encoded bytes.`);
  return Buffer.from(data, 'base64');
}

const SCHEMA_TYPES = ['AVRO', 'PROTOBUF', 'JSONSCHEMA'];

export const dataSchema = z.object({
  type: z.string().optional(),
  data: z.unknown().optional(),
  subject: z.null().optional(),
  subject_name_strategy: z.null().optional(),
  schema_id: z.null().optional(),
  schema_version: z.null().optional(),
  schema: z.null().optional(),
}).strict().nullable().optional();

export type DataInput = z.infer<typeof dataSchema>;

/** The bytes of a v3 key or value; `null`/absent data is Kafka's null. */
export function dataBytes(input: DataInput, where: string): { bytes: Buffer | null; type: DataType | null } {
  if (input === null || input === undefined) return { bytes: null, type: null };
  const type = (input.type ?? 'JSON').toUpperCase();
  if (SCHEMA_TYPES.includes(type)) throw invalidPayload(`${where}.type ${type} needs a schema registry, which Tributary does not provide; use BINARY, JSON or STRING.`);
  if (input.data === undefined || input.data === null) return { bytes: null, type: type as DataType };
  switch (type) {
    case 'BINARY':
      return { bytes: base64Bytes(input.data, `${where}.data`), type };
    case 'STRING':
      if (typeof input.data !== 'string') throw invalidPayload(`${where}.data must be a string when type is STRING.`);
      return { bytes: Buffer.from(input.data, 'utf8'), type };
    case 'JSON':
      return { bytes: Buffer.from(JSON.stringify(input.data), 'utf8'), type };
    default:
      throw invalidPayload(`${where}.type must be BINARY, JSON or STRING, got ${input.type}.`);
  }
}

export const headersSchema = z.array(z.object({ name: z.string().min(1), value: z.string().nullable().optional() }).strict()).optional();

export function headerList(headers: z.infer<typeof headersSchema>): RecordHeader[] {
  return (headers ?? []).map((h, i) => ({ key: h.name, value: h.value == null ? null : base64Bytes(h.value, `headers.${i}.value`) }));
}

/** A timestamp given as ISO 8601 text or epoch milliseconds. */
export function timestampMs(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(value)) {
    const ms = Date.parse(value);
    if (!Number.isNaN(ms) && ms >= 0) return ms;
  }
  throw invalidPayload(`timestamp must be an ISO 8601 date-time or epoch milliseconds, got ${JSON.stringify(value)}.`);
}

/** A key or value in the form a reader asked for. */
export function formatBytes(bytes: Buffer | null, format: WireFormat, where: string): unknown {
  if (bytes === null) return null;
  switch (format) {
    case 'binary':
      return bytes.toString('base64');
    case 'string':
      return bytes.toString('utf8');
    case 'json':
      try {
        return JSON.parse(bytes.toString('utf8'));
      } catch {
        throw new HttpError(406, 40601, `${where} is not JSON; read it with the binary format (application/vnd.kafka.binary.v2+json or format=binary).`);
      }
  }
}

export const wireType = (f: WireFormat): DataType => (f === 'binary' ? 'BINARY' : f === 'json' ? 'JSON' : 'STRING');
