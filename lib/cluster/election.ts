/**
 * Leader election rules (Kafka's PartitionLeaderElectionAlgorithms), pure. The first live replica
 * of the ISR in preferred (replica list) order leads. With no live ISR member the partition goes
 * offline and keeps its last ISR, so that a returning member can lead without losing data — unless
 * the topic allows unclean election, when the first live replica leads and the ISR restarts with it.
 * A replica a reassignment is still adding never leads before it joins the ISR: until its full
 * sync has made its head it holds no log at all, and a leader without one could serve nothing.
 */
import type { PartitionRecord } from '../storage/model.js';

export interface ElectionDecision {
  /** -1 when the partition is offline. */
  readonly leader: number;
  readonly isr: readonly number[];
  /** An out-of-sync replica leads: records acknowledged to the old ISR may be lost. */
  readonly unclean: boolean;
}

/** The replica an unclean election hands the partition to: the first live one the partition is not still adding. */
export const uncleanCandidate = (p: PartitionRecord, alive: ReadonlySet<number>): number | undefined =>
  p.replicas.find((r) => alive.has(r) && !(p.addingReplicas ?? []).includes(r));

export function chooseLeader(p: PartitionRecord, alive: ReadonlySet<number>, uncleanAllowed: boolean): ElectionDecision {
  const liveIsr = p.replicas.filter((r) => p.isr.includes(r) && alive.has(r));
  if (liveIsr.length > 0) {
    return { leader: liveIsr[0] as number, isr: p.isr.filter((r) => alive.has(r)), unclean: false };
  }
  const live = uncleanCandidate(p, alive);
  if (uncleanAllowed && live !== undefined) return { leader: live, isr: [live], unclean: true };
  return { leader: -1, isr: p.isr, unclean: false };
}

/**
 * What the controller should change in a partition, given which brokers are alive: a new leader
 * (with a new epoch) when the current one is not alive, or an ISR without dead members. Undefined
 * when nothing needs to change.
 */
export function reconcile(
  part: PartitionRecord, alive: ReadonlySet<number>, uncleanAllowed: boolean, lostLog: ReadonlySet<number> = new Set(),
): (ElectionDecision & { newEpoch: boolean }) | undefined {
  // A replica whose store lost its data is in sync with nothing: it leaves the ISR even as its last
  // member (the partition then stays offline unless unclean election is allowed).
  const p = lostLog.size === 0 ? part : { ...part, isr: part.isr.filter((r) => !lostLog.has(r)) };
  if (p.leader < 0 || !alive.has(p.leader) || lostLog.has(p.leader)) {
    // (nor does it lead uncleanly: it answers — a returning broker is alive — but holds no log)
    const electable = lostLog.size === 0 ? alive : new Set([...alive].filter((b) => !lostLog.has(b)));
    const d = chooseLeader(p, electable, uncleanAllowed);
    if (d.leader === part.leader && sameMembers(d.isr, part.isr)) return undefined;
    return { ...d, newEpoch: d.leader !== part.leader };
  }
  // The leader lives: dead followers leave the ISR (the leader never does).
  const isr = p.isr.filter((r) => alive.has(r) || r === p.leader);
  return sameMembers(isr, part.isr) ? undefined : { leader: p.leader, isr, unclean: false, newEpoch: false };
}

const sameMembers = (a: readonly number[], b: readonly number[]): boolean => a.length === b.length && a.every((x) => b.includes(x));
