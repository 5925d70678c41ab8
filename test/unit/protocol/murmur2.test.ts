import fc from 'fast-check';
import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { isKafkaError } from '../../../lib/errors.js';
import { murmur2, partitionForKey, toPositive } from '../../../lib/protocol/murmur2.js';

const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');

const partitions = (n: number): PartitionMetadata[] =>
  Array.from({ length: n }, (_, partitionId) => ({ partitionErrorCode: 0, partitionId, leader: partitionId % 3, replicas: [0], isr: [0] }));

describe('Method: murmur2', () => {
  it("matches Kafka's published test vectors (UtilsTest.testMurmur2)", () => {
    expect(murmur2(utf8('21'))).toBe(-973932308);
    expect(murmur2(utf8('foobar'))).toBe(-790332482);
    expect(murmur2(utf8('a-little-bit-long-string'))).toBe(-985981536);
    expect(murmur2(utf8('a-little-bit-longer-string'))).toBe(-1486304829);
    expect(murmur2(utf8('lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8'))).toBe(-58897971);
    expect(murmur2(Buffer.from([97, 98, 99]))).toBe(479470107);
  });

  it('returns a signed 32-bit int for every input, including the empty key and all tail lengths', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      const h = murmur2(bytes);
      expect(h).toBe(h | 0);
    }));
    expect(murmur2(new Uint8Array())).toBe(murmur2(Buffer.alloc(0)));
  });
});

describe('Method: toPositive', () => {
  it('clears the sign bit rather than taking the absolute value, as Kafka does', () => {
    expect(toPositive(-1)).toBe(0x7fffffff);
    expect(toPositive(-0x80000000)).toBe(0);
    expect(toPositive(5)).toBe(5);
  });
});

describe('Method: partitionForKey', () => {
  it("picks the partition kafkajs's DefaultPartitioner (Java-compatible) picks, for any byte key", () => {
    const partitioner = Partitioners.DefaultPartitioner();
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), fc.integer({ min: 1, max: 1000 }), (bytes, n) => {
      const key = Buffer.from(bytes);
      const expected = partitioner({ topic: 't', partitionMetadata: partitions(n), message: { key, value: null } });
      expect(partitionForKey(key, n)).toBe(expected);
    }), { numRuns: 1000 });
  });

  it("picks the partition kafkajs's DefaultPartitioner picks for a string key sent as UTF-8", () => {
    const partitioner = Partitioners.DefaultPartitioner();
    const strings = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }));
    fc.assert(fc.property(strings, fc.integer({ min: 1, max: 1000 }), (key, n) => {
      const expected = partitioner({ topic: 't', partitionMetadata: partitions(n), message: { key, value: null } });
      expect(partitionForKey(utf8(key), n)).toBe(expected);
    }), { numRuns: 1000 });
  });

  it('throws INVALID_PARTITIONS for a partition count below 1', () => {
    let thrown: unknown;
    try { partitionForKey(utf8('k'), 0); } catch (e) { thrown = e; }
    expect(isKafkaError(thrown, 'INVALID_PARTITIONS')).toBe(true);
  });
});
