/**
 * The registry's per-instance cache: only what never changes once written — a schema by its id,
 * an id by its content hash, a parsed schema by its id — so nothing in it is ever stale. Each map
 * is a least-recently-used one with a bound on entries and on the characters of schema text it
 * holds, so an instance's memory stays bounded whatever it serves.
 */
import type { StoredSchema } from '../storage/coordination/schemas.js';
import type { ParsedSchema } from './model.js';
import { BoundedCache } from '../bounded-cache.js';

export { BoundedCache } from '../bounded-cache.js';

/** 1,000 schemas and 16 Mi characters of schema text at most. */
export const CACHE_BOUNDS = { schemas: 1_000, schemaChars: 16 * 1024 * 1024, hashes: 10_000, parsed: 256, parsedChars: 8 * 1024 * 1024 } as const;

export const schemasById = new BoundedCache<number, StoredSchema>(CACHE_BOUNDS.schemas, CACHE_BOUNDS.schemaChars, (s) => s.schema.length);
export const idsByHash = new BoundedCache<string, number>(CACHE_BOUNDS.hashes, Infinity);
export const parsedById = new BoundedCache<number, ParsedSchema>(CACHE_BOUNDS.parsed, CACHE_BOUNDS.parsedChars, (p) => p.canonical.length);

/** Empties every map (tests that need an instance's first read). */
export function clearSchemaCaches(): void {
  schemasById.clear();
  idsByHash.clear();
  parsedById.clear();
}
