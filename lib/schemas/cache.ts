/**
 * The registry's per-instance cache: only what never changes once written — a schema by its id,
 * an id by its content hash, a parsed schema by its id — so nothing in it is ever stale. Each map
 * is a least-recently-used one with a bound on entries and on the characters of schema text it
 * holds, so an instance's memory stays bounded whatever it serves.
 */
import type { StoredSchema } from '../storage/coordination/schemas.js';
import type { ParsedSchema } from './model.js';

export class BoundedCache<K, V> {
  private readonly map = new Map<K, { value: V; weight: number }>();
  private total = 0;
  constructor(readonly maxEntries: number, readonly maxWeight: number, private readonly weigh: (v: V) => number = () => 0) {}

  get(key: K): V | undefined {
    const hit = this.map.get(key);
    if (!hit) return undefined;
    this.map.delete(key);
    this.map.set(key, hit);
    return hit.value;
  }

  set(key: K, value: V): void {
    const weight = this.weigh(value);
    if (weight > this.maxWeight) return;
    const old = this.map.get(key);
    if (old) {
      this.total -= old.weight;
      this.map.delete(key);
    }
    this.map.set(key, { value, weight });
    this.total += weight;
    for (const [k, v] of this.map) {
      if (this.map.size <= this.maxEntries && this.total <= this.maxWeight) break;
      this.map.delete(k);
      this.total -= v.weight;
    }
  }

  get size(): number {
    return this.map.size;
  }

  get weight(): number {
    return this.total;
  }

  clear(): void {
    this.map.clear();
    this.total = 0;
  }
}

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
