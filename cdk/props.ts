/**
 * The construct's props, their defaults (pure functions) and their validation: every prop is
 * checked before any resource is created, with a message that names the prop and the value.
 */
import { Names, RemovalPolicy, Token } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { LAMBDA_TARGET_ENTRY } from '../lib/orchestration/push-targets.js';

export type ApiType = 'http' | 'rest';
export type ApiAuthorization = 'iam' | 'none';

/** An HTTP API JWT authorizer: any OIDC issuer (Cognito, Auth0, Okta, ...). */
export interface JwtAuthorizerProps {
  /** The issuer URL, e.g. `https://cognito-idp.<region>.amazonaws.com/<user pool id>`. */
  readonly issuer: string;
  /** Accepted `aud` (or Cognito's `client_id`) values; at least one. */
  readonly audience: readonly string[];
  /**
   * The claim whose value is the Kafka principal's name (`User:<value>`).
   * @default 'sub'
   */
  readonly principalClaim?: string;
  /**
   * The OIDC client the console signs in with (authorization code with PKCE, a public client with
   * `<api url>ui/` as its callback URL); its tokens must carry one of `audience`.
   * @default - the first `audience`
   */
  readonly consoleClientId?: string;
  /**
   * The scopes the console asks the provider for.
   * @default ['openid']
   */
  readonly consoleScopes?: readonly string[];
  /**
   * Origins (`https://host[:port]`) besides the issuer's that the console's page may connect to
   * during sign-in: a provider whose token endpoint is on another host (Google's is
   * `https://oauth2.googleapis.com`). A Cognito user pool's hosted domains are allowed already.
   * @default - none
   */
  readonly consoleConnectOrigins?: readonly string[];
}

/** How callers authenticate, as the functions see it (TRIBUTARY_AUTH). */
export type AuthMode = 'iam' | 'jwt' | 'none';

