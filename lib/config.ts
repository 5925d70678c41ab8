/**
 * Runtime configuration, read once from the environment. Every Lambda and the local stack's
 * in-process handlers share it; the CDK construct and the local stack set the same variables.
 */

export interface TributaryConfig {
  /** Name of the coordination table (`TRIBUTARY_COORDINATION_TABLE`). Required. */
  readonly coordinationTable: string;
  /** S3 bucket for segments, large batches and snapshots (`TRIBUTARY_BUCKET`). Required. */
  readonly bucket: string;
  /**
   * Bucket for the group commit's staged batches (`TRIBUTARY_STAGE_BUCKET`): an S3 Express One Zone
   * directory bucket in AWS, objects under `stage/`, none older than a day. @default the bucket
   */
  readonly stageBucket: string;
  /** Force path-style S3 addressing, needed by s3rver and LocalStack (`TRIBUTARY_S3_FORCE_PATH_STYLE`). @default false */
  readonly s3ForcePathStyle: boolean;
  /** Per-request timeout for DynamoDB and S3 calls, so a paused store cannot hang a request (`TRIBUTARY_STORE_TIMEOUT_MS`). @default 5000 */
  readonly storeTimeoutMs: number;
  /** TCP connect timeout for store calls (`TRIBUTARY_STORE_CONNECT_TIMEOUT_MS`). @default 1000 */
  readonly storeConnectTimeoutMs: number;
  /** SDK attempts per store call, including the first (`TRIBUTARY_STORE_MAX_ATTEMPTS`). @default 3 */
  readonly storeMaxAttempts: number;
  /** How long a cached metadata view is trusted before its version is checked (`TRIBUTARY_METADATA_MAX_AGE_MS`). @default 1000 */
  readonly metadataMaxAgeMs: number;
  /**
   * How often a long-polling fetch re-reads the leader's head (`TRIBUTARY_LONG_POLL_MS`): it bounds
   * how long a committed record waits for a consumer polling through another instance (half of it
   * on average); each re-read is half a read unit. @default 50
   */
  readonly longPollMs: number;
  /** How long produce and fetch keep retrying through a failover before giving up (`TRIBUTARY_REQUEST_TIMEOUT_MS`). @default 25000 (under API Gateway's 29 s) */
  readonly requestTimeoutMs: number;
  /** Kafka's replica.lag.time.max.ms: an ISR follower not caught up for this long leaves the ISR (`TRIBUTARY_REPLICA_LAG_TIME_MAX_MS`). @default 30000 */
  readonly replicaLagTimeMaxMs: number;
  /** Largest request body the API accepts, as Lambda's 6 MB payload limit (`TRIBUTARY_MAX_REQUEST_BYTES`). @default 6291456 */
  readonly maxRequestBytes: number;
}

function intVar(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return n;
}

function required(env: NodeJS.ProcessEnv, name: string): string {
  const v = env[name];
  if (!v) throw new Error(`${name} is not set: Tributary needs it to find its storage (the CDK stack and \`npm start\` set it)`);
  return v;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): TributaryConfig {
  return {
    coordinationTable: required(env, 'TRIBUTARY_COORDINATION_TABLE'),
    bucket: required(env, 'TRIBUTARY_BUCKET'),
    stageBucket: env.TRIBUTARY_STAGE_BUCKET || required(env, 'TRIBUTARY_BUCKET'),
    s3ForcePathStyle: env.TRIBUTARY_S3_FORCE_PATH_STYLE === 'true',
    storeTimeoutMs: intVar(env, 'TRIBUTARY_STORE_TIMEOUT_MS', 5000),
    storeConnectTimeoutMs: intVar(env, 'TRIBUTARY_STORE_CONNECT_TIMEOUT_MS', 1000),
    storeMaxAttempts: intVar(env, 'TRIBUTARY_STORE_MAX_ATTEMPTS', 3),
    metadataMaxAgeMs: intVar(env, 'TRIBUTARY_METADATA_MAX_AGE_MS', 1000),
    longPollMs: intVar(env, 'TRIBUTARY_LONG_POLL_MS', 50),
    maxRequestBytes: intVar(env, 'TRIBUTARY_MAX_REQUEST_BYTES', 6 * 1024 * 1024),
    replicaLagTimeMaxMs: intVar(env, 'TRIBUTARY_REPLICA_LAG_TIME_MAX_MS', 30_000),
    requestTimeoutMs: intVar(env, 'TRIBUTARY_REQUEST_TIMEOUT_MS', 25_000),
  };
}

