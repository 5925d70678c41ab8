/**
 * The schema registry in the coordination table (lib/schemas/ holds the rules; this file only
 * reads and writes). Keys:
 * - `schema-ids`/`next`: the id counter (`lastId`); `schema-ids`/`<10-digit id>`: a schema
 *   (`schemaType`, `schema` in canonical form, `references`, `hash`). Never changed once written.
 * - `schema-hashes`/`<sha-256 of type, canonical form and references>`: the id of that content.
 * - `schema-versions`/`<subject length>:<subject>#<10-digit version>`: one version of a subject
 *   (`subject`, `version`, `id`, `deleted`). One partition for every subject, so the subject list
 *   is one Query; the length prefix keeps one subject's versions from matching another's prefix.
 * - `schema-configs`/`global`, `subject:<subject>`: a compatibility level; `schema-configs`/`mode`.
 *
 * Conditional writes:
 * - `createSchema`: takes an id (`ADD lastId :one` on the counter: every caller gets its own),
 *   then one transaction puts the hash item and the id item, each where none exists.
 *   Lost race (another caller registered the same content first):
 *
 *       A: id 7 from the counter ─ transaction(hash→7, 7→schema) ✓
 *       B: id 8 from the counter ─────────── transaction(hash→8, 8→schema) ✗ hash exists
 *       B: answers 7 (the hash item as it is, ALL_OLD); id 8 is never used (ids have gaps, as Confluent's)
 *
 *   So one content has one id, and two contents never share one (the counter never repeats).
 * - `putSubjectVersion`: Put where no item has the key. Lost race (a concurrent registration took
 *   that version number): `false`, nothing written; the caller reads the versions again.
 * - `softDeleteVersion`: Update `deleted = true` where the item exists and is not deleted. Lost:
 *   `false`, nothing written.
 * - `hardDeleteVersion`: Delete where the item exists and is soft-deleted. Lost: `false`.
 * Configs and the mode are plain Puts and Deletes: the last writer wins, as in Confluent's registry.
 */
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { COORDINATION_KEYS } from '../tables.js';
import { ConditionFailed, transactWrite } from '../transact.js';
import { db, queryAll, table } from './table.js';

export type StoredSchemaType = 'AVRO' | 'JSON' | 'PROTOBUF';

export interface StoredReference {
  readonly name: string;
  readonly subject: string;
  readonly version: number;
}

export interface StoredSchema {
  readonly id: number;
  readonly schemaType: StoredSchemaType;
  /** The canonical form (lib/schemas/). */
  readonly schema: string;
  readonly references: readonly StoredReference[];
}

export interface StoredVersion {
  readonly subject: string;
  readonly version: number;
  readonly id: number;
  readonly deleted: boolean;
}

const K = COORDINATION_KEYS;
const isConditionFailure = (err: unknown): boolean => (err as { name?: string }).name === 'ConditionalCheckFailedException';
const pad = (n: number): string => String(n).padStart(10, '0');
const idKey = (id: number) => ({ pk: K.schemaIds, sk: pad(id) });
const subjectPrefix = (subject: string): string => `${subject.length}:${subject}#`;
const versionKey = (subject: string, version: number) => ({ pk: K.schemaVersions, sk: `${subjectPrefix(subject)}${pad(version)}` });
const configKey = (subject: string | null) => ({ pk: K.schemaConfigs, sk: subject === null ? 'global' : `subject:${subject}` });
const MODE_KEY = { pk: K.schemaConfigs, sk: 'mode' };

const toSchema = (item: Record<string, unknown>): StoredSchema => ({
  id: Number(item.id), schemaType: item.schemaType as StoredSchemaType, schema: String(item.schema),
  references: (item.references as StoredReference[] | undefined) ?? [],
});

const toVersion = (item: Record<string, unknown>): StoredVersion => ({
  subject: String(item.subject), version: Number(item.version), id: Number(item.id), deleted: item.deleted === true,
});

/** The schema with this id (strongly consistent). */
export async function getSchemaById(id: number): Promise<StoredSchema | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: idKey(id), ConsistentRead: true }));
  return out.Item ? toSchema(out.Item) : undefined;
}

/** The id of the content with this hash, if it was ever registered. */
export async function getSchemaIdByHash(hash: string): Promise<number | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: { pk: K.schemaHashes, sk: hash }, ConsistentRead: true }));
  return out.Item ? Number(out.Item.id) : undefined;
}

