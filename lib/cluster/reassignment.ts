/**
 * Partition reassignment (Kafka's AlterPartitionReassignments, KIP-455), kept in the partition
 * state so that any controller resumes it:
 *
 *   start:    replicas = target ++ removing, addingReplicas, removingReplicas   (ISR unchanged)
 *   sync:     the controller's walk marks the partition for the sweep, which brings each adding replica up (a full sync from the leader's
 *             snapshot, then copies) and adds it to the ISR as it adds any follower
 *   complete: once every adding replica is in the ISR, the controller writes replicas = target,
 *             ISR ∩ target, and a new leader (new epoch) if the leader was removed; the removed
 *             brokers go to `purging`
 *   purge:    the controller's next walk demotes and deletes the removed replicas' data
 *
 * A partition never has fewer in-sync replicas because of a move: nothing leaves the ISR before
 * every replica that replaces it is in it. Every step is a compare-and-set on the partition epoch,
 * so a step decided on a stale state writes nothing, and a controller that dies between steps
 * leaves a state its successor continues from. A cancellation returns to the original replicas.
 */
import { KafkaError } from '../protocol/errors.js';
import { logger } from '../logger.js';
import * as brokerStore from '../storage/coordination/brokers.js';
import * as partitionStore from '../storage/coordination/partitions.js';
import { topicPartitionKey, type BrokerRecord, type Lease, type PartitionRecord } from '../storage/model.js';
import { purgePartition } from '../storage/replica/deletion.js';
import { setRole } from '../storage/replica/head.js';
import { fenceStore } from '../storage/replica/incarnation.js';
import { type ReplicaStoreRef } from '../storage/replica/store.js';
import { ConditionFailed } from '../storage/transact.js';
import { shrinkForController } from './isr-count.js';
import { announceRoles } from './leadership.js';
import { changePartition } from './partition-state.js';
import type { PartitionChange } from '../storage/coordination/partitions.js';

const none: readonly number[] = [];
/** A list field as stored: absent when empty. */
const orNone = (l: readonly number[]): number[] | undefined => (l.length > 0 ? [...l] : undefined);

/** Whether a reassignment is moving the partition. */
export const reassigning = (p: PartitionRecord): boolean => (p.addingReplicas?.length ?? 0) + (p.removingReplicas?.length ?? 0) > 0;
/** The replicas the partition will have once its reassignment completes (its replicas when none runs). */
export const targetReplicas = (p: PartitionRecord): number[] => p.replicas.filter((r) => !(p.removingReplicas ?? none).includes(r));
/** The replicas the partition had before its reassignment began (what a cancellation returns to). */
export const originalReplicas = (p: PartitionRecord): number[] => p.replicas.filter((r) => !(p.addingReplicas ?? none).includes(r));

const sameList = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((x, i) => b[i] === x);

/**
 * The state change that starts (or redirects) a reassignment to `target`: pure. Redirecting one in
 * progress starts from its original replicas, as Kafka does. A target that is the original list
 * reordered only reorders (the preferred leader changes; no data moves).
 */
export function reassignmentChange(p: PartitionRecord, target: readonly number[]): PartitionChange {
  const original = originalReplicas(p);
  const adding = target.filter((r) => !original.includes(r));
  const removing = original.filter((r) => !target.includes(r));
  if (adding.length === 0 && removing.length === 0) {
    return { replicas: [...target], isr: p.isr.filter((r) => target.includes(r)), addingReplicas: undefined, removingReplicas: undefined };
  }
  return { replicas: [...target, ...removing], addingReplicas: orNone(adding), removingReplicas: orNone(removing), isr: p.isr.filter((r) => target.includes(r) || original.includes(r)) };
}

/** Checks a target replica list against the registered brokers (Kafka's INVALID_REPLICA_ASSIGNMENT). */
export function checkTarget(p: PartitionRecord, target: readonly number[], brokers: readonly BrokerRecord[]): void {
  const bad = (why: string) => new KafkaError('INVALID_REPLICA_ASSIGNMENT', `Invalid replica assignment for partition ${p.partition}: ${why}.`);
  if (target.length === 0) throw bad('the replica list is empty');
  if (target.some((r) => !Number.isInteger(r) || r < 0)) throw bad('broker ids are non-negative integers');
  if (new Set(target).size !== target.length) throw bad(`it names a broker twice (${target.join(', ')})`);
  const known = new Map(brokers.map((b) => [b.brokerId, b]));
  const original = originalReplicas(p);
  for (const r of target) {
    const b = known.get(r);
    if (!b) throw bad(`broker ${r} is not registered`);
    if (original.includes(r)) continue;
    if (b.decommissioning) throw bad(`broker ${r} is being removed`);
    if ((p.purging ?? none).includes(r)) {
      throw new KafkaError('REASSIGNMENT_IN_PROGRESS', `Broker ${r} is still deleting its old copy of partition ${p.partition}; try again in a few seconds.`);
    }
  }
}

