/**
 * Every Lambda function of a cluster: its handler file, what triggers it, and what it may touch —
 * the one catalog the CDK construct deploys from and the local stack runs from. The HTTP routes
 * each function serves are in lib/http/routes.ts and lib/http/static-routes.ts; the environment
 * they read is ENVIRONMENT in lib/config.ts.
 */
import { COORDINATION_KEYS, type CoordinationKey } from '../storage/tables.js';

/** The functions that serve the Kafka API's routes (lib/http/routes.ts). */
export type ApiFunctionName = 'admin' | 'produce' | 'fetch' | 'groups';
/** The function that serves the console's static files (lib/http/static-routes.ts). */
export type StaticFunctionName = 'console';
export type HttpFunctionName = ApiFunctionName | StaticFunctionName;
/** The WebSocket API's functions: its routes', and its `$connect` authorizer's with a JWT authorizer. */
export type WebSocketFunctionName = 'websocket' | 'websocket-authorizer';
export type FunctionName = HttpFunctionName | 'replicator' | 'controller' | WebSocketFunctionName;

export type Access = 'none' | 'read' | 'write';

export interface FunctionSpec {
  readonly name: FunctionName;
  /** Handler file, relative to the project root; it exports `handler`. */
  readonly entry: string;
  readonly description: string;
  /**
   * What invokes it: the HTTP API, the replica tables' streams, a schedule, the WebSocket API
   * (its `$connect`, `$disconnect` and `$default` routes, and the functions in whose `invokes` it is),
   * or API Gateway as the WebSocket API's Lambda authorizer (deployed only where one is needed:
   * with a JWT authorizer).
   */
  readonly trigger: 'http' | 'streams' | 'schedule' | 'websocket' | 'authorizer';
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
   * Functions it invokes asynchronously (`InvocationType: 'Event'`): the ones that move high
   * watermarks wake the websocket function to deliver the records now readable.
   * @default []
   */
  readonly invokes?: readonly FunctionName[];
  /**
   * It posts to the WebSocket API's connections (`execute-api:ManageConnections`).
   * @default false
   */
  readonly managesConnections?: boolean;
  /**
   * It appends to partition leaders, so it may stage batches for the group commit and commit rounds
   * of staged batches (lib/log/staged-commit.ts): the stage bucket's name is in its
   * `TRIBUTARY_STAGE_BUCKET`, and it may put, list, read and delete its objects.
   * @default false
   */
  readonly stages?: boolean;
  /**
   * Its bundle carries the built console (build/console.ts) in `console/` beside `index.mjs`.
   * @default false
   */
  readonly bundlesConsole?: boolean;
}

const spec = (s: FunctionSpec): FunctionSpec => s;

