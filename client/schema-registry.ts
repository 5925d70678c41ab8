/**
 * The cluster's schema registry from the SDK, shaped as `@kafkajs/confluent-schema-registry`'s
 * `SchemaRegistry`: register schemas, look ids up, and encode and decode values in Confluent's
 * wire format with the parsers the cluster itself uses (lib/schemas). Served from its own entry
 * point (`tributary/schemas`, client/schemas.ts), so the core SDK carries no avsc, ajv or
 * protobufjs.
 */
import { BoundedCache } from '../lib/bounded-cache.js';
import { AvroSchema } from '../lib/schemas/avro.js';
import { parseSchema, type CompatibilityLevel } from '../lib/schemas/compatibility.js';
import { InvalidData, type ParsedSchema, type ResolvedReference, type SchemaReference } from '../lib/schemas/model.js';
import { WIRE_HEADER_BYTES, wireFrame, wireSchemaId } from '../lib/schemas/wire-format.js';
import type { Connection } from './connection.js';
import { TributaryError, TributaryProtocolError } from './errors.js';
import type { CallOptions } from './transport.js';
import type { Tributary } from './tributary.js';

/** The registry's schema types, as kafkajs's `SchemaType` names them. */
export const SchemaType = { AVRO: 'AVRO', JSON: 'JSON', PROTOBUF: 'PROTOBUF' } as const;
export type SchemaType = (typeof SchemaType)[keyof typeof SchemaType];

export type { CompatibilityLevel, SchemaReference };

/** A schema to register or test: its type, its text, and the schemas it imports. */
export interface RegistrySchema {
  readonly type: SchemaType;
  readonly schema: string;
  /** `[{ name, subject, version }]` (version -1: the subject's latest). @default [] */
  readonly references?: readonly SchemaReference[];
}

/** A schema by id, as the registry holds it. */
export interface SchemaDescription {
  readonly id: number;
  readonly type: SchemaType;
  /** Its canonical text (JSON with sorted keys for AVRO and JSON; the normalized file for PROTOBUF). */
  readonly schema: string;
  readonly references: readonly SchemaReference[];
}

/** A subject's version with its schema. */
export interface SubjectVersion extends SchemaDescription {
  readonly subject: string;
  readonly version: number;
}

/** A compatibility test's answer, with the registry's reasons when it is incompatible. */
export interface CompatibilityResult {
  readonly isCompatible: boolean;
  readonly messages: string[];
}

/** A value its schema does not accept (encode), or bytes it cannot read (decode). */
export class SchemaValidationError extends TributaryError {
  override name = 'SchemaValidationError';
  constructor(message: string, readonly schemaId: number) {
    super(message);
  }
}

/** How many parsed schemas one SchemaRegistry keeps, least recently used first out. */
export const SCHEMA_CACHE_BOUNDS = { schemas: 256, schemaChars: 8 * 1024 * 1024 } as const;

/** The registry's own media type, sent and accepted on every call. */
const MEDIA_TYPE = 'application/vnd.schemaregistry.v1+json';
const MAX_REFERENCE_DEPTH = 16;

interface Loaded extends SchemaDescription {
  readonly parsed: ParsedSchema;
}

interface WireSchema { schemaType?: string; schema: string; references?: SchemaReference[] }
interface WireVersion extends WireSchema { subject: string; version: number; id: number }

const enc = encodeURIComponent;
const typeOf = (w: WireSchema): SchemaType => (w.schemaType ?? 'AVRO') as SchemaType;
const asVersion = (w: WireVersion): SubjectVersion => ({
  subject: w.subject, version: w.version, id: w.id, type: typeOf(w), schema: w.schema, references: w.references ?? [],
});

/** A value shown in an error message: short, and never a throw of its own. */
function shown(v: unknown): string {
  try {
    const s = typeof v === 'bigint' ? `${v}n` : JSON.stringify(v) ?? String(v);
    return s.length > 60 ? `${s.slice(0, 60)}…` : s;
  } catch {
    return typeof v;
  }
}

