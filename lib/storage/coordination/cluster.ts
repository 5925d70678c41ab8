/**
 * The cluster item, `cluster`/`meta`: the cluster id, and the metadata version every metadata
 * change bumps (`bumpVersion` in ./table.ts).
 *
 * Conditional writes:
 * - `createCluster(clusterId, configs)`: one transaction, made once: Put of the cluster item, and
 *   with `configs` Put of the cluster configs item (no condition: no cluster, no configs item).
 *   Condition: no cluster item exists (`attribute_not_exists(pk)`).
 *   Effect: the item with `clusterId`, `metadataVersion` 1 and `createdAt`; the configs, version 1.
 *   Fails: no error: the loser of a race gets the cluster the winner created (the
 *   `ConditionalCheckFailedException` is rethrown only if that read then finds none).
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { ClusterRecord } from '../model.js';
import { CLUSTER_CONFIGS_KEY, CLUSTER_KEY } from '../tables.js';
import { ConditionFailed, transactWrite } from '../transact.js';
import { db, strip, table } from './table.js';

/** Reads the cluster item. Strongly consistent. */
export async function readCluster(): Promise<ClusterRecord | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: CLUSTER_KEY, ConsistentRead: true }));
  return out.Item ? strip<ClusterRecord>(out.Item) : undefined;
}

/**
 * Creates the cluster item once, with the cluster configs a new cluster starts with (the
 * `cluster`/`configs` item, ./cluster-configs.ts), in one transaction.
 * Condition: no cluster item exists. Effect: the cluster exists with `clusterId`, version 1, and
 * `configs` set (version 1 of the configs item) when given.
 * Lost race: returns the cluster the winner created.
 */
export async function createCluster(clusterId: string, configs?: Readonly<Record<string, string>>): Promise<ClusterRecord> {
  const record: ClusterRecord = { clusterId, metadataVersion: 1, createdAt: new Date().toISOString() };
  try {
    await transactWrite(db(), [
      { Put: { TableName: table(), Item: { ...CLUSTER_KEY, ...record }, ConditionExpression: 'attribute_not_exists(pk)' } },
      ...(configs ? [{ Put: { TableName: table(), Item: { ...CLUSTER_CONFIGS_KEY, configs, version: 1 } } }] : []),
    ]);
    return record;
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
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
