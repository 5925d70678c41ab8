/**
 * The cluster item, `cluster`/`meta`: the cluster id, and the metadata version every metadata
 * change bumps (`bumpVersion` in ./table.ts).
 *
 * Conditional writes:
 * - `createCluster(clusterId)`: one PutItem, made once.
 *   Condition: no cluster item exists (`attribute_not_exists(pk)`).
 *   Effect: the item with `clusterId`, `metadataVersion` 1 and `createdAt`.
 *   Fails: no error: the loser of a race gets the cluster the winner created (the
 *   `ConditionalCheckFailedException` is rethrown only if that read then finds none).
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { ClusterRecord } from '../model.js';
import { CLUSTER_KEY } from '../tables.js';
import { db, strip, table } from './table.js';

/** Reads the cluster item. Strongly consistent. */
export async function readCluster(): Promise<ClusterRecord | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: CLUSTER_KEY, ConsistentRead: true }));
  return out.Item ? strip<ClusterRecord>(out.Item) : undefined;
}

/**
 * Creates the cluster item once.
 * Condition: no cluster item exists. Effect: the cluster exists with `clusterId`, version 1.
 * Lost race: returns the cluster the winner created.
 */
export async function createCluster(clusterId: string): Promise<ClusterRecord> {
  const record: ClusterRecord = { clusterId, metadataVersion: 1, createdAt: new Date().toISOString() };
  try {
    await db().send(new PutCommand({
      TableName: table(), Item: { ...CLUSTER_KEY, ...record }, ConditionExpression: 'attribute_not_exists(pk)',
    }));
    return record;
  } catch (err) {
    if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
    const existing = await readCluster();
    if (!existing) throw err;
    return existing;
  }
}

/** The current metadata version (one small strongly consistent read). */
export async function readMetadataVersion(): Promise<number | undefined> {
  const out = await db().send(new GetCommand({
    TableName: table(), Key: CLUSTER_KEY, ConsistentRead: true, ProjectionExpression: 'metadataVersion',
  }));
  return out.Item?.metadataVersion as number | undefined;
}
