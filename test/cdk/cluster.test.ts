/** Template assertions: the security- and cost-relevant properties of a default deployment. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RemovalPolicy } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { STATIC_ROUTES, staticRouteKey } from '../../lib/http/static-routes.js';
import { DEFAULT_ROUTE, ROUTES } from '../../lib/http/routes.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { CLUSTER_DIMENSION, CLUSTER_METRICS, METRICS_NAMESPACE } from '../../lib/metrics.js';
import { CONTROLLER_WAKE_PATTERN, FUNCTIONS, REPLICA_STREAM_PATTERN } from '../../lib/functions/catalog.js';
import { DEPLOYED_BROKERS_ITEM } from '../../lib/storage/tables.js';
import { ENVIRONMENT } from '../../lib/config.js';
import { coordinationTableSpec, replicaTableSpec } from '../../lib/storage/tables.js';
import { permissionsOf } from './iam.js';
import { ESSENTIAL_ALARMS } from '../../cdk/observability.js';
import { DEFAULT_STAGE_ZONES } from '../../cdk/stage-bucket.js';
import { TributaryStack } from '../../cdk/stack.js';
import { deployedFunctions } from '../../cdk/cluster.js';
import { logicalId, resourcesOf, synth, testApp, type Synthesized } from './synth.js';

let s: Synthesized;
beforeAll(() => {
  s = synth({ brokers: 3, racks: ['a', 'b', 'c'] });
});

const cluster = () => s.stack.cluster;
const fnId = (name: string) => logicalId(s, (cluster().functions as Record<string, any>)[name]);
/** The catalog's functions this deployment runs (the WebSocket API's authorizer comes with a JWT authorizer only). */
const deployed = () => deployedFunctions(cluster().settings);
/** Resources of the HTTP API (the WebSocket API's: test/cdk/websocket.test.ts). */
const ofHttpApi = (type: string) => resourcesOf(s, type).filter(([, r]) => r.ApiId?.Ref === logicalId(s, cluster().api));

describe('TributaryCluster: tables', () => {
  it('creates every table on demand, with point-in-time recovery and AWS-managed KMS encryption', () => {
    const tables = resourcesOf(s, 'AWS::DynamoDB::Table');
    expect(tables).toHaveLength(1 + 3);
    for (const [, t] of tables) {
      expect(t.BillingMode).toBe('PAY_PER_REQUEST');
      expect(t.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
      // SSEEnabled without a key = KMS with the AWS-managed key (aws/dynamodb).
      expect(t.SSESpecification).toEqual({ SSEEnabled: true });
    }
  });

  it('keeps tables, bucket and log groups on update and delete, but not when the first create fails (a failed first deploy can be retried)', () => {
    // RetainExceptOnCreate: a rolled-back create deletes them, so a retry does not meet a table
    // of the same name; an update that replaces one, or deleting the stack, keeps it.
    for (const type of ['AWS::DynamoDB::Table', 'AWS::S3::Bucket', 'AWS::S3Express::DirectoryBucket', 'AWS::Logs::LogGroup']) {
      expect(Object.keys(s.template.findResources(type)).length, type).toBeGreaterThan(0);
      s.template.allResources(type, { DeletionPolicy: 'RetainExceptOnCreate', UpdateReplacePolicy: 'Retain' });
    }
  });

  it('leaves deletion protection off by default (a protected table turns a failed create into ROLLBACK_FAILED), on when asked', () => {
    s.template.allResourcesProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: false });
    const p = synth({ brokers: 1, deletionProtection: true });
    p.template.allResourcesProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: true });
    expect(() => synth({ brokers: 1, deletionProtection: true, removalPolicy: RemovalPolicy.DESTROY }))
      .toThrow('deletionProtection cannot be true with removalPolicy DESTROY');
  });

  it('streams new images from the replica tables (the replicator) and the coordination table (the controller\'s wake)', () => {
    const prefix = cluster().settings.tablePrefix;
    for (const [, t] of resourcesOf(s, 'AWS::DynamoDB::Table')) {
      expect(t.StreamSpecification, t.TableName).toEqual({ StreamViewType: 'NEW_IMAGE' });
    }
    expect(cluster().replicaTables.map((t) => logicalId(s, t))).toHaveLength(3);
    s.template.hasResourceProperties('AWS::DynamoDB::Table', { TableName: replicaTableSpec(3, prefix).name });
  });

  it('expires items by TTL on expiresAt: the coordination table\'s quota usage counters, the replica tables\' rolled batch items', () => {
    for (const [, t] of resourcesOf(s, 'AWS::DynamoDB::Table')) {
      expect(t.TimeToLiveSpecification, t.TableName).toEqual({ AttributeName: 'expiresAt', Enabled: true });
    }
  });

  it('derives a table prefix unique to the stack and construct by default', () => {
    expect(cluster().settings.tablePrefix).toMatch(/^TestStack-Cluster-[0-9A-F]{8}$/);
  });

  it('lets deletion go with the stack when removalPolicy is DESTROY, emptying the bucket first', () => {
    const d = synth({ brokers: 1, removalPolicy: RemovalPolicy.DESTROY });
    d.template.allResourcesProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: false });
    for (const type of ['AWS::DynamoDB::Table', 'AWS::S3::Bucket', 'AWS::S3Express::DirectoryBucket', 'AWS::Logs::LogGroup']) d.template.allResources(type, { DeletionPolicy: 'Delete' });
    d.template.hasResourceProperties('Custom::S3AutoDeleteObjects', { BucketName: { Ref: logicalId(d, d.stack.cluster.bucket) } });
    s.template.resourceCountIs('Custom::S3AutoDeleteObjects', 0);
  });

  it('keeps everything, even after a failed create, with removalPolicy RETAIN', () => {
    const r = synth({ brokers: 1, removalPolicy: RemovalPolicy.RETAIN });
    r.template.allResources('AWS::DynamoDB::Table', { DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
  });
});

