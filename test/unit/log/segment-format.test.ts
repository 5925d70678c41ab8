import { createHash } from 'node:crypto';
import { crc32c } from '@aws-crypto/crc32c';
import { describe, expect, it } from 'vitest';
import { rng } from '../../../chaos/recorder.js';
import { isKafkaError } from '../../../lib/errors.js';
import {
  FOOTER_BYTES, INDEX_ENTRY_BYTES, InvalidSegmentInput, SEGMENT_FORMAT_VERSION, SegmentCorrupt, SegmentVersionUnsupported,
  batchesOf, decodeFooter, decodeIndex, encodeSegment, entryFor, entryForTimestamp, indexRange, readPlan, verifyBatchRegion,
  type EncodeSegmentOptions, type ReadRange, type SegmentBatchInput, type SegmentIndex,
} from '../../../lib/log/segment-format.js';
import { decodeBatch, encodeBatch, withBaseOffset } from '../../../lib/protocol/record-batch.js';

type Rand = () => number;
const between = (rand: Rand, min: number, max: number): number => min + Math.floor(rand() * (max - min + 1));

/** A log and the `data/` objects its external batches live in (bytes there carry base offset 0). */
interface Log { batches: SegmentBatchInput[]; objects: Map<string, Buffer>; timestamps: number[][] }

interface LogShape {
  base?: number; batches?: number; maxRecords?: number;
  /** Chance that a batch is external. */
  external?: number;
  /** Chance of a gap before a batch (compacted logs). */
  gap?: number;
  /** Timestamp spread: small values give many equal timestamps. */
  spread?: number;
}

/** A random log of real RecordBatch v2 batches, timestamps not monotonic, some batches external. */
function makeLog(rand: Rand, shape: LogShape = {}): Log {
  const objects = new Map<string, Buffer>();
  const batches: SegmentBatchInput[] = [];
  const timestamps: number[][] = [];
  const count = shape.batches ?? between(rand, 1, 60);
  const spread = shape.spread ?? 10_000;
  let next = shape.base ?? between(rand, 0, 1_000_000);
  let dataKey: string | undefined;
  for (let i = 0; i < count; i++) {
    if (rand() < (shape.gap ?? 0)) next += between(rand, 1, 5);
    const ts = Array.from({ length: between(rand, 1, shape.maxRecords ?? 4) }, () => 1_700_000_000_000 + between(rand, -spread, spread) + i * Math.floor(spread / 20));
    const records = ts.map((timestamp, j) => ({ timestamp, key: rand() < 0.2 ? null : Buffer.from(`k${j}`), value: Buffer.from(`v${i}.${j}`.repeat(between(rand, 1, 8))) }));
    const leaderEpoch = between(rand, 0, 3);
    const external = rand() < (shape.external ?? 0.15);
    const bytes = encodeBatch({ baseOffset: external ? 0 : next, partitionLeaderEpoch: external ? -1 : leaderEpoch, records, compression: rand() < 0.2 ? 'gzip' : 'none' });
    const common = { baseOffset: next, lastOffset: next + records.length - 1, leaderEpoch, maxTimestamp: Math.max(...ts), recordCount: records.length, sizeBytes: bytes.length };
    if (external) {
      // Several batches of one large produce request share a data object, back to back.
      if (dataKey === undefined || rand() < 0.4) dataKey = `data/topic-id/0/${objects.size}.batch`;
      const prev = objects.get(dataKey) ?? Buffer.alloc(0);
      objects.set(dataKey, Buffer.concat([prev, bytes]));
      batches.push({ ...common, external: { key: dataKey, position: prev.length, length: bytes.length } });
    } else {
      batches.push({ ...common, bytes });
    }
    timestamps.push(ts);
    next += records.length;
  }
  return { batches, objects, timestamps };
}

