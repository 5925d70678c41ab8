/** How batches map to replica table items: runs of small inline batches packed into one item, every reader's view unchanged. */
import { describe, expect, it } from 'vitest';
import type { BatchRecord } from '../../../lib/storage/model.js';
import { PACK_MAX_BYTES, batchBaseIn, batchesOf, toItems } from '../../../lib/storage/replica/items.js';

const inline = (base: number, count: number, size = 100, extra: Partial<BatchRecord> = {}): BatchRecord => ({
  baseOffset: base, lastOffset: base + count - 1, leaderEpoch: 3, maxTimestamp: 1000 + base, recordCount: count, sizeBytes: size,
  data: Buffer.alloc(size, base % 251), expiresAt: 2_000_000_000 + base, ...extra,
});

describe('Function: toItems', () => {
  it('at log format 1 (pack false) stores every batch alone, as a version before packing wrote and reads', () => {
    const batches = [inline(0, 1), inline(1, 1), inline(2, 3)];
    expect(toItems(batches, false)).toEqual(batches);
  });

  it('stores a single batch exactly as it is, with no parts', () => {
    const b = inline(0, 2);
    expect(toItems([b], true)).toEqual([b]);
  });

  it('packs consecutive inline batches into one item keyed by the last offset, and batchesOf gives back every batch unchanged', () => {
    const batches = [
      inline(0, 1),
      inline(1, 3, 50, { producerId: 7, producerEpoch: 2, baseSequence: 10, transactional: true }),
      inline(4, 1, 61, { producerId: 7, producerEpoch: 2, baseSequence: -1, transactional: true, control: 'commit' }),
      inline(5, 1, 62, { producerId: 8, producerEpoch: 0, baseSequence: -1, transactional: true, control: 'abort' }),
    ];
    const items = toItems(batches, true);
    expect(items).toHaveLength(1);
    const [item] = items;
    expect(item).toMatchObject({ baseOffset: 0, lastOffset: 5, recordCount: 6, sizeBytes: 273, maxTimestamp: 1005, expiresAt: 2_000_000_005 });
    expect(item?.parts).toHaveLength(4);
    // (as DynamoDB gives it back: key attributes, and the data as a Uint8Array)
    const read = batchesOf({ tp: 'x#0', off: 5, ...item, data: new Uint8Array(item!.data as Buffer) });
    expect(read.map((b) => ({ ...b, data: Buffer.from(b.data as Uint8Array) }))).toEqual(batches.map((b) => ({ ...b, expiresAt: 2_000_000_005 })));
  });

  it('keeps a batch whose bytes are in S3, or that carries no expiry, in an item of its own, and packs the runs around it', () => {
    const s3 = { ...inline(2, 1), data: undefined, s3: { key: 'data/x', position: 0, length: 100 } } as BatchRecord;
    const legacy = { ...inline(3, 1), expiresAt: undefined } as BatchRecord;
    const items = toItems([inline(0, 1), inline(1, 1), s3, legacy, inline(4, 1), inline(5, 1)], true);
    expect(items.map((i) => [i.baseOffset, i.lastOffset, i.parts?.length ?? 1])).toEqual([[0, 1, 2], [2, 2, 1], [3, 3, 1], [4, 5, 2]]);
  });

  it('packs batches whose bytes follow each other in one S3 object behind one pointer, and gives each back its own range', () => {
    const at = (base: number, key: string, position: number, length: number): BatchRecord =>
      ({ ...inline(base, 1, length), data: undefined, s3: { key, position, length } }) as BatchRecord;
    const batches = [at(0, 'data/r1', 0, 100), at(1, 'data/r1', 100, 70), at(2, 'data/r1', 170, 30), at(3, 'data/r2', 0, 10), at(4, 'data/r2', 50, 10)];
    const items = toItems(batches, true);
    expect(items.map((i) => [i.lastOffset, i.parts?.length ?? 1, i.s3])).toEqual([
      [2, 3, { key: 'data/r1', position: 0, length: 200 }], [3, 1, { key: 'data/r2', position: 0, length: 10 }], [4, 1, { key: 'data/r2', position: 50, length: 10 }],
    ]);
    expect(items[0]?.data).toBeUndefined();
    expect(batchesOf({ ...items[0] })).toEqual(batches.slice(0, 3).map((b) => ({ ...b, expiresAt: 2_000_000_002 })));
  });

  it(`starts a new item once the run would pass ${PACK_MAX_BYTES} bytes`, () => {
    const size = 20_000;
    const items = toItems(Array.from({ length: 7 }, (_, i) => inline(i, 1, size)), true);
    expect(items.map((i) => i.parts?.length ?? 1)).toEqual([3, 3, 1]);
    expect(items.every((i) => i.sizeBytes <= PACK_MAX_BYTES)).toBe(true);
  });
});

describe('Function: batchBaseIn', () => {
  it('finds the base offset of the batch holding an offset inside a packed item, and nothing for an offset it does not hold', () => {
    const [item] = toItems([inline(10, 1), inline(11, 4), inline(15, 1)], true);
    expect(batchBaseIn(item!, 13)).toBe(11);
    expect(batchBaseIn(item!, 15)).toBe(15);
    expect(batchBaseIn(item!, 16)).toBeUndefined();
    expect(batchBaseIn({ baseOffset: 4 }, 6)).toBe(4);
  });
});
