import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assignReplicas, continuationStart, rackAlternated } from '../../../lib/cluster/placement.js';
import type { KafkaError } from '../../../lib/protocol/errors.js';

const brokers = (n: number, racks?: string[]) => Array.from({ length: n }, (_, i) => ({ brokerId: i, rack: racks?.[i] ?? null }));

describe('Function: assignReplicas', () => {
  it("matches Kafka's AdminUtilsTest.testReplicaAssignment vector (5 brokers, 10 partitions, RF 3, start 0)", () => {
    expect(assignReplicas(brokers(5), 10, 3, 0)).toEqual([
      [0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 0], [4, 0, 1],
      [0, 2, 3], [1, 3, 4], [2, 4, 0], [3, 0, 1], [4, 1, 2],
    ]);
  });

  it('gives every partition distinct replicas and spreads preferred leaders evenly', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 60 }), fc.nat(), (n, partitions, start) => {
      const rf = 1 + (start % n);
      const out = assignReplicas(brokers(n), partitions, rf, start % n);
      expect(out).toHaveLength(partitions);
      for (const replicas of out) {
        expect(new Set(replicas).size).toBe(rf);
        for (const id of replicas) expect(id).toBeGreaterThanOrEqual(0);
      }
      const leaders = new Map<number, number>();
      for (const [leader] of out) leaders.set(leader as number, (leaders.get(leader as number) ?? 0) + 1);
      const counts = [...leaders.values()];
      expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    }));
  });

  it('rejects more replicas than brokers with INVALID_REPLICATION_FACTOR, and zero partitions with INVALID_PARTITIONS', () => {
    expect(() => assignReplicas(brokers(3), 1, 4)).toThrow(expect.objectContaining({ kafkaName: 'INVALID_REPLICATION_FACTOR' }) as KafkaError);
    expect(() => assignReplicas(brokers(3), 0, 1)).toThrow(expect.objectContaining({ kafkaName: 'INVALID_PARTITIONS' }) as KafkaError);
  });

  it('puts replicas on distinct racks when there are as many racks as replicas', () => {
    const racked = brokers(6, ['a', 'a', 'b', 'b', 'c', 'c']);
    for (let start = 0; start < 6; start++) {
      for (const replicas of assignReplicas(racked, 12, 3, start)) {
        expect(new Set(replicas.map((id) => racked[id]?.rack)).size).toBe(3);
      }
    }
  });
});

describe('Function: assignReplicas, adding partitions (firstPartition)', () => {
  // Kafka's AddPartitionsTest: 4 brokers, partition 0 on [2, 3, 0, 1], grown to 7 partitions.
  it("matches Kafka's AddPartitionsTest.testReplicaPlacementAllServers vector", () => {
    const b = brokers(4);
    expect(assignReplicas(b, 6, 4, continuationStart(b, 2), 1)).toEqual([
      [3, 2, 0, 1], [0, 3, 1, 2], [1, 0, 2, 3], [2, 3, 0, 1], [3, 0, 1, 2], [0, 1, 2, 3],
    ]);
  });

  // Kafka's AddPartitionsTest: 4 brokers, partition 0 on [1, 2], grown to 3 partitions.
  it("matches Kafka's AddPartitionsTest.testReplicaPlacementPartialServers vector", () => {
    const b = brokers(4);
    expect(assignReplicas(b, 2, 2, continuationStart(b, 1), 1)).toEqual([[2, 0], [3, 1]]);
  });

  it('continues a topic created with the same start exactly, while the growth stays within the first lap of brokers', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 8 }), fc.nat(), fc.nat(), (n, s, k) => {
      const b = brokers(n);
      const start = s % n;
      const rf = 1 + (s % n);
      const created = 1 + (k % n);
      const whole = assignReplicas(b, n, rf, start);
      const first = assignReplicas(b, created, rf, start);
      const added = n - created === 0 ? [] : assignReplicas(b, n - created, rf, continuationStart(b, first[0]?.[0] as number), created);
      expect([...first, ...added]).toEqual(whole);
    }));
  });

  it('gives every added partition distinct replicas, and with racks distinct racks', () => {
    const racked = brokers(6, ['a', 'a', 'b', 'b', 'c', 'c']);
    for (let from = 1; from < 20; from++) {
      for (const replicas of assignReplicas(racked, 13, 3, continuationStart(racked, from % 6), from)) {
        expect(new Set(replicas).size).toBe(3);
        expect(new Set(replicas.map((id) => racked[id]?.rack)).size).toBe(3);
      }
    }
  });
});

describe('Function: continuationStart', () => {
  it("is the position of partition 0's first replica among brokers sorted by id, or of the next higher id when it is gone", () => {
    const b = [{ brokerId: 7, rack: null }, { brokerId: 3, rack: null }, { brokerId: 5, rack: null }];
    expect(continuationStart(b, 5)).toBe(1);
    expect(continuationStart(b, 4)).toBe(1);
    expect(continuationStart(b, 9)).toBe(0);
    expect(continuationStart(b, 1)).toBe(0);
  });
});

describe('Function: rackAlternated', () => {
  it('interleaves brokers rack by rack', () => {
    expect(rackAlternated(brokers(6, ['a', 'a', 'b', 'b', 'c', 'c']))).toEqual([0, 2, 4, 1, 3, 5]);
  });
});