/** Reads a segment the way a reader does: footer GET, index GET, ranged batch GETs. */
function openSegment(body: Buffer): SegmentIndex {
  const footer = decodeFooter(body.subarray(body.length - FOOTER_BYTES), body.length);
  const { position, length } = indexRange(footer);
  return decodeIndex(body.subarray(position, position + length), footer);
}
function get(body: Buffer, objects: Map<string, Buffer>, r: ReadRange): Buffer {
  const source = r.key === undefined ? body : objects.get(r.key) as Buffer;
  return source.subarray(r.position, r.position + r.length);
}

const linearFirst = <T>(xs: readonly T[], p: (x: T) => boolean): number => xs.findIndex(p);

function expectCorrupt(f: () => unknown, what: string): void {
  let error: unknown;
  try {
    f();
  } catch (e) {
    error = e;
  }
  if (!(error instanceof SegmentCorrupt)) throw new Error(`${what}: expected SegmentCorrupt, got ${error === undefined ? 'no error' : String(error)}`);
}

describe('Function: encodeSegment / decodeFooter / decodeIndex', () => {
  it('returns every batch and record in order, byte-identical, through footer, index and ranged reads', () => {
    for (let seed = 1; seed <= 30; seed++) {
      const rand = rng(seed);
      const log = makeLog(rand, { batches: between(rand, 1, 120) });
      const { body, footer, index: written } = encodeSegment(log.batches);

      const index = openSegment(body);
      expect(index.footer).toEqual(footer);
      expect(index.entries).toEqual(written);
      expect(footer).toMatchObject({
        version: SEGMENT_FORMAT_VERSION, baseOffset: log.batches[0]?.baseOffset, endOffset: (log.batches.at(-1)?.lastOffset ?? 0) + 1,
        batchCount: log.batches.length, recordCount: log.batches.reduce((n, b) => n + b.recordCount, 0),
        externalCount: log.batches.filter((b) => b.external).length,
        minTimestamp: Math.min(...log.batches.map((b) => b.maxTimestamp)), maxTimestamp: Math.max(...log.batches.map((b) => b.maxTimestamp)),
      });
      verifyBatchRegion(body.subarray(0, footer.batchRegionBytes), footer);

      const plan = readPlan(index, footer.baseOffset, Number.MAX_SAFE_INTEGER);
      expect(plan.nextOffset).toBe(footer.endOffset);
      const read = plan.ranges.flatMap((r) => batchesOf(index, r, get(body, log.objects, r)));
      expect(read).toHaveLength(log.batches.length);
      read.forEach((bytes, i) => {
        const b = log.batches[i] as SegmentBatchInput;
        const expected = b.bytes !== undefined
          ? Buffer.from(b.bytes)
          : withBaseOffset(get(body, log.objects, { key: b.external?.key, position: b.external?.position ?? 0, length: b.sizeBytes, first: 0, count: 1 }), b.baseOffset, b.leaderEpoch);
        expect(bytes.equals(expected)).toBe(true);
        const decoded = decodeBatch(bytes);
        expect(decoded.baseOffset).toBe(b.baseOffset);
        expect(decoded.partitionLeaderEpoch).toBe(b.leaderEpoch);
        expect(decoded.records.map((r) => r.timestamp)).toEqual(log.timestamps[i]);
        expect(decoded.records.map((r) => r.offset)).toEqual(Array.from({ length: b.recordCount }, (_, j) => b.baseOffset + j));
      });
    }
  });

  it('writes byte-identical objects for the same batches, so two rollers of one key write the same bytes', () => {
    for (let seed = 1; seed <= 10; seed++) {
      const a = encodeSegment(makeLog(rng(seed)).batches).body;
      const b = encodeSegment(makeLog(rng(seed)).batches).body;
      expect(a.equals(b)).toBe(true);
    }
  });

  it('keeps format version 1 byte for byte (a layout change without a version bump fails here)', () => {
    const batch = encodeBatch({ baseOffset: 42, partitionLeaderEpoch: 3, records: [{ timestamp: 1_700_000_000_000, key: Buffer.from('k'), value: Buffer.from('v') }] });
    const external = encodeBatch({ baseOffset: 0, records: [{ timestamp: 1_600_000_000_000, key: null, value: Buffer.from('big') }, { timestamp: 1_800_000_000_000, key: null, value: null }] });
    const { body } = encodeSegment([
      { baseOffset: 42, lastOffset: 42, leaderEpoch: 3, maxTimestamp: 1_700_000_000_000, recordCount: 1, sizeBytes: batch.length, bytes: batch },
      { baseOffset: 43, lastOffset: 44, leaderEpoch: 4, maxTimestamp: 1_800_000_000_000, recordCount: 2, sizeBytes: external.length, external: { key: 'data/t/0/x.batch', position: 7, length: external.length } },
    ]);
    const tail = body.subarray(body.length - FOOTER_BYTES);
    expect(tail.subarray(132, 140).toString('latin1')).toBe('TRIBSEG\x01');
    expect(body.length).toBe(batch.length + 2 * INDEX_ENTRY_BYTES + 2 * 12 + 2 + 'data/t/0/x.batch'.length + FOOTER_BYTES);
    // The fields docs/segment-format.md places, read at their documented positions.
    const ix = batch.length;
    expect(body.subarray(ix, ix + INDEX_ENTRY_BYTES).toString('hex')).toBe([
      '000000000000002a', '00000000', '00000003', (1_700_000_000_000).toString(16).padStart(16, '0'),
      '0000000000000000', batch.length.toString(16).padStart(8, '0'), '00000001', 'ffffffff'].join(''));
    expect(body.subarray(ix + INDEX_ENTRY_BYTES, ix + 2 * INDEX_ENTRY_BYTES).toString('hex')).toBe([
      '000000000000002b', '00000001', '00000004', (1_800_000_000_000).toString(16).padStart(16, '0'),
      '0000000000000007', external.length.toString(16).padStart(8, '0'), '00000002', '00000000'].join(''));
    const tx = ix + 2 * INDEX_ENTRY_BYTES;
    expect(body.subarray(tx, tx + 24).toString('hex')).toBe(
      `${(1_700_000_000_000).toString(16).padStart(16, '0')}00000000${(1_800_000_000_000).toString(16).padStart(16, '0')}00000001`);
    expect(body.subarray(tx + 24, tx + 24 + 18).toString('latin1')).toBe('\x00\x10data/t/0/x.batch');
    expect(tail.readBigInt64BE(0)).toBe(42n);
    expect(tail.readBigInt64BE(8)).toBe(45n);
    expect(tail.readBigInt64BE(16)).toBe(3n);
    expect(tail.readUInt32BE(96)).toBe(2);
    expect(tail.readUInt32BE(128)).toBe(FOOTER_BYTES);
    expect(tail.readUInt32BE(140)).toBe(crc32c(tail.subarray(0, 140)));
    expect(createHash('sha256').update(body).digest('hex')).toBe(GOLDEN_SHA256);
  });
});