export interface TributaryClusterProps {
  /**
   * The brokers, one replica table each (`<prefix>-broker-<id>`): a count N means ids 1..N; a
   * list names the ids (1 to 64 distinct integers from 0 to 2^31 - 1), so a cluster can grow by
   * an id and lose any broker, not only the last. `3` and `[1, 2, 3]` deploy the same template.
   *
   * Adding a broker: add its id, deploy, then register it (`POST /v3/clusters/{c}/brokers`
   * `{"broker_id": id}`). Removing one: `DELETE /v3/clusters/{c}/brokers/{id}`, wait until it is
   * gone (its GET answers 404), then drop the id and deploy. Dropping an id removes its table
   * from the stack, but with the default `removalPolicy` (RETAIN_ON_UPDATE_OR_DELETE) the table
   * itself is retained, not deleted: delete `<prefix>-broker-<id>` by hand once the broker was
   * removed (the controller emptied it when it deregistered the broker).
   * @default 3
   */
  readonly brokers?: number | readonly number[];
  /**
   * Each broker's rack (Kafka's `broker.rack`), by position in `brokers`: with a count `racks[0]`
   * is broker 1's, with a list `racks[i]` is the rack of `brokers[i]`.
   * @default - no racks
   */
  readonly racks?: readonly string[];
  /**
   * Prefix of every table name: `<prefix>-coordination`, `<prefix>-broker-<id>`.
   * @default - derived from the stack name and this construct's path (unique per stack)
   */
  readonly tablePrefix?: string;
  /**
   * The API flavour: an API Gateway HTTP API (payload 2.0), or a REST API for LocalStack's free
   * plan, which has no HTTP APIs. Both serve the same routes with the same functions.
   * @default 'http'
   */
  readonly apiType?: ApiType;
  /**
   * How callers authenticate: `iam` = SigV4-signed requests (AWS_IAM on every route), allowed by
   * an `execute-api:Invoke` permission; `none` = open to anyone who knows the URL.
   * @default 'iam'
   */
  readonly authorization?: ApiAuthorization;
  /**
   * Authenticate callers with a JWT instead of IAM: an HTTP API JWT authorizer on every route,
   * the principal `User:<principalClaim>`. Only with `apiType: 'http'`, and not with
   * `authorization: 'none'`. ACLs are enforced as with IAM. The console (`<api url>ui/`) signs in
   * with this provider (`consoleClientId`); with IAM alone it cannot call the API from a browser.
   * The WebSocket API's `$connect` checks the same tokens (`?token=` or `Authorization: Bearer`)
   * with a Lambda authorizer, the catalog's websocket-authorizer function.
   * @default - IAM (see `authorization`)
   */
  readonly jwtAuthorizer?: JwtAuthorizerProps;
  /**
   * Kafka's `super.users`: principals allowed everything whatever the ACLs say, e.g.
   * `['User:arn:aws:iam::123456789012:role/Ops']`. With authentication on (IAM or JWT) every
   * other principal needs ACLs (`allow.everyone.if.no.acl.found` is false).
   * @default - none
   */
  readonly superUsers?: readonly string[];
  /**
   * What happens to the tables, the bucket and the log groups when the stack is updated (a
   * replacement) or deleted. The default keeps them then, but lets CloudFormation delete them
   * when the stack's first create fails and rolls back, so a failed first deploy can simply be
   * deployed again: the tables have fixed names (`tablePrefix`), and a table left behind by a
   * rolled-back create would make every retry fail with "already exists". After `cdk destroy`
   * the retained tables and bucket stay (the README's "Deploy to AWS" says how to remove them).
   * `DESTROY` deletes them with the stack, emptying the bucket first (`autoDeleteObjects`).
   * @default RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * DynamoDB deletion protection on every table. Off by default: when a stack's first create
   * fails, CloudFormation deletes the tables it created (see `removalPolicy`), and a protected
   * table cannot be deleted, so the rollback ends in `ROLLBACK_FAILED` and the stack has to be
   * deleted by hand before the next try. Turn it on once the cluster is in use; `removalPolicy`
   * already keeps the tables when the stack is updated or deleted.
   * @default false
   */
  readonly deletionProtection?: boolean;
  /**
   * API Gateway stage throttling: the steady requests per second the whole API accepts before it
   * answers 429 (a runaway client then stops at the API instead of using up the account's Lambda
   * concurrency and paying for it). Clients batch records, so one request carries many.
   * @default 1000
   */
  readonly throttlingRateLimit?: number;
  /**
   * API Gateway stage throttling: the burst of requests accepted above the rate.
   * @default 500
   */
  readonly throttlingBurstLimit?: number;
  /**
   * The Lambda functions push subscriptions may deliver to (an endpoint of type `lambda`): function
   * ARNs, each allowing exactly that ARN (a qualified one only that alias or version), or ARN
   * prefixes ending in `*` (`arn:aws:lambda:eu-west-1:123456789012:function:billing-*`). The
   * function that delivers may invoke these and nothing else, and a subscription to any other
   * function is refused at its creation (400, POLICY_VIOLATION), so whoever may create a
   * subscription cannot aim the deliverer at a function the deployment did not mean it to call.
   * `grantPushTarget(fn)` adds one function. Needs the websocket function (`apiType: 'http'`).
   * @default - none: only HTTP endpoints
   */
  readonly pushLambdaTargets?: readonly string[];
  /**
   * Run the functions with `--enable-source-maps`: error stacks point into the TypeScript sources,
   * at the price of loading each bundle's source map when the function starts (a cold start
   * measured by `npm run bench -- cold-start`).
   * @default false
   */
  readonly sourceMaps?: boolean;
  /**
   * Kafka's `controller.tick.ms` analogue (`TRIBUTARY_CONTROLLER_TICK_MS`); the lease lasts 3 ticks.
   * @default 1000
   */
  readonly controllerTickMs?: number;
  /**
   * Kafka's `broker.session.timeout.ms` (`TRIBUTARY_BROKER_SESSION_TIMEOUT_MS`).
   * @default 9000
   */
  readonly brokerSessionTimeoutMs?: number;
  /**
   * Retention of the functions' logs and the API's access logs.
   * @default RetentionDays.ONE_MONTH
   */
  readonly logRetention?: RetentionDays;
  /**
   * Keep old versions of objects in the bucket (noncurrent versions expire after 7 days).
   * @default false
   */
  readonly bucketVersioning?: boolean;
  /**
   * Days after which full-sync snapshots (`snapshots/`) expire.
   * @default 7
   */
  readonly snapshotExpirationDays?: number;
  /**
   * A bucket for the data bucket's S3 server access logs.
   * @default - no server access logs (CloudTrail data events are the audit trail)
   */
  readonly serverAccessLogsBucket?: IBucket;
  /**
   * A customer-managed KMS key that encrypts everything the cluster stores: the tables (and their
   * streams), the bucket (with S3 Bucket Keys, so one KMS request serves many objects), the stage
   * bucket (a key, not an alias: a directory bucket takes no alias), the failure queue and the
   * alarm topic this construct creates. Every function, and the deployment's broker
   * list writer, may use it to encrypt and decrypt. A key created in the same stack also lets
   * CloudWatch alarms publish to the encrypted topic; for an imported key, allow
   * `cloudwatch.amazonaws.com` `kms:Decrypt` and `kms:GenerateDataKey*` in its key policy.
   * @default - AWS-owned keys (tables, queue), S3-managed keys (both buckets); an alarm topic is then
   * not encrypted (CloudWatch alarms cannot publish to a topic under the AWS-managed SNS key)
   */
  readonly encryptionKey?: IKey;
  /**
   * The Availability Zone of the group commit's stage, by its AZ id (`use1-az4`: the same zone in
   * every account, unlike a zone name such as `us-east-1a`). The stage is an S3 Express One Zone
   * directory bucket, `<base>--<AZ id>--x-s3`, whose data lives in this one zone; the functions
   * are not in a VPC and run in every zone of the Region, so any zone that S3 Express One Zone
   * supports serves. Changing it creates a new bucket (the old one is kept or deleted as
   * `removalPolicy` says).
   * @default - the Region's zone in DEFAULT_STAGE_ZONES (cdk/stage-bucket.ts): a CloudFormation
   * mapping on the Region, or that zone itself in a stack with a Region; a Region that is not
   * listed there needs this prop
   */
  readonly stageAvailabilityZoneId?: string;
  /**
   * Set `TRIBUTARY_S3_FORCE_PATH_STYLE=true` in the functions (LocalStack).
   * @default false
   */
  readonly s3ForcePathStyle?: boolean;
  /**
   * An email address subscribed to a new SNS topic that receives every alarm.
   * @default - no subscription
   */
  readonly alarmEmail?: string;
  /**
   * An existing SNS topic that receives every alarm (instead of `alarmEmail`).
   * @default - no topic
   */
  readonly alarmTopic?: ITopic;
  /**
   * How much CloudWatch monitoring to create (each alarm costs $0.10 a month, a dashboard $3
   * beyond an account's first three): `full`, every alarm (25 with an HTTP API, two for each
   * function; 27 with `jwtAuthorizer`, whose WebSocket authorizer is a function too) and the
   * dashboard (about $5 a month); `essential`, the 7 cluster-health alarms (offline and
   * under-replicated partitions, no active controller, the controller not running, replication
   * failures, API 5xx, a table tail overdue for its roll; $0.70) and no dashboard; `none`, neither.
   * @default 'full'
   */
  readonly monitoring?: Monitoring;
}

