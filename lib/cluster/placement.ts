/**
 * Replica placement at topic creation, as Kafka's AdminUtils does it: partition p's first replica
 * is broker (p + start) mod n, followers follow at a shift that grows every n partitions, so
 * replicas and preferred leaders spread evenly. With racks, brokers are first interleaved by rack
 * (Kafka's rack-alternated list), which keeps each partition's replicas on distinct racks when
 * there are at least as many racks as replicas.
 */
import { KafkaError } from '../errors.js';

export interface PlacementBroker {
  readonly brokerId: number;
  readonly rack: string | null;
}

/** Brokers ordered rack by rack in turn: [a1, b1, c1, a2, b2, ...] (Kafka's getRackAlternatedBrokerList). */
export function rackAlternated(brokers: readonly PlacementBroker[]): number[] {
  const byRack = new Map<string, number[]>();
  for (const b of [...brokers].sort((x, y) => x.brokerId - y.brokerId)) {
    const rack = b.rack ?? '';
    byRack.set(rack, [...(byRack.get(rack) ?? []), b.brokerId]);
  }
  const racks = [...byRack.keys()].sort();
  const out: number[] = [];
  for (let i = 0; out.length < brokers.length; i++) {
    for (const r of racks) {
      const id = byRack.get(r)?.[i];
      if (id !== undefined) out.push(id);
    }
  }
  return out;
}

/**
 * Assigns `replicationFactor` replicas to each of `partitions` partitions.
 * `start` fixes Kafka's random start index and shift (tests); by default they are random.
 */
export function assignReplicas(
  brokers: readonly PlacementBroker[],
  partitions: number,
  replicationFactor: number,
  start: number = Math.floor(Math.random() * Math.max(brokers.length, 1)),
): number[][] {
  if (partitions < 1) throw new KafkaError('INVALID_PARTITIONS', 'Number of partitions must be larger than 0.');
  if (replicationFactor < 1) throw new KafkaError('INVALID_REPLICATION_FACTOR', 'Replication factor must be larger than 0.');
  if (replicationFactor > brokers.length) {
    throw new KafkaError(
      'INVALID_REPLICATION_FACTOR',
      `Replication factor: ${replicationFactor} larger than available brokers: ${brokers.length}.`,
    );
  }
  const hasRacks = brokers.some((b) => b.rack !== null);
  const list = hasRacks ? rackAlternated(brokers) : brokers.map((b) => b.brokerId).sort((a, b) => a - b);
  const n = list.length;
  let shift = start;
  const out: number[][] = [];
  for (let p = 0; p < partitions; p++) {
    if (p > 0 && p % n === 0) shift += 1;
    const first = (p + start) % n;
    const replicas = [list[first] as number];
    for (let j = 0; j < replicationFactor - 1; j++) {
      replicas.push(list[(first + 1 + ((shift + j) % (n - 1))) % n] as number);
    }
    out.push(replicas);
  }
  return out;
}
