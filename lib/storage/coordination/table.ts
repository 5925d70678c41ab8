/**
 * The coordination table's internals, shared by the modules of this folder: the table name, the
 * client, a paged strongly consistent Query, the key stripping every read does, and the version
 * bump. Every metadata change bumps `cluster`/`meta` `metadataVersion` in the same transaction, so
 * caches can tell they are stale with one small read. Keys: lib/storage/tables.ts.
 *
 * Conditional writes (a transaction item, for the callers' transactions):
 * - `bumpVersion()`: an Update of `cluster`/`meta`, in every metadata write of this folder, acls.ts
 *   and quotas.ts.
 *   Condition: the cluster exists (`attribute_exists(pk)`).
 *   Effect: bumps metadataVersion (`ADD metadataVersion :one`).
 *   Fails: cancels the whole transaction; no caller maps this item's failure to a domain error, so
 *   the caller gets `ConditionFailed` (the cluster was never bootstrapped).
 */
import { QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { config } from '../../config.js';
import { dynamo } from '../clients.js';
import { CLUSTER_KEY } from '../tables.js';

export const table = (): string => config().coordinationTable;
export const db = () => dynamo();

/** The transaction item that bumps the metadata version (and requires the cluster to exist). Other coordination-table modules (acls.ts, quotas.ts) put it in their transactions too. */
export const bumpVersion = () => ({
  Update: {
    TableName: table(),
    Key: CLUSTER_KEY,
    UpdateExpression: 'ADD metadataVersion :one',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeValues: { ':one': 1 },
  },
});

export async function queryAll(input: Omit<QueryCommandInput, 'TableName'>): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await db().send(new QueryCommand({ TableName: table(), ConsistentRead: true, ...input, ExclusiveStartKey: start }));
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

export function strip<T>(item: Record<string, unknown>): T {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return rest as T;
}
