import { createRequire } from 'node:module';
import { crc32c } from '@aws-crypto/crc32c';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isKafkaError } from '../../../lib/errors.js';
import {
  decodeBatch, decodeBatches, encodeBatch, readBatchHeader, withBaseOffset,
  type Compression, type DecodedBatch, type EncodeBatchInput, type RecordHeader,
} from '../../../lib/protocol/record-batch.js';

// kafkajs's own RecordBatch v2 encoder and decoder (CommonJS internals) are the independent oracle.
const require = createRequire(import.meta.url);
type KjsHeaders = Record<string, Buffer | Buffer[]>;
interface KjsRecord { offset: string; timestamp: string; key: Buffer | null; value: Buffer | null; headers: KjsHeaders }
interface KjsBatch {
  firstOffset: string; partitionLeaderEpoch: number; lastOffsetDelta: number; maxTimestamp: string; producerId: string;
  producerEpoch: number; firstSequence: number; inTransaction: boolean; records: KjsRecord[];
}
const { RecordBatch: kjsRecordBatch } = require('kafkajs/src/protocol/recordBatch/v0') as {
  RecordBatch: (args: Record<string, unknown>) => Promise<{ buffer: Buffer }>;
};
const kjsRecord = require('kafkajs/src/protocol/recordBatch/record/v0') as (args: {
  offsetDelta: number; timestampDelta: number; key: Buffer | null; value: Buffer | null; headers: KjsHeaders;
}) => unknown;
const kjsDecodeBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder') as (decoder: unknown) => Promise<KjsBatch>;
const KjsDecoder = require('kafkajs/src/protocol/decoder') as new (buffer: Buffer) => unknown;

interface InputRecord { timestamp: number; key: Buffer | null; value: Buffer | null; headers: RecordHeader[] }
type Input = Required<Omit<EncodeBatchInput, 'records' | 'timestampType' | 'isControl'>>
  & Pick<EncodeBatchInput, 'timestampType'> & { records: InputRecord[] };

const bytes = fc.uint8Array({ maxLength: 40 }).map((u) => Buffer.from(u));
const nullable = fc.option(bytes, { nil: null, freq: 4 });
const headerKey = fc.oneof(fc.string({ maxLength: 6 }), fc.string({ unit: 'grapheme', maxLength: 4 }));
const timestamp = fc.oneof(fc.integer({ min: -1, max: 2 ** 52 }), fc.integer({ min: 1.6e12, max: 1.9e12 }));
const arbInput = (header: fc.Arbitrary<RecordHeader>, maxRecords = 20): fc.Arbitrary<Input> => fc.record({
  baseOffset: fc.integer({ min: 0, max: 2 ** 52 }),
  partitionLeaderEpoch: fc.integer({ min: -1, max: 0x7fffffff }),
  records: fc.array(fc.record({ timestamp, key: nullable, value: nullable, headers: fc.array(header, { maxLength: 4 }) }),
    { minLength: 1, maxLength: maxRecords }),
  compression: fc.constantFrom<Compression>('none', 'gzip'),
  producerId: fc.integer({ min: -1, max: Number.MAX_SAFE_INTEGER }),
  producerEpoch: fc.integer({ min: -1, max: 0x7fff }),
  baseSequence: fc.integer({ min: -1, max: 0x7fffffff }),
  isTransactional: fc.boolean(),
  timestampType: fc.constantFrom<'create' | 'log-append' | undefined>(undefined, 'create', 'log-append'),
});
const anyInput = arbInput(fc.record({ key: headerKey, value: nullable }));

const maxTimestamp = (input: Input): number => Math.max(...input.records.map((r) => r.timestamp));
const expectedRecords = (input: Input): DecodedBatch['records'] => input.records.map((r, i) => ({
  offset: input.baseOffset + i,
  timestamp: input.timestampType === 'log-append' ? maxTimestamp(input) : r.timestamp,
  key: r.key, value: r.value, headers: r.headers,
}));

/** kafkajs's header object, built with the same reduce its record decoder uses. */
const toKjsHeaders = (headers: RecordHeader[]): Record<string, unknown> => headers.reduce<Record<string, unknown>>((obj, { key, value }) => ({
  ...obj,
  [key]: obj[key] === undefined ? value : Array.isArray(obj[key]) ? (obj[key] as unknown[]).concat([value]) : [obj[key], value],
}), {});

