/**
 * Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2) and the partition its default
 * partitioner picks for a keyed record: toPositive(murmur2(keyBytes)) % numPartitions.
 *
 *   h = seed ^ length                          seed = 0x9747b28c, m = 0x5bd1e995, r = 24
 *   per 4-byte little-endian word k:  k *= m; k ^= k >>> r; k *= m; h *= m; h ^= k
 *   tail (1-3 bytes, little-endian):  h ^= tail; h *= m
 *   finish:                           h ^= h >>> 13; h *= m; h ^= h >>> 15
 *
 * All arithmetic is Java int arithmetic: Math.imul for the wrapping multiply, `| 0` to stay signed.
 */

import { KafkaError } from './errors.js';

const SEED = 0x9747b28c | 0;
const M = 0x5bd1e995;
const R = 24;

/** Kafka's murmur2 of `data`, as the signed 32-bit int Java returns. */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = SEED ^ length;
  const words = length >>> 2;
  for (let i = 0; i < words; i++) {
    const i4 = i * 4;
    let k = (data[i4] as number)
      | ((data[i4 + 1] as number) << 8)
      | ((data[i4 + 2] as number) << 16)
      | ((data[i4 + 3] as number) << 24);
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  // Java's switch falls through 3 -> 2 -> 1.
  const tail = length & 3;
  const t = length & ~3;
  if (tail >= 3) h ^= (data[t + 2] as number) << 16;
  if (tail >= 2) h ^= (data[t + 1] as number) << 8;
  if (tail >= 1) {
    h ^= data[t] as number;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** Kafka's Utils.toPositive: clears the sign bit (not Math.abs, which would differ for negatives). */
export const toPositive = (n: number): number => n & 0x7fffffff;

/** The partition Kafka's default partitioner (and kafkajs's DefaultPartitioner) picks for a non-null key. */
export function partitionForKey(key: Uint8Array, numPartitions: number): number {
  if (!Number.isInteger(numPartitions) || numPartitions < 1) {
    throw new KafkaError('INVALID_PARTITIONS', `numPartitions must be a positive integer, got ${numPartitions}`);
  }
  return toPositive(murmur2(key)) % numPartitions;
}