/**
 * Gives content an id: a new one, or the one a concurrent caller gave the same content first
 * (see the file's comment). `created` says whether this call wrote it.
 */
export async function createSchema(hash: string, s: Omit<StoredSchema, 'id'>): Promise<{ id: number; created: boolean }> {
  const counter = await db().send(new UpdateCommand({
    TableName: table(), Key: { pk: K.schemaIds, sk: 'next' }, UpdateExpression: 'ADD lastId :one',
    ExpressionAttributeValues: { ':one': 1 }, ReturnValues: 'UPDATED_NEW',
  }));
  const id = Number(counter.Attributes?.lastId);
  try {
    await transactWrite(db(), [
      { Put: { TableName: table(), Item: { pk: K.schemaHashes, sk: hash, id }, ConditionExpression: 'attribute_not_exists(pk)' } },
      { Put: { TableName: table(), Item: { ...idKey(id), id, schemaType: s.schemaType, schema: s.schema, references: s.references, hash }, ConditionExpression: 'attribute_not_exists(pk)' } },
    ]);
    return { id, created: true };
  } catch (err) {
    const winner = err instanceof ConditionFailed ? err.at(0)?.current : undefined;
    if (winner && typeof winner.id === 'number') return { id: winner.id, created: false };
    throw err;
  }
}

/** A subject's versions, deleted ones too, oldest first. */
export async function listSubjectVersions(subject: string): Promise<StoredVersion[]> {
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': K.schemaVersions, ':prefix': subjectPrefix(subject) },
  });
  return items.map(toVersion).sort((a, b) => a.version - b.version);
}

/** Every version of every subject (one paged Query). */
export async function listAllVersions(): Promise<StoredVersion[]> {
  const items = await queryAll({ KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': K.schemaVersions } });
  return items.map(toVersion);
}

/** Writes a new version; false when the number is taken (nothing written). */
export async function putSubjectVersion(v: Omit<StoredVersion, 'deleted'>): Promise<boolean> {
  try {
    await db().send(new PutCommand({
      TableName: table(), Item: { ...versionKey(v.subject, v.version), subject: v.subject, version: v.version, id: v.id, deleted: false },
      ConditionExpression: 'attribute_not_exists(pk)',
    }));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** Marks a version deleted; false when it is gone or deleted already. */
export async function softDeleteVersion(subject: string, version: number): Promise<boolean> {
  try {
    await db().send(new UpdateCommand({
      TableName: table(), Key: versionKey(subject, version), UpdateExpression: 'SET deleted = :t',
      ConditionExpression: 'attribute_exists(pk) AND deleted = :f', ExpressionAttributeValues: { ':t': true, ':f': false },
    }));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** Removes a soft-deleted version; false when it is gone or not soft-deleted. */
export async function hardDeleteVersion(subject: string, version: number): Promise<boolean> {
  try {
    await db().send(new DeleteCommand({
      TableName: table(), Key: versionKey(subject, version),
      ConditionExpression: 'attribute_exists(pk) AND deleted = :t', ExpressionAttributeValues: { ':t': true },
    }));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** The compatibility level set on a subject, or the global one (`null`); undefined when none is set. */
export async function getCompatibility(subject: string | null): Promise<string | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: configKey(subject), ConsistentRead: true }));
  return typeof out.Item?.compatibility === 'string' ? out.Item.compatibility : undefined;
}

export async function putCompatibility(subject: string | null, level: string): Promise<void> {
  await db().send(new PutCommand({ TableName: table(), Item: { ...configKey(subject), compatibility: level } }));
}

/** Removes a level; answers the one removed. */
export async function deleteCompatibility(subject: string | null): Promise<string | undefined> {
  const out = await db().send(new DeleteCommand({ TableName: table(), Key: configKey(subject), ReturnValues: 'ALL_OLD' }));
  return typeof out.Attributes?.compatibility === 'string' ? out.Attributes.compatibility : undefined;
}

export async function getMode(): Promise<string | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: MODE_KEY, ConsistentRead: true }));
  return typeof out.Item?.mode === 'string' ? out.Item.mode : undefined;
}

export async function putMode(mode: string): Promise<void> {
  await db().send(new PutCommand({ TableName: table(), Item: { ...MODE_KEY, mode } }));
}
