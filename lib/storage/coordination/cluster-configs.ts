/**
 * The cluster configs, `cluster`/`configs`: the cluster-wide broker configs (Kafka's
 * `--entity-default`), only the ones set, and a version every write bumps
 * (lib/cluster/cluster-configs.ts).
 *
 * Conditional writes:
 * - `writeClusterConfigs(configs, expectVersion)`: one transaction [bumpVersion, Put].
 *   Condition: the item's version is still `expectVersion` (`#ver = :v`; for 0, no item:
 *   `attribute_not_exists(pk)`), and the cluster exists.
 *   Effect: `configs` replaced, `version` = expectVersion + 1; bumps metadataVersion.
 *   Fails: `ClusterConfigsChanged` when another write came first; `ConditionFailed` when the
 *   cluster does not exist.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { CLUSTER_CONFIGS_KEY } from '../tables.js';
import { ConditionFailed, transactWrite } from '../transact.js';
import { bumpVersion, db, table } from './table.js';

/** The cluster configs as stored: only the set ones, and the version a write compares. */
export interface StoredClusterConfigs {
  readonly configs: Readonly<Record<string, string>>;
  /** Bumped by every write; 0 while none was made. */
  readonly version: number;
}

/** Reads the set cluster configs (one strongly consistent GetItem); none set and version 0 when the item is absent. */
export async function readClusterConfigs(): Promise<StoredClusterConfigs> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: CLUSTER_CONFIGS_KEY, ConsistentRead: true }));
  return { configs: (out.Item?.configs as Record<string, string> | undefined) ?? {}, version: (out.Item?.version as number | undefined) ?? 0 };
}

/** Someone else wrote the cluster configs since they were read: the write did nothing. */
export class ClusterConfigsChanged extends Error {
  override readonly name = 'ClusterConfigsChanged';
}

/**
 * Replaces the set cluster configs.
 *
 *   admin A: read (version 4) ── SET x ─────────────── write if version = 4 ✓ (version 5)
 *   admin B:    read (version 4) ── SET y ─────────────────────── write if version = 4 ✗ → read again
 *
 * Condition: the item's version is still `expectVersion` (absent for 0), and the cluster exists.
 * Effects: `configs` replaced, version + 1, the metadata version bumped (caches of the configs drop them).
 * Errors: `ClusterConfigsChanged` when another write came first.
 */
export async function writeClusterConfigs(configs: Readonly<Record<string, string>>, expectVersion: number): Promise<void> {
  try {
    await transactWrite(db(), [
      bumpVersion(),
      {
        Put: {
          TableName: table(),
          Item: { ...CLUSTER_CONFIGS_KEY, configs, version: expectVersion + 1 },
          ...(expectVersion === 0
            ? { ConditionExpression: 'attribute_not_exists(pk)' }
            : { ConditionExpression: '#ver = :v', ExpressionAttributeNames: { '#ver': 'version' }, ExpressionAttributeValues: { ':v': expectVersion } }),
        },
      },
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(1)?.code === 'ConditionalCheckFailed') {
      throw new ClusterConfigsChanged(`the cluster configs changed since version ${expectVersion} was read`);
    }
    throw err;
  }
}
