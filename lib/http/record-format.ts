/**
 * Keys, values and headers between their REST Proxy JSON forms and Kafka's bytes:
 * `{type: BINARY|JSON|STRING, data}` in v3, base64 or embedded JSON in v2 (by content type); read
 * through the schema registry (`avro`, `jsonschema`, `protobuf`), the value its schema decodes.
 */
import * as z from 'zod';
import type { RecordHeader } from '../protocol/record-batch.js';
import { HttpError } from '../errors.js';
import { WireDecoder } from '../schemas/deserialize.js';
import { invalidPayload } from './api.js';

export type DataType = 'BINARY' | 'JSON' | 'STRING';
export type WireFormat = 'binary' | 'json' | 'string';

/** The embedded formats read through the schema registry, with REST Proxy's type name and the registry's for each. */
export const SCHEMA_FORMATS = {
  avro: { type: 'AVRO', schemaType: 'AVRO' },
  jsonschema: { type: 'JSONSCHEMA', schemaType: 'JSON' },
  protobuf: { type: 'PROTOBUF', schemaType: 'PROTOBUF' },
} as const;
export type SchemaFormat = keyof typeof SCHEMA_FORMATS;
/** Every format a reader may ask for. */
export type ReadFormat = WireFormat | SchemaFormat;
export const isSchemaFormat = (f: string): f is SchemaFormat => Object.hasOwn(SCHEMA_FORMATS, f);

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Strict base64 (RFC 4648 with padding); 422 for anything else. */
export function base64Bytes(data: unknown, where: string): Buffer {
  if (typeof data !== 'string' || !BASE64.test(data)) throw invalidPayload(`${where} must be base64-encoded bytes.`);
  return Buffer.from(data, 'base64');
}

const SCHEMA_TYPES = ['AVRO', 'PROTOBUF', 'JSONSCHEMA'];

/** The latest instant a JavaScript Date can hold; later timestamps cannot be shown as ISO 8601. */
export const MAX_DATE_MS = 8_640_000_000_000_000;

/**
 * Deepest nesting of embedded JSON (Jackson's default limit is 1000 too). JSON.parse takes
 * any depth, but JSON.stringify overflows the stack a few thousand levels down.
 */
export const MAX_JSON_DEPTH = 1000;

/** Whether JSON text nests deeper than MAX_JSON_DEPTH (a text that short cannot). */
function tooDeep(text: string): boolean {
  if (text.length <= 2 * MAX_JSON_DEPTH) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_JSON_DEPTH) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/** Embedded JSON as UTF-8 bytes; 422 when it nests deeper than MAX_JSON_DEPTH. */
export function jsonBytes(data: unknown, where: string): Buffer {
  let text: string | undefined;
  try {
    text = JSON.stringify(data);
  } catch {
    text = undefined;
  }
  if (text === undefined || tooDeep(text)) throw invalidPayload(`${where} nests deeper than ${MAX_JSON_DEPTH} levels.`);
  return Buffer.from(text, 'utf8');
}

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
  if (SCHEMA_TYPES.includes(type)) throw invalidPayload(`${where}.type ${type} needs a registered schema: schema_id, or subject (or subject_name_strategy) with schema_version.`);
  if (type !== 'BINARY' && type !== 'JSON' && type !== 'STRING') throw invalidPayload(`${where}.type must be BINARY, JSON or STRING, got ${input.type}.`);
  if (input.data === undefined || input.data === null) return { bytes: null, type };
  switch (type) {
    case 'BINARY':
      return { bytes: base64Bytes(input.data, `${where}.data`), type };
    case 'STRING':
      if (typeof input.data !== 'string') throw invalidPayload(`${where}.data must be a string when type is STRING.`);
      return { bytes: Buffer.from(input.data, 'utf8'), type };
    case 'JSON':
      return { bytes: jsonBytes(input.data, `${where}.data`), type };
  }
}

