/**
 * `TributaryCluster`: a whole Tributary cluster as one construct — the coordination table, one
 * replica table per broker, the bucket, the group commit's stage bucket (cdk/stage-bucket.ts), one
 * Lambda function per entry of the function catalog (lib/functions/catalog.ts) with exactly the access its entry names, the API built from the route table
 * (lib/http/routes.ts), the console under `<api url>ui/` (lib/http/console-server.ts; its routes need no
 * credentials), the WebSocket API beside an HTTP API (cdk/websocket.ts), the replicator's stream
 * event sources, the controller's schedule, alarms and a dashboard. The broker list goes into the coordination table (a custom resource's PutItem),
 * where the controller reads it: a Lambda environment holds 4 KB. Tables come from lib/storage/tables.ts, the same definitions the local stack
 * creates, so what runs locally is what deploys.
 *
 * ```ts
 * new TributaryCluster(this, 'Events', { brokers: 3 });
 * ```
 */
import { ArnFormat, Duration, Lazy, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type * as s3express from 'aws-cdk-lib/aws-s3express';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as cr from 'aws-cdk-lib/custom-resources';
import type * as apigw from 'aws-cdk-lib/aws-apigateway';
import type * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import type * as cw from 'aws-cdk-lib/aws-cloudwatch';
import { Construct } from 'constructs';
import { createHash } from 'node:crypto';
import { CONTROLLER_WAKE_PATTERN, FUNCTIONS, REPLICA_STREAM_PATTERN, type FunctionName, type FunctionSpec, type WebSocketFunctionName } from '../lib/functions/catalog.js';
import { DEPLOYED_BROKERS_ITEM } from '../lib/storage/tables.js';
import { ENVIRONMENT } from '../lib/config.js';
import { STATIC_ROUTES } from '../lib/http/static-routes.js';
import { DEFAULT_ROUTE, ROUTES, type RouteSpec } from '../lib/http/routes.js';
import { coordinationTableSpec, replicaTableSpec, type KeyType, type TableSpec } from '../lib/storage/tables.js';
import { grantCatalogAccess } from './access.js';
import { REST_STAGE, buildApi } from './api.js';
import { FunctionBundler } from './bundling.js';
import { HANDLER } from '../build/functions.js';
import { buildObservability } from './observability.js';
import { resolveProps, type ResolvedProps, type TributaryClusterProps } from './props.js';
import { buildStageBucket, grantStage } from './stage-bucket.js';
import { WEBSOCKET_STAGE, buildWebSocketApi, type ClusterWebSocketApi } from './websocket.js';

export type { TributaryClusterProps } from './props.js';

/**
 * What a function needs of the cluster's key (DynamoDB, S3 with Bucket Keys, SQS and stream
 * reads): named actions, no wildcards.
 */
function grantKey(key: kms.IKey | undefined, grantee: iam.IGrantable): void {
  if (!key) return;
  key.grant(grantee, 'kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey', 'kms:DescribeKey');
  // A table's own write grant (grantReadWriteData) adds its key's wildcard actions.
  if (grantee instanceof Construct) {
    for (const action of ['kms:GenerateDataKey*', 'kms:ReEncrypt*']) {
      Validations.of(grantee).acknowledge({
        id: `AwsSolutions-IAM5[Action::${action}]`,
        reason: `The cluster key's ${action} comes with a table's write grant (aws-cdk-lib's grantReadWriteData for a customer-managed key) and is on that one key's ARN only.`,
      });
    }
  }
}

/** How the replicator reads the replica tables' streams (one event source mapping per table). */
export const STREAM_SOURCE = {
  startingPosition: lambda.StartingPosition.LATEST,
  batchSize: 100,
  bisectBatchOnError: true,
  reportBatchItemFailures: true,
  // A record that keeps failing is retried this often (or for at most an hour), then its
  // description goes to the failure queue and the shard moves on. Nothing is lost with it: the
  // failing invocations put their partitions in the lag index, and the controller's replication
  // sweep re-drives every lagging partition (its full pass finds one whose mark was lost too).
  retryAttempts: 10,
  maxRecordAge: Duration.hours(1),
  // Per shard, in order: one invocation at a time keeps a partition's copies in offset order.
  parallelizationFactor: 1,
} as const;

/** The controller's schedule: EventBridge rules run on LocalStack's free plan; Scheduler schedules do not. */
export const CONTROLLER_SCHEDULE = events.Schedule.rate(Duration.minutes(1));

const ATTRIBUTE_TYPES: Record<KeyType, dynamodb.AttributeType> = {
  S: dynamodb.AttributeType.STRING, N: dynamodb.AttributeType.NUMBER, B: dynamodb.AttributeType.BINARY,
};

/** `controller` → `Controller`, `websocket-authorizer` → `WebsocketAuthorizer` (construct ids, alarm names). */
const capitalized = (s: string): string => s.split('-').map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('');

/** Does the function touch the cluster's storage (tables, streams, queue, bucket) at all? */
const usesStorage = (spec: FunctionSpec): boolean =>
  spec.coordination !== 'none' || spec.replicas !== 'none' || spec.bucketRead.length > 0 || spec.bucketWrite.length > 0
  || spec.stages === true || spec.trigger === 'streams' || spec.trigger === 'schedule';

/**
 * The catalog's functions a deployment runs: the WebSocket API's come with an HTTP API (a REST API
 * is for LocalStack's free plan, which has no WebSocket APIs either), and its authorizer only with
 * a JWT authorizer (IAM and none need no function).
 */
export function deployedFunctions(p: Pick<ResolvedProps, 'apiType' | 'jwtAuthorizer'>): readonly FunctionSpec[] {
  return FUNCTIONS.filter((f) => {
    if (f.trigger === 'websocket') return p.apiType === 'http';
    if (f.trigger === 'authorizer') return p.apiType === 'http' && p.jwtAuthorizer !== undefined;
    return true;
  });
}

/** The variable that tells a function the name of a function in its `invokes`. */
const INVOKED_FUNCTION_ENV: Partial<Record<FunctionName, string>> = { websocket: ENVIRONMENT.websocketFunction };

/** The deployed functions by name: the WebSocket API's only where it is deployed (deployedFunctions). */
export type ClusterFunctions = Readonly<Record<Exclude<FunctionName, WebSocketFunctionName>, lambda.Function> & Partial<Record<WebSocketFunctionName, lambda.Function>>>;

export class TributaryCluster extends Construct {
  /** The props with their defaults applied. */
  readonly settings: ResolvedProps;
  /** The coordination table (Kafka's ZooKeeper / KRaft quorum). */
  readonly coordinationTable: dynamodb.Table;
  /**
   * One replica table per broker: `replicaTables[i]` is broker `settings.brokerIds[i]`'s (with a
   * count, broker `i + 1`'s). A table's construct id is `Broker<id>Table`, whatever the list.
   */
  readonly replicaTables: readonly dynamodb.Table[];
  /** Large batches (`data/`), snapshots (`snapshots/`) and segments. */
  readonly bucket: s3.Bucket;
  /**
   * The group commit's staged batches (`stage/`, a day at most): an S3 Express One Zone directory
   * bucket in the `stageAvailabilityZoneId` zone. Its name (`ref`) is in the
   * `TRIBUTARY_STAGE_BUCKET` of the functions whose catalog entry `stages`.
   */
  readonly stageBucket: s3express.CfnDirectoryBucket;
  /**
   * One function per entry of the function catalog, by name; `websocket` with the WebSocket API
   * (`apiType: 'http'`), `websocket-authorizer` with `jwtAuthorizer` too.
   */
  readonly functions: ClusterFunctions;
  /** The HTTP API (`apiType: 'http'`) or REST API (`apiType: 'rest'`). */
  readonly api: apigwv2.HttpApi | apigw.RestApi;
  /** The API's base URL, ending in `/`. */
  readonly apiUrl: string;
  /**
   * The console's page, `<apiUrl>ui/`: open to anyone (static files), its API calls authenticated
   * as the API is. With `jwtAuthorizer` it signs in with that provider; with IAM alone it cannot
   * call the API (a browser has no SigV4 credentials).
   */
  readonly consoleUrl: string;
  /** The WebSocket API (WebSocket consume), with `apiType: 'http'`. */
  readonly webSocketApi: ClusterWebSocketApi | undefined;
  /** Where WebSocket clients connect, `wss://…/prod`, with `apiType: 'http'`. */
  readonly webSocketUrl: string | undefined;
  /**
   * Writes the broker list into the coordination table on every create and update
   * (DEPLOYED_BROKERS_ITEM in lib/storage/tables.ts); the controller registers the brokers from it.
   */
  readonly brokerList: cr.AwsCustomResource;
  /** Where stream batches the replicator gave up on are recorded. */
  readonly replicationFailureQueue: sqs.Queue;
  /** The topic every alarm notifies, when `alarmEmail` or `alarmTopic` is set. */
  readonly alarmTopic: sns.ITopic | undefined;
  /** Every alarm, by name (`OfflinePartitions`, `AdminErrors`, ...). */
  readonly alarms: Readonly<Record<string, cw.Alarm>>;
  /** Cluster health, throughput, API, functions, streams and DynamoDB capacity on one page (with `monitoring: 'full'`, the default). */
  readonly dashboard: cw.Dashboard | undefined;

  constructor(scope: Construct, id: string, props: TributaryClusterProps = {}) {
    super(scope, id);
    const p = resolveProps(this, props);
    this.settings = p;

    const coordination = coordinationTableSpec(p.tablePrefix);
    this.coordinationTable = this.table('CoordinationTable', coordination, p);
    const brokers = p.brokerIds.map((brokerId, i) => ({
      brokerId, replicaTable: replicaTableSpec(brokerId, p.tablePrefix).name, rack: p.racks[i] ?? null,
    }));
    this.replicaTables = brokers.map((b) => this.table(`Broker${b.brokerId}Table`, replicaTableSpec(b.brokerId, p.tablePrefix), p));
    this.bucket = this.dataBucket(p);
    this.stageBucket = buildStageBucket(this, p);
    this.replicationFailureQueue = new sqs.Queue(this, 'ReplicationFailures', {
      ...(p.encryptionKey ? { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: p.encryptionKey } : { encryption: sqs.QueueEncryption.SQS_MANAGED }),
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    Validations.of(this.replicationFailureQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason: 'This queue is itself the failure destination (dead-letter queue) of the replicator\'s stream event sources.',
    });

    const deployed = deployedFunctions(p);
    const bundler = new FunctionBundler(deployed);
    const functions: Partial<Record<FunctionName, lambda.Function>> = {};
    for (const spec of deployed) {
      const fn = this.catalogFunction(spec, p, bundler, {
        [ENVIRONMENT.coordinationTable]: this.coordinationTable.tableName,
        [ENVIRONMENT.bucket]: this.bucket.bucketName,
        [ENVIRONMENT.s3ForcePathStyle]: String(p.s3ForcePathStyle),
        // (the others have no stage: the runtime's fallback to the bucket is for the local stack)
        ...(spec.stages ? { [ENVIRONMENT.stageBucket]: this.stageBucket.ref } : {}),
        // What a caller may do (lib/security): the functions that serve callers, HTTP and WebSocket.
        ...(spec.trigger === 'http' || spec.trigger === 'websocket' ? {
          [ENVIRONMENT.auth]: p.authMode,
          ...(p.superUsers.length > 0 ? { [ENVIRONMENT.superUsers]: p.superUsers.join(';') } : {}),
        } : {}),
        // Who the caller is (lib/http/principal.ts): the HTTP functions read a JWT's claim, the
        // WebSocket API's authorizer verifies the token itself (lib/http/websocket-authorizer.ts).
        ...((spec.trigger === 'http' || spec.trigger === 'authorizer') && p.jwtAuthorizer ? { [ENVIRONMENT.principalClaim]: p.jwtAuthorizer.principalClaim ?? 'sub' } : {}),
        ...(spec.trigger === 'authorizer' && p.jwtAuthorizer ? {
          [ENVIRONMENT.jwtIssuer]: p.jwtAuthorizer.issuer,
          [ENVIRONMENT.jwtAudience]: p.jwtAuthorizer.audience.join(' '),
        } : {}),
        // The console's sign-in (its /ui/config.json and the page's Content-Security-Policy).
        ...(spec.bundlesConsole && p.jwtAuthorizer ? {
          [ENVIRONMENT.consoleOidcIssuer]: p.jwtAuthorizer.issuer,
          [ENVIRONMENT.consoleOidcClientId]: p.jwtAuthorizer.consoleClientId ?? p.jwtAuthorizer.audience[0] ?? '',
          [ENVIRONMENT.consoleOidcScopes]: (p.jwtAuthorizer.consoleScopes ?? ['openid']).join(' '),
          ...(p.jwtAuthorizer.consoleConnectOrigins?.length ? { [ENVIRONMENT.consoleConnectOrigins]: p.jwtAuthorizer.consoleConnectOrigins.join(' ') } : {}),
        } : {}),
        // Which functions push subscriptions may invoke: checked where they are created and delivered.
        ...(spec.name === 'groups' || spec.name === 'websocket' ? { [ENVIRONMENT.pushLambdaTargets]: Lazy.string({ produce: () => this.pushTargets.join(',') }) } : {}),
        ...(spec.trigger === 'schedule' ? {
          [ENVIRONMENT.tickMs]: String(p.controllerTickMs),
          [ENVIRONMENT.sessionTimeoutMs]: String(p.brokerSessionTimeoutMs),
        } : {}),
      });
      grantCatalogAccess(spec, fn, { coordination: this.coordinationTable, replicas: this.replicaTables, bucket: this.bucket });
      if (spec.stages) grantStage(this.stageBucket, fn);
      // (a function that touches no table, stream, queue or bucket, the console's, needs no key)
      if (usesStorage(spec)) grantKey(p.encryptionKey, fn.role as iam.Role);
      this.acknowledgePrefixWildcards(spec, fn);
      this.trigger(spec, fn);
      functions[spec.name] = fn;
    }
    this.functions = functions as ClusterFunctions;
    this.grantInvokes(deployed);
    for (const target of p.pushLambdaTargets) this.allowPushTarget(target);
    this.brokerList = this.writeBrokerList(brokers, p);

    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', { retention: p.logRetention, removalPolicy: p.removalPolicy });
    const api = buildApi(this, {
      name: p.tablePrefix, type: p.apiType, authorization: p.authorization, ...(p.jwtAuthorizer ? { jwt: p.jwtAuthorizer } : {}), routes: ROUTES, defaultRoute: DEFAULT_ROUTE, staticRoutes: STATIC_ROUTES, functions: this.functions, accessLogs,
      throttle: { rateLimit: p.throttlingRateLimit, burstLimit: p.throttlingBurstLimit },
    });
    this.api = api.api;
    this.apiUrl = api.url;
    this.consoleUrl = `${api.url}ui/`;
    this.webSocketApi = this.functions.websocket ? this.buildWebSocketApi(this.functions.websocket, p) : undefined;
    this.webSocketUrl = this.webSocketApi?.url;
    // (the console follows partitions live over it: its config.json and Content-Security-Policy name it)
    if (this.webSocketUrl) this.functions.console?.addEnvironment(ENVIRONMENT.consoleWebsocketUrl, this.webSocketUrl);

    this.alarmTopic = p.alarmTopic ?? (p.alarmEmail ? this.emailTopic(p.alarmEmail, p.encryptionKey) : undefined);
    const observability = buildObservability(this, {
      name: p.tablePrefix,
      clusterDimension: coordination.name,
      coordinationTable: this.coordinationTable,
      replicaTables: this.replicaTables,
      specs: deployed,
      functions: this.functions,
      api,
      replicationFailures: this.replicationFailureQueue,
      topic: this.alarmTopic,
      monitoring: p.monitoring,
    });
    this.alarms = observability.alarms;
    this.dashboard = observability.dashboard;
  }

  /**
   * Lets `grantee` call the API (`execute-api:Invoke`; with `authorization: 'iam'`): every route
   * and the catch-all by default, or only `routes`, entries of the route table
   * (lib/http/routes.ts) — a producer, say, gets `ROUTES.filter((r) => r.fn === 'produce')`.
   * Path variables match any value.
   */
  grantInvoke(grantee: iam.IGrantable, routes?: readonly RouteSpec[]): iam.Grant {
    const stage = this.settings.apiType === 'rest' ? REST_STAGE : '$default';
    const apiId = 'restApiId' in this.api ? this.api.restApiId : this.api.apiId;
    const arn = (resourceName: string) => Stack.of(this).formatArn({ service: 'execute-api', resource: apiId, arnFormat: ArnFormat.SLASH_RESOURCE_NAME, resourceName });
    for (const r of routes ?? []) {
      if (!r.path.startsWith('/')) throw new Error(`grantInvoke: ${r.method} ${r.path} is not a route of the route table (the catch-all comes with every route: omit routes)`);
    }
    const resourceArns = routes === undefined
      ? [arn('*')]
      : [...new Set(routes.map((r) => arn(`${stage}/${r.method}${r.path.replace(/\{[^}]+\}/g, '*')}`)))];
    return iam.Grant.addToPrincipal({ grantee, actions: ['execute-api:Invoke'], resourceArns });
  }

  /**
   * Lets `grantee` open WebSocket connections (`execute-api:Invoke` on the WebSocket API's
   * `$connect`; with `authorization: 'iam'`, the upgrade request SigV4-signed). What a connection
   * may then read is the ACLs' to say, as for the HTTP API.
   */
  grantWebSocketConnect(grantee: iam.IGrantable): iam.Grant {
    if (!this.webSocketApi) throw new Error("grantWebSocketConnect: this cluster has no WebSocket API (it comes with apiType 'http')");
    return iam.Grant.addToPrincipal({ grantee, actions: ['execute-api:Invoke'], resourceArns: [this.webSocketApi.connectArn] });
  }

  /**
   * Lets push subscriptions deliver to `target` (an endpoint of type `lambda`): it joins the
   * allow-list (`pushLambdaTargets`) and the function that delivers them (the websocket function)
   * may invoke it (its unqualified ARN; name an alias or version in `pushLambdaTargets`). A
   * subscription to a function neither names is refused at its creation.
   */
  grantPushTarget(target: lambda.IFunction): iam.Grant {
    return this.allowPushTarget(target.functionArn);
  }

  /** The ARNs and ARN prefixes push subscriptions may invoke (`pushLambdaTargets`, then each `grantPushTarget`). */
  private readonly pushTargets: string[] = [];

  /**
   * Puts one entry in the allow-list the groups and websocket functions check, and lets the
   * deliverer invoke exactly what it names: the same string is the IAM resource.
   */
  private allowPushTarget(entry: string): iam.Grant {
    const deliverer = this.functions.websocket;
    if (!deliverer) throw new Error("grantPushTarget: push delivery runs in the websocket function, which comes with apiType 'http'");
    this.pushTargets.push(entry);
    if (!Token.isUnresolved(entry) && entry.endsWith('*')) {
      Validations.of(deliverer.role as iam.Role).acknowledge({
        id: `AwsSolutions-IAM5[Resource::${entry}]`,
        reason: `pushLambdaTargets names ${entry}: the deployment lets push subscriptions deliver to every function under that prefix, and a subscription to any other is refused.`,
      });
    }
    return iam.Grant.addToPrincipal({ grantee: deliverer, actions: ['lambda:InvokeFunction'], resourceArns: [entry] });
  }

  /**
   * Each function whose catalog entry `invokes` others may invoke exactly those (the unqualified
   * function's ARN, no versions or aliases) and is told their names. An invoked function that is
   * not deployed (the websocket function with a REST API) is left out: nothing is told its name.
   */
  private grantInvokes(deployed: readonly FunctionSpec[]): void {
    for (const spec of deployed) {
      const fn = this.functions[spec.name];
      if (!fn) continue;
      for (const name of spec.invokes ?? []) {
        const target = this.functions[name];
        if (!target) continue;
        const variable = INVOKED_FUNCTION_ENV[name];
        if (!variable) throw new Error(`the ${spec.name} function invokes ${name}, which no variable of ENVIRONMENT (lib/config.ts) names`);
        fn.addEnvironment(variable, target.functionName);
        fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [target.functionArn] }));
      }
    }
  }

  /**
   * The WebSocket API, its access logs, and what the function that posts to connections needs:
   * their endpoint, and `execute-api:ManageConnections` on this API's stage's connections only.
   */
  private buildWebSocketApi(handler: lambda.Function, p: ResolvedProps): ClusterWebSocketApi {
    const accessLogs = new logs.LogGroup(this, 'WebSocketAccessLogs', { retention: p.logRetention, removalPolicy: p.removalPolicy });
    const ws = buildWebSocketApi(this, {
      name: p.tablePrefix, authorization: p.authorization, handler, accessLogs,
      ...(this.functions['websocket-authorizer'] ? { jwtAuthorizer: this.functions['websocket-authorizer'] } : {}),
      throttle: { rateLimit: p.throttlingRateLimit, burstLimit: p.throttlingBurstLimit },
    });
    const apiId = Stack.of(this).getLogicalId(ws.api.node.defaultChild as apigwv2.CfnApi);
    for (const spec of FUNCTIONS.filter((f) => f.managesConnections)) {
      const fn = this.functions[spec.name];
      if (!fn) continue;
      fn.addEnvironment(ENVIRONMENT.websocketEndpoint, ws.connectionsEndpoint);
      fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['execute-api:ManageConnections'], resources: [ws.connectionsArn] }));
      Validations.of(fn.role as iam.Role).acknowledge({
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<${apiId}>/${WEBSOCKET_STAGE}/*/@connections/*]`,
        reason: `The ${spec.name} function posts to, reads and closes WebSocket connections whose ids API Gateway assigns at run time: the grant is on this API's ${WEBSOCKET_STAGE} stage's @connections only (any method: POST, GET, DELETE).`,
      });
    }
    return ws;
  }

  /**
   * One PutItem of the broker list (an AwsCustomResource, on create and update), by a role that
   * may put items under the list's partition key only and write its own log group. The provider
   * function is a singleton per stack: with two clusters in one stack the first one's role and log
   * group serve both (each cluster's policy is attached to that role).
   */
  private writeBrokerList(brokers: readonly { brokerId: number; replicaTable: string; rack: string | null }[], p: ResolvedProps): cr.AwsCustomResource {
    const json = JSON.stringify(brokers);
    const putItem: cr.AwsSdkCall = {
      service: 'DynamoDB',
      action: 'PutItem',
      parameters: {
        // The literal name (the prefix is never a token), so the call is plain JSON in the template;
        // the dependency below orders it after the table.
        TableName: coordinationTableSpec(p.tablePrefix).name,
        Item: {
          pk: { S: DEPLOYED_BROKERS_ITEM.pk }, sk: { S: DEPLOYED_BROKERS_ITEM.sk },
          brokers: { S: json }, version: { S: createHash('sha256').update(json).digest('hex').slice(0, 16) },
        },
      },
      physicalResourceId: cr.PhysicalResourceId.of(`${coordinationTableSpec(p.tablePrefix).name}/${DEPLOYED_BROKERS_ITEM.pk}/${DEPLOYED_BROKERS_ITEM.sk}`),
    };
    const logGroup = new logs.LogGroup(this, 'BrokerListLogs', { retention: p.logRetention, removalPolicy: p.removalPolicy });
    const role = new iam.Role(this, 'BrokerListRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: 'Tributary: writes the broker list into the coordination table at deployment',
    });
    logGroup.grantWrite(role);
    grantKey(p.encryptionKey, role);
    const resource = new cr.AwsCustomResource(this, 'BrokerList', {
      onCreate: putItem,
      onUpdate: putItem,
      policy: cr.AwsCustomResourcePolicy.fromStatements([new iam.PolicyStatement({
        actions: ['dynamodb:PutItem'],
        resources: [this.coordinationTable.tableArn],
        conditions: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [DEPLOYED_BROKERS_ITEM.pk] } },
      })]),
      role,
      logGroup,
      installLatestAwsSdk: false,
      timeout: Duration.minutes(2),
    });
    resource.node.addDependency(this.coordinationTable);
    return resource;
  }

  /** A table from its definition in lib/storage/tables.ts. */
  private table(id: string, spec: TableSpec, p: ResolvedProps): dynamodb.Table {
    return new dynamodb.Table(this, id, {
      tableName: spec.name,
      partitionKey: { name: spec.partitionKey.name, type: ATTRIBUTE_TYPES[spec.partitionKey.type] },
      sortKey: { name: spec.sortKey.name, type: ATTRIBUTE_TYPES[spec.sortKey.type] },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: p.deletionProtection,
      ...(p.encryptionKey ? { encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED, encryptionKey: p.encryptionKey } : { encryption: dynamodb.TableEncryption.AWS_MANAGED }),
      ...(spec.stream === 'NEW_IMAGE' ? { stream: dynamodb.StreamViewType.NEW_IMAGE } : {}),
      ...(spec.timeToLiveAttribute ? { timeToLiveAttribute: spec.timeToLiveAttribute } : {}),
      removalPolicy: p.removalPolicy,
    });
  }

  private dataBucket(p: ResolvedProps): s3.Bucket {
    const bucket = new s3.Bucket(this, 'Bucket', {
      ...(p.encryptionKey ? { encryption: s3.BucketEncryption.KMS, encryptionKey: p.encryptionKey, bucketKeyEnabled: true } : { encryption: s3.BucketEncryption.S3_MANAGED }),
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      versioned: p.bucketVersioning,
      lifecycleRules: [
        { id: 'expire-snapshots', prefix: 'snapshots/', expiration: Duration.days(p.snapshotExpirationDays) },
        { id: 'abort-incomplete-multipart-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        ...(p.bucketVersioning ? [{ id: 'expire-noncurrent-versions', noncurrentVersionExpiration: Duration.days(7) }] : []),
      ],
      ...(p.serverAccessLogsBucket ? { serverAccessLogsBucket: p.serverAccessLogsBucket, serverAccessLogsPrefix: 'tributary/' } : {}),
      removalPolicy: p.removalPolicy,
      // DESTROY would fail on a bucket that still holds objects: empty it first (a custom resource).
      autoDeleteObjects: p.removalPolicy === RemovalPolicy.DESTROY,
    });
    if (!p.serverAccessLogsBucket) {
      Validations.of(bucket).acknowledge({
        id: 'AwsSolutions-S1',
        reason: 'Only the cluster\'s own functions can reach this bucket (no public access, TLS only, least-privilege roles); its audit trail is CloudTrail data events. Pass serverAccessLogsBucket to add server access logs.',
      });
    }
    return bucket;
  }

  /** One function of the catalog: its own role and log group, memory and timeout from the catalog. */
  private catalogFunction(spec: FunctionSpec, p: ResolvedProps, bundler: FunctionBundler, environment: Record<string, string>): lambda.Function {
    const name = capitalized(spec.name);
    const logGroup = new logs.LogGroup(this, `${name}Logs`, { retention: p.logRetention, removalPolicy: p.removalPolicy });
    // An explicit role instead of AWSLambdaBasicExecutionRole: it may write to its own log group only.
    const role = new iam.Role(this, `${name}Role`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Tributary ${spec.name} function`,
    });
    logGroup.grantWrite(role);
    const fn = new lambda.Function(this, `${name}Function`, {
      description: `Tributary ${spec.name}: ${spec.description}`,
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      handler: HANDLER,
      code: bundler.code(spec),
      memorySize: spec.memoryMb,
      timeout: Duration.seconds(spec.timeoutSeconds),
      role,
      logGroup,
      loggingFormat: lambda.LoggingFormat.JSON,
      // (source maps only when asked for: loading them is part of every cold start)
      environment: { ...environment, ...(p.sourceMaps ? { NODE_OPTIONS: '--enable-source-maps' } : {}) },
      // No reserved concurrency: a new account's concurrency quota is 10 and Lambda refuses to
      // reserve any of it. Nor is it needed: each minute's controller invocation is one pass
      // (lambdas/controller.ts) that returns once there is nothing to do, usually within a
      // second; an invocation that overlaps one still running finds the lease held and returns
      // after one tick (the lease fences every controller write either way).
    });
    Validations.of(fn).acknowledge({
      id: 'AwsSolutions-L1',
      reason: 'Node.js 22 is the runtime the bundles target (esbuild target node22) and the code is tested on; move to a newer runtime together with the bundle target.',
    });
    return fn;
  }

  /** What invokes a function, from its catalog entry; HTTP and WebSocket functions are wired by their APIs. */
  private trigger(spec: FunctionSpec, fn: lambda.Function): void {
    if (spec.trigger === 'streams') {
      for (const table of this.replicaTables) {
        fn.addEventSource(new DynamoEventSource(table, {
          ...STREAM_SOURCE,
          onFailure: new SqsDlq(this.replicationFailureQueue),
          // The handler ignores deletions and the group commit's stage; so do we, before paying for an invocation.
          filters: [lambda.FilterCriteria.filter(structuredClone(REPLICA_STREAM_PATTERN) as Record<string, unknown>)],
        }));
      }
      // Lambda's stream poller needs dynamodb:ListStreams, which has no resource-level permissions.
      Validations.of(fn.role as iam.Role).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason: 'dynamodb:ListStreams (granted for the stream event sources) supports no resource-level permissions; every other stream action is granted on the replica tables\' stream ARNs only.',
      });
    }
    if (spec.trigger === 'schedule') {
      new events.Rule(this, `${capitalized(spec.name)}Schedule`, {
        description: `Invokes the Tributary ${spec.name} every minute`,
        schedule: CONTROLLER_SCHEDULE,
        targets: [new targets.LambdaFunction(fn, { retryAttempts: 2, maxEventAge: Duration.minutes(1) })],
      });
      // An invocation throttled behind the running one is superseded by the next minute's.
      fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(1) });
      // Between runs, a data path's suspect report wakes it (lib/functions/catalog.ts, CONTROLLER_WAKE_PATTERN):
      // only those records of the coordination table's stream invoke it; a failed wake is not
      // retried, the next scheduled run covers it.
      fn.addEventSource(new DynamoEventSource(this.coordinationTable, {
        startingPosition: lambda.StartingPosition.LATEST,
        batchSize: 10,
        retryAttempts: 0,
        parallelizationFactor: 1,
        filters: [lambda.FilterCriteria.filter(structuredClone(CONTROLLER_WAKE_PATTERN) as Record<string, unknown>)],
      }));
      Validations.of(fn.role as iam.Role).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason: 'dynamodb:ListStreams (granted for the coordination table\'s stream event source) supports no resource-level permissions; every other stream action is granted on that stream\'s ARN only.',
      });
    }
  }

  /** cdk-nag flags `arn:...:bucket/data/*`; object keys are made at run time, so a prefix is as tight as it gets. */
  private acknowledgePrefixWildcards(spec: FunctionSpec, fn: lambda.Function): void {
    const bucketId = Stack.of(this).getLogicalId(this.bucket.node.defaultChild as s3.CfnBucket);
    for (const prefix of new Set([...spec.bucketRead, ...spec.bucketWrite])) {
      Validations.of(fn.role as iam.Role).acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${prefix}*]`,
        reason: `The ${spec.name} function reads or writes objects whose keys are created at run time under ${prefix}, the prefix its catalog entry names (lib/functions/catalog.ts); listing is limited to the same prefixes by an s3:prefix condition.`,
      });
    }
  }

  private emailTopic(email: string, key: kms.IKey | undefined): sns.Topic {
    const topic = new sns.Topic(this, 'AlarmTopic', { displayName: 'Tributary alarms', enforceSSL: true, ...(key ? { masterKey: key } : {}) });
    // CloudWatch alarms publish to an encrypted topic only when the key lets them (a key of this stack: its policy is ours to extend).
    if (key instanceof kms.Key) {
      key.addToResourcePolicy(new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')], actions: ['kms:Decrypt', 'kms:GenerateDataKey*'], resources: ['*'],
      }));
    }

    topic.addSubscription(new subscriptions.EmailSubscription(email));
    return topic;
  }
}
