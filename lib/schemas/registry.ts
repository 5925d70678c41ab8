/**
 * The registry's core: schemas and their ids, registration under a subject with its
 * compatibility check, lookup by content, and the compatibility test. Storage:
 * lib/storage/coordination/schemas.ts (its races and how each is lost); the per-instance cache:
 * cache.ts; subjects and versions read and deleted: subjects.ts; levels and the mode: configs.ts.
 */
import { createHash } from 'node:crypto';
import {
  createSchema, getSchemaById, getSchemaIdByHash, listSubjectVersions, putSubjectVersion,
  type StoredSchema, type StoredVersion,
} from '../storage/coordination/schemas.js';
import { idsByHash, parsedById, schemasById } from './cache.js';
import { incompatibilities, parseSchema, type CompatibilityLevel } from './compatibility.js';
import { effectiveLevel, requireWritable } from './configs.js';
import {
  incompatible, invalidSchema, invalidVersion, shown, schemaNotFound, subjectNotFound, tooManyRaces, versionNotFound,
} from './errors.js';
import { checkSubject, SCHEMA_TYPES, type ParsedSchema, type ResolvedReference, type SchemaReference, type SchemaType } from './model.js';

export { checkSubject } from './model.js';

/** The largest schema text accepted: a DynamoDB item holds 400 KB. */
export const MAX_SCHEMA_CHARS = 256 * 1024;
export const MAX_REFERENCES = 100;
const MAX_REFERENCE_DEPTH = 16;
const REGISTER_ATTEMPTS = 10;

/** A schema as a request carries it (POST /subjects/{s}/versions, POST /subjects/{s}, compatibility). */
export interface SchemaInput {
  readonly schema: string;
  readonly schemaType: SchemaType;
  readonly references: readonly SchemaReference[];
}

/** A subject's version as the API shows it. */
export interface VersionView {
  readonly subject: string;
  readonly version: number;
  readonly id: number;
  readonly schemaType: SchemaType;
  readonly schema: string;
  readonly references: readonly SchemaReference[];
}

/** Reads a request body's schema fields (42201 when they are not what Confluent's API takes). */
export function schemaInput(body: unknown): SchemaInput {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalidSchema('the body is a JSON object with a "schema" field');
  const b = body as Record<string, unknown>;
  if (typeof b.schema !== 'string' || b.schema.trim() === '') throw invalidSchema('"schema" is a non-empty string');
  if (b.schema.length > MAX_SCHEMA_CHARS) throw invalidSchema(`a schema has at most ${MAX_SCHEMA_CHARS} characters`);
  const type = b.schemaType ?? 'AVRO';
  if (typeof type !== 'string' || !(SCHEMA_TYPES as readonly string[]).includes(type)) throw invalidSchema(`unknown schemaType ${shown(type)}; AVRO, JSON or PROTOBUF`);
  const refs = b.references ?? [];
  if (!Array.isArray(refs) || refs.length > MAX_REFERENCES) throw invalidSchema(`"references" is an array of at most ${MAX_REFERENCES}`);
  const references = refs.map((r: unknown): SchemaReference => {
    const ref = r as Record<string, unknown> | null;
    if (!ref || typeof ref !== 'object' || typeof ref.name !== 'string' || ref.name === '' || typeof ref.subject !== 'string'
      || typeof ref.version !== 'number' || !Number.isInteger(ref.version) || (ref.version < 1 && ref.version !== -1) || ref.version > 2 ** 31 - 1) {
      throw invalidSchema('each reference is {"name": string, "subject": string, "version": a version number or -1}');
    }
    checkSubject(ref.subject);
    return { name: ref.name, subject: ref.subject, version: ref.version };
  });
  return { schema: b.schema, schemaType: type as SchemaType, references };
}

/** A path's version: a number in [1, 2^31-1], or `latest` / -1 (42202 otherwise). */
export function parseVersion(raw: string): number | 'latest' {
  if (raw === 'latest' || raw === '-1') return 'latest';
  if (!/^\d{1,10}$/.test(raw)) throw invalidVersion(raw);
  const n = Number(raw);
  if (n < 1 || n > 2 ** 31 - 1) throw invalidVersion(raw);
  return n;
}

