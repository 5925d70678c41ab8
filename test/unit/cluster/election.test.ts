import { describe, expect, it } from 'vitest';
import { chooseLeader, reconcile } from '../../../lib/cluster/election.js';
import type { PartitionRecord } from '../../../lib/storage/model.js';

const part = (p: Partial<PartitionRecord>): PartitionRecord => ({ topicId: 't', partition: 0, leader: 1, leaderEpoch: 4, replicas: [1, 2, 3], isr: [1, 2, 3], partitionEpoch: 9, ...p });
const alive = (...ids: number[]) => new Set(ids);

describe('Function: chooseLeader', () => {
  it('picks the first live ISR member in preferred (replica) order', () => {
    expect(chooseLeader(part({ isr: [3, 2] }), alive(2, 3), false)).toEqual({ leader: 2, isr: [3, 2], unclean: false });
    expect(chooseLeader(part({ replicas: [3, 1, 2], isr: [1, 2, 3] }), alive(1, 2, 3), false).leader).toBe(3);
  });

  it('goes offline keeping the last ISR when no ISR member lives and unclean election is off', () => {
    expect(chooseLeader(part({ isr: [1] }), alive(2, 3), false)).toEqual({ leader: -1, isr: [1], unclean: false });
  });

  it('lets a live out-of-sync replica lead when unclean election is on, restarting the ISR with it', () => {
    expect(chooseLeader(part({ isr: [1] }), alive(3), true)).toEqual({ leader: 3, isr: [3], unclean: true });
    expect(chooseLeader(part({ isr: [1] }), alive(), true).leader).toBe(-1);
  });

  it('never lets a replica a reassignment is still adding lead, even uncleanly: it may hold no log yet (its full sync makes its head)', () => {
    const moving = part({ replicas: [1, 2, 4, 3], isr: [1, 2], addingReplicas: [4], removingReplicas: [3] });
    expect(chooseLeader(moving, alive(4), true)).toEqual({ leader: -1, isr: [1, 2], unclean: false });
    expect(chooseLeader(moving, alive(3, 4), true)).toEqual({ leader: 3, isr: [3], unclean: true });
  });
});

describe('Function: reconcile', () => {
  it('changes nothing while the leader and the ISR live', () => {
    expect(reconcile(part({}), alive(1, 2, 3), false)).toBeUndefined();
  });

  it('elects under a new epoch when the leader died, dropping dead members from the ISR', () => {
    expect(reconcile(part({}), alive(2, 3), false)).toEqual({ leader: 2, isr: [2, 3], unclean: false, newEpoch: true });
  });

  it('only shrinks the ISR when a follower died', () => {
    expect(reconcile(part({}), alive(1, 3), false)).toEqual({ leader: 1, isr: [1, 3], unclean: false, newEpoch: false });
  });

  it('brings an offline partition back when an ISR member returns, and leaves it offline otherwise', () => {
    expect(reconcile(part({ leader: -1, isr: [1] }), alive(1, 2), false)).toMatchObject({ leader: 1, newEpoch: true });
    expect(reconcile(part({ leader: -1, isr: [1] }), alive(2, 3), false)).toBeUndefined();
  });
});

describe('Function: reconcile with a replica that lost its log', () => {
  it('drops it from the ISR even as the last member, so it can never lead with an empty log', () => {
    const p = part({ leader: 2, isr: [2], replicas: [1, 2, 3] });
    expect(reconcile(p, alive(1, 3), false, new Set([2]))).toEqual({ leader: -1, isr: [], unclean: false, newEpoch: true });
    // Back and unfenced, it is not elected: the partition stays offline without unclean election.
    expect(reconcile({ ...p, leader: -1, isr: [] }, alive(1, 2, 3), false)).toBeUndefined();
    expect(reconcile({ ...p, leader: -1, isr: [] }, alive(1, 2, 3), true)).toMatchObject({ leader: 1, unclean: true });
  });

  it('elects another in-sync replica when the leader lost its log', () => {
    expect(reconcile(part({ leader: 2, isr: [1, 2, 3] }), alive(1, 3), false, new Set([2]))).toEqual({ leader: 1, isr: [1, 3], unclean: false, newEpoch: true });
  });

  it('where it answers again (returning, so alive), the walk that finds the loss never elects it, not even uncleanly', () => {
    const lost = new Set([2]);
    // It led alone: unclean election hands the partition to the first live replica that has a log.
    const alone = part({ leader: 2, isr: [2], replicas: [2, 1, 3] });
    expect(reconcile(alone, alive(1, 2, 3), true, lost)).toEqual({ leader: 1, isr: [1], unclean: true, newEpoch: true });
    expect(reconcile(alone, alive(2), true, lost)).toEqual({ leader: -1, isr: [], unclean: false, newEpoch: true });
    // With in-sync followers, the first of them leads; without unclean election, nobody else does.
    expect(reconcile(part({ leader: 2, isr: [2, 3], replicas: [2, 1, 3] }), alive(1, 2, 3), true, lost)).toEqual({ leader: 3, isr: [3], unclean: false, newEpoch: true });
    expect(reconcile(alone, alive(1, 2, 3), false, lost)).toEqual({ leader: -1, isr: [], unclean: false, newEpoch: true });
  });
});
