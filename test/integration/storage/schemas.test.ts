/**
 * The schema registry's items in the real coordination table (DynamoDB Local): each conditional
 * write's won and lost races, and registrations racing each other through lib/schemas.
 */
import { describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import {
  createSchema, deleteCompatibility, getCompatibility, getSchemaById, getSchemaIdByHash, hardDeleteVersion, listSubjectVersions,
  putCompatibility, putSubjectVersion, softDeleteVersion,
} from '../../../lib/storage/coordination/schemas.js';
import { clearSchemaCaches } from '../../../lib/schemas/cache.js';
import { register, schemaInput } from '../../../lib/schemas/registry.js';
import { setLevel } from '../../../lib/schemas/configs.js';

const content = (text: string) => ({ schemaType: 'AVRO' as const, schema: text, references: [] });
const subject = (name: string) => `it-${randomUUID().slice(0, 8)}-${name}`;

describe('Function: createSchema', () => {
  it('gives one id to one content created concurrently: one caller writes it, the others lose the race and answer the winner\'s id', async () => {
    const hash = randomUUID();
    const results = await Promise.all(Array.from({ length: 10 }, () => createSchema(hash, content('"string"'))));
    const ids = new Set(results.map((r) => r.id));
    expect(ids.size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    const [id] = [...ids] as [number];
    expect(await getSchemaIdByHash(hash)).toBe(id);
    expect(await getSchemaById(id)).toEqual({ id, ...content('"string"') });
    // Later too: the content's id, nothing written.
    expect(await createSchema(hash, content('"string"'))).toEqual({ id, created: false });
  });

  it('never gives two contents one id, however many are created at once', async () => {
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => createSchema(randomUUID(), content(`{"type":"fixed","name":"F${i}","size":${i + 1}}`))));
    expect(new Set(results.map((r) => r.id)).size).toBe(10);
    expect(results.every((r) => r.created)).toBe(true);
  });
});

describe('Functions: subject versions', () => {
  it('puts a version number once: a second put of it loses and writes nothing', async () => {
    const s = subject('put');
    expect(await putSubjectVersion({ subject: s, version: 1, id: 11 })).toBe(true);
    expect(await putSubjectVersion({ subject: s, version: 1, id: 12 })).toBe(false);
    expect(await listSubjectVersions(s)).toEqual([{ subject: s, version: 1, id: 11, deleted: false }]);
  });

  it('soft-deletes once, permanently deletes only what was soft-deleted, and keeps subjects apart whatever their names', async () => {
    const s = subject('del');
    const prefixOfIt = `${s}#`;
    await putSubjectVersion({ subject: s, version: 1, id: 1 });
    await putSubjectVersion({ subject: prefixOfIt, version: 1, id: 2 });
    expect(await hardDeleteVersion(s, 1)).toBe(false);
    expect(await softDeleteVersion(s, 1)).toBe(true);
    expect(await softDeleteVersion(s, 1)).toBe(false);
    expect(await softDeleteVersion(s, 2)).toBe(false);
    expect((await listSubjectVersions(s))[0]?.deleted).toBe(true);
    expect(await hardDeleteVersion(s, 1)).toBe(true);
    expect(await hardDeleteVersion(s, 1)).toBe(false);
    expect(await listSubjectVersions(s)).toEqual([]);
    expect(await listSubjectVersions(prefixOfIt)).toEqual([{ subject: prefixOfIt, version: 1, id: 2, deleted: false }]);
  });

  it('sets, reads and removes a subject\'s level', async () => {
    const s = subject('cfg');
    expect(await getCompatibility(s)).toBeUndefined();
    await putCompatibility(s, 'FULL');
    expect(await getCompatibility(s)).toBe('FULL');
    expect(await deleteCompatibility(s)).toBe('FULL');
    expect(await deleteCompatibility(s)).toBeUndefined();
  });
});

describe('Function: register', () => {
  const record = (fields: object[]) => JSON.stringify({ type: 'record', name: 'Race', fields });

  it('registers one schema raced by several callers (each with an empty cache, as separate instances) once: one id, one version', async () => {
    const s = subject('race');
    const input = schemaInput({ schema: record([{ name: 'a', type: 'string' }]) });
    const results = await Promise.all(Array.from({ length: 6 }, async () => {
      clearSchemaCaches();
      return register(s, input);
    }));
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect((await listSubjectVersions(s)).map((v) => v.version)).toEqual([1]);
  });

  it('gives different schemas raced into one subject one version each, numbered without gaps (the losers read again and take the next)', async () => {
    const s = subject('versions');
    await setLevel(s, 'NONE');
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => register(s, schemaInput({ schema: record([{ name: `f${i}`, type: 'int' }]) }))));
    expect(new Set(results.map((r) => r.id)).size).toBe(5);
    expect(results.map((r) => r.version).sort()).toEqual([1, 2, 3, 4, 5]);
    const versions = await listSubjectVersions(s);
    expect(versions.map((v) => v.version)).toEqual([1, 2, 3, 4, 5]);
    expect(new Set(versions.map((v) => v.id))).toEqual(new Set(results.map((r) => r.id)));
  });
});
