/**
 * Client quotas in the coordination table: Kafka's per-principal `producer_byte_rate`,
 * `consumer_byte_rate` and `request_rate` (lib/security/quotas.ts enforces them), and the
 * per-second usage counters the Lambda instances draw allowance from.
 *
 * Keys: `client-quotas`/`<principal>` (one Query lists them all; `<default>` is Kafka's default
 * entity); `quota#<principal>`/`<kind>#<epoch second>` for the usage of one kind in one second,
 * with `expiresAt` (epoch seconds) for the table's TTL.
 *
 * Conditional writes:
 * - `putClientQuota(principal, values)`: one transaction [bumpVersion, Put].
 *   Condition: the cluster exists; none on the item (concurrent writers: the last one wins).
 *   Effect: `client-quotas`/`<principal>` holds exactly `values`; bumps metadataVersion.
 *   Fails: `ConditionFailed` when the cluster does not exist.
 * - `deleteClientQuota(principal)`: one transaction [bumpVersion, Delete].
 *   Condition: the item exists (`attribute_exists(pk)`), and the cluster does.
 *   Effect: the item deleted; bumps metadataVersion.
 *   Fails: `ClientQuotaNotFound` (a lost race included).
 * `drawQuotaUsage` is an unconditional atomic ADD: concurrent draws serialize on the counter.
 */
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { config } from '../../config.js';
import { dynamo } from '../clients.js';
import { bumpVersion } from './table.js';
import { CLIENT_QUOTAS_PK, quotaUsagePk } from '../tables.js';
import { ConditionFailed, transactWrite } from '../transact.js';

const table = (): string => config().coordinationTable;
const db = () => dynamo();


/** Kafka's quota keys; each optional (unset = no limit of that kind, or the default entity's). */
export interface ClientQuotaValues {
  readonly producer_byte_rate?: number;
  readonly consumer_byte_rate?: number;
  readonly request_rate?: number;
}

export interface ClientQuotaRecord extends ClientQuotaValues {
  readonly principal: string;
}

const QUOTA_KEYS = ['producer_byte_rate', 'consumer_byte_rate', 'request_rate'] as const;

function toRecord(item: Record<string, unknown>): ClientQuotaRecord {
  const out: Record<string, unknown> = { principal: item.sk as string };
  for (const k of QUOTA_KEYS) if (typeof item[k] === 'number') out[k] = item[k];
  return out as unknown as ClientQuotaRecord;
}

/** Every principal's quotas (one strongly consistent Query, paged), sorted by principal. */
export async function listClientQuotas(): Promise<ClientQuotaRecord[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await db().send(new QueryCommand({
      TableName: table(), ConsistentRead: true, KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': CLIENT_QUOTAS_PK }, ExclusiveStartKey: start,
    }));
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start);
  return items.map(toRecord).sort((a, b) => a.principal.localeCompare(b.principal));
}

/**
 * Sets a principal's quotas, replacing what it had (Kafka's alterClientQuotas with every key given).
 * Condition: the cluster exists. Effects: `client-quotas`/`<principal>` holds exactly `values`; the
 * metadata version is bumped in the same transaction, so every instance's quota cache drops.
 * Concurrent writers: the last one wins (both are whole replacements; neither reads first).
 */
export async function putClientQuota(principal: string, values: ClientQuotaValues): Promise<void> {
  const item: Record<string, unknown> = { pk: CLIENT_QUOTAS_PK, sk: principal };
  for (const k of QUOTA_KEYS) if (values[k] !== undefined) item[k] = values[k];
  await transactWrite(db(), [bumpVersion(), { Put: { TableName: table(), Item: item } }]);
}

/** The principal had no quotas (never set, or deleted first by someone else). */
export class ClientQuotaNotFound extends Error {
  override readonly name = 'ClientQuotaNotFound';
}

/**
 * Removes a principal's quotas.
 *
 *   admin A: DELETE alice ── delete if exists ✓ (version + 1)
 *   admin B:    DELETE alice ───────────────── delete if exists ✗ → ClientQuotaNotFound
 *
 * Condition: the item exists. Effects: gone; the metadata version bumped.
 * Errors: `ClientQuotaNotFound` when it does not exist (a lost race included).
 */
export async function deleteClientQuota(principal: string): Promise<void> {
  try {
    await transactWrite(db(), [
      bumpVersion(),
      { Delete: { TableName: table(), Key: { pk: CLIENT_QUOTAS_PK, sk: principal }, ConditionExpression: 'attribute_exists(pk)' } },
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(1)?.code === 'ConditionalCheckFailed') {
      throw new ClientQuotaNotFound(`no client quota for ${principal}`);
    }
    throw err;
  }
}

/** How long a usage counter is kept after its second (the TTL; only the current second is read). */
const USAGE_TTL_SECONDS = 120;

/**
 * Draws `amount` from a principal's usage counter for one kind and one second.
 * Inputs: the principal, the kind (`produce`, `fetch`, `request`), the epoch second, the amount.
 * Condition: none — an atomic ADD, so concurrent draws serialize on the item and each learns the
 * total including its own amount. Effects: `used` += amount; `expiresAt` set for the TTL.
 * Returns: the counter after this draw (so `used - amount` is what others drew before it).
 */
export async function drawQuotaUsage(principal: string, kind: string, second: number, amount: number): Promise<number> {
  const out = await db().send(new UpdateCommand({
    TableName: table(),
    Key: { pk: quotaUsagePk(principal), sk: `${kind}#${second}` },
    UpdateExpression: 'ADD used :a SET expiresAt = :ttl',
    ExpressionAttributeValues: { ':a': amount, ':ttl': second + USAGE_TTL_SECONDS },
    ReturnValues: 'UPDATED_NEW',
  }));
  return Number(out.Attributes?.used ?? amount);
}
