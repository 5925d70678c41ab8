/**
 * Where a follower's log leaves the leader's (KIP-101, with KIP-279's rounds): pure offset
 * arithmetic over the two leader-epoch caches.
 */
import { describe, expect, it } from 'vitest';
import { endOffsetForEpoch, truncationOffset } from '../../../lib/log/copy.js';
import type { ReplicaHead } from '../../../lib/storage/model.js';

const head = (h: Partial<ReplicaHead>): ReplicaHead => ({
  tp: 't', leo: 0, hw: 0, logStartOffset: 0, leaderEpoch: 0, role: 'follower', epochs: [], syncEpoch: 0, followers: {}, isr: [], joining: [], leaving: [], isrVersion: 0, ...h,
});

describe('Function: endOffsetForEpoch (OffsetsForLeaderEpoch)', () => {
  const log = head({ leo: 20, epochs: [[1, 0], [3, 10], [5, 15]] });

  it('answers an epoch the log has with where it ended: the next epoch\'s start, or the log end for the latest', () => {
    expect(endOffsetForEpoch(log, 1)).toEqual({ epoch: 1, endOffset: 10 });
    expect(endOffsetForEpoch(log, 3)).toEqual({ epoch: 3, endOffset: 15 });
    expect(endOffsetForEpoch(log, 5)).toEqual({ epoch: 5, endOffset: 20 });
  });

  it('answers an epoch the log never had with its largest epoch below it (KIP-279)', () => {
    expect(endOffsetForEpoch(log, 2)).toEqual({ epoch: 1, endOffset: 10 });
    expect(endOffsetForEpoch(log, 4)).toEqual({ epoch: 3, endOffset: 15 });
    expect(endOffsetForEpoch(log, 9)).toEqual({ epoch: 5, endOffset: 20 });
  });

  it('answers an epoch below the log\'s first with that epoch and the first epoch\'s start, and an empty cache with nothing', () => {
    expect(endOffsetForEpoch(head({ leo: 9, epochs: [[2, 4], [3, 6]] }), 1)).toEqual({ epoch: 1, endOffset: 4 });
    expect(endOffsetForEpoch(head({ leo: 9 }), 1)).toBeUndefined();
  });
});

describe('Function: truncationOffset', () => {
  const leader = head({ leo: 20, epochs: [[0, 0], [2, 10]], role: 'leader', leaderEpoch: 2 });

  it('truncates to where the follower\'s last epoch ended on the leader (KIP-101)', () => {
    expect(truncationOffset(head({ leo: 14, epochs: [[0, 0], [1, 12]] }), leader)).toBe(10);
    expect(truncationOffset(head({ leo: 8, epochs: [[0, 0]] }), leader)).toBe(8);
    expect(truncationOffset(head({ leo: 25, epochs: [[0, 0], [2, 10]] }), leader)).toBe(20);
  });

  it('where the leader never had the follower\'s last epoch, truncates to the smaller of both ends of the leader\'s largest epoch below it (KIP-279)', () => {
    // Leader: epoch 0 up to 2, then epoch 2. Follower: epoch 0 up to 1 only, then its own epoch 1.
    const l = head({ leo: 3, epochs: [[0, 0], [2, 2]], role: 'leader', leaderEpoch: 2 });
    expect(truncationOffset(head({ leo: 2, epochs: [[0, 0], [1, 1]] }), l)).toBe(1);
    // The follower has more of epoch 0 than the leader: the leader's end wins.
    expect(truncationOffset(head({ leo: 6, epochs: [[0, 0], [1, 4]] }), l)).toBe(2);
  });

  it('where the follower never had the leader\'s answer epoch either, truncates again from its own older epoch (KIP-279 rounds)', () => {
    // Leader epochs 0 and 3; follower epochs 0, 2, 4. The leader answers 4 with (3, 30); the
    // follower's largest epoch ≤ 3 is 2, which ends at 25 on it: cut to 25, then ask for 2, which
    // the leader answers with (0, 10); the follower's epoch 0 ends at 8: cut to 8.
    const l = head({ leo: 40, epochs: [[0, 0], [3, 10], [5, 30]], role: 'leader', leaderEpoch: 5 });
    expect(truncationOffset(head({ leo: 35, epochs: [[0, 0], [2, 8], [4, 25]] }), l)).toBe(8);
  });

  it('where the leader has not appended in its epoch yet, takes its log end as the end of its latest cached epoch', () => {
    const l = head({ leo: 5, epochs: [[0, 0]], role: 'leader', leaderEpoch: 2 });
    expect(truncationOffset(head({ leo: 7, epochs: [[0, 0], [1, 3]] }), l)).toBe(3);
    expect(truncationOffset(head({ leo: 4, epochs: [[0, 0]] }), l)).toBe(4);
  });

  it('where the follower has no epoch cache, keeps what its high watermark covers', () => {
    expect(truncationOffset(head({ leo: 7, hw: 3 }), leader)).toBe(3);
  });

  it('where the leader has no epoch cache, keeps what the follower\'s high watermark covers', () => {
    expect(truncationOffset(head({ leo: 7, hw: 4, epochs: [[0, 0]] }), head({ leo: 9, role: 'leader' }))).toBe(4);
  });
});
