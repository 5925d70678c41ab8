/**
 * Moving a live partition's leadership on purpose (Kafka's ElectLeaders): a preferred election
 * hands it to the first replica when that one is alive and in sync; an unclean one (only where the
 * topic allows it) to the first live replica when no ISR member is alive. Each is one
 * compare-and-set of the partition state under a new leader epoch, then the replicas are told
 * their roles at once, as the controller would (its next walk repeats what failed here).
 */
import { KafkaError } from '../protocol/errors.js';
import { logger } from '../logger.js';
import * as brokerStore from '../storage/coordination/brokers.js';
import * as topicStore from '../storage/coordination/topics.js';
import { topicPartitionKey, type Lease, type PartitionRecord } from '../storage/model.js';
import { setRole } from '../storage/replica/head.js';
import { type ReplicaStoreRef } from '../storage/replica/store.js';
import { ConditionFailed } from '../storage/transact.js';
import { uncleanCandidate } from './election.js';
import { changePartition } from './partition-state.js';
import { stringConfig } from './topic-configs.js';

export type ElectionType = 'PREFERRED' | 'UNCLEAN';

/** Who leads after an election of this type, or why none can: pure. */
export function electionChoice(p: PartitionRecord, alive: ReadonlySet<number>, type: ElectionType, uncleanAllowed: boolean): number | KafkaError {
  const where = `partition ${p.partition}`;
  if (type === 'PREFERRED') {
    const preferred = p.replicas[0] as number;
    if (p.leader === preferred) return new KafkaError('ELECTION_NOT_NEEDED', `The preferred replica ${preferred} already leads ${where}.`);
    if (!alive.has(preferred) || !p.isr.includes(preferred)) {
      return new KafkaError('PREFERRED_LEADER_NOT_AVAILABLE', `The preferred replica ${preferred} of ${where} is not ${alive.has(preferred) ? 'in sync' : 'alive'}.`);
    }
    return preferred;
  }
  if (p.leader >= 0 && alive.has(p.leader)) return new KafkaError('ELECTION_NOT_NEEDED', `Broker ${p.leader} leads ${where}: an unclean election is only for a partition without a live leader.`);
  if (!uncleanAllowed) {
    return new KafkaError('POLICY_VIOLATION', `Unclean leader election is not allowed for this topic (unclean.leader.election.enable=false): acknowledged records could be lost.`);
  }
  const live = uncleanCandidate(p, alive);
  if (live === undefined) return new KafkaError('ELIGIBLE_LEADERS_NOT_AVAILABLE', `No replica of ${where} is alive (a replica a reassignment is still adding cannot lead).`);
  return live;
}

/**
 * Elects a leader for one partition: the state write, then the role pushes. `lease` fences the
 * write when the controller elects. Errors: the KafkaErrors of `electionChoice`; `LeaseLost`.
 */
export async function electLeaderOf(topic: string, partition: number, type: ElectionType, lease?: Lease): Promise<PartitionRecord> {
  const view = await topicStore.readTopic(topic);
  const p = view?.partitions[partition];
  if (!view || view.topic.state !== 'active' || !p) throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${partition} of ${topic} not found.`, { topic, partition });
  const brokers = await brokerStore.listBrokers();
  const alive = new Set(brokers.filter((b) => b.state !== 'fenced').map((b) => b.brokerId));
  const unclean = stringConfig(view.topic.configs, 'unclean.leader.election.enable') === 'true';
  let failure: KafkaError | undefined;
  const next = await changePartition(topic, p, (cur) => {
    const choice = electionChoice(cur, alive, type, unclean);
    if (choice instanceof KafkaError) {
      failure = choice;
      return undefined;
    }
    failure = undefined;
    return { leader: choice, leaderEpoch: cur.leaderEpoch + 1, isr: type === 'UNCLEAN' ? [choice] : cur.isr };
  }, lease);
  if (failure) throw failure;
  logger.warn({ event: 'leader-elected', topic, partition, from: p.leader, to: next.leader, leaderEpoch: next.leaderEpoch, election: type }, `${type.toLowerCase()} leader election`);
  await announceRoles(topic, next, new Map(brokers.map((b) => [b.brokerId, b])));
  return next;
}

/**
 * Tells a partition's live replicas the role and leader epoch its state says (the leader first, with
 * the ISR it counts). Best effort: a replica that does not answer learns it from the controller's
 * next walk, or from the leader when it copies (`behind-epoch`).
 */
export async function announceRoles(topic: string, p: PartitionRecord, stores: ReadonlyMap<number, ReplicaStoreRef>): Promise<void> {
  const tp = topicPartitionKey(p.topicId, p.partition);
  const tell = async (b: number) => {
    const store = stores.get(b);
    if (!store) return;
    try {
      await setRole(store, tp, b === p.leader ? 'leader' : 'follower', p.leaderEpoch, b === p.leader ? p.isr : undefined);
    } catch (err) {
      if (err instanceof ConditionFailed) return; // it knows a newer epoch already (or holds no copy yet)
      logger.warn({ event: 'role-push-failed', topic, partition: p.partition, broker: b, err }, 'could not tell a replica its role');
    }
  };
  if (p.leader >= 0) await tell(p.leader);
  await Promise.all(p.replicas.filter((b) => b !== p.leader).map(tell));
}
