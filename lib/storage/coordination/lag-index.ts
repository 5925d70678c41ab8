/**
 * The lag index, `lagging`/`<topicId>#<partition>`: partitions whose followers lag their leader
 * (docs/architecture.md, "Replication liveness"). The replication run that finds a follower behind
 * the leader writes the mark (only when the leader's head says none is set: transitions cost a
 * write, appends do not); the run that finds every follower caught up deletes it. The controller's
 * sweep reads the whole index with one Query per pass, so its steady cost follows the lagging
 * partitions, not all partitions.
 *
 * Conditional writes:
 * - `clearLagging(topicId, partition, markedAt?)`: one DeleteItem.
 *   Condition: with `markedAt`, the mark is gone already or was written at that time
 *   (`attribute_not_exists(pk) OR markedAt = :m`); without it, none.
 *   Effect: the mark deleted.
 *   Fails: returns false (a newer mark stays).
 * `markLagging` is an unconditional Put (a second mark only moves `markedAt`).
 */
import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { LAG_PK, lagKey } from '../tables.js';
import { db, queryAll, strip, table } from './table.js';

/** One partition the lag index names. `markedAt`: when the mark was (last) written. */
export interface LagMark {
  readonly topic: string;
  readonly topicId: string;
  readonly partition: number;
  readonly markedAt: number;
}

let lastMarkedAt = 0;

/**
 * Marks a partition as lagging.
 * Condition: none (idempotent; a second mark only moves `markedAt`). Effects: the mark item.
 * Errors: store failures only.
 */
export async function markLagging(topic: string, topicId: string, partition: number, now?: number): Promise<LagMark> {
  // A clear is conditioned on `markedAt`: two marks from this process never share one.
  const markedAt = now ?? (lastMarkedAt = Math.max(Date.now(), lastMarkedAt + 1));
  const mark: LagMark = { topic, topicId, partition, markedAt };
  await db().send(new PutCommand({ TableName: table(), Item: { ...lagKey(topicId, partition), ...mark } }));
  return mark;
}

/**
 * Clears a partition's lag mark.
 * Condition: with `markedAt`, only the mark written at that time (a sweep that found a partition
 * caught up must not delete a newer mark a run wrote since); without it, any mark. A mark that is
 * already gone is not an error.
 * Effects: the mark item deleted. Returns false when `markedAt` did not match (a newer mark stays).
 * Errors: store failures only.
 */
export async function clearLagging(topicId: string, partition: number, markedAt?: number): Promise<boolean> {
  try {
    await db().send(new DeleteCommand({
      TableName: table(), Key: lagKey(topicId, partition),
      ...(markedAt !== undefined ? {
        ConditionExpression: 'attribute_not_exists(pk) OR markedAt = :m', ExpressionAttributeValues: { ':m': markedAt },
      } : {}),
    }));
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}

/** Every lag mark (one strongly consistent Query, paged). */
export async function listLagging(): Promise<LagMark[]> {
  const items = await queryAll({ KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': LAG_PK } });
  return items.map((i) => strip<LagMark>(i));
}
