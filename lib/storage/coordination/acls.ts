/**
 * Kafka ACLs in the coordination table: one item per binding under pk `acls`, its sort key the
 * binding's canonical string, so one Query reads them all and an equal binding is the same item.
 * Every write bumps the metadata version in its transaction: caches that check the version
 * (lib/cluster/metadata.ts) see a change within their max age.
 *
 * Conditional writes:
 * - `createAcls(records)`: transactions of [bumpVersion, up to 99 Puts].
 *   Condition: the cluster exists (the bump's `attribute_exists(pk)`); none on the bindings (one
 *   stored already is written again unchanged).
 *   Effect: one item per binding; bumps metadataVersion once per transaction.
 *   Fails: `ConditionFailed` when the cluster was never bootstrapped.
 * - `deleteAcls(records)`: transactions of [bumpVersion, up to 99 Deletes].
 *   Condition: each binding's item exists (`attribute_exists(pk)`), and the cluster does.
 *   Effect: the items deleted; bumps metadataVersion.
 *   Fails: no error for a binding deleted first by someone else: the transaction is retried
 *   without it, and it is left out of the result; `ConditionFailed` when the cluster does not exist.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { config } from '../../config.js';
import { dynamo } from '../clients.js';
import { bumpVersion } from './table.js';
import { ACLS_PK } from '../tables.js';
import { ConditionFailed, MAX_TRANSACTION_ITEMS, transactWrite } from '../transact.js';

/** A stored binding, as lib/security/acls.ts validated it (Kafka's enum names as strings). */
export interface AclRecord {
  readonly resourceType: string;
  readonly resourceName: string;
  readonly patternType: string;
  readonly principal: string;
  readonly host: string;
  readonly operation: string;
  readonly permission: string;
}

const table = (): string => config().coordinationTable;

/** The item's sort key: the binding's fields in a fixed order, JSON-encoded (names may hold any character). */
export const aclSortKey = (r: AclRecord): string =>
  JSON.stringify([r.resourceType, r.patternType, r.resourceName, r.principal, r.host, r.operation, r.permission]);

const toRecord = (i: Record<string, unknown>): AclRecord => ({
  resourceType: i.resourceType as string, resourceName: i.resourceName as string, patternType: i.patternType as string,
  principal: i.principal as string, host: i.host as string, operation: i.operation as string, permission: i.permission as string,
});

/** Every stored binding: one strongly consistent Query (paged past 1 MB). */
export async function listAcls(): Promise<AclRecord[]> {
  const items: AclRecord[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await dynamo().send(new QueryCommand({
      TableName: table(), ConsistentRead: true, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': ACLS_PK }, ExclusiveStartKey: start,
    }));
    items.push(...(out.Items ?? []).map(toRecord));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

/** Distinct by sort key: a transaction may not touch one item twice. */
function distinct(records: readonly AclRecord[]): AclRecord[] {
  return [...new Map(records.map((r) => [aclSortKey(r), r])).values()];
}

/**
 * Stores bindings. Idempotent: a binding stored already is written again unchanged.
 * Condition: the cluster exists (the version bump's). Effects: one item per binding; the metadata
 * version bumped once per transaction of up to 99 bindings (more are several transactions, each
 * complete on its own). Errors: `ConditionFailed` when the cluster was never bootstrapped.
 */
export async function createAcls(records: readonly AclRecord[]): Promise<void> {
  const all = distinct(records);
  for (let i = 0; i < all.length; i += MAX_TRANSACTION_ITEMS - 1) {
    await transactWrite(dynamo(), [
      bumpVersion(),
      ...all.slice(i, i + MAX_TRANSACTION_ITEMS - 1).map((r) => ({ Put: { TableName: table(), Item: { pk: ACLS_PK, sk: aclSortKey(r), ...r } } })),
    ]);
  }
}

/**
 * Deletes these bindings (found by the caller's filter) and returns those this call deleted.
 * Condition: each item still exists. Effects: the items gone; the metadata version bumped.
 * Lost race: a binding another deleter removed first fails its condition, cancelling the
 * transaction; it is left out (not reported as deleted by this call) and the rest are deleted
 * again, so two concurrent deletes together report each binding once.
 */
export async function deleteAcls(records: readonly AclRecord[]): Promise<AclRecord[]> {
  const deleted: AclRecord[] = [];
  const all = distinct(records);
  for (let i = 0; i < all.length; i += MAX_TRANSACTION_ITEMS - 1) {
    let chunk = all.slice(i, i + MAX_TRANSACTION_ITEMS - 1);
    while (chunk.length > 0) {
      try {
        await transactWrite(dynamo(), [
          bumpVersion(),
          ...chunk.map((r) => ({ Delete: { TableName: table(), Key: { pk: ACLS_PK, sk: aclSortKey(r) }, ConditionExpression: 'attribute_exists(pk)' } })),
        ]);
        deleted.push(...chunk);
        break;
      } catch (err) {
        if (!(err instanceof ConditionFailed) || err.at(0)) throw err;
        // Item k of the transaction is chunk[k - 1]: drop the ones already gone.
        const gone = new Set(err.items.filter((f) => f.code === 'ConditionalCheckFailed').map((f) => f.index - 1));
        if (gone.size === 0) throw err;
        chunk = chunk.filter((_, k) => !gone.has(k));
      }
    }
  }
  return deleted;
}