export type Monitoring = 'full' | 'essential' | 'none';
const MONITORING: readonly Monitoring[] = ['full', 'essential', 'none'];

/** Every prop with its default applied. */
export interface ResolvedProps {
  /** How many brokers: `brokerIds.length`. */
  readonly brokers: number;
  /** The broker ids, ascending (a count N: 1..N). */
  readonly brokerIds: readonly number[];
  /** `racks[i]` is broker `brokerIds[i]`'s. */
  readonly racks: readonly (string | null)[];
  readonly tablePrefix: string;
  readonly apiType: ApiType;
  readonly authorization: ApiAuthorization;
  /** What the functions are told (TRIBUTARY_AUTH): `jwt` with `jwtAuthorizer`, else `authorization`. */
  readonly authMode: AuthMode;
  readonly jwtAuthorizer: JwtAuthorizerProps | undefined;
  readonly superUsers: readonly string[];
  readonly pushLambdaTargets: readonly string[];
  readonly removalPolicy: RemovalPolicy;
  readonly deletionProtection: boolean;
  readonly throttlingRateLimit: number;
  readonly throttlingBurstLimit: number;
  readonly sourceMaps: boolean;
  readonly controllerTickMs: number;
  readonly brokerSessionTimeoutMs: number;
  readonly logRetention: RetentionDays;
  readonly bucketVersioning: boolean;
  readonly snapshotExpirationDays: number;
  readonly serverAccessLogsBucket: IBucket | undefined;
  readonly encryptionKey: IKey | undefined;
  /** `undefined`: the Region's default zone (cdk/stage-bucket.ts). */
  readonly stageAvailabilityZoneId: string | undefined;
  readonly s3ForcePathStyle: boolean;
  readonly alarmEmail: string | undefined;
  readonly alarmTopic: ITopic | undefined;
  readonly monitoring: Monitoring;
}