/** kafkajs takes headers as an object, so it writes them grouped by key in Object.keys order; returns that order too. */
function kjsHeaderObject(headers: RecordHeader[]): { obj: KjsHeaders; ordered: RecordHeader[] } {
  const obj: KjsHeaders = {};
  for (const { key, value } of headers) {
    const v = value ?? Buffer.alloc(0);
    const cur = Object.hasOwn(obj, key) ? obj[key] : undefined;
    obj[key] = cur === undefined ? v : Array.isArray(cur) ? [...cur, v] : [cur, v];
  }
  const ordered = Object.keys(obj).flatMap((key) => ([] as Buffer[]).concat(obj[key] ?? []).map((value) => ({ key, value })));
  return { obj, ordered };
}

async function kafkajsEncode(input: Input): Promise<Buffer> {
  const first = input.records[0]?.timestamp ?? 0;
  const encoder = await kjsRecordBatch({
    compression: input.compression === 'gzip' ? 1 : 0, firstOffset: input.baseOffset, firstTimestamp: first,
    maxTimestamp: maxTimestamp(input), partitionLeaderEpoch: input.partitionLeaderEpoch, lastOffsetDelta: input.records.length - 1,
    transactional: input.isTransactional, producerId: input.producerId, producerEpoch: input.producerEpoch,
    firstSequence: input.baseSequence,
    records: input.records.map((r, i) => kjsRecord({
      offsetDelta: i, timestampDelta: r.timestamp - first, key: r.key, value: r.value, headers: kjsHeaderObject(r.headers).obj,
    })),
  });
  return encoder.buffer;
}

function thrownBy(fn: () => unknown): unknown {
  try { fn(); } catch (e) { return e; }
  return undefined;
}
function expectCorrupt(fn: () => unknown): void {
  const e = thrownBy(fn);
  expect(isKafkaError(e, 'CORRUPT_MESSAGE'), `expected CORRUPT_MESSAGE, got ${String(e)}`).toBe(true);
}
/** Re-seal a batch after surgery: fix batchLength and CRC so only the structural checks can catch it. */
function reseal(buf: Buffer): Buffer {
  buf.writeInt32BE(buf.length - 12, 8);
  buf.writeUInt32BE(crc32c(buf.subarray(21)), 17);
  return buf;
}

const GOLDEN = Buffer.from('00000000000000050000004a000000030235b75e8c0000000000010000018bcfe568000000018bcfe56805ffffffffffffffff'
  + 'ffffffffffff0000000218000000026b0276020268027816000a02010a68656c6c6f00', 'hex');
const goldenInput: EncodeBatchInput = {
  baseOffset: 5, partitionLeaderEpoch: 3,
  records: [
    { timestamp: 1_700_000_000_000, key: Buffer.from('k'), value: Buffer.from('v'), headers: [{ key: 'h', value: Buffer.from('x') }] },
    { timestamp: 1_700_000_000_005, key: null, value: Buffer.from('hello') },
  ],
};

describe('Method: encodeBatch', () => {
  it('writes the golden bytes kafkajs writes for the same two records', () => {
    expect(encodeBatch(goldenInput).toString('hex')).toBe(GOLDEN.toString('hex'));
  });

  it('writes byte-identical batches to kafkajs for any records, uncompressed and gzip', async () => {
    const nonNullHeaders = arbInput(fc.record({ key: headerKey, value: bytes }));
    await fc.assert(fc.asyncProperty(nonNullHeaders, async (generated) => {
      const input = { ...generated, timestampType: undefined, records: generated.records.map((r) => ({ ...r, headers: kjsHeaderObject(r.headers).ordered })) };
      const theirs = await kafkajsEncode(input);
      expect(encodeBatch(input).equals(theirs)).toBe(true);
      expect(decodeBatch(theirs).records).toEqual(expectedRecords(input));
    }), { numRuns: 150 });
  });

  it('writes batches kafkajs decodes to the same offsets, timestamps, keys, values and headers', async () => {
    await fc.assert(fc.asyncProperty(anyInput, async (input) => {
      const theirs = await kjsDecodeBatch(new KjsDecoder(encodeBatch(input)));
      expect(theirs).toMatchObject({
        firstOffset: String(input.baseOffset), partitionLeaderEpoch: input.partitionLeaderEpoch,
        lastOffsetDelta: input.records.length - 1, maxTimestamp: String(maxTimestamp(input)), producerId: String(input.producerId),
        producerEpoch: input.producerEpoch, firstSequence: input.baseSequence, inTransaction: input.isTransactional,
      });
      expect(theirs.records.map(({ offset, timestamp, key, value, headers }) => ({ offset, timestamp, key, value, headers })))
        .toEqual(expectedRecords(input).map((r) => ({ ...r, offset: String(r.offset), timestamp: String(r.timestamp), headers: toKjsHeaders(r.headers) })));
    }), { numRuns: 150 });
  });

  it('throws INVALID_RECORD for an empty batch and INVALID_TIMESTAMP for timestamps too far apart to delta-encode', () => {
    expect(isKafkaError(thrownBy(() => encodeBatch({ baseOffset: 0, records: [] })), 'INVALID_RECORD')).toBe(true);
    const far = [{ timestamp: Number.MAX_SAFE_INTEGER, key: null, value: null }, { timestamp: -1, key: null, value: null }];
    expect(isKafkaError(thrownBy(() => encodeBatch({ baseOffset: 0, records: far })), 'INVALID_TIMESTAMP')).toBe(true);
  });

  it('defaults to no leader epoch, no producer id/epoch/sequence, create time and no compression, as Kafka does', () => {
    const header = readBatchHeader(encodeBatch({ baseOffset: 0, records: [{ timestamp: 1, key: null, value: null }] }));
    expect(header).toMatchObject({ partitionLeaderEpoch: -1, producerId: -1, producerEpoch: -1, baseSequence: -1,
      timestampType: 'create', compression: 'none', isTransactional: false, isControl: false, recordCount: 1, lastOffset: 0 });
  });
});