describe('TributaryCluster: bucket', () => {
  it('encrypts, blocks public access, and expires snapshots and incomplete uploads', () => {
    s.template.hasResourceProperties('AWS::S3::Bucket', {
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({ Prefix: 'snapshots/', ExpirationInDays: 7, Status: 'Enabled' }),
          Match.objectLike({ AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 }, Status: 'Enabled' }),
        ]),
      },
    });
  });

  it('denies every request without TLS (and TLS below 1.2)', () => {
    s.template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Action: 's3:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          Match.objectLike({ Effect: 'Deny', Action: 's3:*', Condition: { NumericLessThan: { 's3:TlsVersion': 1.2 } } }),
        ]),
      },
    });
  });
});

describe('TributaryCluster: stage bucket', () => {
  const stageBuckets = (t: Synthesized) => resourcesOf(t, 'AWS::S3Express::DirectoryBucket');
  const stageId = (t: Synthesized) => t.stack.getLogicalId(t.stack.cluster.stageBucket);
  /** The deployed length of the bucket's name: its literal parts, a 12-digit account id, the longest default zone id. */
  const nameLength = (name: any): number => (typeof name === 'string' ? name.length
    : name['Fn::Join'][1].reduce((n: number, part: any) => n + (typeof part === 'string' ? part.length : part.Ref === 'AWS::AccountId' ? 12
      : Math.max(...Object.values(DEFAULT_STAGE_ZONES).map((z) => z.length))), 0));

  it('creates one S3 Express One Zone directory bucket in one zone, SSE-S3, expiring stage/ objects after a day', () => {
    expect(stageBuckets(s)).toHaveLength(1);
    s.template.hasResourceProperties('AWS::S3Express::DirectoryBucket', {
      DataRedundancy: 'SingleAvailabilityZone',
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({ Prefix: 'stage/', ExpirationInDays: 1, Status: 'Enabled' }),
          Match.objectLike({ AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 }, Status: 'Enabled' }),
        ]),
      },
    });
  });

  it('names it <base>--<AZ id>--x-s3 in the stageAvailabilityZoneId zone, the base from the table prefix and the account', () => {
    const z = synth({ brokers: 1, tablePrefix: 'Events_Prod.1', stageAvailabilityZoneId: 'euw1-az3' });
    const [[, bucket]] = stageBuckets(z) as [[string, any]];
    expect(bucket.LocationName).toBe('euw1-az3');
    expect(bucket.BucketName).toEqual({ 'Fn::Join': ['', [expect.stringMatching(/^events-prod-1-[0-9a-f]{8}-$/), { Ref: 'AWS::AccountId' }, '--euw1-az3--x-s3']] });
    expect(nameLength(bucket.BucketName)).toBeLessThanOrEqual(63);
  });

  it('defaults to the Region\'s zone: looked up at deploy time in an environment-agnostic stack, at synth time in a stack with a Region', () => {
    const [[, bucket]] = stageBuckets(s) as [[string, any]];
    const mapping = bucket.LocationName['Fn::FindInMap'];
    expect(mapping.slice(1)).toEqual([{ Ref: 'AWS::Region' }, 'zoneId']);
    expect((s.json as any).Mappings[mapping[0]]).toEqual(Object.fromEntries(Object.entries(DEFAULT_STAGE_ZONES).map(([r, zoneId]) => [r, { zoneId }])));
    expect(bucket.BucketName['Fn::Join'][1]).toContainEqual(bucket.LocationName);
    const inRegion = Template.fromStack(new TributaryStack(testApp(), 'Ireland', { env: { region: 'eu-west-1' }, cluster: { brokers: 1 } }));
    inRegion.hasResourceProperties('AWS::S3Express::DirectoryBucket', { LocationName: 'euw1-az1' });
    expect(() => new TributaryStack(testApp(), 'Frankfurt', { env: { region: 'eu-central-1' }, cluster: { brokers: 1 } }))
      .toThrow('stageAvailabilityZoneId is needed in eu-central-1');
  });

  it('keeps the name within S3\'s 63 characters for the longest table prefix, and apart for prefixes that differ only in case', () => {
    const names = ['p'.repeat(200), 'P'.repeat(200)].map((tablePrefix) => (stageBuckets(synth({ brokers: 1, tablePrefix }))[0] as [string, any])[1].BucketName);
    for (const name of names) expect(nameLength(name)).toBeLessThanOrEqual(63);
    expect(names[0]).not.toEqual(names[1]);
  });

  it('tells the functions that stage (produce, controller, websocket) its name, and lets them alone open sessions on it, on its ARN only', () => {
    const stagers = deployed().filter((f) => f.stages).map((f) => f.name).sort();
    expect(stagers).toEqual(['controller', 'produce', 'websocket']);
    for (const spec of deployed()) {
      const env = s.json.Resources[fnId(spec.name)]?.Properties.Environment?.Variables ?? {};
      const sessions = permissionsOf(s, fnId(spec.name)).statements.filter((st) => [st.Action].flat().some((a: string) => a.startsWith('s3express:')));
      if (spec.stages) {
        expect(env[ENVIRONMENT.stageBucket], spec.name).toEqual({ Ref: stageId(s) });
        expect(sessions, spec.name).toEqual([{ Effect: 'Allow', Action: 's3express:CreateSession', Resource: { 'Fn::GetAtt': [stageId(s), 'Arn'] } }]);
      } else {
        expect(env[ENVIRONMENT.stageBucket], spec.name).toBeUndefined();
        expect(sessions, spec.name).toEqual([]);
      }
    }
    // No other role of the stack either (the broker list writer, the custom resources' providers).
    const policies = resourcesOf(s, 'AWS::IAM::Policy').filter(([, p]) => JSON.stringify(p).includes('s3express'));
    expect(policies).toHaveLength(stagers.length);
    s.template.hasOutput('StageBucketName', { Value: { Ref: stageId(s) } });
  });
});