export const FUNCTIONS: readonly FunctionSpec[] = [
  spec({
    name: 'admin', entry: 'lambdas/admin.ts', description: 'Clusters, brokers, topics, partitions, configs; the schema registry',
    trigger: 'http', memoryMb: 512, timeoutSeconds: 29, coordination: 'write', replicas: 'write', bucketRead: [], bucketWrite: ['data/'],
    // Topics (create, delete, configs, partitions), DeleteRecords (segment tombstones), suspect reports,
    // ACLs, client quotas, the schema registry's items; and, like every HTTP function, the quota usage
    // counters (lib/security/quotas.ts).
    coordinationWrites: ['cluster', 'topicList', 'topicKeys', 'topicIds', 'topic', 'segments', 'brokers', 'acls', 'clientQuotas', 'quotaUsage',
      'schemaIds', 'schemaHashes', 'schemaVersions', 'schemaConfigs'],
  }),
  spec({
    name: 'produce', entry: 'lambdas/produce.ts', description: 'Produce records (REST Proxy v3 and v2), producer ids and transactions',
    trigger: 'http', memoryMb: 1024, timeoutSeconds: 29, coordination: 'write', replicas: 'write', bucketRead: [], bucketWrite: ['data/'],
    // acks=all ISR changes (partition state + metadata version), producer ids, lag marks, suspect
    // reports; transactions: the coordinator's items, and the offsets a committed transaction commits.
    coordinationWrites: ['cluster', 'topic', 'producers', 'lagging', 'brokers', 'quotaUsage', 'transactions', 'abortedTransactions', 'offsets'],
    invokes: ['websocket'],
    stages: true,
  }),
  spec({
    name: 'fetch', entry: 'lambdas/fetch.ts', description: 'Fetch records and list offsets',
    trigger: 'http', memoryMb: 1024, timeoutSeconds: 29, coordination: 'write', replicas: 'read', bucketRead: ['data/', 'segments/'], bucketWrite: [],
    // Suspect reports and quota usage counters only: no lease, no partition state.
    coordinationWrites: ['brokers', 'quotaUsage'],
  }),
  spec({
    name: 'groups', entry: 'lambdas/groups.ts', description: 'Consumer groups: REST Proxy v2 consumers, the group protocol, offsets, lag; push subscriptions',
    trigger: 'http', memoryMb: 1024, timeoutSeconds: 29, coordination: 'write', replicas: 'read', bucketRead: ['data/', 'segments/'], bucketWrite: [],
    // Groups, members, committed offsets, suspect reports, push subscriptions: no lease, no partition state.
    coordinationWrites: ['groupList', 'group', 'offsets', 'brokers', 'quotaUsage', 'push', 'pushStates'],
    // (a new push subscription's first deliveries)
    invokes: ['websocket'],
  }),
  spec({
    // The console's static files and /ui/config.json (lib/http/console-server.ts): no store at all, and
    // no authorizer on its routes (lib/http/static-routes.ts).
    name: 'console', entry: 'lambdas/console.ts', description: 'Static files of the web console under /ui/, and /ui/config.json',
    trigger: 'http', memoryMb: 128, timeoutSeconds: 5, coordination: 'none', coordinationWrites: [], replicas: 'none', bucketRead: [], bucketWrite: [],
    bundlesConsole: true,
  }),
  spec({
    name: 'replicator', entry: 'lambdas/replicator.ts', description: 'Copies new batches from leaders to followers (DynamoDB Streams), rolls table tails into S3 segments',
    trigger: 'streams', memoryMb: 1024, timeoutSeconds: 120, coordination: 'write', replicas: 'write', bucketRead: ['data/', 'snapshots/', 'segments/'], bucketWrite: ['snapshots/', 'segments/'],
    // ISR expands (partition state + metadata version), lag marks, segment rolls, suspect reports.
    coordinationWrites: ['cluster', 'topic', 'lagging', 'segments', 'brokers'],
    invokes: ['websocket'],
  }),
  spec({
    name: 'controller', entry: 'lambdas/controller.ts', description: 'Holds the controller lease: broker liveness, elections, ISR, replication sweep, log maintenance (rolls, retention, compaction, garbage)',
    trigger: 'schedule', memoryMb: 512, timeoutSeconds: 70, coordination: 'write', replicas: 'write', bucketRead: ['data/', 'snapshots/', 'segments/'], bucketWrite: ['snapshots/', 'segments/', 'data/'],
    coordinationWrites: 'any',
    invokes: ['websocket'],
    // (a transaction past its timeout is aborted with markers, appended as a produce's batches are)
    stages: true,
  }),
  spec({
    // The WebSocket API's routes (lib/http/websocket.ts) and the deliveries (WebSocket and push) the
    // functions that move high watermarks wake it for; it holds no connection open itself (API Gateway does).
    name: 'websocket', entry: 'lambdas/websocket.ts', description: 'WebSocket consume and push delivery: connections, subscriptions, and delivery of records as they become readable',
    trigger: 'websocket', memoryMb: 512, timeoutSeconds: 29, coordination: 'write', replicas: 'write', bucketRead: ['data/', 'segments/'], bucketWrite: ['data/'],
    // Connections and subscriptions; the groups its connections are members of (members, offsets);
    // suspect reports and quota usage as every reader; push deliveries' states, their groups'
    // offsets, and (acks=all) produces to dead-letter topics.
    coordinationWrites: ['connections', 'groupList', 'group', 'brokers', 'quotaUsage', 'push', 'pushStates', 'offsets', 'cluster', 'topic', 'lagging'],
    managesConnections: true,
    // (a push delivery's records that failed go to its dead-letter topic by a produce)
    stages: true,
  }),
  spec({
    // The WebSocket API's `$connect` authorizer with a JWT authorizer (lib/http/websocket-authorizer.ts):
    // it checks a token against the issuer's keys and touches no store.
    name: 'websocket-authorizer', entry: 'lambdas/websocket-authorizer.ts', description: 'Verifies the JWT of a WebSocket connection (query string token or Authorization header) and names its principal',
    trigger: 'authorizer', memoryMb: 256, timeoutSeconds: 10, coordination: 'none', coordinationWrites: [], replicas: 'none', bucketRead: [], bucketWrite: [],
  }),
];

/**
 * The coordination table's stream records that invoke the controller between its scheduled runs
 * (a Lambda event source filter pattern, applied as AWS applies it by the local stack's poller):
 * a data path's report that a broker's store failed (`suspectAt`, written at most once per
 * SUSPECT_REPORT_MS per broker). So a failure is judged within seconds, not at the next minute.
 */
export const CONTROLLER_WAKE_PATTERN = {
  eventName: ['INSERT', 'MODIFY'],
  dynamodb: { Keys: { pk: { S: [COORDINATION_KEYS.brokers] } }, NewImage: { suspectAt: { N: [{ exists: true }] } } },
} as const;

/**
 * What of a replica table's stream invokes the replicator (a Lambda event source filter pattern,
 * applied as AWS applies it by the local stack's poller): inserts and changes of the log's items,
 * not deletions (truncations' and expiries' echoes) nor the group commit's round items and lease
 * (lib/storage/replica/rounds.ts; they carry `stage`).
 */
export const REPLICA_STREAM_PATTERN = {
  eventName: ['INSERT', 'MODIFY'],
  dynamodb: { NewImage: { stage: [{ exists: false }] } },
} as const;

export function functionSpec(name: FunctionName): FunctionSpec {
  const f = FUNCTIONS.find((x) => x.name === name);
  if (!f) throw new Error(`no function named ${name}`);
  return f;
}
