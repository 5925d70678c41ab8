/**
 * Table definitions — the one source for the local stack (which creates them) and the CDK
 * construct (which deploys them), with the keys of the coordination table's item families. What the
 * items hold: docs/architecture.md, "Storage".
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

/**
 * The coordination table's partition keys, one per item family (lib/storage/coordination/, groups.ts,
 * segments.ts, acls.ts, quotas.ts), as IAM `StringLike` patterns of `dynamodb:LeadingKeys`: what a function may write is named
 * with these, and its role can write items under no other key.
 */
export const COORDINATION_KEYS = {
  /** `cluster`/`meta`: the cluster id and the metadata version every metadata change bumps. */
  cluster: 'cluster',
  brokers: 'brokers',
  /** The topic list, the collision keys, topic ids → names. */
  topicList: 'topics',
  topicKeys: 'topic-keys',
  topicIds: 'topic-ids',
  /** A topic's meta item and its partition states. */
  topic: 'topic#*',
  producers: 'producers',
  /** The controller lease. */
  lease: 'controller',
  lagging: 'lagging',
  groupList: 'groups',
  group: 'group#*',
  offsets: 'offsets#*',
  segments: 'seg#*',
  /** Kafka ACLs, one item per binding (lib/storage/acls.ts). */
  acls: 'acls',
  /** The broker list the deployment writes (DEPLOYED_BROKERS_ITEM). */
  deployment: 'deployment',
  /** Client quotas per principal (lib/storage/quotas.ts). */
  clientQuotas: 'client-quotas',
  /** Per-second quota usage counters every HTTP function draws allowance from. */
  quotaUsage: 'quota#*',
} as const;

export type CoordinationKey = keyof typeof COORDINATION_KEYS;

/**
 * The coordination table item in which a deployment names its brokers: `brokers` is JSON
 * `[{brokerId, replicaTable, rack}]`, `version` changes with it. The CDK construct writes it on
 * every create and update (64 brokers with long table names would not fit in the 4 KB a Lambda
 * environment holds); the controller registers the brokers, and the cluster, once per version
 * (lib/orchestration/controller-loop.ts).
 */
export const DEPLOYED_BROKERS_ITEM = { pk: 'deployment', sk: 'brokers' } as const;
