/**
 * Replica placement at topic creation and when partitions are added, as Kafka's AdminUtils does it: partition p's first replica
 * is broker (p + start) mod n, followers follow at a shift that grows every n partitions, so
 * replicas and preferred leaders spread evenly. With racks, brokers are first interleaved by rack
 * (Kafka's rack-alternated list), which keeps each partition's replicas on distinct racks when
 * there are at least as many racks as replicas.
 */
import { KafkaError } from '../protocol/errors.js';

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
 * Assigns `replicationFactor` replicas to each of `partitions` partitions, numbered from
 * `firstPartition` (Kafka's startPartitionId: adding partitions to a topic continues its ids).
 * `start` fixes Kafka's random start index and shift (tests, and `continuationStart` when adding
 * partitions); by default they are random. Element i is partition `firstPartition + i`.
 */
export function assignReplicas(
  brokers: readonly PlacementBroker[],
  partitions: number,
  replicationFactor: number,
  start: number = Math.floor(Math.random() * Math.max(brokers.length, 1)),
  firstPartition = 0,
): number[][] {
  if (partitions < 1) throw new KafkaError('INVALID_PARTITIONS', 'Number of partitions must be larger than 0.');
  if (replicationFactor < 1) throw new KafkaError('INVALID_REPLICATION_FACTOR', 'Replication factor must be larger than 0.');
  if (replicationFactor > brokers.length) {
    throw new KafkaError(
      'INVALID_REPLICATION_FACTOR',
      `Replication factor: ${replicationFactor} larger than available brokers: ${brokers.length}.`,
    );
  }
  return place(brokers, partitions, replicationFactor, start, firstPartition);
}

/**
 * The start index Kafka uses when adding partitions to a topic (AdminZkClient's
 * createNewPartitionsAssignment): the position, among the brokers sorted by id, of partition 0's
 * first replica, or of the next higher id when that broker is gone (0 when none is higher). Kafka
 * uses that position in the rack-alternated list too, and so does this.
 */
export function continuationStart(brokers: readonly PlacementBroker[], partition0FirstReplica: number): number {
  const ids = brokers.map((b) => b.brokerId).sort((a, b) => a - b);
  return Math.max(0, ids.findIndex((id) => id >= partition0FirstReplica));
}

/** Kafka's replicaIndex: where the j-th follower sits relative to the first replica. */
const replicaIndex = (first: number, shift: number, j: number, n: number): number => (first + 1 + ((shift + j) % (n - 1))) % n;

/**
 * Kafka's rack-aware assignment: walk the rack-alternated list, skipping a broker whose rack
 * already has a replica while some rack has none (and a broker that already has one while some
 * broker has none). Without racks every broker is in one rack, nothing is ever skipped, and this
 * is exactly Kafka's rack-unaware assignment.
 */
function place(brokers: readonly PlacementBroker[], partitions: number, rf: number, start: number, firstPartition: number): number[][] {
  const rackOf = new Map(brokers.map((b) => [b.brokerId, b.rack ?? '']));
  const numRacks = new Set(rackOf.values()).size;
  const list = rackAlternated(brokers);
  const n = list.length;
  let shift = start;
  const out: number[][] = [];
  // As in Kafka, the shift grows at every multiple of n from `firstPartition` on (not before it).
  for (let p = firstPartition; p < firstPartition + partitions; p++) {
    if (p > 0 && p % n === 0) shift += 1;
    const first = (p + start) % n;
    const leader = list[first] as number;
    const replicas = [leader];
    const racks = new Set([rackOf.get(leader)]);
    const used = new Set([leader]);
    let k = 0;
    for (let j = 0; j < rf - 1; j++) {
      for (;;) {
        const broker = list[replicaIndex(first, shift * numRacks, k++, n)] as number;
        const rack = rackOf.get(broker);
        if ((!racks.has(rack) || racks.size === numRacks) && (!used.has(broker) || used.size === n)) {
          replicas.push(broker);
          racks.add(rack);
          used.add(broker);
          break;
        }
      }
    }
    out.push(replicas);
  }
  return out;
}