export const MAX_BROKERS = 64;
/** Kafka's broker ids are 32-bit signed integers; the admin API refuses larger ones too. */
export const MAX_BROKER_ID = 2 ** 31 - 1;
const MAX_PREFIX = 200;
const PREFIX_PATTERN = /^[a-zA-Z0-9_.-]+$/;
const EMAIL_PATTERN = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;
/** An Availability Zone id (`use1-az4`, `apne1-az1`); a Local Zone's (`usw2-lax1-az1`) is not one. */
const AZ_ID_PATTERN = /^[a-z]{2,}[0-9]+-az[0-9]+$/;

const isInt = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n);

/** The default table prefix: the stack name plus this construct's path, with a hash (unique per stack). */
export function defaultTablePrefix(scope: Construct): string {
  return Names.uniqueResourceName(scope, { maxLength: 64, separator: '-', allowedSpecialCharacters: '_.-' });
}

function resolveJwt(j: JwtAuthorizerProps, apiType: ApiType, authorization: ApiAuthorization | undefined): JwtAuthorizerProps {
  if (apiType !== 'http') throw new Error("jwtAuthorizer needs apiType 'http': a REST API has no JWT authorizer");
  if (authorization === 'none') throw new Error("jwtAuthorizer and authorization 'none' contradict each other: leave authorization unset");
  if (typeof j.issuer !== 'string' || (!Token.isUnresolved(j.issuer) && !/^https:\/\/\S+$/.test(j.issuer))) {
    throw new Error(`jwtAuthorizer.issuer must be an https URL, got "${String(j.issuer)}"`);
  }
  if (!Array.isArray(j.audience) || j.audience.length === 0 || j.audience.some((a) => typeof a !== 'string' || a === '')) {
    throw new Error('jwtAuthorizer.audience must list at least one non-empty audience');
  }
  // (the WebSocket API's authorizer is told them separated by spaces: TRIBUTARY_JWT_AUDIENCE)
  const spaced = j.audience.find((a) => /\s/.test(a));
  if (spaced !== undefined) throw new Error(`jwtAuthorizer.audience values are client ids or URIs, with no whitespace, got "${spaced}"`);
  const principalClaim = j.principalClaim ?? 'sub';
  if (typeof principalClaim !== 'string' || !/^[\w:.-]{1,128}$/.test(principalClaim)) {
    throw new Error(`jwtAuthorizer.principalClaim must be a claim name, got "${String(j.principalClaim)}"`);
  }
  const consoleClientId = j.consoleClientId ?? j.audience[0];
  if (typeof consoleClientId !== 'string' || consoleClientId === '') {
    throw new Error(`jwtAuthorizer.consoleClientId must be a non-empty client id, got "${String(j.consoleClientId)}"`);
  }
  const consoleScopes = j.consoleScopes ?? ['openid'];
  if (!Array.isArray(consoleScopes) || consoleScopes.some((x) => typeof x !== 'string' || !/^[\x21\x23-\x5B\x5D-\x7E]+$/.test(x))) {
    throw new Error(`jwtAuthorizer.consoleScopes must be OAuth scope tokens (no spaces or quotes), got ${JSON.stringify(j.consoleScopes)}`);
  }
  const consoleConnectOrigins = j.consoleConnectOrigins ?? [];
  const isOrigin = (x: unknown) => {
    try {
      return typeof x === 'string' && x.startsWith('https://') && new URL(x).origin === x;
    } catch {
      return false;
    }
  };
  if (!Array.isArray(consoleConnectOrigins) || !consoleConnectOrigins.every(isOrigin)) {
    throw new Error(`jwtAuthorizer.consoleConnectOrigins must be https origins (https://host[:port], no path), got ${JSON.stringify(j.consoleConnectOrigins)}`);
  }
  return { issuer: j.issuer, audience: [...j.audience], principalClaim, consoleClientId, consoleScopes: [...consoleScopes], consoleConnectOrigins: [...consoleConnectOrigins] };
}