describe('Method: decodeBatch', () => {
  it('reads back every batch encodeBatch writes, with absolute offsets and timestamps', () => {
    fc.assert(fc.property(anyInput, (input) => {
      const buf = encodeBatch(input);
      const batch = decodeBatch(buf);
      expect(batch.records).toEqual(expectedRecords(input));
      const { records: _records, ...header } = batch;
      expect(header).toEqual({
        baseOffset: input.baseOffset, lastOffset: input.baseOffset + input.records.length - 1,
        partitionLeaderEpoch: input.partitionLeaderEpoch, maxTimestamp: maxTimestamp(input), baseTimestamp: input.records[0]?.timestamp,
        compression: input.compression, timestampType: input.timestampType ?? 'create', producerId: input.producerId,
        producerEpoch: input.producerEpoch, baseSequence: input.baseSequence, isTransactional: input.isTransactional,
        isControl: false, recordCount: input.records.length, sizeBytes: buf.length,
      });
      expect(readBatchHeader(buf)).toEqual(header);
    }), { numRuns: 300 });
  });

  it('reads back many records, timestamps at the edge of the safe integers, empty keys and values', () => {
    for (const compression of ['none', 'gzip'] as const) {
      const records = Array.from({ length: 5000 }, (_, i) => ({
        timestamp: Number.MAX_SAFE_INTEGER - (i % 7), key: i % 3 ? Buffer.alloc(0) : null, value: Buffer.from(`v${i}`),
        headers: [{ key: 'ключ-🔑', value: i % 2 ? null : Buffer.alloc(0) }],
      }));
      const batch = decodeBatch(encodeBatch({ baseOffset: 2 ** 53 - 1 - 5000, records, compression }));
      expect(batch.records.map((r) => r.timestamp)).toEqual(records.map((r) => r.timestamp));
      expect(batch.records.map((r) => [r.key, r.value, r.headers])).toEqual(records.map((r) => [r.key, r.value, r.headers]));
      expect(batch.lastOffset).toBe(Number.MAX_SAFE_INTEGER - 1);
    }
  });

  it('gives every record the batch maxTimestamp under log-append time, as Kafka does', () => {
    const records = [{ timestamp: 10, key: null, value: null }, { timestamp: 30, key: null, value: null }, { timestamp: 20, key: null, value: null }];
    const batch = decodeBatch(encodeBatch({ baseOffset: 0, records, timestampType: 'log-append' }));
    expect(batch.records.map((r) => r.timestamp)).toEqual([30, 30, 30]);
  });

  it('throws CORRUPT_MESSAGE when any byte the CRC covers is flipped, and decodes it with verifyCrc: false', () => {
    for (const compression of ['none', 'gzip'] as const) {
      const buf = encodeBatch({ ...goldenInput, compression });
      for (let i = 17; i < buf.length; i++) {
        const bad = Buffer.from(buf);
        bad[i] = (bad[i] as number) ^ 0x5a;
        expectCorrupt(() => decodeBatch(bad));
      }
    }
    const badCrc = Buffer.from(GOLDEN);
    badCrc[20] = (badCrc[20] as number) ^ 1;
    expect(decodeBatch(badCrc, { verifyCrc: false }).records).toHaveLength(2);
  });

  it('throws CORRUPT_MESSAGE, never a RangeError, for a batch truncated at every length', () => {
    for (const compression of ['none', 'gzip'] as const) {
      const buf = encodeBatch({ ...goldenInput, compression });
      for (let n = 0; n < buf.length; n++) {
        expectCorrupt(() => decodeBatch(buf.subarray(0, n)));
        expectCorrupt(() => readBatchHeader(buf.subarray(0, n)));
        if (n > 0) expectCorrupt(() => decodeBatches(buf.subarray(0, n)));
      }
    }
  });

  it('throws only KafkaErrors for any mutation of a resealed batch (valid CRC, broken structure)', () => {
    const mutation = fc.array(fc.record({ at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }), { minLength: 1, maxLength: 4 });
    fc.assert(fc.property(arbInput(fc.record({ key: headerKey, value: nullable }), 5), mutation, fc.nat(8), (input, flips, cut) => {
      const buf = encodeBatch(input);
      const bad = Buffer.from(buf.subarray(0, Math.max(61, buf.length - cut)));
      for (const { at, xor } of flips) {
        const i = 21 + (at % (bad.length - 21));
        bad[i] = (bad[i] as number) ^ xor;
      }
      const e = thrownBy(() => decodeBatch(reseal(bad)));
      if (e !== undefined) expect(isKafkaError(e, 'CORRUPT_MESSAGE') || isKafkaError(e, 'INVALID_RECORD'), String(e)).toBe(true);
    }), { numRuns: 1000 });
  });

  it('throws CORRUPT_MESSAGE when the record count disagrees with the records present', () => {
    const more = reseal(Buffer.from(GOLDEN).fill(0, 57, 61).fill(3, 60, 61));
    expect(() => decodeBatch(more)).toThrow(/declares 3 records, the batch holds 2/);
    const fewer = reseal(Buffer.from(GOLDEN).fill(0, 57, 61).fill(1, 60, 61));
    expect(() => decodeBatch(fewer)).toThrow(/bytes after the last of 1 records/);
  });

  it('throws CORRUPT_MESSAGE for a wrong magic, an unknown compression id or bytes after the batch', () => {
    const magic1 = Buffer.from(GOLDEN).fill(1, 16, 17);
    expect(() => decodeBatch(magic1)).toThrow(/magic is 1/);
    expectCorrupt(() => decodeBatch(magic1));
    expectCorrupt(() => decodeBatch(reseal(Buffer.from(GOLDEN).fill(7, 22, 23))));
    expectCorrupt(() => decodeBatch(Buffer.concat([GOLDEN, Buffer.alloc(1)])));
  });

  it('throws INVALID_RECORD for snappy, lz4 and zstd batches, whose headers still read', () => {
    for (const [id, name] of [[2, 'snappy'], [3, 'lz4'], [4, 'zstd']] as const) {
      const buf = reseal(Buffer.from(GOLDEN).fill(id, 22, 23));
      expect(readBatchHeader(buf).compression).toBe(name);
      const e = thrownBy(() => decodeBatch(buf));
      expect(isKafkaError(e, 'INVALID_RECORD') && (e as Error).message).toBe(`compression ${name} is not supported`);
    }
  });
});