/** The schema with this id, from the cache or the table. */
export async function schemaById(id: number): Promise<StoredSchema | undefined> {
  const hit = schemasById.get(id);
  if (hit) return hit;
  const s = await getSchemaById(id);
  if (s) schemasById.set(id, s);
  return s;
}

/** The live version (or, with `deleted`, any version) of a subject; `latest` is the highest live one. */
export function pickVersion(versions: readonly StoredVersion[], subject: string, version: number | 'latest', deleted: boolean): StoredVersion {
  const visible = versions.filter((v) => deleted || !v.deleted);
  if (visible.length === 0) throw subjectNotFound(subject);
  const found = version === 'latest' ? visible[visible.length - 1] : visible.find((v) => v.version === version);
  if (!found) throw versionNotFound(version === 'latest' ? 'latest' : version);
  return found;
}

/** The texts a schema's references name, their own references first (42201 when one is missing). */
async function resolveReferences(refs: readonly SchemaReference[], depth = 0): Promise<ResolvedReference[]> {
  if (refs.length === 0) return [];
  if (depth > MAX_REFERENCE_DEPTH) throw invalidSchema(`references nest deeper than ${MAX_REFERENCE_DEPTH}`);
  const out = new Map<string, ResolvedReference>();
  for (const ref of refs) {
    const versions = await listSubjectVersions(ref.subject);
    const live = versions.filter((v) => !v.deleted);
    const v = ref.version === -1 ? live[live.length - 1] : versions.find((x) => x.version === ref.version);
    if (!v) throw invalidSchema(`reference ${ref.name}: subject '${ref.subject}' has no version ${ref.version === -1 ? 'latest' : ref.version}`);
    const s = await schemaById(v.id);
    if (!s) throw invalidSchema(`reference ${ref.name}: schema ${v.id} not found`);
    for (const dep of await resolveReferences(s.references, depth + 1)) if (!out.has(dep.name)) out.set(dep.name, dep);
    out.set(ref.name, { name: ref.name, schemaType: s.schemaType, schema: s.schema });
  }
  return [...out.values()];
}

/**
 * A schema's text in the form a read names (`?format=`): `serialized` gives a PROTOBUF schema as
 * a base64 FileDescriptorProto (lib/schemas/protobuf-descriptor.ts), as Confluent's JavaScript
 * deserializers ask for it; any other format, or another type, the text as registered.
 */
export async function inFormat(s: { readonly id: number; readonly schemaType: SchemaType; readonly schema: string; readonly references: readonly SchemaReference[] }, format: string | undefined): Promise<string> {
  if (format !== 'serialized' || s.schemaType !== 'PROTOBUF') return s.schema;
  const { protoToDescriptor } = await import('./protobuf-descriptor.js');
  try {
    return protoToDescriptor(s.schema, await resolveReferences(s.references), `schema-${s.id}.proto`);
  } catch (err) {
    if ((err as { status?: number }).status) throw err;
    throw invalidSchema(`schema ${s.id} cannot be given as a descriptor: ${(err as Error).message}`);
  }
}

/** Parses a request's schema with its references. */
export async function parseInput(input: SchemaInput): Promise<ParsedSchema> {
  return parseSchema(input.schemaType, input.schema, await resolveReferences(input.references));
}

/** A stored schema, parsed (cached by id). */
export async function parsedSchema(id: number): Promise<ParsedSchema> {
  const hit = parsedById.get(id);
  if (hit) return hit;
  const s = await schemaById(id);
  if (!s) throw schemaNotFound(`Schema ${id} not found`);
  const parsed = await parseSchema(s.schemaType, s.schema, await resolveReferences(s.references));
  parsedById.set(id, parsed);
  return parsed;
}

/** What identifies content: its type, canonical form and references. */
export function contentHash(schemaType: SchemaType, canonical: string, references: readonly SchemaReference[]): string {
  return createHash('sha256').update(JSON.stringify([schemaType, canonical, references.map((r) => [r.name, r.subject, r.version])])).digest('hex');
}

