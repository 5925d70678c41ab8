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
    // Batch items below the tail start (rolled into segments) expire instead of being deleted.
    timeToLiveAttribute: 'expiresAt',
  };
}

/**
 * The coordination table's partition keys, one per item family (lib/storage/coordination/), as IAM `StringLike` patterns of `dynamodb:LeadingKeys`: what a function may write is named
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
  /** Kafka ACLs, one item per binding (lib/storage/coordination/acls.ts). */
  acls: 'acls',
  /** The broker list the deployment writes (DEPLOYED_BROKERS_ITEM). */
  deployment: 'deployment',
  /** Client quotas per principal (lib/storage/coordination/quotas.ts). */
  clientQuotas: 'client-quotas',
  /** Per-second quota usage counters every HTTP function draws allowance from. */
  quotaUsage: 'quota#*',
  /** Transactional ids' coordinator state, and the marks of aborted transactions (lib/storage/coordination/transactions.ts). */
  transactions: 'txn',
  abortedTransactions: 'txn-aborted',
  /** WebSocket connections and their subscriptions, by connection and by partition (lib/storage/coordination/connections.ts). */
  connections: 'ws#*',
  /** Push subscriptions (`push`) and their partitions' delivery states (`push#<name>`) (lib/storage/coordination/push-subscriptions.ts). */
  push: 'push',
  pushStates: 'push#*',
  /**
   * The schema registry (lib/storage/coordination/schemas.ts): schemas by id and the id counter,
   * ids by content hash, every subject's versions, compatibility levels and the mode.
   */
  schemaIds: 'schema-ids',
  schemaHashes: 'schema-hashes',
  schemaVersions: 'schema-versions',
  schemaConfigs: 'schema-configs',
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

/*
 * Replica table keys (lib/storage/replica/): a partition's items share `tp` (topicPartitionKey),
 * its head sits at `off = HEAD_OFFSET`, each record batch at `off = lastOffset`.
 */

/** The sort key of a partition's head item: below every batch item, whose `off` is a last offset (≥ 0). */
export const HEAD_OFFSET = -1;

/**
 * The key of the item that names a replica store's incarnation (whose accounting its contents
 * belong to): `incarnation`, and `controllerEpoch`, the newest lease epoch of a controller that wrote
 * it (stamping an incarnation, or claiming the store for a purge).
 */
export const INCARNATION_KEY = { tp: '__incarnation__', off: HEAD_OFFSET };

/** Producer states of a partition live beside its log, under their own partition key. */
export const producersKey = (tp: string): string => `${tp}#producers`;

/** The group commit's committer lease of a partition (lib/storage/replica/rounds.ts) sits just below its head. */
export const COMMITTER_OFFSET = -2;
/**
 * The group commit's round items (lib/storage/replica/rounds.ts): round `n` at `off = n -
 * ROUND_BASE`, below the lease, so one Query from a round up to the head returns the rounds
 * since, the lease and the head. (Items further below were an earlier version's staged batches,
 * which their TTL deletes.)
 */
export const ROUND_BASE = 2 ** 52;

/*
 * Coordination table keys (lib/storage/coordination/):
 * every partition key below is one of COORDINATION_KEYS or matches its `*` pattern, so what a
 * function's role may write (by those patterns) and what the modules write name the same items.
 */

/** `cluster`/`meta`: the cluster id and the metadata version every metadata change bumps. */
export const CLUSTER_KEY = { pk: COORDINATION_KEYS.cluster, sk: 'meta' } as const;

/** `cluster`/`configs`: the cluster-wide broker configs (Kafka's `--entity-default`), only the ones set. */
export const CLUSTER_CONFIGS_KEY = { pk: COORDINATION_KEYS.cluster, sk: 'configs' } as const;

/** `cluster`/`garbage`: when the garbage pass last ran. */
export const GARBAGE_CLOCK_KEY = { pk: COORDINATION_KEYS.cluster, sk: 'garbage' } as const;

