/**
 * Strongly consistent BatchGetItem of any number of keys of one table: 100 keys a call, the keys a
 * call leaves unprocessed asked again with backoff. Failure: throws `KeysUnprocessed` once
 * unprocessed keys outlast `attempts` calls (9 unless given). Items come back in no particular
 * order; missing keys are absent.
 */
import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * Keys a BatchGetItem left unprocessed after its last attempt: DynamoDB leaves keys unprocessed
 * when it throttles them, so this is a throttled read, and it carries a throttled read's name
 * (lib/errors.ts counts it as a store that did not answer).
 */
export class KeysUnprocessed extends Error {
  override readonly name = 'ThrottlingException';
}

export async function batchGetAll(db: DynamoDBDocumentClient, table: string, keys: readonly Record<string, unknown>[], attempts = 9): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  for (let i = 0; i < keys.length; i += 100) {
    let pending: Record<string, unknown>[] | undefined = keys.slice(i, i + 100);
    for (let attempt = 0; pending && pending.length > 0; attempt++) {
      if (attempt >= attempts) throw new KeysUnprocessed(`BatchGetItem on ${table} left ${pending.length} keys unprocessed (throttled)`);
      if (attempt > 0) await new Promise((r) => setTimeout(r, 20 * 2 ** attempt));
      const out = await db.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: pending, ConsistentRead: true } } }));
      items.push(...(out.Responses?.[table] ?? []));
      pending = out.UnprocessedKeys?.[table]?.Keys as Record<string, unknown>[] | undefined;
    }
  }
  return items;
}
