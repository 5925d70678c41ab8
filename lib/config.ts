/**
 * Runtime configuration, read once from the environment. Every Lambda and the local stack's
 * in-process handlers share it; the CDK construct and the local stack set the same variables.
 */

export interface TributaryConfig {
  /** Name of the coordination table (`TRIBUTARY_COORDINATION_TABLE`). Required. */
  readonly coordinationTable: string;
  /** S3 bucket for segments, large batches and snapshots (`TRIBUTARY_BUCKET`). Required. */
  readonly bucket: string;
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
