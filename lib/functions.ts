/**
 * Every Lambda function of a cluster: its handler file, what triggers it, and what it may touch —
 * the one catalog the CDK construct deploys from and the local stack runs from. The HTTP routes
 * each function serves are in lib/http/routes.ts.
 */
import type { FunctionName as HttpFunctionName } from './http/routes.js';

export type FunctionName = HttpFunctionName | 'console' | 'replicator' | 'controller';

export type Access = 'none' | 'read' | 'write';

/**
 * The coordination table's partition keys (lib/storage/coordination.ts, groups.ts, segments.ts, acls.ts),
 * as IAM `StringLike` patterns of `dynamodb:LeadingKeys`: what a function may write is named
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

export interface FunctionSpec {
  readonly name: FunctionName;
  /** Handler file, relative to the project root; it exports `handler`. */
  readonly entry: string;
  readonly description: string;
  /** What invokes it: the HTTP API, the replica tables' streams, or a schedule. */
  readonly trigger: 'http' | 'streams' | 'schedule';
  readonly memoryMb: number;
  readonly timeoutSeconds: number;
  /** What it does to the coordination table, the replica tables and the bucket. */
  readonly coordination: Access;
  /**
   * With `coordination: 'write'`, the partition keys of the items it writes (the code paths it
   * runs call these writers); `'any'` only for the controller, which writes them all.
   */
  readonly coordinationWrites: readonly CoordinationKey[] | 'any';
  readonly replicas: Access;
  /** Bucket prefixes it reads and writes (`data/`, `snapshots/`). */
  readonly bucketRead: readonly string[];
  readonly bucketWrite: readonly string[];
  /**
   * Its bundle carries the built console (console/build.ts) in `console/` beside `index.mjs`.
   * @default false
   */
  readonly bundlesConsole?: boolean;
}

const spec = (s: FunctionSpec): FunctionSpec => s;

export const FUNCTIONS: readonly FunctionSpec[] = [
  spec({
    name: 'admin', entry: 'lambdas/admin.ts', description: 'Clusters, brokers, topics, partitions, configs',
    trigger: 'http', memoryMb: 512, timeoutSeconds: 29, coordination: 'write', replicas: 'write', bucketRead: [], bucketWrite: ['data/'],
    // Topics (create, delete, configs, partitions), DeleteRecords (segment tombstones), suspect reports,
    // ACLs, client quotas; and, like every HTTP function, the quota usage counters (lib/security/quotas.ts).
    coordinationWrites: ['cluster', 'topicList', 'topicKeys', 'topicIds', 'topic', 'segments', 'brokers', 'acls', 'clientQuotas', 'quotaUsage'],
  }),
  spec({
    name: 'produce', entry: 'lambdas/produce.ts', description: 'Produce records (REST Proxy v3 and v2) and producer ids',
    trigger: 'http', memoryMb: 1024, timeoutSeconds: 29, coordination: 'write', replicas: 'write', bucketRead: [], bucketWrite: ['data/'],
    // acks=all ISR changes (partition state + metadata version), producer ids, lag marks, suspect reports.
    coordinationWrites: ['cluster', 'topic', 'producers', 'lagging', 'brokers', 'quotaUsage'],
  }),
  spec({
    name: 'fetch', entry: 'lambdas/fetch.ts', description: 'Fetch records and list offsets',
    trigger: 'http', memoryMb: 1024, timeoutSeconds: 29, coordination: 'write', replicas: 'read', bucketRead: ['data/', 'segments/'], bucketWrite: [],
    // Suspect reports and quota usage counters only: no lease, no partition state.
    coordinationWrites: ['brokers', 'quotaUsage'],
  }),
  spec({
    name: 'groups', entry: 'lambdas/groups.ts', description: 'Consumer groups: REST Proxy v2 consumers, the group protocol, offsets, lag',
    trigger: 'http', memoryMb: 1024, timeoutSeconds: 29, coordination: 'write', replicas: 'read', bucketRead: ['data/', 'segments/'], bucketWrite: [],
    // Groups, members, committed offsets, suspect reports: no lease, no partition state.
    coordinationWrites: ['groupList', 'group', 'offsets', 'brokers', 'quotaUsage'],
  }),
  spec({
    // The console's static files and /ui/config.json (lib/http/console.ts): no store at all, and
    // no authorizer on its routes (lib/http/console-routes.ts).
    name: 'console', entry: 'lambdas/console.ts', description: 'Static files of the web console under /ui/, and /ui/config.json',
    trigger: 'http', memoryMb: 128, timeoutSeconds: 5, coordination: 'none', coordinationWrites: [], replicas: 'none', bucketRead: [], bucketWrite: [],
    bundlesConsole: true,
  }),
  spec({
    name: 'replicator', entry: 'lambdas/replicator.ts', description: 'Copies new batches from leaders to followers (DynamoDB Streams), rolls table tails into S3 segments',
    trigger: 'streams', memoryMb: 1024, timeoutSeconds: 120, coordination: 'write', replicas: 'write', bucketRead: ['data/', 'snapshots/', 'segments/'], bucketWrite: ['snapshots/', 'segments/'],
    // ISR expands (partition state + metadata version), lag marks, segment rolls, suspect reports.
    coordinationWrites: ['cluster', 'topic', 'lagging', 'segments', 'brokers'],
  }),
  spec({
    name: 'controller', entry: 'lambdas/controller.ts', description: 'Holds the controller lease: broker liveness, elections, ISR, replication sweep, log maintenance (rolls, retention, compaction, garbage)',
    trigger: 'schedule', memoryMb: 512, timeoutSeconds: 70, coordination: 'write', replicas: 'write', bucketRead: ['data/', 'snapshots/', 'segments/'], bucketWrite: ['snapshots/', 'segments/', 'data/'],
    coordinationWrites: 'any',
  }),
];