describe('Method: decodeBatches', () => {
  it('reads back-to-back batches in order, and nothing from an empty buffer', () => {
    fc.assert(fc.property(fc.array(anyInput, { maxLength: 5 }), (inputs) => {
      const batches = decodeBatches(Buffer.concat(inputs.map(encodeBatch)));
      expect(batches.map((b) => b.records)).toEqual(inputs.map(expectedRecords));
    }), { numRuns: 50 });
  });
});

describe('Method: withBaseOffset', () => {
  it('moves the offsets and leader epoch while the CRC stays valid and the input stays untouched', () => {
    fc.assert(fc.property(anyInput, fc.integer({ min: 0, max: 2 ** 52 }), fc.integer({ min: -1, max: 0x7fffffff }), (input, base, epoch) => {
      const buf = encodeBatch(input);
      const before = Buffer.from(buf);
      const moved = withBaseOffset(buf, base, epoch);
      expect(buf.equals(before)).toBe(true);
      expect(moved.subarray(17).equals(buf.subarray(17))).toBe(true);
      const batch = decodeBatch(moved);
      expect(batch).toMatchObject({ baseOffset: base, lastOffset: base + input.records.length - 1, partitionLeaderEpoch: epoch });
      expect(batch.records.map((r) => r.offset)).toEqual(input.records.map((_, i) => base + i));
    }), { numRuns: 100 });
  });

  it('throws CORRUPT_MESSAGE for a truncated batch', () => {
    expectCorrupt(() => withBaseOffset(GOLDEN.subarray(0, 40), 1, 1));
  });
});