async function idOfContent(hash: string): Promise<number | undefined> {
  const hit = idsByHash.get(hash);
  if (hit !== undefined) return hit;
  const id = await getSchemaIdByHash(hash);
  if (id !== undefined) idsByHash.set(hash, id);
  return id;
}

/** Why `candidate` may not follow the subject's live versions under `level`. */
export async function checkAgainst(level: CompatibilityLevel, candidate: ParsedSchema, live: readonly StoredVersion[]): Promise<string[]> {
  if (level === 'NONE' || live.length === 0) return [];
  const needed = level.endsWith('_TRANSITIVE') ? live : live.slice(-1);
  const previous = await Promise.all(needed.map((v) => parsedSchema(v.id)));
  return incompatibilities(level, candidate, previous);
}

/**
 * Registers a schema under a subject (POST /subjects/{s}/versions): the id of the same content
 * when the subject already has it live; otherwise, if it passes the subject's level against the
 * live versions, a new version with the content's id (new or existing). A version number taken
 * by a concurrent registration is a lost race: read the versions again and decide again.
 */
export async function register(subject: string, input: SchemaInput): Promise<{ id: number; version: number; created: boolean }> {
  checkSubject(subject);
  await requireWritable();
  const parsed = await parseInput(input);
  const hash = contentHash(input.schemaType, parsed.canonical, input.references);
  for (let attempt = 0; attempt < REGISTER_ATTEMPTS; attempt++) {
    const [versions, known] = await Promise.all([listSubjectVersions(subject), idOfContent(hash)]);
    const live = versions.filter((v) => !v.deleted);
    const same = known === undefined ? undefined : live.find((v) => v.id === known);
    if (same && known !== undefined) return { id: known, version: same.version, created: false };
    const problems = await checkAgainst(await effectiveLevel(subject), parsed, live);
    if (problems.length > 0) throw incompatible(problems);
    const id = known ?? (await createSchema(hash, { schemaType: input.schemaType, schema: parsed.canonical, references: input.references })).id;
    idsByHash.set(hash, id);
    const version = (versions.length === 0 ? 0 : Math.max(...versions.map((v) => v.version))) + 1;
    if (await putSubjectVersion({ subject, version, id })) return { id, version, created: true };
  }
  throw tooManyRaces();
}

/** Finds the subject's version that holds this content (POST /subjects/{s}). */
export async function lookup(subject: string, input: SchemaInput, deleted: boolean): Promise<VersionView> {
  checkSubject(subject);
  const versions = (await listSubjectVersions(subject)).filter((v) => deleted || !v.deleted);
  if (versions.length === 0) throw subjectNotFound(subject);
  const parsed = await parseInput(input);
  const id = await idOfContent(contentHash(input.schemaType, parsed.canonical, input.references));
  const found = id === undefined ? undefined : [...versions].reverse().find((v) => v.id === id);
  if (!found) throw schemaNotFound();
  return versionView(found);
}

/** A version with its schema, as GET /subjects/{s}/versions/{v} shows it. */
export async function versionView(v: StoredVersion): Promise<VersionView> {
  const s = await schemaById(v.id);
  if (!s) throw schemaNotFound(`Schema ${v.id} not found`);
  return { subject: v.subject, version: v.version, id: v.id, schemaType: s.schemaType, schema: s.schema, references: s.references };
}

/**
 * POST /compatibility/subjects/{s}/versions[/{v}]: with a version, the candidate against that one
 * version in the subject level's direction; without, against the live versions the level names.
 */
export async function testCompatibility(subject: string, version: string | undefined, input: SchemaInput): Promise<string[]> {
  checkSubject(subject);
  const parsed = await parseInput(input);
  const versions = await listSubjectVersions(subject);
  const live = versions.filter((v) => !v.deleted);
  const level = await effectiveLevel(subject);
  if (version === undefined) return checkAgainst(level, parsed, live);
  const v = pickVersion(versions, subject, parseVersion(version), false);
  return incompatibilities(level, parsed, [await parsedSchema(v.id)]);
}