const GOLDEN_SHA256 = 'd1ba37ce3a377a296cb9cbf3767e79a5e0970b75829b577ac66357e757101492';

describe('Function: corruption detection', () => {
  const log = makeLog(rng(7), { batches: 40, external: 0.3 });
  const { body, footer } = encodeSegment(log.batches);

  it('detects every footer byte flipped, and maps to CORRUPT_MESSAGE', () => {
    for (let i = body.length - FOOTER_BYTES; i < body.length; i++) {
      for (const mask of [0x01, 0x80, 0xff]) {
        const bad = Buffer.from(body);
        bad[i] = (bad[i] as number) ^ mask;
        expectCorrupt(() => decodeFooter(bad.subarray(bad.length - FOOTER_BYTES)), `footer byte ${i - (body.length - FOOTER_BYTES)} ^ ${mask}`);
      }
    }
    let error: unknown;
    try {
      decodeFooter(Buffer.alloc(FOOTER_BYTES));
    } catch (e) {
      error = e;
    }
    expect(isKafkaError(error, 'CORRUPT_MESSAGE')).toBe(true);
  });

  it('detects every byte flipped in the index, time index and keys sections', () => {
    const { position, length } = indexRange(footer);
    expect(footer.keysBytes).toBeGreaterThan(0);
    for (let i = 0; i < length; i++) {
      const sections = Buffer.from(body.subarray(position, position + length));
      sections[i] = (sections[i] as number) ^ (1 << (i % 8));
      expectCorrupt(() => decodeIndex(sections, footer), `index byte ${i}`);
    }
  });

  it('detects a truncated or extended object, a short tail and a wrong index range', () => {
    expectCorrupt(() => decodeFooter(body.subarray(body.length - FOOTER_BYTES + 1)), 'short tail');
    expectCorrupt(() => decodeFooter(body, body.length + 1), 'size mismatch');
    expectCorrupt(() => decodeFooter(body.subarray(0, body.length - 1)), 'truncated object');
    const { position, length } = indexRange(footer);
    expectCorrupt(() => decodeIndex(body.subarray(position, position + length - 1), footer), 'short index');
  });

  it('refuses a verified footer of an unknown version with SegmentVersionUnsupported, itself a SegmentCorrupt', () => {
    const tail = Buffer.from(body.subarray(body.length - FOOTER_BYTES));
    tail[139] = 2;
    tail.writeUInt32BE(crc32c(tail.subarray(0, 140)), 140);
    expect(() => decodeFooter(tail)).toThrow(SegmentVersionUnsupported);
    expect(() => decodeFooter(tail)).toThrow(SegmentCorrupt);
    // A longer future footer verifies over its own length when the tail holds it.
    const longer = Buffer.concat([Buffer.alloc(16, 9), tail]);
    longer.writeUInt32BE(FOOTER_BYTES + 16, longer.length - 16);
    longer.writeUInt32BE(crc32c(longer.subarray(0, longer.length - 4)), longer.length - 4);
    expect(() => decodeFooter(longer)).toThrow(SegmentVersionUnsupported);
  });

  it('detects a flipped batch-region byte by the region CRC and by the batch CRC when decoded', () => {
    const index = openSegment(body);
    const inObject = index.entries.findIndex((e) => e.externalKey === undefined);
    const e = index.entries[inObject];
    if (e === undefined) throw new Error('no in-object batch');
    const bad = Buffer.from(body);
    bad[e.position + e.length - 1] = (bad[e.position + e.length - 1] as number) ^ 0x10;
    expectCorrupt(() => verifyBatchRegion(bad.subarray(0, footer.batchRegionBytes), footer), 'region');
    const [batch] = batchesOf(index, { position: e.position, length: e.length, first: inObject, count: 1 }, bad.subarray(e.position, e.position + e.length));
    expect(() => decodeBatch(batch as Buffer)).toThrow(/CRC mismatch/);
  });

  it('detects a range whose bytes are not the batches the index names (a replaced object)', () => {
    const index = openSegment(body);
    const plan = readPlan(index, footer.baseOffset, Number.MAX_SAFE_INTEGER);
    const inObject = plan.ranges.find((r) => r.key === undefined && r.count > 1) as ReadRange;
    const shifted = { ...inObject, first: inObject.first + 1, count: inObject.count - 1, length: inObject.length - (index.entries[inObject.first]?.length ?? 0) };
    expectCorrupt(() => batchesOf(index, shifted, get(body, log.objects, inObject).subarray(0, shifted.length)), 'shifted range');
  });
});

