/**
 * The data path's half of replication liveness (DESIGN §5): a replication run that leaves a
 * follower behind the log end it set out to copy puts the partition in the coordination table's
 * lag index, and the run that brings every follower up takes it out again; the controller's sweep
 * (lib/orchestration/sweep.ts) re-drives what the index names. The leader's head records, per
 * leader epoch, whether the mark is set (`lagMarkedEpoch`), so a run writes the index only when
 * lagging flips — never once per append.
 */
import type { ReplicaHead } from '../storage/model.js';

/**
 * Whether a run left the partition lagging: the high watermark, or some follower's log end
 * offset (undefined: the follower could not be reached), is below `target` — the leader's log end
 * offset when the run began. Appends that landed during the run are their own runs' business.
 */
export function leftLagging(target: number, hw: number, followerLeos: readonly (number | undefined)[]): boolean {
  return hw < target || followerLeos.some((leo) => leo === undefined || leo < target);
}

/**
 * The lag index write a run owes, if any: `mark` when it left the partition lagging and the
 * leader's head says no mark was set under this leader epoch, `clear` when it did not and one was.
 */
export function lagIndexChange(head: ReplicaHead, leaderEpoch: number, lagging: boolean): 'mark' | 'clear' | undefined {
  const marked = head.lagMarkedEpoch === leaderEpoch;
  if (lagging === marked) return undefined;
  return lagging ? 'mark' : 'clear';
}