/** avsc's values (records, unions unwrapped, longs as numbers), checked first so a bad field is named. */
function encodeAvro(schema: AvroSchema, value: unknown): Buffer {
  const problems: string[] = [];
  const valid = schema.type.isValid(value, {
    errorHook: (path, v, type) => problems.push(`${path.length ? path.join('.') : '(the value)'}: ${shown(v)} is not ${type.name ?? type.typeName}`),
  });
  if (!valid) throw new InvalidData(problems.join('; ') || 'not valid');
  return schema.type.toBuffer(value);
}

/**
 * Confluent Schema Registry's API on a Tributary cluster, through the client's authenticated
 * transport (no auth, a token or IAM SigV4, as every SDK call), with `@kafkajs/confluent-schema-registry`'s
 * names where they match. Schemas read by id are parsed once and cached: at most 256 schemas and
 * 8 Mi characters of schema text per instance, least recently used first out (ids never change
 * their schema, so nothing cached goes stale).
 *
 * Values: AVRO takes and gives avsc's values (unions unwrapped, as kafkajs's serializer);
 * JSON the document; PROTOBUF the file's first message as protobufjs's object form (enum names or
 * numbers, 64-bit integers as strings or numbers, bytes as base64), decoded with every field shown.
 *
 * @example
 * ```ts
 * import { Tributary } from 'tributary';
 * import { SchemaRegistry, SchemaType } from 'tributary/schemas';
 * const registry = new SchemaRegistry(new Tributary({ url: 'http://127.0.0.1:8080' }));
 * const { id } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(orderSchema) }, { subject: 'orders-value' });
 * const value = await registry.encode(id, { id: 'o-1', qty: 2 });
 * await tributary.producer().send({ topic: 'orders', messages: [{ value }] });
 * ```
 */
export class SchemaRegistry {
  private readonly conn: Connection;
  private readonly cache = new BoundedCache<number, Loaded>(SCHEMA_CACHE_BOUNDS.schemas, SCHEMA_CACHE_BOUNDS.schemaChars, (s) => s.schema.length);
  private readonly loading = new Map<number, Promise<Loaded>>();

  constructor(tributary: Tributary) {
    this.conn = tributary.connection;
  }

  /** One call in the registry's media type; reads and idempotent writes retried on retriable errors, deletes sent once. */
  private async call<T>(method: string, path: string, o: { query?: CallOptions['query']; body?: unknown; once?: boolean } = {}): Promise<T> {
    const opts: CallOptions = { contentType: MEDIA_TYPE, accept: MEDIA_TYPE, ...(o.query ? { query: o.query } : {}), ...(o.body !== undefined ? { body: o.body } : {}) };
    return o.once ? (await this.conn.transport.call<T>(method, path, opts)).body : this.conn.call<T>(method, path, opts);
  }

  /**
   * Registers a schema under a subject; the same content again answers the same id. A schema that
   * does not parse is 42201, one the subject's level refuses 409 (`errorCode` on the error).
   */
  async register(schema: RegistrySchema, o: { subject: string }): Promise<{ id: number }> {
    const r = await this.call<{ id: number }>('POST', `/subjects/${enc(o.subject)}/versions`, { body: bodyOf(schema) });
    return { id: r.id };
  }

  /** The id of the subject's latest live version. */
  async getLatestSchemaId(subject: string): Promise<number> {
    return this.getRegistryId(subject, 'latest');
  }

  /** The id of one version of the subject. */
  async getRegistryId(subject: string, version: number | 'latest'): Promise<number> {
    return (await this.getSubjectVersion(subject, version)).id;
  }

  /** The id of this content in the subject (40403 when the subject does not hold it). */
  async getRegistryIdBySchema(subject: string, schema: RegistrySchema): Promise<number> {
    return (await this.call<WireVersion>('POST', `/subjects/${enc(subject)}`, { body: bodyOf(schema) })).id;
  }

