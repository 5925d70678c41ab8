import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assignReplicas, rackAlternated } from '../../../lib/cluster/placement.js';
import type { KafkaError } from '../../../lib/errors.js';

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

describe('Function: rackAlternated', () => {
  it('interleaves brokers rack by rack', () => {
    expect(rackAlternated(brokers(6, ['a', 'a', 'b', 'b', 'c', 'c']))).toEqual([0, 2, 4, 1, 3, 5]);
  });
});
