/**
 * When the garbage pass last ran, `cluster`/`garbage`: `lastRunAt` (ms). Kept in the table, not in
 * a process, so that a pass an hour apart runs though no Lambda container lives an hour.
 *
 * Conditional writes:
 * - `claimGarbagePass(seen, at)`: Update `lastRunAt = at`.
 *   Condition: the clock is still as the caller read it (`lastRunAt = :seen`; with `seen`
 *   undefined, no clock yet: `attribute_not_exists(pk)`), so of two controllers that find the pass
 *   due, one runs it. No metadataVersion bump.
 *   Fails: returns false (another claimed it, or started the clock).
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { GARBAGE_CLOCK_KEY } from '../tables.js';
import { db, table } from './table.js';

/** When the garbage pass last ran (or the clock started); undefined before the first claim. */
export async function readGarbageClock(): Promise<number | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: GARBAGE_CLOCK_KEY, ConsistentRead: true }));
  return out.Item?.lastRunAt as number | undefined;
}

/** Sets the clock to `at` if it is still `seen` (see the file's comment). */
export async function claimGarbagePass(seen: number | undefined, at: number): Promise<boolean> {
  try {
    await db().send(new UpdateCommand({
      TableName: table(),
      Key: GARBAGE_CLOCK_KEY,
      UpdateExpression: 'SET lastRunAt = :at',
      ConditionExpression: seen === undefined ? 'attribute_not_exists(pk)' : 'lastRunAt = :seen',
      ExpressionAttributeValues: { ':at': at, ...(seen === undefined ? {} : { ':seen': seen }) },
    }));
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}