/** The environment variables the functions read (lib/config.ts and the controller loop). */
export const ENVIRONMENT = {
  coordinationTable: 'TRIBUTARY_COORDINATION_TABLE',
  bucket: 'TRIBUTARY_BUCKET',
  s3ForcePathStyle: 'TRIBUTARY_S3_FORCE_PATH_STYLE',
  tickMs: 'TRIBUTARY_CONTROLLER_TICK_MS',
  sessionTimeoutMs: 'TRIBUTARY_BROKER_SESSION_TIMEOUT_MS',
  /** How often the lease holder sweeps the lag index (lib/orchestration/sweep.ts). Default: every tick. */
  sweepMs: 'TRIBUTARY_SWEEP_MS',
  /** Period of the sweep's full pass over every partition. Default 300000. */
  sweepFullPassMs: 'TRIBUTARY_SWEEP_FULL_PASS_MS',
  garbageMs: 'TRIBUTARY_GARBAGE_MS',
  /** How callers authenticate, so the functions enforce ACLs: `iam`, `jwt`, `token` (local) or `none` (lib/security). */
  auth: 'TRIBUTARY_AUTH',
  /** Kafka's `super.users`: principals separated by `;`. */
  superUsers: 'TRIBUTARY_SUPER_USERS',
  /** With a JWT authorizer: the claim that names the principal (lib/http/principal.ts). Default `sub`. */
  principalClaim: 'TRIBUTARY_PRINCIPAL_CLAIM',
  /** The console function's built files. Default: `console/` beside its bundle (lib/http/console.ts). */
  consoleDir: 'TRIBUTARY_CONSOLE_DIR',
  /** With a JWT authorizer: the OIDC provider the console signs in with (its issuer URL), for /ui/config.json. */
  consoleOidcIssuer: 'TRIBUTARY_CONSOLE_OIDC_ISSUER',
  /** The console's OIDC client id (the construct's `jwtAuthorizer.consoleClientId`). */
  consoleOidcClientId: 'TRIBUTARY_CONSOLE_OIDC_CLIENT_ID',
  /** The scopes the console asks for, separated by spaces. */
  consoleOidcScopes: 'TRIBUTARY_CONSOLE_OIDC_SCOPES',
  /** Origins besides the issuer's the console's page may connect to (its provider's token or key endpoints), separated by spaces. */
  consoleConnectOrigins: 'TRIBUTARY_CONSOLE_CONNECT_ORIGINS',
} as const;

/**
 * The coordination table's stream records that invoke the controller between its scheduled runs
 * (a Lambda event source filter pattern, applied as AWS applies it by the local stack's poller):
 * a data path's report that a broker's store failed (`suspectAt`, written at most once per
 * SUSPECT_REPORT_MS per broker). So a failure is judged within seconds, not at the next minute.
 */
export const CONTROLLER_WAKE_PATTERN = {
  eventName: ['INSERT', 'MODIFY'],
  dynamodb: { Keys: { pk: { S: ['brokers'] } }, NewImage: { suspectAt: { N: [{ exists: true }] } } },
} as const;

/**
 * The coordination table item in which a deployment names its brokers: `brokers` is JSON
 * `[{brokerId, replicaTable, rack}]`, `version` changes with it. The CDK construct writes it on
 * every create and update (64 brokers with long table names would not fit in the 4 KB a Lambda
 * environment holds); the controller registers the brokers, and the cluster, once per version
 * (lib/orchestration/controller-loop.ts).
 */
export const DEPLOYED_BROKERS_ITEM = { pk: 'deployment', sk: 'brokers' } as const;

export function functionSpec(name: FunctionName): FunctionSpec {
  const f = FUNCTIONS.find((x) => x.name === name);
  if (!f) throw new Error(`no function named ${name}`);
  return f;
}
