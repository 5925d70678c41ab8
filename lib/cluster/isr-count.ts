/**
 * A leader's ISR count (`isr`, `joining`, `leaving` on its replica head) kept in step with the
 * partition state's ISR. The two live in different tables and change without a transaction, in
 * an order that keeps two promises at every moment:
 * - what the high watermark counts (`isr` ∪ `joining` ∪ `leaving`) holds every member of the
 *   state's ISR: a follower joins the count before the state, and leaves the count after it;
 * - what `min.insync.replicas` counts (`isr`) holds no member the state's ISR lacks: a follower
 *   enters `isr` after the state, and leaves `isr` (for `leaving`) before it leaves the state.
 * So the first promise keeps elections safe, and the second refuses an `acks=all` append as soon
 * as the ISR anyone can read is too small. A shrink ends by settling the follower by what the
 * state says (`settleLeave`: out of the count, or back into `isr` when its shrink lost a race); a
 * shrinker that died between the steps is repaired by the next `replicate` run, which settles
 * every `leaving` member the same way.
 */
import { readPartition } from '../storage/coordination/partitions.js';
import type { PartitionRecord, ReplicaHead } from '../storage/model.js';
import { readHead, setHeadIsr, type IsrCount } from '../storage/replica/head.js';
import { type ReplicaStoreRef } from '../storage/replica/store.js';
import { shrinkIsr, type IsrShrink } from './partition-state.js';

type ReadState = (topic: string, partition: number) => Promise<PartitionRecord | undefined>;

/**
 * Edits the leader's count with compare-and-set on its version, re-reading on conflict.
 * `decide` sees the current head and returns the next count, or undefined for no change. Returns
 * false when the broker stopped leading under `leaderEpoch` or every attempt lost a race.
 */
export async function editCount(
  leader: ReplicaStoreRef, tp: string, leaderEpoch: number,
  decide: (head: ReplicaHead) => Promise<IsrCount | undefined>,
): Promise<boolean> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const head = await readHead(leader, tp);
    if (!head || head.role !== 'leader' || head.leaderEpoch !== leaderEpoch) return false;
    const next = await decide(head);
    if (!next) return true;
    if (await setHeadIsr(leader, tp, leaderEpoch, head.isrVersion, next)) return true;
  }
  return false;
}

const without = (list: readonly number[], b: number) => list.filter((x) => x !== b);

/**
 * A `joining` entry older than this was left by a joiner that died (every function that joins
 * followers ends within its timeout, the longest 120 s, and a joiner past its deadline writes
 * nothing more): `settleJoin` may decide it.
 */
export const JOIN_STALE_MS = 10 * 60_000;

/**
 * Settles a `joining` member a dead joiner left, by the partition state read after the head: the
 * state took it (the joiner died before its last step) — counted in sync; it did not — out of the
 * count. Returns what it did. The caller decides that the entry is stale (JOIN_STALE_MS).
 */
export async function settleJoin(
  topic: string, partition: number, leader: ReplicaStoreRef, tp: string, leaderEpoch: number, b: number, readState: ReadState = readPartition,
): Promise<'joined' | 'dropped' | undefined> {
  let done: 'joined' | 'dropped' | undefined;
  await editCount(leader, tp, leaderEpoch, async (head) => {
    done = undefined;
    if (!head.joining.includes(b)) return undefined;
    const state = await readState(topic, partition);
    const taken = state?.isr.includes(b) === true && state.leaderEpoch === leaderEpoch;
    done = taken ? 'joined' : 'dropped';
    return { isr: taken && !head.isr.includes(b) ? [...head.isr, b] : head.isr, joining: without(head.joining, b), leaving: head.leaving };
  });
  return done;
}

/** Step 1 of a shrink: `members` stop counting for `min.insync.replicas` (the high watermark still waits for them). */
export function beginLeave(leader: ReplicaStoreRef, tp: string, leaderEpoch: number, members: readonly number[]): Promise<boolean> {
  return editCount(leader, tp, leaderEpoch, async (h) => {
    const moving = members.filter((b) => h.isr.includes(b));
    if (moving.length === 0) return undefined;
    return { isr: h.isr.filter((b) => !moving.includes(b)), joining: h.joining, leaving: [...new Set([...h.leaving, ...moving])] };
  });
}

/**
 * Settles `b` in the leader's count by the partition state, read after the head: a member the
 * state no longer has leaves the count altogether (`isr` and `leaving`); a `leaving` member the
 * state still has under this leader epoch (its shrink lost a race, or its shrinker died before
 * the state write) is counted in `isr` again. An expander that re-added `b` meanwhile must have
 * bumped the head's version first, which fails this write; the next attempt decides again.
 * `readState` is a seam for tests that interleave a change there. Returns what it did.
 */
export async function settleLeave(
  topic: string, partition: number, leader: ReplicaStoreRef, tp: string, leaderEpoch: number, b: number, readState: ReadState = readPartition,
): Promise<'dropped' | 'restored' | undefined> {
  let done: 'dropped' | 'restored' | undefined;
  await editCount(leader, tp, leaderEpoch, async (head) => {
    done = undefined;
    const leaving = head.leaving.includes(b);
    if (!leaving && !head.isr.includes(b)) return undefined;
    const state = await readState(topic, partition);
    if (!state?.isr.includes(b)) {
      done = 'dropped';
      return { isr: without(head.isr, b), joining: head.joining, leaving: without(head.leaving, b) };
    }
    if (!leaving || state.leaderEpoch !== leaderEpoch) return undefined;
    done = 'restored';
    return { isr: [...head.isr, b], joining: head.joining, leaving: without(head.leaving, b) };
  });
  return done;
}

/**
 * Removes follower `b` from the ISR in three steps: out of what `min.insync.replicas` counts,
 * out of the partition state (`shrink`, a seam for tests), then out of the leader's count — or,
 * when the state kept it (a concurrent change won), back into the count. The leader's count is
 * best effort: a store that does not answer leaves it to the next `replicate` run.
 */
export async function shrinkWithCount(
  topic: string, partition: number, leader: ReplicaStoreRef, tp: string, leaderEpoch: number, b: number, reason: string, current: PartitionRecord,
  shrink: typeof shrinkIsr = shrinkIsr,
): Promise<IsrShrink> {
  await beginLeave(leader, tp, leaderEpoch, [b]).catch(() => false);
  const out = await shrink(topic, partition, b, leaderEpoch, reason, current);
  await settleLeave(topic, partition, leader, tp, leaderEpoch, b).catch(() => undefined);
  return out;
}

/**
 * The controller's change of a live leader's ISR (members fenced): the same order as
 * `shrinkWithCount`, around `write`, the lease-fenced state change. Returns what `write` returned.
 */
export async function shrinkForController(
  topic: string, before: PartitionRecord, leader: ReplicaStoreRef | undefined, tp: string, removing: readonly number[],
  write: () => Promise<PartitionRecord>,
): Promise<PartitionRecord> {
  if (!leader || removing.length === 0) return write();
  await beginLeave(leader, tp, before.leaderEpoch, removing).catch(() => false);
  const next = await write();
  for (const b of removing) await settleLeave(topic, before.partition, leader, tp, before.leaderEpoch, b).catch(() => undefined);
  return next;
}