/**
 * Starts a reassignment of one partition to `target` (or redirects the one in progress). Returns
 * the new state. The write bumps the metadata version: the controller's next walk sees it and
 * asks the sweep to bring the adding replicas up.
 */
export async function startReassignment(topic: string, partition: number, target: readonly number[]): Promise<PartitionRecord> {
  const [p, brokers] = await Promise.all([partitionStore.readPartition(topic, partition), brokerStore.listBrokers()]);
  if (!p) throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${partition} of ${topic} not found.`, { topic, partition });
  checkTarget(p, target, brokers);
  let before = p;
  const next = await changePartition(topic, p, (cur) => {
    checkTarget(cur, target, brokers);
    before = cur;
    const change = reassignmentChange(cur, target);
    const same = sameList(change.replicas ?? cur.replicas, cur.replicas) && sameList(change.addingReplicas ?? none, cur.addingReplicas ?? none)
      && sameList(change.removingReplicas ?? none, cur.removingReplicas ?? none);
    return same ? undefined : change;
  });
  logger.info({ event: 'reassignment-started', topic, partition, from: originalReplicas(before), to: targetReplicas(next), adding: next.addingReplicas ?? [], removing: next.removingReplicas ?? [] }, 'partition reassignment started');
  return next;
}

/**
 * Cancels a partition's reassignment: back to its original replicas; the adding ones leave (their
 * copies are purged). When an adding replica leads by then, the first in-sync original one takes
 * over under a new epoch. Errors: NO_REASSIGNMENT_IN_PROGRESS; ELIGIBLE_LEADERS_NOT_AVAILABLE
 * when no original replica is in sync to lead.
 */
export async function cancelReassignment(topic: string, partition: number): Promise<PartitionRecord> {
  const [p, brokers] = await Promise.all([partitionStore.readPartition(topic, partition), brokerStore.listBrokers()]);
  if (!p) throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${partition} of ${topic} not found.`, { topic, partition });
  const stores = new Map(brokers.map((b) => [b.brokerId, b as ReplicaStoreRef]));
  const alive = new Set(brokers.filter((b) => b.state !== 'fenced').map((b) => b.brokerId));
  const decide = (cur: PartitionRecord): PartitionChange => {
    if (!reassigning(cur)) throw new KafkaError('NO_REASSIGNMENT_IN_PROGRESS', `No reassignment is in progress for partition ${partition} of ${topic}.`);
    const original = originalReplicas(cur);
    const isr = cur.isr.filter((r) => original.includes(r));
    const purging = orNone([...new Set([...(cur.purging ?? none), ...(cur.addingReplicas ?? none)])]);
    const base = { replicas: original, addingReplicas: undefined, removingReplicas: undefined, purging };
    if (original.includes(cur.leader) || cur.leader < 0) return { ...base, isr };
    const leader = original.find((r) => isr.includes(r) && alive.has(r));
    if (leader === undefined) {
      throw new KafkaError('ELIGIBLE_LEADERS_NOT_AVAILABLE', `Cannot cancel the reassignment of partition ${partition}: an added replica leads and no original replica is in sync to take over.`);
    }
    return { ...base, isr, leader, leaderEpoch: cur.leaderEpoch + 1 };
  };
  decide(p); // refuse before touching the leader's count
  const keeps = originalReplicas(p);
  const write = () => changePartition(topic, p, decide);
  // A leader that stays stops counting the leaving members for min.insync.replicas first.
  const next = p.leader >= 0 && keeps.includes(p.leader)
    ? await shrinkForController(topic, p, stores.get(p.leader), topicPartitionKey(p.topicId, partition), p.isr.filter((r) => !keeps.includes(r)), write)
    : await write();
  if (next.leaderEpoch !== p.leaderEpoch) await announceRoles(topic, next, stores);
  logger.info({ event: 'reassignment-cancelled', topic, partition, replicas: next.replicas }, 'partition reassignment cancelled');
  return next;
}

/**
 * The change that completes a reassignment, or undefined while some adding replica is not in the
 * ISR yet (or, when the leader leaves, no live target replica is in sync to take over): pure.
 */
