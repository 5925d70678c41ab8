/**
 * The schema registry as the console reads it (the Confluent-compatible routes at the API's root),
 * and records decoded with their schemas: the server decodes (a v3 read with `format=avro`,
 * `jsonschema` or `protobuf`), so no Avro or Protobuf library comes to the browser.
 */
import { TributaryProtocolError } from '../../../client/index.js';
import { cluster } from './api.js';

/** The registry's `schemaType`: absent means AVRO. */
export type SchemaType = 'AVRO' | 'JSON' | 'PROTOBUF';

export interface SubjectVersion {
  readonly subject: string;
  readonly version: number;
  readonly id: number;
  readonly schemaType: SchemaType;
  readonly schema: string;
}

const enc = encodeURIComponent;
const get = <T>(path: string, query?: Record<string, string | number>): Promise<T> =>
  cluster().tributary.connection.call<T>('GET', path, query ? { query } : {});

/** Subjects with a live version (soft-deleted ones are not listed), by name. */
export async function listSubjects(): Promise<string[]> {
  return (await get<string[]>('/subjects')).sort((a, b) => a.localeCompare(b));
}

/** A subject's live version numbers, oldest first. */
export async function subjectVersions(subject: string): Promise<number[]> {
  return (await get<number[]>(`/subjects/${enc(subject)}/versions`)).sort((a, b) => a - b);
}

export async function subjectVersion(subject: string, version: number | 'latest'): Promise<SubjectVersion> {
  const v = await get<{ subject: string; version: number; id: number; schemaType?: SchemaType; schema: string }>(`/subjects/${enc(subject)}/versions/${version}`);
  return { ...v, schemaType: v.schemaType ?? 'AVRO' };
}

/** The global compatibility level. */
export async function globalLevel(): Promise<string> {
  return (await get<{ compatibilityLevel: string }>('/config')).compatibilityLevel;
}

/** The subject's own compatibility level; undefined when it has none (the global one applies). */
export async function subjectLevel(subject: string): Promise<string | undefined> {
  try {
    return (await get<{ compatibilityLevel: string }>(`/config/${enc(subject)}`)).compatibilityLevel;
  } catch (e) {
    if (e instanceof TributaryProtocolError && e.errorCode === 40408) return undefined;
    throw e;
  }
}

/** A schema's text for reading: AVRO and JSON pretty-printed, Protobuf as written. */
export function prettySchema(type: SchemaType, text: string): string {
  if (type === 'PROTOBUF') return text;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** What the console knows of a schema id: its type and where it is registered (none when the caller may read no subject of it). */
export interface SchemaInfo {
  readonly id: number;
  readonly schemaType: SchemaType;
  readonly versions: readonly { subject: string; version: number }[];
}

/** Per id, asked once: an id's schema never changes. Null when the registry has no such id (or refuses it). */
const byId = new Map<number, Promise<SchemaInfo | null>>();

export function schemaInfo(id: number): Promise<SchemaInfo | null> {
  let p = byId.get(id);
  if (!p) {
    p = (async () => {
      try {
        const [s, versions] = await Promise.all([
          get<{ schemaType?: SchemaType }>(`/schemas/ids/${id}`),
          get<{ subject: string; version: number }[]>(`/schemas/ids/${id}/versions`).catch(() => []),
        ]);
        return { id, schemaType: s.schemaType ?? 'AVRO', versions };
      } catch (e) {
        // Not there, or not readable: the record shows as bytes. Anything else may pass: ask again next time.
        if (e instanceof TributaryProtocolError && (e.status === 404 || e.status === 403)) return null;
        byId.delete(id);
        return null;
      }
    })();
    byId.set(id, p);
  }
  return p;
}

/** The schema id Confluent's wire format starts with (magic byte 0, then 4 bytes big-endian), or undefined. */
export function wireSchemaId(b: Uint8Array | null): number | undefined {
  if (!b || b.length < 5 || b[0] !== 0) return undefined;
  const id = new DataView(b.buffer, b.byteOffset, 5).getInt32(1);
  return id > 0 ? id : undefined;
}

/** A key or value the server decoded with its writer's schema. */
export interface Decoded {
  readonly type: string;
  readonly schema: SchemaInfo;
  readonly data: unknown;
}

export interface DecodedRecord {
  readonly key?: Decoded;
  readonly value?: Decoded;
}

/** The v3 read's format for each registry type. */
const FORMAT: Record<SchemaType, string> = { AVRO: 'avro', JSON: 'jsonschema', PROTOBUF: 'protobuf' };

interface WireData { type?: string; schema_id?: number; data?: unknown }

/**
 * The keys and values of one page of records that are in the wire format, decoded, by offset.
 * The page is read again from its first offset with the same `maxBytes`, once per format its
 * schemas have (`undecodable=binary`: what that format cannot read comes back as bytes, and stays
 * as it is shown). A read that fails leaves the page as it is.
 */
export async function decodePage(
  topic: string, partition: number, page: readonly { offset: string; key: Uint8Array | null; value: Uint8Array | null }[], maxBytes: number,
): Promise<Map<string, DecodedRecord>> {
  const out = new Map<string, DecodedRecord>();
  const first = page[0];
  if (!first) return out;
  const ids = new Set(page.flatMap((m) => [wireSchemaId(m.key), wireSchemaId(m.value)]).filter((id): id is number => id !== undefined));
  if (ids.size === 0) return out;
  const infos = new Map<number, SchemaInfo>();
  for (const info of await Promise.all([...ids].map(schemaInfo))) if (info) infos.set(info.id, info);
  const formats = new Set([...infos.values()].map((i) => FORMAT[i.schemaType]));
  const conn = cluster().tributary.connection;
  const path = await conn.v3(`/topics/${enc(topic)}/partitions/${partition}/records`);
  await Promise.all([...formats].map(async (format) => {
    let read: { records: { offset: number; key: WireData | null; value: WireData | null }[] };
    try {
      read = await conn.call('GET', path, { query: { offset: first.offset, format, undecodable: 'binary', max_bytes: maxBytes } });
    } catch {
      return;
    }
    const decoded = (d: WireData | null): Decoded | undefined => {
      const info = d?.schema_id === undefined ? undefined : infos.get(d.schema_id);
      return info && d ? { type: d.type ?? info.schemaType, schema: info, data: d.data } : undefined;
    };
    for (const r of read.records) {
      const key = decoded(r.key);
      const value = decoded(r.value);
      if (!key && !value) continue;
      const at = String(r.offset);
      out.set(at, { ...out.get(at), ...(key ? { key } : {}), ...(value ? { value } : {}) });
    }
  }));
  return out;
}
