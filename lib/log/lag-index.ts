/**
 * The data path's half of replication liveness (docs/architecture.md, "Replication" and
 * "Replication liveness"): a partition whose followers may be behind its leader is in the
 * coordination table's lag index, and the controller's sweep (lib/orchestration/sweep.ts) re-drives
 * what the index names.
 *
 * Who sets the mark: the append (lib/log/append.ts) — whatever happens to the event that should
 * replicate it — and a replication run that leaves a follower behind. The leader's head records, per
 * leader epoch, that the mark is set (`lagMarkedEpoch`): an append on a flagged head writes nothing
 * to the index and is conditioned on the flag still being there; an append on an unflagged head
 * writes the mark first, then sets the flag with its own head update. So a busy partition costs
 * one coordination write per idle→active transition, none per append.
 *
 * Who clears it: only the sweep, when a visit finds the partition caught up — first the head's flag
 * (conditioned on nothing appended since, counting the clear in `lagClears`), then the mark
 * (conditioned on the `markedAt` it read). An append in between sees the head unflagged and marks
 * again, so the mark survives; one that read the head before the clear fails its condition on
 * `lagClears` and marks again too.
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
 * Whether a run owes the index a mark: it left the partition lagging and the leader's head says
 * no mark was set under this leader epoch. (A run never clears: that is the sweep's, see above.)
 */
export function owesMark(head: ReplicaHead, leaderEpoch: number, lagging: boolean): boolean {
  return lagging && head.lagMarkedEpoch !== leaderEpoch;
}
