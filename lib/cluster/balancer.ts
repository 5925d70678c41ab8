/**
 * The self-balancer, run by the controller: it drains brokers being removed, spreads replicas
 * over brokers (and racks) when a broker joins or the spread drifts past a tolerance, and keeps
 * preferred leaders leading (Kafka's auto.leader.rebalance.enable). It plans with the pure
 * planner (lib/cluster/balance-plan.ts) and moves by reassignments (lib/cluster/reassignment.ts),
 * a few partitions at a time, so moves do not starve producers (the copy itself is throttled by
 * `follower.replication.throttled.rate`).
 *
 * Tolerance: the balancer starts planning when replica counts across live brokers differ by more
 * than max(2, 10% of the mean), or a broker being removed still holds replicas; a plan then brings
 * them within one of each other (where racks allow), and preferred leaders within one by reordering.
 */
import { logger } from '../logger.js';
import * as balancerStore from '../storage/coordination/balancer.js';
import * as leaseStore from '../storage/coordination/lease.js';
import type { BrokerRecord, Lease, PartitionRecord } from '../storage/model.js';
import type { EffectiveClusterConfigs } from './cluster-configs.js';
import { leaderImbalance, planBalance, replicaMoves, type PlanBroker, type PlanPartition } from './balance-plan.js';
import { deregisterDrained } from './brokers.js';
import { clusterConfigs } from './metadata.js';
import { electLeaderOf } from './leadership.js';
import { reassigning, startReassignment, targetReplicas } from './reassignment.js';

/** Partitions a plan moves at once. */
export const MAX_MOVES_IN_FLIGHT = 8;

export interface BalanceReport {
  /** Reassignments this pass started. */
  readonly started: number;
  /** Partitions moving when it ended. */
  readonly inFlight: number;
  /** Replica moves the plan still holds (in flight and to start). */
  readonly remaining: number;
  /** Brokers deregistered (drained). */
  readonly removed: readonly number[];
  /** Preferred leaders elected. */
  readonly elected: number;
}

/** A partition as the controller's walk left it, and the bytes its leader's table holds (its head's `tailBytes`; 0 when unread). */
interface Placed { readonly topic: string; readonly p: PartitionRecord; readonly bytes?: number }

/** Whether live brokers' replica counts are spread past the tolerance, or a broker being removed holds replicas. */
export function needsBalance(brokers: readonly PlanBroker[], partitions: readonly PlanPartition[]): boolean {
  const count = new Map<number, number>(brokers.filter((b) => b.state === 'alive').map((b) => [b.brokerId, 0]));
  let draining = false;
  const leaving = new Set(brokers.filter((b) => b.state === 'decommissioning').map((b) => b.brokerId));
  for (const p of partitions) {
    for (const r of p.replicas) {
      if (leaving.has(r)) draining = true;
      if (count.has(r)) count.set(r, (count.get(r) as number) + 1);
    }
  }
  if (draining) return true;
  const counts = [...count.values()];
  if (counts.length < 2) return false;
  const mean = counts.reduce((a, b) => a + b, 0) / counts.length;
  return Math.max(...counts) - Math.min(...counts) > Math.max(2, Math.ceil(mean * 0.1));
}

const planBrokers = (brokers: readonly BrokerRecord[]): PlanBroker[] =>
  brokers.map((b) => ({ brokerId: b.brokerId, rack: b.rack, state: b.decommissioning ? 'decommissioning' : b.state }));

export class Balancer {
  private lastLeaderCheckAt: number | undefined;
  private status: balancerStore.BalancerStatus | undefined;

