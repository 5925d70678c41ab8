/**
 * Table definitions — the one source for the local stack (which creates them) and the CDK
 * construct (which deploys them). What the items hold: docs/architecture.md, "Components".
 */

export type KeyType = 'S' | 'N' | 'B';

export interface TableSpec {
  readonly name: string;
  readonly partitionKey: { readonly name: string; readonly type: KeyType };
  readonly sortKey: { readonly name: string; readonly type: KeyType };
  /** DynamoDB Streams view: the replica tables feed the replicator, the coordination table wakes the controller. */
  readonly stream?: 'NEW_IMAGE';
  /** The attribute (epoch seconds) after which DynamoDB deletes an item: the quota usage counters' `expiresAt`. */
  readonly timeToLiveAttribute?: string;
}

/** Default prefix of every table name (`TRIBUTARY_TABLE_PREFIX` in the local stack, a prop in the CDK). */
export const DEFAULT_TABLE_PREFIX = 'tributary';

export function coordinationTableSpec(prefix = DEFAULT_TABLE_PREFIX): TableSpec {
  return {
    name: `${prefix}-coordination`,
    partitionKey: { name: 'pk', type: 'S' },
    sortKey: { name: 'sk', type: 'S' },
    stream: 'NEW_IMAGE',
    timeToLiveAttribute: 'expiresAt',
  };
}

/** One replica table per broker: `tp` = `<topicId>#<partition>`, `off` = -1 for the head, else a batch's last offset. */
export function replicaTableSpec(brokerId: number, prefix = DEFAULT_TABLE_PREFIX): TableSpec {
  return {
    name: `${prefix}-broker-${brokerId}`,
    partitionKey: { name: 'tp', type: 'S' },
    sortKey: { name: 'off', type: 'N' },
    stream: 'NEW_IMAGE',
  };
}