/** `cluster`/`balancer`: the balancer's status. */
export const BALANCER_KEY = { pk: COORDINATION_KEYS.cluster, sk: 'balancer' } as const;

/** `topic#<name>` (COORDINATION_KEYS.topic): a topic's `meta` item and its partition states, so one Query returns the topic whole. */
export const topicPk = (name: string): string => `topic#${name}`;

/** `p#<00000n>`: a partition state's sort key under topicPk, zero-padded so a Query returns them in partition order. */
export const partitionSk = (p: number): string => `p#${String(p).padStart(6, '0')}`;

/** `controller`/`lease`: the controller lease. */
export const LEASE_KEY = { pk: COORDINATION_KEYS.lease, sk: 'lease' } as const;

/** The lag index: `lagging`/`<topicId>#<partition>`, one mark per partition whose followers lag. */
export const LAG_PK = COORDINATION_KEYS.lagging;
export const lagKey = (topicId: string, partition: number) => ({ pk: LAG_PK, sk: `${topicId}#${partition}` });

/** `deployment`/`registered`: which version of the deployment's broker list (DEPLOYED_BROKERS_ITEM) the controller registered. */
export const REGISTERED_KEY = { pk: COORDINATION_KEYS.deployment, sk: 'registered' } as const;

/** `group#<g>` (COORDINATION_KEYS.group): a consumer group's `meta` item, members and target chunks. */
export const groupPk = (g: string): string => `group#${g}`;

/** `offsets#<g>` (COORDINATION_KEYS.offsets): a group's committed offsets, sort key `<topic>#<partition>`. */
export const offsetsPk = (g: string): string => `offsets#${g}`;
/**
 * Sort-key prefix of a group's pending-offsets items under `offsets#<g>` (offsets a transaction
 * holds, lib/storage/coordination/transactions.ts): `~` sorts after every topic name.
 */
export const PENDING_OFFSETS_SK_PREFIX = '~txn#';

/** `member#<memberId>`: a group member's sort key under groupPk. */
export const memberSk = (m: string): string => `member#${m}`;

/** `target#<targetId>#<nnnn>`: chunk `n` of a target assignment under groupPk, zero-padded so the chunks sort in order. */
export const targetSk = (id: string, n: number): string => `target#${id}#${String(n).padStart(4, '0')}`;

/** `seg#<topicId>#<partition>` (COORDINATION_KEYS.segments): a partition's segment registry. */
export const segmentsPk = (topicId: string, partition: number): string => `seg#${topicId}#${partition}`;

/** A segment's sort key (and its object key's name): the 20-digit base offset, so a Query returns segments in offset order. */
export const segmentSk = (baseOffset: number): string => String(baseOffset).padStart(20, '0');

/** `acls`: Kafka ACLs, one item per binding (sort key: aclSortKey in lib/storage/coordination/acls.ts). */
export const ACLS_PK = COORDINATION_KEYS.acls;

/** `client-quotas`/`<principal>`: a principal's client quotas (`<default>`: Kafka's default entity). */
export const CLIENT_QUOTAS_PK = COORDINATION_KEYS.clientQuotas;

/** `quota#<principal>` (COORDINATION_KEYS.quotaUsage): a principal's per-second usage counters, sort key `<kind>#<epoch second>`. */
export const quotaUsagePk = (principal: string): string => `quota#${principal}`;
/** A WebSocket connection's item (lib/storage/coordination/connections.ts). */
export const connectionPk = (connectionId: string): string => `ws#conn#${connectionId}`;
/** The WebSocket subscriptions to one partition, one item per connection. */
export const subscriptionsPk = (topicId: string, partition: number): string => `ws#tp#${topicId}#${partition}`;
/** The partitions subscribed to over WebSocket lately, one item each (`<topicId>#<partition>`): what the controller's pass looks at. */
export const SUBSCRIBED_PARTITIONS_PK = 'ws#subscribed';

/** `push#<name>#<createdAt>` (COORDINATION_KEYS.pushStates): a push subscription's partitions' delivery states, by partitionSk. */
export const pushStatePk = (key: string): string => `push#${key}`;