  /** A schema by id: its type, text and references (40403 when there is none). */
  async getSchema(id: number): Promise<SchemaDescription> {
    const w = await this.call<WireSchema>('GET', `/schemas/ids/${id}`);
    return { id, type: typeOf(w), schema: w.schema, references: w.references ?? [] };
  }

  /** The subjects and versions that hold a schema. */
  async getSchemaVersions(id: number, o: { deleted?: boolean } = {}): Promise<{ subject: string; version: number }[]> {
    return this.call('GET', `/schemas/ids/${id}/versions`, { query: { deleted: o.deleted || undefined } });
  }

  /** Subjects with a live version; `deleted` adds the soft-deleted ones. */
  async getSubjects(o: { deleted?: boolean } = {}): Promise<string[]> {
    return this.call('GET', '/subjects', { query: { deleted: o.deleted || undefined } });
  }

  /** A subject's version numbers (40401 when it has none). */
  async getVersions(subject: string, o: { deleted?: boolean } = {}): Promise<number[]> {
    return this.call('GET', `/subjects/${enc(subject)}/versions`, { query: { deleted: o.deleted || undefined } });
  }

  /** One version of a subject with its schema. @default version 'latest' */
  async getSubjectVersion(subject: string, version: number | 'latest' = 'latest', o: { deleted?: boolean } = {}): Promise<SubjectVersion> {
    return asVersion(await this.call<WireVersion>('GET', `/subjects/${enc(subject)}/versions/${version}`, { query: { deleted: o.deleted || undefined } }));
  }

  /**
   * Whether `schema` may follow the subject's versions under its level: against the versions the
   * level names, or against one `version`. The reasons come back when it may not.
   */
  async checkCompatibility(subject: string, schema: RegistrySchema, o: { version?: number | 'latest' } = {}): Promise<CompatibilityResult> {
    const path = `/compatibility/subjects/${enc(subject)}/versions${o.version !== undefined ? `/${o.version}` : ''}`;
    const r = await this.call<{ is_compatible: boolean; messages?: string[] }>('POST', path, { body: bodyOf(schema), query: { verbose: true } });
    return { isCompatible: r.is_compatible, messages: r.messages ?? [] };
  }

  /**
   * A subject's compatibility level, or the global one without a subject. A subject without a
   * level of its own is 40408, unless `defaultToGlobal`.
   */
  async getConfig(subject?: string, o: { defaultToGlobal?: boolean } = {}): Promise<CompatibilityLevel> {
    const path = subject === undefined ? '/config' : `/config/${enc(subject)}`;
    return (await this.call<{ compatibilityLevel: CompatibilityLevel }>('GET', path, { query: { defaultToGlobal: o.defaultToGlobal || undefined } })).compatibilityLevel;
  }

  /** Sets a subject's level, or the global one without a subject (42203 for a level that is not one). */
  async setConfig(level: CompatibilityLevel, subject?: string): Promise<CompatibilityLevel> {
    const path = subject === undefined ? '/config' : `/config/${enc(subject)}`;
    return (await this.call<{ compatibility: CompatibilityLevel }>('PUT', path, { body: { compatibility: level } })).compatibility;
  }

  /** Soft-deletes every live version of a subject, or with `permanent` removes the soft-deleted ones; answers their numbers. */
  async deleteSubject(subject: string, o: { permanent?: boolean } = {}): Promise<number[]> {
    return this.call('DELETE', `/subjects/${enc(subject)}`, { query: { permanent: o.permanent || undefined }, once: true });
  }

  /** Soft-deletes one version, or with `permanent` removes a soft-deleted one; answers its number. */
  async deleteSubjectVersion(subject: string, version: number | 'latest', o: { permanent?: boolean } = {}): Promise<number> {
    return this.call('DELETE', `/subjects/${enc(subject)}/versions/${version}`, { query: { permanent: o.permanent || undefined }, once: true });
  }