describe('Function: entryFor', () => {
  it('finds the batch holding every offset, the next batch in a gap or below the base, -1 past the end', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const rand = rng(seed);
      const gaps = seed % 2 === 0;
      const log = makeLog(rand, { gap: gaps ? 0.3 : 0 });
      const first = log.batches[0] as SegmentBatchInput;
      const opts: EncodeSegmentOptions = gaps ? { allowGaps: true, baseOffset: Math.max(0, first.baseOffset - 3) } : {};
      const index = openSegment(encodeSegment(log.batches, opts).body);
      for (let offset = first.baseOffset - 3; offset <= index.footer.endOffset + 3; offset++) {
        expect(entryFor(index, offset)).toBe(linearFirst(index.entries, (e) => e.lastOffset >= offset));
      }
    }
  });
});

describe('Function: entryForTimestamp', () => {
  it('equals a linear scan for the first batch with maxTimestamp >= target, on many random logs', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const rand = rng(seed);
      const log = makeLog(rand, { spread: [3, 50, 10_000][seed % 3], external: 0.1 });
      const index = openSegment(encodeSegment(log.batches).body);
      expect(index.timeIndex.length).toBeLessThanOrEqual(index.entries.length);
      const stamps = log.batches.map((b) => b.maxTimestamp);
      const targets = [Math.min(...stamps) - 1, Math.max(...stamps) + 1, ...stamps, ...stamps.map((s) => s + 1),
        ...Array.from({ length: 20 }, () => between(rand, Math.min(...stamps) - 5, Math.max(...stamps) + 5))];
      for (const target of targets) {
        expect(entryForTimestamp(index, target)).toBe(linearFirst(index.entries, (e) => e.maxTimestamp >= target));
      }
    }
  });
});

