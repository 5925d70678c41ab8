/**
 * Changes to a partition's state: the ISR shrinking and growing (what Kafka's leader asks of the
 * controller with AlterPartition) and any change the controller decides (elections, reassignments)
 * through `changePartition`. Every change is a compare-and-set on the
 * partition epoch; a lost race re-reads and decides again.
 */
import { KafkaError } from '../protocol/errors.js';
import { logger } from '../logger.js';
import { alterPartition, PartitionChanged, readPartition, type PartitionChange } from '../storage/coordination/partitions.js';
import { type Lease } from '../storage/model.js';
import type { PartitionRecord } from '../storage/model.js';
import { invalidateMetadata } from './metadata.js';

const ATTEMPTS = 5;

/** The state after a change, and whether this call wrote it (false: no change was needed any more). */
interface Changed {
  readonly state: PartitionRecord;
  readonly wrote: boolean;
}

/**
 * Applies `decide` to the current state until a compare-and-set succeeds; `decide` returns
 * undefined when no change is needed any more (a concurrent change that won may have made it so:
 * then nothing is written). Returns the resulting state.
 */
async function change(
  topic: string,
  partition: number,
  decide: (current: PartitionRecord) => PartitionChange | undefined,
  start?: PartitionRecord,
  lease?: Lease,
): Promise<Changed> {
  let current = start ?? (await readPartition(topic, partition));
  for (let attempt = 1; ; attempt++) {
    if (!current) throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${partition} of ${topic} not found.`, { topic, partition });
    const wanted = decide(current);
    if (!wanted) return { state: current, wrote: false };
    try {
      const next = await alterPartition(topic, current, wanted, lease);
      invalidateMetadata(topic);
      return { state: next, wrote: true };
    } catch (err) {
      if (!(err instanceof PartitionChanged) || attempt >= ATTEMPTS) throw err;
      current = err.current ?? (await readPartition(topic, partition));
    }
  }
}

/** The outcome of an ISR shrink. */
export interface IsrShrink {
  /** The partition state after it (as written, or as found when no change was needed). */
  readonly state: PartitionRecord;
  /** Whether this call removed the follower (false: it was gone already, or the leader epoch moved on). */
  readonly shrunk: boolean;
}

/**
 * Removes a follower from the ISR (it failed or fell behind), under the leader epoch the caller
 * saw. `expect` is the state the caller decided on (read now when absent): when a concurrent
 * change won the compare-and-set, the shrink is decided again on the state that won, and writes
 * nothing if the follower is gone already or the leader epoch moved on.
 */
export async function shrinkIsr(topic: string, partition: number, brokerId: number, leaderEpoch: number, reason: string, expect?: PartitionRecord): Promise<IsrShrink> {
  const { state, wrote } = await change(topic, partition, (p) =>
    p.leaderEpoch === leaderEpoch && p.isr.includes(brokerId) && p.leader !== brokerId
      ? { isr: p.isr.filter((b) => b !== brokerId) } : undefined, expect);
  if (wrote) logger.warn({ event: 'isr-shrink', topic, partition, broker: brokerId, leaderEpoch, isr: state.isr, reason }, 'ISR shrink');
  return { state, shrunk: wrote };
}

/**
 * A partition change: `decide` runs on the current state (re-read after a lost race). With the
 * controller's lease the write is fenced by it (errors: `LeaseLost`); without, the compare-and-set
 * on the partition epoch alone orders it against every other change.
 */
export function changePartition(
  topic: string, current: PartitionRecord, decide: (p: PartitionRecord) => PartitionChange | undefined, lease?: Lease,
): Promise<PartitionRecord> {
  return change(topic, current.partition, decide, current, lease).then((c) => c.state);
}