/** Headers one record may carry (Kafka sets no count; this bounds the work one record can ask for). */
export const MAX_HEADERS_PER_RECORD = 1000;
/** Longest header name, in UTF-8 bytes (values are bounded by the record's size: max.message.bytes). */
export const MAX_HEADER_KEY_BYTES = 16_384;

export const headersSchema = z.array(z.object({
  name: z.string().min(1).refine((n) => Buffer.byteLength(n, 'utf8') <= MAX_HEADER_KEY_BYTES, `a header name is at most ${MAX_HEADER_KEY_BYTES} bytes`),
  value: z.string().nullable().optional(),
}).strict()).max(MAX_HEADERS_PER_RECORD, `a record carries at most ${MAX_HEADERS_PER_RECORD} headers`).optional();

export function headerList(headers: z.infer<typeof headersSchema>): RecordHeader[] {
  return (headers ?? []).map((h, i) => ({ key: h.name, value: h.value == null ? null : base64Bytes(h.value, `headers.${i}.value`) }));
}

/** A timestamp given as ISO 8601 text or epoch milliseconds. */
export function timestampMs(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= MAX_DATE_MS) return value;
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
    case 'json': {
      const text = bytes.toString('utf8');
      try {
        // Too deep to serialize back into the response: as unreadable as JSON as text that is not JSON.
        if (!tooDeep(text)) return JSON.parse(text);
      } catch {
        /* not JSON */
      }
      throw new HttpError(406, 40601, `${where} is not JSON (or nests deeper than ${MAX_JSON_DEPTH} levels); read it with the binary format (application/vnd.kafka.binary.v2+json or format=binary).`);
    }
  }
}

export const wireType = (f: WireFormat): DataType => (f === 'binary' ? 'BINARY' : f === 'json' ? 'JSON' : 'STRING');

/** A key or value as a reader asked for it: `data`, and for a schema format its writer's schema id. */
export interface ReadValue {
  readonly data: unknown;
  readonly schemaId?: number;
}

/**
 * Renders the keys and values of one read in `format`; for a schema format their schemas are
 * looked up first (each once). `values` are every key and value the read will render.
 */
export async function valueReader(format: ReadFormat, values: readonly (Buffer | null)[]): Promise<(bytes: Buffer, where: string) => ReadValue> {
  if (!isSchemaFormat(format)) return (bytes, where) => ({ data: formatBytes(bytes, format, where) });
  const decoder = new WireDecoder(SCHEMA_FORMATS[format].schemaType, 'read it with the binary format (application/vnd.kafka.binary.v2+json or format=binary)');
  await decoder.prepare(values);
  return (bytes, where) => {
    const { schemaId, value } = decoder.decode(bytes, where);
    return { data: value, schemaId };
  };
}

/**
 * The most a record list may cost in a function's response: Lambda's synchronous response limit
 * (6 MB, the response's own JSON included) less room for the envelope and the headers.
 */
export const RESPONSE_RECORDS_BUDGET = 6_291_456 - 65_536;

/**
 * What a JSON text costs inside the function's response, which is JSON itself: its UTF-8 bytes,
 * plus one for every `"` and `\` escaped again.
 */
export function responseCost(json: string): number {
  let escaped = 0;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === 34 || c === 92) escaped++;
  }
  return Buffer.byteLength(json) + escaped;
}

/**
 * The JSON array of `items` rendered in order until the next one would take the array past
 * `budget` (see `responseCost`); the first always goes in, so a reader is never stuck. Returns
 * the array's text and how many items it holds.
 */
export function jsonArrayWithin<T>(items: readonly T[], render: (item: T) => unknown, budget = RESPONSE_RECORDS_BUDGET): { json: string; count: number } {
  const parts: string[] = [];
  let cost = 2;
  for (const item of items) {
    const text = JSON.stringify(render(item));
    const next = cost + responseCost(text) + (parts.length > 0 ? 1 : 0);
    if (parts.length > 0 && next > budget) break;
    parts.push(text);
    cost = next;
  }
  return { json: `[${parts.join(',')}]`, count: parts.length };
}