describe('Function: readPlan', () => {
  const sized = (n: number): Buffer => encodeBatch({ baseOffset: 0, records: [{ timestamp: 1, key: null, value: Buffer.alloc(n) }] });

  it('coalesces consecutive in-object batches and back-to-back batches of one external object into one GET each', () => {
    const batches: SegmentBatchInput[] = [];
    const data = new Map<string, number>();
    // in, in, A, A (adjacent), in, B, A (not adjacent to the earlier A), A (adjacent to it)
    for (const where of ['in', 'in', 'A', 'A', 'in', 'B', 'A+', 'A']) {
      const offset = batches.length;
      const bytes = withBaseOffset(sized(100), offset, 0);
      const common = { baseOffset: offset, lastOffset: offset, leaderEpoch: 0, maxTimestamp: 1, recordCount: 1, sizeBytes: bytes.length };
      if (where === 'in') {
        batches.push({ ...common, bytes });
      } else {
        const key = where[0] as string;
        const position = (data.get(key) ?? 0) + (where.endsWith('+') ? 1000 : 0);
        data.set(key, position + bytes.length);
        batches.push({ ...common, external: { key, position, length: bytes.length } });
      }
    }
    const index = openSegment(encodeSegment(batches).body);
    const size = batches[0]?.sizeBytes ?? 0;
    const plan = readPlan(index, 0, Number.MAX_SAFE_INTEGER);
    expect(plan.ranges.map((r) => [r.key ?? 'in', r.first, r.count, r.position, r.length])).toEqual([
      ['in', 0, 2, 0, 2 * size], ['A', 2, 2, 0, 2 * size], ['in', 4, 1, 2 * size, size], ['B', 5, 1, 0, size],
      ['A', 6, 2, 2 * size + 1000, 2 * size],
    ]);
    expect(plan).toMatchObject({ bytes: 8 * size, nextOffset: 8 });
  });

  it('stays within maxBytes, returns at least one batch, and stops only where the next batch would not fit', () => {
    for (let seed = 1; seed <= 40; seed++) {
      const rand = rng(seed);
      const log = makeLog(rand, { batches: 50, external: 0.3 });
      const index = openSegment(encodeSegment(log.batches).body);
      for (let k = 0; k < 30; k++) {
        const from = between(rand, index.footer.baseOffset, index.footer.endOffset - 1);
        const maxBytes = between(rand, 0, 3000);
        const plan = readPlan(index, from, maxBytes);
        const start = entryFor(index, from);
        const planned = plan.ranges.flatMap((r) => Array.from({ length: r.count }, (_, j) => r.first + j));
        expect(planned[0]).toBe(start);
        planned.forEach((p, j) => expect(p).toBe(start + j));
        const total = planned.reduce((n, p) => n + (index.entries[p]?.length ?? 0), 0);
        expect(plan.bytes).toBe(total);
        expect(plan.ranges.reduce((n, r) => n + r.length, 0)).toBe(total);
        if (planned.length > 1) expect(total).toBeLessThanOrEqual(maxBytes);
        const after = index.entries[start + planned.length];
        if (after !== undefined) expect(total + after.length).toBeGreaterThan(maxBytes);
        // Consecutive ranges never could have been one.
        plan.ranges.slice(1).forEach((r, j) => {
          const prev = plan.ranges[j] as ReadRange;
          expect(prev.key === r.key && prev.position + prev.length === r.position).toBe(false);
        });
      }
      expect(readPlan(index, index.footer.endOffset, 1000).ranges).toEqual([]);
    }
  });
});

