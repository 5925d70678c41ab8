/**
 * Where a record goes when the caller does not say: a keyed record where Kafka's default
 * partitioner puts it — the server's own function (lib/protocol/murmur2.ts, no imports beyond the
 * error table) — and unkeyed records stick to one random partition per batch (Kafka's sticky partitioner).
 */
import { partitionForKey } from '../lib/protocol/murmur2.js';
import { bytesOf } from './bytes.js';

/** Arguments of a custom partitioner (kafkajs passes the same). */
export interface PartitionerArgs {
  readonly topic: string;
  readonly partitionCount: number;
  readonly message: { readonly key?: string | Uint8Array | null };
}

/** Returns the partition for a record. */
export type Partitioner = (args: PartitionerArgs) => number;

/** Kafka's default: murmur2 of the key modulo the partition count; unkeyed: the topic's sticky partition. */
export function defaultPartitioner(): Partitioner & { nextBatch(topic: string): void } {
  const sticky = new Map<string, number>();
  const fn = ({ topic, partitionCount, message }: PartitionerArgs): number => {
    if (message.key !== null && message.key !== undefined) return partitionForKey(bytesOf(message.key), partitionCount);
    let p = sticky.get(topic);
    if (p === undefined || p >= partitionCount) {
      p = Math.floor(Math.random() * partitionCount);
      sticky.set(topic, p);
    }
    return p;
  };
  /** A batch of the topic was sent: unkeyed records move to another partition (as Kafka's sticky partitioner does). */
  fn.nextBatch = (topic: string) => { sticky.delete(topic); };
  return fn;
}

export { partitionForKey };