export function completionChange(p: PartitionRecord, alive: ReadonlySet<number>): PartitionChange | undefined {
  if (!reassigning(p)) return undefined;
  if (!(p.addingReplicas ?? none).every((r) => p.isr.includes(r))) return undefined;
  const target = targetReplicas(p);
  const isr = target.filter((r) => p.isr.includes(r));
  const purging = orNone([...new Set([...(p.purging ?? none), ...(p.removingReplicas ?? none)])]);
  const base = { replicas: target, isr, addingReplicas: undefined, removingReplicas: undefined, purging };
  if (target.includes(p.leader) && alive.has(p.leader)) return base;
  const leader = target.find((r) => isr.includes(r) && alive.has(r));
  if (leader === undefined) return undefined;
  return { ...base, leader, leaderEpoch: p.leaderEpoch + 1 };
}

/**
 * The controller's step of a reassignment: completes it when it can (a leader that stays stops
 * counting the leaving members for min.insync.replicas before the state drops them). Returns the
 * state after it. Errors: `LeaseLost`.
 */
export async function completeReassignment(
  topic: string, p: PartitionRecord, alive: ReadonlySet<number>, stores: ReadonlyMap<number, ReplicaStoreRef>, lease: Lease,
): Promise<PartitionRecord> {
  const change = completionChange(p, alive);
  if (!change) return p;
  const write = () => changePartition(topic, p, (cur) => completionChange(cur, alive), lease);
  const keepsLeader = change.leader === undefined;
  const next = keepsLeader
    ? await shrinkForController(topic, p, stores.get(p.leader), topicPartitionKey(p.topicId, p.partition), p.isr.filter((r) => !(change.isr ?? []).includes(r)), write)
    : await write();
  if (reassigning(next)) return next; // the state changed under us: the next walk decides again
  logger.info({ event: 'reassignment-completed', topic, partition: p.partition, replicas: next.replicas, leader: next.leader, leaderEpoch: next.leaderEpoch }, 'partition reassignment completed');
  if (next.leaderEpoch !== p.leaderEpoch) await announceRoles(topic, next, stores);
  return next;
}

/**
 * Deletes the copies that brokers in `purging` still hold (demoted first, so a stale leader takes no
 * append while it goes), then drops them from `purging`. Each store is claimed for the lease's
 * epoch first and every delete checks the claim: a controller deposed in the middle deletes
 * nothing once its successor claimed the store (whose purge may be done, and the broker given the
 * partition again). A broker that is fenced keeps its entry (tried again when it is back); one no
 * longer registered, or in the replicas again, is dropped without deleting. A copy not deleted by
 * `until` (epoch ms) keeps its entry too: the next walk deletes on from where this one stopped, so
 * no walk is held up by a large copy. Returns the state after it. Errors: `LeaseLost`.
 */
export async function purgeRemoved(
  topic: string, p: PartitionRecord, alive: ReadonlySet<number>, stores: ReadonlyMap<number, ReplicaStoreRef>, lease: Lease,
  until = Number.POSITIVE_INFINITY,
): Promise<PartitionRecord> {
  const purging = p.purging ?? none;
  if (purging.length === 0) return p;
  const tp = topicPartitionKey(p.topicId, p.partition);
  const done: number[] = [];
  for (const b of purging) {
    const store = stores.get(b);
    if (!store || p.replicas.includes(b)) {
      done.push(b);
      continue;
    }
    if (!alive.has(b)) continue;
    try {
      if (!(await fenceStore(store, lease.epoch))) {
        logger.info({ event: 'replica-purge-fenced', topic, partition: p.partition, broker: b, controllerEpoch: lease.epoch }, 'a newer controller claimed the store (or it has no incarnation yet): not purging');
        continue;
      }
      await setRole(store, tp, 'follower', p.leaderEpoch).catch((err: unknown) => {
        if (!(err instanceof ConditionFailed)) throw err; // no head left, or a newer epoch: nothing to demote
      });
      if (!(await purgePartition(store, tp, lease.epoch, until))) continue;
      done.push(b);
      logger.info({ event: 'replica-purged', topic, partition: p.partition, broker: b }, 'removed replica\'s data deleted');
    } catch (err) {
      if (err instanceof ConditionFailed) {
        logger.info({ event: 'replica-purge-fenced', topic, partition: p.partition, broker: b, controllerEpoch: lease.epoch }, 'a newer controller claimed the store mid-purge: stopped');
        continue;
      }
      logger.warn({ event: 'replica-purge-failed', topic, partition: p.partition, broker: b, err }, 'could not delete a removed replica\'s data; the next walk tries again');
    }
  }
  if (done.length === 0) return p;
  return changePartition(topic, p, (cur) => {
    const left = (cur.purging ?? none).filter((b) => !done.includes(b));
    return left.length === (cur.purging ?? none).length ? undefined : { purging: orNone(left) };
  }, lease);
}