describe('TributaryCluster: functions', () => {
  it('deploys one Node.js 22 arm64 function per catalog entry, with its memory, timeout and JSON logs', () => {
    // And the provider of the broker list's custom resource (AwsCustomResource's singleton).
    expect(resourcesOf(s, 'AWS::Lambda::Function')).toHaveLength(deployed().length + 1);
    for (const spec of deployed()) {
      const fn = s.json.Resources[fnId(spec.name)]?.Properties;
      expect(fn, spec.name).toMatchObject({
        Runtime: 'nodejs22.x', Architectures: ['arm64'], Handler: 'index.handler',
        MemorySize: spec.memoryMb, Timeout: spec.timeoutSeconds, LoggingConfig: { LogFormat: 'JSON' },
      });
      expect(fn.Environment.Variables).toMatchObject({
        [ENVIRONMENT.coordinationTable]: { Ref: logicalId(s, cluster().coordinationTable) },
        [ENVIRONMENT.bucket]: { Ref: logicalId(s, cluster().bucket) },
        TRIBUTARY_S3_FORCE_PATH_STYLE: 'false',
      });
    }
  });

  it('loads source maps only when asked (sourceMaps): parsing them is part of every cold start', () => {
    for (const spec of deployed()) expect(s.json.Resources[fnId(spec.name)]?.Properties.Environment.Variables.NODE_OPTIONS, spec.name).toBeUndefined();
    const mapped = synth({ brokers: 1, sourceMaps: true });
    const fns = resourcesOf(mapped, 'AWS::Lambda::Function').map(([, props]) => props).filter((props) => props.Environment?.Variables?.TRIBUTARY_BUCKET);
    expect(fns).toHaveLength(deployedFunctions(mapped.stack.cluster.settings).length);
    for (const props of fns) expect(props.Environment.Variables.NODE_OPTIONS).toBe('--enable-source-maps');
  });

  it('keeps logs for a month by default', () => {
    s.template.allResourcesProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
  });

  it('tells the controller its tick and session timeout, and nothing about the brokers', () => {
    const controller = FUNCTIONS.find((f) => f.trigger === 'schedule');
    const env = s.json.Resources[fnId(controller?.name ?? '')]?.Properties.Environment.Variables;
    expect(env[ENVIRONMENT.tickMs]).toBe('1000');
    expect(env[ENVIRONMENT.sessionTimeoutMs]).toBe('9000');
    expect(Object.keys(env).filter((k) => /BROKERS/.test(k))).toEqual([]);
  });

  it('writes the brokers, racks and replica tables into the coordination table on create and update, after the table exists', () => {
    const prefix = cluster().settings.tablePrefix;
    const [[id, props]] = resourcesOf(s, 'Custom::AWS') as [[string, any]];
    const create = JSON.parse(props.Create);
    expect(JSON.parse(props.Update)).toEqual(create);
    expect(create).toMatchObject({ service: 'DynamoDB', action: 'PutItem', parameters: { TableName: coordinationTableSpec(prefix).name } });
    const item = create.parameters.Item;
    expect({ pk: item.pk.S, sk: item.sk.S }).toEqual(DEPLOYED_BROKERS_ITEM);
    expect(JSON.parse(item.brokers.S)).toEqual([1, 2, 3].map((b, i) => ({ brokerId: b, replicaTable: replicaTableSpec(b, prefix).name, rack: ['a', 'b', 'c'][i] })));
    expect(item.version.S).toMatch(/^[0-9a-f]{16}$/);
    expect(s.json.Resources[id]).toMatchObject({ DependsOn: expect.arrayContaining([logicalId(s, cluster().coordinationTable)]) });
    // Another broker list, another version: the controller registers again.
    const other = JSON.parse((resourcesOf(synth({ brokers: 3, racks: ['a', 'b', 'd'], tablePrefix: prefix }), 'Custom::AWS')[0] as [string, any])[1].Create);
    expect(other.parameters.Item.version.S).not.toBe(item.version.S);
  });

  it('lets the broker list writer put items under the list\'s partition key only', () => {
    const coordination = logicalId(s, cluster().coordinationTable);
    const policies = resourcesOf(s, 'AWS::IAM::Policy').filter(([, p]) => JSON.stringify(p.PolicyDocument).includes('dynamodb:PutItem')
      && p.Roles.some((r: any) => r.Ref === logicalId(s, cluster().brokerList.grantPrincipal as never)));
    expect(policies.flatMap(([, p]) => p.PolicyDocument.Statement)).toEqual([{
      Effect: 'Allow', Action: 'dynamodb:PutItem', Resource: { 'Fn::GetAtt': [coordination, 'Arn'] },
      Condition: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [DEPLOYED_BROKERS_ITEM.pk] } },
    }]);
  });

  it('reserves no concurrency for any function (a new account has a quota of 10 and cannot reserve any)', () => {
    for (const [id, fn] of resourcesOf(s, 'AWS::Lambda::Function')) expect(fn.ReservedConcurrentExecutions, id).toBeUndefined();
  });

  it('invokes the scheduled functions every minute with an EventBridge rule', () => {
    for (const spec of FUNCTIONS.filter((f) => f.trigger === 'schedule')) {
      s.template.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: 'rate(1 minute)', State: 'ENABLED',
        Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [fnId(spec.name), 'Arn'] } })],
      });
      s.template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: { Ref: fnId(spec.name) }, MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60,
      });
    }
  });

  it('wakes the controller from the coordination table\'s stream on suspect reports only, with no retries (the schedule covers a lost wake)', () => {
    const controller = FUNCTIONS.find((f) => f.trigger === 'schedule');
    const mappings = resourcesOf(s, 'AWS::Lambda::EventSourceMapping').filter(([, m]) => m.FunctionName.Ref === fnId(controller?.name ?? ''));
    expect(mappings).toHaveLength(1);
    const [, m] = mappings[0]!;
    expect(m).toMatchObject({
      EventSourceArn: { 'Fn::GetAtt': [logicalId(s, cluster().coordinationTable), 'StreamArn'] },
      StartingPosition: 'LATEST', MaximumRetryAttempts: 0, ParallelizationFactor: 1,
    });
    expect(m.FilterCriteria.Filters.map((f: { Pattern: string }) => JSON.parse(f.Pattern))).toEqual([CONTROLLER_WAKE_PATTERN]);
    s.template.hasResourceProperties('AWS::DynamoDB::Table', { TableName: Match.stringLikeRegexp('coordination'), StreamSpecification: { StreamViewType: 'NEW_IMAGE' } });
  });

  it('feeds every replica table\'s stream to the replicator, bisecting failed batches and recording give-ups in an encrypted queue', () => {
    const replicator = FUNCTIONS.find((f) => f.trigger === 'streams');
    const mappings = resourcesOf(s, 'AWS::Lambda::EventSourceMapping').filter(([, m]) => m.FunctionName.Ref === fnId(replicator?.name ?? ''));
    expect(mappings).toHaveLength(3);
    const queue = logicalId(s, cluster().replicationFailureQueue);
    expect(mappings.map(([, m]) => m.EventSourceArn['Fn::GetAtt']).sort()).toEqual(cluster().replicaTables.map((t) => [logicalId(s, t), 'StreamArn']).sort());
    for (const [, m] of mappings) {
      expect(m).toMatchObject({
        FunctionName: { Ref: fnId(replicator?.name ?? '') }, StartingPosition: 'LATEST', BatchSize: 100, BisectBatchOnFunctionError: true,
        FunctionResponseTypes: ['ReportBatchItemFailures'], MaximumRetryAttempts: 10, ParallelizationFactor: 1,
        DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queue, 'Arn'] } } },
      });
      expect(m.FilterCriteria.Filters.map((f: { Pattern: string }) => JSON.parse(f.Pattern))).toEqual([REPLICA_STREAM_PATTERN]);
    }
    s.template.hasResourceProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true });
    s.template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
    });
  });
});

