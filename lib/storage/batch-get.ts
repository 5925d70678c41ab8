/**
 * Strongly consistent BatchGetItem of any number of keys of one table: 100 keys a call, the keys a
 * call leaves unprocessed asked again with backoff. Failure: throws once unprocessed keys outlast
 * 8 retries. Items come back in no particular order; missing keys are absent.
 */
import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export async function batchGetAll(db: DynamoDBDocumentClient, table: string, keys: readonly Record<string, unknown>[]): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  for (let i = 0; i < keys.length; i += 100) {
    let pending: Record<string, unknown>[] | undefined = keys.slice(i, i + 100);
    for (let attempt = 0; pending && pending.length > 0; attempt++) {
      if (attempt > 8) throw new Error(`BatchGetItem on ${table} left ${pending.length} keys unprocessed`);
      if (attempt > 0) await new Promise((r) => setTimeout(r, 20 * 2 ** attempt));
      const out = await db.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: pending, ConsistentRead: true } } }));
      items.push(...(out.Responses?.[table] ?? []));
      pending = out.UnprocessedKeys?.[table]?.Keys as Record<string, unknown>[] | undefined;
    }
  }
  return items;
}