/** Applies the defaults and validates; throws on the first invalid prop. */
export function resolveProps(scope: Construct, p: TributaryClusterProps = {}): ResolvedProps {
  const { brokerIds, racks } = resolveBrokers(p.brokers ?? 3, p.racks);
  const tablePrefix = p.tablePrefix ?? defaultTablePrefix(scope);
  if (Token.isUnresolved(tablePrefix)) {
    throw new Error('tablePrefix must be a literal string, not a token: table names are written into the controller\'s broker list at synth time');
  }
  if (tablePrefix.length < 1 || tablePrefix.length > MAX_PREFIX || !PREFIX_PATTERN.test(tablePrefix)) {
    throw new Error(`tablePrefix must be 1 to ${MAX_PREFIX} characters from [a-zA-Z0-9_.-], got "${tablePrefix}"`);
  }
  const apiType = p.apiType ?? 'http';
  if (apiType !== 'http' && apiType !== 'rest') throw new Error(`apiType must be 'http' or 'rest', got '${String(apiType)}'`);
  const authorization = p.authorization ?? 'iam';
  if (authorization !== 'iam' && authorization !== 'none') {
    throw new Error(`authorization must be 'iam' or 'none', got '${String(authorization)}'`);
  }
  const jwtAuthorizer = p.jwtAuthorizer === undefined ? undefined : resolveJwt(p.jwtAuthorizer, apiType, p.authorization);
  const superUsers = p.superUsers ?? [];
  superUsers.forEach((u, i) => {
    if (typeof u !== 'string' || !/^[A-Za-z][A-Za-z0-9_-]*:[^;]+$/.test(u)) throw new Error(`superUsers[${i}] must be a Kafka principal such as "User:alice" (no ';'), got "${String(u)}"`);
  });
  const pushLambdaTargets = p.pushLambdaTargets ?? [];
  pushLambdaTargets.forEach((t, i) => {
    if (typeof t !== 'string' || (!Token.isUnresolved(t) && !LAMBDA_TARGET_ENTRY.test(t))) {
      throw new Error(`pushLambdaTargets[${i}] must be a Lambda function ARN, or an ARN prefix ending in '*' that names the account and region, got "${String(t)}"`);
    }
  });
  if (pushLambdaTargets.length > 0 && apiType !== 'http') throw new Error("pushLambdaTargets needs apiType 'http': push delivery runs in the websocket function");
  const throttlingRateLimit = p.throttlingRateLimit ?? 1000;
  if (typeof throttlingRateLimit !== 'number' || !(throttlingRateLimit > 0) || !Number.isFinite(throttlingRateLimit)) {
    throw new Error(`throttlingRateLimit must be a positive number of requests per second, got ${String(p.throttlingRateLimit)}`);
  }
  const throttlingBurstLimit = p.throttlingBurstLimit ?? 500;
  if (!isInt(throttlingBurstLimit) || throttlingBurstLimit < 1) {
    throw new Error(`throttlingBurstLimit must be a positive integer, got ${String(p.throttlingBurstLimit)}`);
  }
  const controllerTickMs = p.controllerTickMs ?? 1000;
  if (!isInt(controllerTickMs) || controllerTickMs < 100 || controllerTickMs > 10_000) {
    throw new Error(`controllerTickMs must be an integer from 100 to 10000, got ${String(p.controllerTickMs)}`);
  }
  const brokerSessionTimeoutMs = p.brokerSessionTimeoutMs ?? 9000;
  if (!isInt(brokerSessionTimeoutMs) || brokerSessionTimeoutMs < 2 * controllerTickMs || brokerSessionTimeoutMs > 300_000) {
    throw new Error(`brokerSessionTimeoutMs must be an integer from 2 × controllerTickMs (${2 * controllerTickMs}) to 300000, got ${String(p.brokerSessionTimeoutMs)}`);
  }
  const logRetention = p.logRetention ?? RetentionDays.ONE_MONTH;
  if (!Object.values(RetentionDays).includes(logRetention)) {
    throw new Error(`logRetention must be a RetentionDays value, got ${String(p.logRetention)}`);
  }
  const snapshotExpirationDays = p.snapshotExpirationDays ?? 7;
  if (!isInt(snapshotExpirationDays) || snapshotExpirationDays < 1) {
    throw new Error(`snapshotExpirationDays must be a positive integer, got ${String(p.snapshotExpirationDays)}`);
  }
  if (p.alarmEmail !== undefined && !EMAIL_PATTERN.test(p.alarmEmail)) {
    throw new Error(`alarmEmail must be an email address, got "${p.alarmEmail}"`);
  }
  const monitoring = p.monitoring ?? 'full';
  if (!MONITORING.includes(monitoring)) throw new Error(`monitoring must be one of ${MONITORING.join(', ')}, got "${String(p.monitoring)}"`);
  if (p.alarmEmail !== undefined && p.alarmTopic !== undefined) {
    throw new Error('alarmEmail and alarmTopic are mutually exclusive: subscribe the address to your topic instead');
  }
  const stageAvailabilityZoneId = p.stageAvailabilityZoneId;
  // (a literal: the bucket's name is built from it, within S3's 63 characters)
  if (stageAvailabilityZoneId !== undefined && (typeof stageAvailabilityZoneId !== 'string' || !AZ_ID_PATTERN.test(stageAvailabilityZoneId))) {
    throw new Error(`stageAvailabilityZoneId must be an Availability Zone id such as "use1-az4", got "${String(stageAvailabilityZoneId)}"`);
  }
  const removalPolicy = p.removalPolicy ?? RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE;
  if (p.deletionProtection === true && removalPolicy === RemovalPolicy.DESTROY) {
    throw new Error('deletionProtection cannot be true with removalPolicy DESTROY: the tables could not be deleted with the stack');
  }
  return {
    brokers: brokerIds.length,
    brokerIds,
    racks,
    tablePrefix,
    apiType,
    authorization,
    authMode: jwtAuthorizer ? 'jwt' : authorization,
    jwtAuthorizer,
    superUsers,
    pushLambdaTargets,
    removalPolicy,
    deletionProtection: p.deletionProtection ?? false,
    throttlingRateLimit,
    throttlingBurstLimit,
    sourceMaps: p.sourceMaps ?? false,
    controllerTickMs,
    brokerSessionTimeoutMs,
    logRetention,
    bucketVersioning: p.bucketVersioning ?? false,
    snapshotExpirationDays,
    serverAccessLogsBucket: p.serverAccessLogsBucket,
    encryptionKey: p.encryptionKey,
    stageAvailabilityZoneId,
    s3ForcePathStyle: p.s3ForcePathStyle ?? false,
    alarmEmail: p.alarmEmail,
    alarmTopic: p.alarmTopic,
    monitoring,
  };
}