describe('TributaryCluster: least privilege', () => {
  it('grants each function exactly the table access its catalog entry names', () => {
    const coordination = logicalId(s, cluster().coordinationTable);
    const replicas = cluster().replicaTables.map((t) => logicalId(s, t));
    for (const spec of deployed()) {
      const p = permissionsOf(s, fnId(spec.name));
      const expected = new Map<string, string>();
      if (spec.coordination !== 'none') expected.set(coordination, spec.coordination);
      if (spec.replicas !== 'none') for (const r of replicas) expected.set(r, spec.replicas);
      expect(Object.fromEntries(p.tables), spec.name).toEqual(Object.fromEntries(expected));
    }
  });

  it('grants bucket access only under the catalog entry\'s prefixes', () => {
    for (const spec of deployed()) {
      const p = permissionsOf(s, fnId(spec.name));
      expect([...p.objectsRead].sort(), `${spec.name} reads`).toEqual([...spec.bucketRead].sort());
      expect([...p.objectsWritten].sort(), `${spec.name} writes`).toEqual([...spec.bucketWrite].sort());
      expect([...p.listed].sort(), `${spec.name} lists`).toEqual([...new Set([...spec.bucketRead, ...spec.bucketWrite])].sort());
    }
  });

  it('grants stream reads to the stream-triggered functions alone (the replicator: the replica tables; the controller: the coordination table), and `*` only for dynamodb:ListStreams', () => {
    const replicas = cluster().replicaTables.map((t) => logicalId(s, t)).sort();
    const coordination = [logicalId(s, cluster().coordinationTable)];
    for (const spec of deployed()) {
      const p = permissionsOf(s, fnId(spec.name));
      const streams = spec.trigger === 'streams' ? replicas : spec.trigger === 'schedule' ? coordination : [];
      expect([...p.streams].sort(), spec.name).toEqual(streams);
      expect([...p.starActions], spec.name).toEqual(streams.length > 0 ? ['dynamodb:ListStreams'] : []);
    }
  });

  it('lets each function write to its own log group only (no AWS managed policy)', () => {
    for (const [, role] of resourcesOf(s, 'AWS::IAM::Role')) {
      expect(role.ManagedPolicyArns).toBeUndefined();
    }
    for (const spec of deployed()) {
      const fn = s.json.Resources[fnId(spec.name)]?.Properties;
      const logs = permissionsOf(s, fnId(spec.name)).statements.filter((st) => [st.Action].flat().includes('logs:PutLogEvents'));
      expect(logs.map((st) => st.Resource)).toEqual([{ 'Fn::GetAtt': [fn.LoggingConfig.LogGroup.Ref, 'Arn'] }]);
    }
  });
});

