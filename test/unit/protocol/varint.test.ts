import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isKafkaError } from '../../../lib/errors.js';
import { ByteReader, ByteWriter, sizeOfVarint, sizeOfVarlong } from '../../../lib/protocol/varint.js';

const require = createRequire(import.meta.url);
const KafkaJsEncoder = require('kafkajs/src/protocol/encoder') as new () => {
  writeVarInt(v: number): { buffer: Buffer };
  writeVarLong(v: bigint): { buffer: Buffer };
};

const INT32_MIN = -0x8000_0000;
const INT32_MAX = 0x7fff_ffff;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

const varint = (v: number): string => new ByteWriter().varint(v).finish().toString('hex');
const varlong = (v: number | bigint): string => new ByteWriter().varlong(v).finish().toString('hex');
const reader = (hex: string): ByteReader => new ByteReader(Buffer.from(hex, 'hex'));

function expectCorrupt(fn: () => unknown): void {
  let thrown: unknown;
  try { fn(); } catch (e) { thrown = e; }
  expect(isKafkaError(thrown, 'CORRUPT_MESSAGE'), `expected CORRUPT_MESSAGE, got ${String(thrown)}`).toBe(true);
}

const int32 = fc.oneof(fc.integer({ min: INT32_MIN, max: INT32_MAX }), fc.constantFrom(INT32_MIN, INT32_MAX, -1, 0, 1));
const int64 = fc.oneof(fc.bigInt(INT64_MIN, INT64_MAX), fc.constantFrom(INT64_MIN, INT64_MAX, -1n, 0n, 1n));
const safe = fc.oneof(
  fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
  fc.constantFrom(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, 2 ** 49, -(2 ** 49), 2 ** 48 - 1, 2 ** 52, -(2 ** 52), 2 ** 52 - 1, 1 - 2 ** 52),
);

describe('Method: varint', () => {
  it('writes the zigzag encodings Kafka documents', () => {
    expect([0, -1, 1, 63, -64, 64, 300].map(varint)).toEqual(['00', '01', '02', '7e', '7f', '8001', 'd804']);
    expect(varint(INT32_MAX)).toBe('feffffff0f');
    expect(varint(INT32_MIN)).toBe('ffffffff0f');
  });

  it('reads back every int32 it writes, in sizeOfVarint bytes, byte-identical to kafkajs', () => {
    fc.assert(fc.property(int32, (v) => {
      const bytes = new ByteWriter(1).varint(v).finish();
      expect(bytes.length).toBe(sizeOfVarint(v));
      expect(bytes.equals(new KafkaJsEncoder().writeVarInt(v).buffer)).toBe(true);
      const r = new ByteReader(bytes);
      expect(r.varint()).toBe(v);
      expect(r.remaining).toBe(0);
    }), { numRuns: 2000 });
  });

  it('rejects a value outside the int32 range instead of writing garbage', () => {
    expect(() => varint(INT32_MAX + 1)).toThrow(/int32/);
    expect(() => varint(1.5)).toThrow(/int32/);
  });

  it('throws CORRUPT_MESSAGE for an encoding longer than 5 bytes', () => {
    expectCorrupt(() => reader('8080808080').varint());
  });

  it('throws CORRUPT_MESSAGE, not a RangeError, for every truncation', () => {
    const bytes = new ByteWriter().varint(INT32_MIN).finish();
    for (let n = 0; n < bytes.length; n++) expectCorrupt(() => new ByteReader(bytes.subarray(0, n)).varint());
  });
});

describe('Method: varlong', () => {
  it('writes the zigzag encodings Kafka documents, up to the int64 extremes', () => {
    expect([0, -1, 1, 63, -64, 64, 300].map(varlong)).toEqual(['00', '01', '02', '7e', '7f', '8001', 'd804']);
    expect(varlong(INT64_MAX)).toBe('feffffffffffffffff01');
    expect(varlong(INT64_MIN)).toBe('ffffffffffffffffff01');
  });

  it('reads back every int64 it writes, in sizeOfVarlong bytes, byte-identical to kafkajs', () => {
    fc.assert(fc.property(int64, (v) => {
      const bytes = new ByteWriter(1).varlong(v).finish();
      expect(bytes.length).toBe(sizeOfVarlong(v));
      expect(bytes.equals(new KafkaJsEncoder().writeVarLong(v).buffer)).toBe(true);
      const r = new ByteReader(bytes);
      expect(r.varlong()).toBe(v);
      expect(r.remaining).toBe(0);
    }), { numRuns: 2000 });
  });

  it('writes a safe-integer number exactly as the same bigint, and reads it back as a number', () => {
    fc.assert(fc.property(safe, (v) => {
      const bytes = new ByteWriter(1).varlong(v).finish();
      expect(bytes.toString('hex')).toBe(varlong(BigInt(v)));
      expect(bytes.length).toBe(sizeOfVarlong(v));
      const r = new ByteReader(bytes);
      expect(r.varlongNumber()).toBe(v);
      expect(r.remaining).toBe(0);
    }), { numRuns: 2000 });
  });

  it('throws CORRUPT_MESSAGE when varlongNumber meets a value beyond the safe integers', () => {
    expectCorrupt(() => new ByteReader(new ByteWriter().varlong(2n ** 53n).finish()).varlongNumber());
    expectCorrupt(() => new ByteReader(new ByteWriter().varlong(INT64_MIN).finish()).varlongNumber());
  });

  it('rejects a number that is not a safe integer or a bigint beyond int64', () => {
    expect(() => varlong(2 ** 60)).toThrow(/safe integer/);
    expect(() => varlong(INT64_MAX + 1n)).toThrow(/int64/);
  });

  it('throws CORRUPT_MESSAGE for an encoding longer than 10 bytes', () => {
    expectCorrupt(() => reader('8080808080808080808001').varlong());
    expectCorrupt(() => reader('8080808080808080808001').varlongNumber());
  });

  it('throws CORRUPT_MESSAGE, not a RangeError, for every truncation', () => {
    const bytes = new ByteWriter().varlong(INT64_MIN).finish();
    for (let n = 0; n < bytes.length; n++) {
      expectCorrupt(() => new ByteReader(bytes.subarray(0, n)).varlong());
      expectCorrupt(() => new ByteReader(bytes.subarray(0, n)).varlongNumber());
    }
  });
});

describe('Class: ByteReader', () => {
  it('throws CORRUPT_MESSAGE naming the field when a fixed-width read runs past its window', () => {
    const r = new ByteReader(Buffer.alloc(10), 0, 6, 'record batch');
    r.int16('a');
    expect(() => r.int64('baseOffset')).toThrow(/record batch truncated reading baseOffset at offset 2: need 8 bytes, 4 left/);
    expectCorrupt(() => r.bytes(5));
    expectCorrupt(() => r.bytes(-1));
  });

  it('reads int64s that fit a number and rejects those that do not', () => {
    const w = new ByteWriter().int64(Number.MAX_SAFE_INTEGER).int64(-1).int64(2n ** 53n);
    const r = new ByteReader(w.finish());
    expect(r.int64Number()).toBe(Number.MAX_SAFE_INTEGER);
    expect(r.int64Number()).toBe(-1);
    expectCorrupt(() => r.int64Number());
  });
});

describe('Class: ByteWriter', () => {
  it('grows past its initial capacity without losing bytes', () => {
    const w = new ByteWriter(1);
    for (let i = 0; i < 1000; i++) w.int32(i);
    const r = new ByteReader(w.finish());
    for (let i = 0; i < 1000; i++) expect(r.int32()).toBe(i);
  });
});