  /**
   * `payload` serialized with schema `id` in Confluent's wire format: the magic byte 0, the id
   * (4 bytes, big-endian), for PROTOBUF the message indexes of the file's first message, then the
   * value. A payload the schema does not accept throws {@link SchemaValidationError}.
   */
  async encode(id: number, payload: unknown): Promise<Buffer> {
    const s = await this.loaded(id);
    try {
      return wireFrame(id, s.type, s.parsed instanceof AvroSchema ? encodeAvro(s.parsed, payload) : s.parsed.encode(payload));
    } catch (e) {
      if (e instanceof InvalidData) throw new SchemaValidationError(`The value does not match schema ${id} (${s.type}): ${e.message}`, id);
      throw e;
    }
  }

  /**
   * The value in bytes of Confluent's wire format, read with the schema whose id they carry
   * (fetched once, then cached). Protobuf values are read with or without the message indexes.
   */
  async decode(bytes: Uint8Array): Promise<unknown> {
    const id = wireSchemaId(bytes);
    if (id === undefined) throw new TributaryError("The bytes are not in the schema registry's wire format (magic byte 0, then a 4-byte schema id).");
    const s = await this.loaded(id);
    const payload = Buffer.from(bytes.buffer, bytes.byteOffset + WIRE_HEADER_BYTES, bytes.length - WIRE_HEADER_BYTES);
    try {
      return s.parsed instanceof AvroSchema ? s.parsed.type.fromBuffer(payload) : s.parsed.decode(payload);
    } catch (e) {
      throw new SchemaValidationError(`The bytes cannot be read with their schema ${id} (${s.type}): ${(e as Error).message}`, id);
    }
  }

  /** A schema parsed, from the cache or the registry (concurrent callers share one load). */
  private loaded(id: number): Promise<Loaded> {
    const hit = this.cache.get(id);
    if (hit) return Promise.resolve(hit);
    let p = this.loading.get(id);
    if (!p) {
      p = this.load(id).finally(() => this.loading.delete(id));
      this.loading.set(id, p);
    }
    return p;
  }

  private async load(id: number): Promise<Loaded> {
    const d = await this.getSchema(id);
    let parsed: ParsedSchema;
    try {
      parsed = await parseSchema(d.type, d.schema, await this.resolveReferences(d.references));
    } catch (e) {
      if (e instanceof TributaryError) throw e;
      throw new TributaryError(`Schema ${id} (${d.type}) does not parse here: ${(e as Error).message}`, { cause: e });
    }
    const loaded = { ...d, parsed };
    this.cache.set(id, loaded);
    return loaded;
  }

  /** The texts a schema's references name, their own references first (as the registry resolves them). */
  private async resolveReferences(refs: readonly SchemaReference[], depth = 0): Promise<ResolvedReference[]> {
    if (refs.length === 0) return [];
    if (depth > MAX_REFERENCE_DEPTH) throw new TributaryError(`Schema references nest deeper than ${MAX_REFERENCE_DEPTH}.`);
    const out = new Map<string, ResolvedReference>();
    for (const ref of refs) {
      const v = await this.getSubjectVersion(ref.subject, ref.version === -1 ? 'latest' : ref.version, { deleted: ref.version !== -1 });
      for (const dep of await this.resolveReferences(v.references, depth + 1)) if (!out.has(dep.name)) out.set(dep.name, dep);
      out.set(ref.name, { name: ref.name, schemaType: v.type, schema: v.schema });
    }
    return [...out.values()];
  }
}

const bodyOf = (s: RegistrySchema) => ({ schema: s.schema, schemaType: s.type, ...(s.references?.length ? { references: s.references } : {}) });

/** Whether `e` is the registry's answer with this `error_code` (40401, 40403, 409, 42201, ...). */
export const isRegistryError = (e: unknown, errorCode: number): e is TributaryProtocolError =>
  e instanceof TributaryProtocolError && e.errorCode === errorCode;