  /**
   * One pass over the cluster as `placed` describes it (every partition, as the controller's walk
   * left it). Errors: `LeaseLost`.
   */
  async pass(lease: Lease, brokers: readonly BrokerRecord[], placed: readonly Placed[], now: number): Promise<BalanceReport> {
    const cfg = await clusterConfigs();
    const pb = planBrokers(brokers);
    const moving = placed.filter((x) => reassigning(x.p));
    // Moves in flight count as done: the plan is made on their targets.
    const parts: PlanPartition[] = placed.map((x) => ({ topic: x.topic, partition: x.p.partition, replicas: targetReplicas(x.p), bytes: x.bytes ?? 0 }));
    const draining = pb.some((b) => b.state === 'decommissioning');
    let started = 0;
    let remaining = 0;
    // Read afresh each pass, never kept from an earlier one: another controller may have written
    // it since (a controller that regains the lease would otherwise trust what it last wrote).
    this.status = await balancerStore.readBalancerStatus();
    // A plan once begun runs to its end (within one), not only until the spread is back within the tolerance.
    const begun = this.status.status !== 'IDLE';
    const planning = (cfg['tributary.balancer.enable'] || draining) && (moving.length > 0 || begun || needsBalance(pb, parts));
    if (planning) {
      const busy = new Set(moving.map((x) => `${x.topic}/${x.p.partition}`));
      // With the balancer off, a removal still drains: only the moves off a leaving broker.
      const leaving = new Set(pb.filter((b) => b.state === 'decommissioning').map((b) => b.brokerId));
      const plan = planBalance(pb, parts).filter((m) => cfg['tributary.balancer.enable'] || m.from.some((r) => leaving.has(r)));
      remaining = plan.reduce((n, m) => n + replicaMoves(m.from, m.to), 0) + moving.reduce((n, x) => n + (x.p.addingReplicas?.length ?? 0), 0);
      for (const m of plan) {
        if (moving.length + started >= MAX_MOVES_IN_FLIGHT) break;
        if (busy.has(`${m.topic}/${m.partition}`)) continue;
        try {
          await startReassignment(m.topic, m.partition, m.to);
          if (replicaMoves(m.from, m.to) > 0) started++;
        } catch (err) {
          logger.warn({ event: 'balancer-move-failed', topic: m.topic, partition: m.partition, to: m.to, err }, 'the balancer could not start a move; it plans again on its next pass');
        }
      }
    }
    const removed = await deregisterDrained(lease, brokers, placed.map((x) => x.p));
    const elected = await this.preferredLeaders(lease, brokers, placed, now, cfg);
    await this.record(lease, remaining, now);
    if (started > 0 || removed.length > 0) logger.info({ event: 'balancer-pass', started, inFlight: moving.length + started, remaining, removed }, 'balancer moved replicas');
    return { started, inFlight: moving.length + started, remaining, removed, elected };
  }

  /**
   * Kafka's auto leader rebalance: every `leader.imbalance.check.interval.seconds`, a broker whose
   * share of partitions it prefers to lead but does not lead is above
   * `leader.imbalance.per.broker.percentage` gets them back (where it is alive and in sync).
   */
  private async preferredLeaders(lease: Lease, brokers: readonly BrokerRecord[], placed: readonly Placed[], now: number, cfg: EffectiveClusterConfigs): Promise<number> {
    if (!cfg['auto.leader.rebalance.enable']) return 0;
    // (as in Kafka, the first check comes one interval after the controller starts)
    this.lastLeaderCheckAt ??= now;
    if (now - this.lastLeaderCheckAt < cfg['leader.imbalance.check.interval.seconds'] * 1000) return 0;
    this.lastLeaderCheckAt = now;
    const alive = new Set(brokers.filter((b) => b.state === 'alive').map((b) => b.brokerId));
    const ratios = leaderImbalance(placed.map((x) => x.p));
    let elected = 0;
    for (const [broker, ratio] of ratios) {
      if (ratio * 100 <= cfg['leader.imbalance.per.broker.percentage'] || !alive.has(broker)) continue;
      for (const { topic, p } of placed) {
        if (p.replicas[0] !== broker || p.leader === broker || !p.isr.includes(broker) || reassigning(p)) continue;
        try {
          await electLeaderOf(topic, p.partition, 'PREFERRED', lease);
          elected++;
        } catch (err) {
          if (err instanceof leaseStore.LeaseLost) throw err;
          logger.debug({ event: 'preferred-election-skipped', topic, partition: p.partition, err: (err as Error).message }, 'preferred leader election skipped');
        }
      }
    }
    if (elected > 0) logger.info({ event: 'leader-rebalance', elected }, 'preferred leaders restored');
    return elected;
  }

  /** Keeps the status item current: a plan's total is fixed when it begins; done counts what is no longer remaining. */
  private async record(lease: Lease, remaining: number, now: number): Promise<void> {
    const before = this.status ?? await balancerStore.readBalancerStatus();
    let next: balancerStore.BalancerStatus;
    if (remaining === 0) next = { status: 'IDLE', movesDone: before.status === 'IDLE' ? before.movesDone : before.movesTotal, movesTotal: before.movesTotal, ...(before.lastPlanAt !== undefined ? { lastPlanAt: before.lastPlanAt } : {}) };
    else if (before.status === 'IDLE') next = { status: 'MOVING', movesDone: 0, movesTotal: remaining, lastPlanAt: now };
    else {
      const total = Math.max(before.movesTotal, before.movesDone + remaining);
      next = { status: 'MOVING', movesDone: total - remaining, movesTotal: total, lastPlanAt: now };
    }
    if (next.status === before.status && next.movesDone === before.movesDone && next.movesTotal === before.movesTotal) return;
    await balancerStore.writeBalancerStatus(lease, next);
    this.status = next;
  }
}

/** The balancer's status as the controller last wrote it (IDLE, nothing planned, when never). */
export const balancerStatus = balancerStore.readBalancerStatus;