describe('Function: encodeSegment input checks', () => {
  const log = makeLog(rng(3), { batches: 5, external: 0 });
  const b = log.batches as [SegmentBatchInput, SegmentBatchInput, SegmentBatchInput, SegmentBatchInput, SegmentBatchInput];
  const shift = (x: SegmentBatchInput, by: number): SegmentBatchInput => ({ ...x, baseOffset: x.baseOffset + by, lastOffset: x.lastOffset + by, bytes: withBaseOffset(Buffer.from(x.bytes as Uint8Array), x.baseOffset + by, x.leaderEpoch) });

  it('rejects empty input, gaps, overlaps and disorder', () => {
    expect(() => encodeSegment([])).toThrow(InvalidSegmentInput);
    expect(() => encodeSegment([b[0], b[2]])).toThrow(/gap/);
    expect(() => encodeSegment([b[0], shift(b[1], -1)])).toThrow(/overlapping/);
    expect(() => encodeSegment([b[1], b[0]])).toThrow(/overlapping or before/);
    expect(() => encodeSegment([b[0], b[2]], { allowGaps: true })).not.toThrow();
    expect(() => encodeSegment([b[0], shift(b[1], -1)], { allowGaps: true })).toThrow(/overlapping/);
    expect(() => encodeSegment([b[0]], { baseOffset: b[0].baseOffset + 1 })).toThrow(InvalidSegmentInput);
    expect(() => encodeSegment([b[0]], { endOffset: b[0].lastOffset })).toThrow(InvalidSegmentInput);
  });

  it('rejects batches whose bytes or pointer disagree with their metadata', () => {
    expect(() => encodeSegment([{ ...b[0], bytes: undefined }])).toThrow(/exactly one/);
    expect(() => encodeSegment([{ ...b[0], external: { key: 'k', position: 0, length: b[0].sizeBytes } }])).toThrow(/exactly one/);
    expect(() => encodeSegment([{ ...b[0], sizeBytes: b[0].sizeBytes + 1 }])).toThrow(/sizeBytes/);
    expect(() => encodeSegment([{ ...b[0], baseOffset: b[0].baseOffset + 1, lastOffset: b[0].lastOffset + 1 }])).toThrow(/carry offsets/);
    expect(() => encodeSegment([{ ...b[0], bytes: undefined, external: { key: 'k', position: 0, length: 1 } }])).toThrow(/external length/);
    expect(() => encodeSegment([{ ...b[0], bytes: undefined, external: { key: '', position: 0, length: b[0].sizeBytes } }])).toThrow(/external key/);
  });

  it('writes the wider range a compacted rewrite covers, and reads it back', () => {
    const index = openSegment(encodeSegment([b[1], b[3]], { allowGaps: true, baseOffset: b[0].baseOffset, endOffset: b[4].lastOffset + 1 }).body);
    expect(index.footer).toMatchObject({ baseOffset: b[0].baseOffset, endOffset: b[4].lastOffset + 1, batchCount: 2 });
    expect(entryFor(index, b[0].baseOffset)).toBe(0);
    expect(entryFor(index, b[2].baseOffset)).toBe(1);
    expect(entryFor(index, b[4].baseOffset)).toBe(-1);
  });
});