describe('TributaryCluster: API', () => {
  it('requires IAM authorization on every route, the catch-all included, but the console\'s static files (test/cdk/console.test.ts)', () => {
    const routes = ofHttpApi('AWS::ApiGatewayV2::Route');
    expect(routes.length).toBeGreaterThan(1);
    const files = new Set(STATIC_ROUTES.map(staticRouteKey));
    for (const [, r] of routes) expect(r.AuthorizationType, r.RouteKey).toBe(files.has(r.RouteKey) ? 'NONE' : 'AWS_IAM');
    s.template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: '$default', AuthorizationType: 'AWS_IAM' });
  });

  it('writes access logs to a log group with retention', () => {
    s.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default', AutoDeploy: true,
      AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('"routeKey":"\\$context.routeKey"') },
    });
  });

  it('invokes with payload format 2.0, one permission per function scoped to this API', () => {
    for (const [id, integration] of ofHttpApi('AWS::ApiGatewayV2::Integration')) expect(integration, id).toMatchObject({ IntegrationType: 'AWS_PROXY', PayloadFormatVersion: '2.0' });
    const httpApi = JSON.stringify({ Ref: logicalId(s, cluster().api) });
    const apiPermissions = resourcesOf(s, 'AWS::Lambda::Permission').filter(([, p]) => p.Principal === 'apigateway.amazonaws.com' && JSON.stringify(p.SourceArn).includes(httpApi));
    const httpFunctions = FUNCTIONS.filter((f) => f.trigger === 'http').length;
    // One per HTTP function, plus the catch-all's (its ARN, `<api>/*/$default`, is not covered by `<api>/*/*/*`).
    expect(apiPermissions).toHaveLength(httpFunctions + 1);
  });

  it('throttles the stage by default (1000 requests/s, burst 500), as the props say', () => {
    s.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default', DefaultRouteSettings: { ThrottlingRateLimit: 1000, ThrottlingBurstLimit: 500 },
    });
    const custom = synth({ brokers: 1, throttlingRateLimit: 50, throttlingBurstLimit: 20 });
    custom.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', { DefaultRouteSettings: { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 20 } });
    const rest = synth({ brokers: 1, apiType: 'rest' });
    rest.template.hasResourceProperties('AWS::ApiGateway::Stage', {
      MethodSettings: [Match.objectLike({ HttpMethod: '*', ResourcePath: '/*', ThrottlingRateLimit: 1000, ThrottlingBurstLimit: 500 })],
    });
  });

  it('grants callers every route, or only the routes given (path variables match any value)', () => {
    const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-cdk-'));
    const app = testApp({ outdir });
    const stack = new TributaryStack(app, 'Grants', { cluster: { brokers: 1, tablePrefix: 'grants' } });
    const all = new iam.Role(stack, 'Admin', { assumedBy: new iam.AccountRootPrincipal() });
    const producer = new iam.Role(stack, 'Producer', { assumedBy: new iam.AccountRootPrincipal() });
    stack.cluster.grantInvoke(all);
    const produceRoutes = ROUTES.filter((r) => r.fn === 'produce');
    stack.cluster.grantInvoke(producer, produceRoutes);
    expect(() => stack.cluster.grantInvoke(producer, [DEFAULT_ROUTE])).toThrow('is not a route of the route table');
    const t = Template.fromStack(stack).toJSON() as Synthesized['json'];
    fs.rmSync(outdir, { recursive: true, force: true });
    const resourcesFor = (role: iam.Role) => Object.values(t.Resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((x: any) => x.Ref === stack.getLogicalId(role.node.defaultChild as iam.CfnRole)))
      .flatMap((r) => [r.Properties.PolicyDocument.Statement].flat()).flatMap((st: any) => [st.Resource].flat());
    const suffix = (arn: any) => (arn['Fn::Join'][1] as unknown[]).at(-1);
    expect(resourcesFor(all).map(suffix)).toEqual(['/*']);
    const produced = resourcesFor(producer).map(suffix);
    expect(produced).toHaveLength(new Set(produceRoutes.map((r) => `${r.method} ${r.path}`)).size);
    expect(produced).toContain(`/$default/POST${'/v3/clusters/{cluster_id}/topics/{topic_name}/records'.replace(/\{[^}]+\}/g, '*')}`);
    for (const arn of produced) expect(arn).toMatch(/^\/\$default\/(GET|POST|PUT|PATCH|DELETE)\/[^{}]+$/);
  });

  it('outputs the API URL and how to find the cluster id', () => {
    expect(Object.keys(s.json.Outputs ?? {})).toEqual(expect.arrayContaining(['ApiUrl', 'ClusterIdLookup', 'CoordinationTableName', 'BucketName', 'DashboardName']));
  });

  it('builds a REST API with AWS_IAM on every method but the console\'s when apiType is rest', () => {
    const r = synth({ brokers: 1, apiType: 'rest' });
    const methods = resourcesOf(r, 'AWS::ApiGateway::Method');
    expect(methods.length).toBeGreaterThan(0);
    expect(methods.filter(([, m]) => m.AuthorizationType !== 'AWS_IAM')).toHaveLength(STATIC_ROUTES.length);
    r.template.hasResourceProperties('AWS::ApiGateway::Resource', { PathPart: '{proxy+}' });
    r.template.hasResourceProperties('AWS::ApiGateway::Stage', {
      StageName: 'prod', AccessLogSetting: { DestinationArn: Match.anyValue(), Format: Match.anyValue() },
      MethodSettings: [Match.objectLike({ LoggingLevel: 'ERROR', HttpMethod: '*', ResourcePath: '/*' })],
    });
    r.template.resourceCountIs('AWS::ApiGatewayV2::Api', 0);
    // Gzipped produce bodies reach the functions as bytes (base64), not as mangled text.
    r.template.hasResourceProperties('AWS::ApiGateway::RestApi', { BinaryMediaTypes: ['application/octet-stream'] });
  });

  it('leaves routes open only when authorization is none', () => {
    const open = synth({ brokers: 1, authorization: 'none' });
    for (const [, r] of resourcesOf(open, 'AWS::ApiGatewayV2::Route')) expect(r.AuthorizationType).toBe('NONE');
  });
});

