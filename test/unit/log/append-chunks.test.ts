/**
 * Cutting a lane's batches into append transactions: within DynamoDB's 100 items and 4 MB for
 * the worst legal loads, in order, and never splitting a caller's batches that fit one transaction.
 */
import { describe, expect, it } from 'vitest';
import { BATCH_ITEM_OVERHEAD, CHUNK_MAX_BYTES, packChunks, PRODUCER_ITEM_BYTES, TRANSACTION_MAX_BYTES, TRANSACTION_MAX_ITEMS, type ChunkCost } from '../../../lib/log/append-chunks.js';

/** The items and estimated bytes of a chunk, as packChunks counts them, worked out again on their own. */
function chunkLoad<T>(chunk: readonly T[], cost: (t: T) => ChunkCost): { items: number; bytes: number } {
  const producers = new Set(chunk.flatMap((b) => { const p = cost(b).producerId; return p === undefined ? [] : [p]; }));
  const bytes = chunk.reduce((sum, b) => sum + cost(b).inlineBytes + BATCH_ITEM_OVERHEAD, 0) + producers.size * PRODUCER_ITEM_BYTES;
  return { items: 1 + chunk.length + producers.size, bytes };
}

interface B { readonly id: number; readonly inlineBytes: number; readonly producerId?: number }
const cost = (b: B): ChunkCost => b;
let next = 0;
const batches = (n: number, inlineBytes: number, producerId?: number): B[] =>
  Array.from({ length: n }, () => ({ id: next++, inlineBytes, ...(producerId === undefined ? {} : { producerId }) }));
/** The largest inline batch a topic allows (`inline.max.bytes` ≤ 350,000). */
const MAX_INLINE = 350_000;
/** The head item at DynamoDB's item limit: what packChunks leaves room for. */
const HEAD = 400 * 1024;

function expectWithinLimits(chunks: B[][], units: B[][]): void {
  expect(chunks.flat().map((b) => b.id)).toEqual(units.flat().map((b) => b.id));
  for (const c of chunks) {
    expect(c.length).toBeGreaterThan(0);
    const load = chunkLoad(c, cost);
    expect(load.items).toBeLessThanOrEqual(TRANSACTION_MAX_ITEMS);
    expect(load.bytes + HEAD).toBeLessThanOrEqual(TRANSACTION_MAX_BYTES);
  }
}

describe('Function: packChunks', () => {
  it('where many idempotent producers share a lane, counts each producer state item: at most 49 batches with their 49 states and the head', () => {
    const units = Array.from({ length: 200 }, (_, p) => batches(1, 100, p));
    const chunks = packChunks(units, cost);
    expectWithinLimits(chunks, units);
    expect(chunks[0]).toHaveLength(49);
    expect(chunkLoad(chunks[0]!, cost).items).toBe(99);
  });

  it('where a small max.message.bytes splits one idempotent request into 300 batches, takes 98 a transaction (head and one state)', () => {
    const units = [batches(300, 60, 1)];
    const chunks = packChunks(units, cost);
    expectWithinLimits(chunks, units);
    expect(chunks.map((c) => c.length)).toEqual([98, 98, 98, 6]);
  });

  it('where batches are as large as inline.max.bytes allows, keeps each transaction under 4 MB with a head at the item limit', () => {
    const units = Array.from({ length: 30 }, (_, p) => batches(1, MAX_INLINE, p));
    const chunks = packChunks(units, cost);
    expectWithinLimits(chunks, units);
    expect(chunks[0]!.length).toBe(Math.floor(CHUNK_MAX_BYTES / (MAX_INLINE + 512 + 1024)));
  });

  it('counts batches kept in S3 as pointers, and mixes them with inline ones within both limits', () => {
    const units = [batches(150, 0), batches(20, MAX_INLINE, 3), batches(150, 0, 4)];
    expectWithinLimits(packChunks(units, cost), units);
  });

  it('keeps a caller\'s batches that fit one transaction together, so an idempotent request lands as one run', () => {
    const a = batches(60, 100, 1);
    const b = batches(60, 100, 2);
    const chunks = packChunks([a, b], cost);
    expect(chunks).toEqual([a, b]);
  });
});