/**
 * The broker ids (a count N: 1..N; a list: its ids) and each one's rack, sorted by id so the
 * same brokers in another order deploy the same template and broker list.
 */
function resolveBrokers(brokers: number | readonly number[], racks: readonly string[] | undefined): { brokerIds: number[]; racks: (string | null)[] } {
  let ids: number[];
  if (Array.isArray(brokers)) {
    const list = brokers as readonly unknown[];
    if (list.length < 1 || list.length > MAX_BROKERS) {
      throw new Error(`brokers must list 1 to ${MAX_BROKERS} broker ids, got ${list.length}`);
    }
    list.forEach((id, i) => {
      if (!isInt(id) || id < 0 || id > MAX_BROKER_ID) throw new Error(`brokers[${i}] must be a broker id, an integer from 0 to ${MAX_BROKER_ID}, got ${String(id)}`);
    });
    ids = list as number[];
    const twice = ids.find((id, i) => ids.indexOf(id) !== i);
    if (twice !== undefined) throw new Error(`brokers must list distinct ids: ${twice} appears more than once`);
  } else {
    if (!isInt(brokers) || brokers < 1 || brokers > MAX_BROKERS) {
      throw new Error(`brokers must be an integer from 1 to ${MAX_BROKERS} or a list of broker ids, got ${String(brokers)}`);
    }
    ids = Array.from({ length: brokers }, (_, i) => i + 1);
  }
  if (racks !== undefined) {
    if (racks.length !== ids.length) {
      throw new Error(`racks must have one entry per broker: got ${racks.length} racks for ${ids.length} brokers`);
    }
    racks.forEach((rack, i) => {
      if (typeof rack !== 'string' || rack.trim() === '') throw new Error(`racks[${i}] (broker ${ids[i]}) must be a non-empty string`);
    });
  }
  const brokersWithRacks = ids.map((id, i) => ({ id, rack: racks?.[i] ?? null })).sort((a, b) => a.id - b.id);
  return { brokerIds: brokersWithRacks.map((b) => b.id), racks: brokersWithRacks.map((b) => b.rack) };
}