let cached: TributaryConfig | undefined;
/** The process-wide configuration (read on first use). */
export function config(): TributaryConfig {
  cached ??= loadConfig();
  return cached;
}
/** Forget the cached configuration (the local stack sets the environment after import). */
export function resetConfig(): void {
  cached = undefined;
}

/** The environment variables the functions read (`config()` below, the controller loop, the console function). */
export const ENVIRONMENT = {
  coordinationTable: 'TRIBUTARY_COORDINATION_TABLE',
  bucket: 'TRIBUTARY_BUCKET',
  stageBucket: 'TRIBUTARY_STAGE_BUCKET',
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
  /** The console function's built files. Default: `console/` beside its bundle (lib/http/console-server.ts). */
  consoleDir: 'TRIBUTARY_CONSOLE_DIR',
  /** With a JWT authorizer: the OIDC provider the console signs in with (its issuer URL), for /ui/config.json. */
  consoleOidcIssuer: 'TRIBUTARY_CONSOLE_OIDC_ISSUER',
  /** The console's OIDC client id (the construct's `jwtAuthorizer.consoleClientId`). */
  consoleOidcClientId: 'TRIBUTARY_CONSOLE_OIDC_CLIENT_ID',
  /** The WebSocket API's URL, for the console's live follow where it is not the console's origin's `/ws` (a deployment's `WebSocketUrl`). */
  consoleWebsocketUrl: 'TRIBUTARY_CONSOLE_WEBSOCKET_URL',
  /** The scopes the console asks for, separated by spaces. */
  consoleOidcScopes: 'TRIBUTARY_CONSOLE_OIDC_SCOPES',
  /** Origins besides the issuer's the console's page may connect to (its provider's token or key endpoints), separated by spaces. */
  consoleConnectOrigins: 'TRIBUTARY_CONSOLE_CONNECT_ORIGINS',
  /**
   * The WebSocket API's connection management endpoint (`https://{api}.execute-api.{region}.amazonaws.com/{stage}`;
   * locally the gateway's URL): where the websocket function posts frames to connections.
   */
  websocketEndpoint: 'TRIBUTARY_WEBSOCKET_ENDPOINT',
  /** The websocket function's name, which the functions that move high watermarks invoke (asynchronously) to deliver. */
  websocketFunction: 'TRIBUTARY_WEBSOCKET_FUNCTION',
  /** `true` lets push subscriptions deliver to http and to loopback, private and link-local addresses (the local stack sets it; lib/orchestration/push-endpoints.ts). */
  pushAllowPrivate: 'TRIBUTARY_PUSH_ALLOW_PRIVATE',
  /**
   * The Lambda functions push subscriptions may deliver to, separated by commas: function ARNs, or
   * ARN prefixes ending in `*` (lib/orchestration/push-targets.ts). Unset or empty: none.
   */
  pushLambdaTargets: 'TRIBUTARY_PUSH_LAMBDA_TARGETS',
  /** The Lambda API's endpoint, locally the gateway's URL (unset in AWS: the SDK's default). */
  lambdaEndpoint: 'TRIBUTARY_LAMBDA_ENDPOINT',
  /**
   * Locally with `--auth`: the token the local stack's stand-ins for API Gateway's connection API
   * and Lambda's Invoke API require of their callers (lib/storage/local-endpoint-token.ts). Unset
   * in AWS, where IAM guards both.
   */
  localEndpointToken: 'TRIBUTARY_LOCAL_ENDPOINT_TOKEN',
  /** With a JWT authorizer: the issuer the WebSocket API's `$connect` authorizer accepts tokens from (lib/http/websocket-authorizer.ts). */
  jwtIssuer: 'TRIBUTARY_JWT_ISSUER',
  /** With a JWT authorizer: the `aud` (or `client_id`) values that authorizer accepts, separated by spaces. */
  jwtAudience: 'TRIBUTARY_JWT_AUDIENCE',
} as const;