describe('TributaryCluster: alarms and dashboard', () => {
  const clusterMetricAlarm = (metric: string, comparison: string, missing: string) => ({
    Namespace: METRICS_NAMESPACE, MetricName: metric, ComparisonOperator: comparison, TreatMissingData: missing,
    Dimensions: [{ Name: CLUSTER_DIMENSION, Value: coordinationTableSpec(cluster().settings.tablePrefix).name }],
  });

  it('alarms on offline partitions, under-replicated partitions and an absent controller', () => {
    s.template.hasResourceProperties('AWS::CloudWatch::Alarm', clusterMetricAlarm(CLUSTER_METRICS.offlinePartitions.name, 'GreaterThanOrEqualToThreshold', 'notBreaching'));
    s.template.hasResourceProperties('AWS::CloudWatch::Alarm', clusterMetricAlarm(CLUSTER_METRICS.underReplicatedPartitions.name, 'GreaterThanOrEqualToThreshold', 'notBreaching'));
    s.template.hasResourceProperties('AWS::CloudWatch::Alarm', clusterMetricAlarm(CLUSTER_METRICS.activeControllerCount.name, 'LessThanThreshold', 'notBreaching'));
    const controller = FUNCTIONS.find((f) => f.trigger === 'schedule');
    s.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda', MetricName: 'Invocations', ComparisonOperator: 'LessThanThreshold', TreatMissingData: 'breaching',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: fnId(controller?.name ?? '') } }],
    });
  });

  it('alarms on every function\'s errors and throttles', () => {
    for (const spec of deployed()) {
      const dims = [{ Name: 'FunctionName', Value: { Ref: fnId(spec.name) } }];
      s.template.hasResourceProperties('AWS::CloudWatch::Alarm', { Namespace: 'AWS/Lambda', MetricName: 'Errors', Dimensions: dims });
      const throttles = s.template.findResources('AWS::CloudWatch::Alarm', { Properties: { MetricName: 'Throttles', Dimensions: dims } });
      expect(Object.keys(throttles), spec.name).toHaveLength(1);
    }
  });

  it('notifies an email address when one is given', () => {
    const withEmail = synth({ brokers: 1, alarmEmail: 'ops@example.com' });
    withEmail.template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com' });
    const topic = logicalId(withEmail, withEmail.stack.cluster.alarmTopic as never);
    expect(withEmail.json.Outputs?.AlarmTopicArn?.Value).toEqual({ Ref: topic });
    expect(s.json.Outputs?.AlarmTopicArn).toBeUndefined();
    withEmail.template.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: [{ Ref: topic }] });
    s.template.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: Match.absent() });
  });

  it('builds one dashboard', () => {
    s.template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    expect(Object.keys(cluster().alarms)).toEqual(expect.arrayContaining(['OfflinePartitions', 'UnderReplicatedPartitions', 'NoActiveController', 'SegmentStorage']));
  });

  it('sizes the monitoring by the `monitoring` prop: 25 alarms and the dashboard by default, the 7 cluster-health alarms with essential, nothing with none', () => {
    s.template.resourceCountIs('AWS::CloudWatch::Alarm', 25);
    synth({ brokers: 1, jwtAuthorizer: { issuer: 'https://id.example.com', audience: ['client'] } }).template.resourceCountIs('AWS::CloudWatch::Alarm', 27);
    const essential = synth({ brokers: 1, monitoring: 'essential', alarmEmail: 'ops@example.com' });
    expect(Object.keys(essential.stack.cluster.alarms).sort()).toEqual([...ESSENTIAL_ALARMS].sort());
    essential.template.resourceCountIs('AWS::CloudWatch::Alarm', ESSENTIAL_ALARMS.length);
    essential.template.resourceCountIs('AWS::CloudWatch::Dashboard', 0);
    expect(essential.json.Outputs?.DashboardName).toBeUndefined();
    const none = synth({ brokers: 1, monitoring: 'none' });
    none.template.resourceCountIs('AWS::CloudWatch::Alarm', 0);
    none.template.resourceCountIs('AWS::CloudWatch::Dashboard', 0);
    expect(() => synth({ brokers: 1, monitoring: 'some' as never })).toThrow(/monitoring must be one of full, essential, none/);
  });
});

describe('TributaryCluster: cost of a broker', () => {
  it('adds exactly one replica table and one event source mapping per extra broker', () => {
    const count = (n: number) => {
      const b = synth({ brokers: n, tablePrefix: 'count' });
      const types: Record<string, number> = {};
      for (const r of Object.values(b.json.Resources)) types[r.Type] = (types[r.Type] ?? 0) + 1;
      return { total: Object.keys(b.json.Resources).length, types };
    };
    const three = count(3);
    const four = count(4);
    expect(four.total - three.total).toBe(2);
    expect(four.types['AWS::DynamoDB::Table']).toBe((three.types['AWS::DynamoDB::Table'] ?? 0) + 1);
    expect(four.types['AWS::Lambda::EventSourceMapping']).toBe((three.types['AWS::Lambda::EventSourceMapping'] ?? 0) + 1);
  });
});
