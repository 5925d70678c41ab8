/**
 * Partition states, `topic#<name>`/`p#<00000n>` (leader, leader epoch, replicas, ISR, a
 * reassignment's adding and removing replicas), changed only by compare-and-set on `partitionEpoch`.
 *
 * Conditional writes:
 * - `alterPartition(topicName, current, change, lease?)`: one transaction [bumpVersion, Put of
 *   the state, and with a lease its leaseCheck].
 *   Condition: the stored state is still at `current.partitionEpoch` with the same topic id
 *   (`partitionEpoch = :pe AND topicId = :id`); with a lease, it is still the caller's
 *   (`holder = :h AND epoch = :e`).
 *   Effect: the state replaced with the change applied (fields given as undefined removed),
 *   `partitionEpoch` + 1; bumps metadataVersion.
 *   Fails: `LeaseLost`; `PartitionChanged` carrying the current state (undefined when none).
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Lease, PartitionRecord } from '../model.js';
import { partitionSk, topicPk } from '../tables.js';
import { ConditionFailed, transactWrite } from '../transact.js';
import { leaseCheck, LeaseLost } from './lease.js';
import { bumpVersion, db, strip, table } from './table.js';

export class PartitionChanged extends Error {
  override readonly name = 'PartitionChanged';
  constructor(readonly current: PartitionRecord | undefined) {
    super(`partition state changed (now at partition epoch ${current?.partitionEpoch ?? 'none'})`);
  }
}

export interface PartitionChange {
  readonly leader?: number;
  readonly leaderEpoch?: number;
  readonly isr?: readonly number[];
  readonly replicas?: readonly number[];
  /** `undefined` removes the field (no reassignment, nothing to purge). */
  readonly addingReplicas?: readonly number[] | undefined;
  readonly removingReplicas?: readonly number[] | undefined;
  readonly purging?: readonly number[] | undefined;
}

/**
 * Changes a partition's state by compare-and-set (Kafka's AlterPartition).
 * Condition: its `partitionEpoch` is still `expectPartitionEpoch` (and the topic id matches), and,
 * for the controller, its lease is still its own.
 * Effects: the changed fields, `partitionEpoch` + 1, the metadata version bumped.
 * Errors: `PartitionChanged` carrying the current state when someone changed it first; `LeaseLost`.
 */
export async function alterPartition(
  topicName: string, current: PartitionRecord, change: PartitionChange, lease?: Lease,
): Promise<PartitionRecord> {
  const next = Object.fromEntries(Object.entries({ ...current, ...change, partitionEpoch: current.partitionEpoch + 1 })
    .filter(([, v]) => v !== undefined)) as unknown as PartitionRecord;
  try {
    await transactWrite(db(), [
      bumpVersion(),
      {
        Put: {
          TableName: table(),
          Item: { pk: topicPk(topicName), sk: partitionSk(current.partition), ...next },
          ConditionExpression: 'partitionEpoch = :pe AND topicId = :id',
          ExpressionAttributeValues: { ':pe': current.partitionEpoch, ':id': current.topicId },
        },
      },
      // The controller's changes are fenced by its lease (index 2).
      ...(lease ? [leaseCheck(lease)] : []),
    ]);
    return next;
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(2)?.code === 'ConditionalCheckFailed') throw new LeaseLost('the controller lease was lost');
    if (err instanceof ConditionFailed && err.at(1)?.code === 'ConditionalCheckFailed') {
      const item = err.at(1)?.current;
      throw new PartitionChanged(item ? strip<PartitionRecord>(item) : undefined);
    }
    throw err;
  }
}

/** One partition's state, strongly consistent. */
export async function readPartition(topicName: string, partition: number): Promise<PartitionRecord | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: { pk: topicPk(topicName), sk: partitionSk(partition) }, ConsistentRead: true }));
  return out.Item ? strip<PartitionRecord>(out.Item) : undefined;
}
