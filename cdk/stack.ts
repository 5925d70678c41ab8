/**
 * The deployable stack: one TributaryCluster plus the outputs a user needs, configured from CDK
 * context (`-c brokers=5` or `-c brokers=1,2,4`, `-c apiType=rest ...`) so the same app serves
 * AWS and LocalStack.
 */
import { CfnOutput, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import type { Node } from 'constructs';
import type { Construct } from 'constructs';
import { TributaryCluster } from './cluster.js';
import type { ApiAuthorization, ApiType, Monitoring, TributaryClusterProps } from './props.js';

export interface TributaryStackProps extends StackProps {
  /** @default - TributaryCluster's defaults */
  readonly cluster?: TributaryClusterProps;
}

export class TributaryStack extends Stack {
  readonly cluster: TributaryCluster;

  constructor(scope: Construct, id: string, props: TributaryStackProps = {}) {
    super(scope, id, { description: 'Tributary: Apache Kafka\'s model on AWS serverless parts', ...props });
    this.cluster = new TributaryCluster(this, 'Cluster', props.cluster);
    new CfnOutput(this, 'ApiUrl', {
      description: 'Base URL of the Kafka REST Proxy API (requests are SigV4-signed for execute-api unless authorization=none)',
      value: this.cluster.apiUrl,
    });
    new CfnOutput(this, 'ClusterIdLookup', {
      description: 'The cluster id is assigned by the controller\'s first run (within a minute of the first deployment)',
      value: `GET ${this.cluster.apiUrl}v3/clusters -> data[0].cluster_id`,
    });
    new CfnOutput(this, 'ConsoleUrl', {
      description: 'The console (needs jwtAuthorizer to call an API that is not open: a browser cannot sign with IAM)',
      value: this.cluster.consoleUrl,
    });
    if (this.cluster.webSocketUrl) {
      new CfnOutput(this, 'WebSocketUrl', {
        description: 'WebSocket consume: connect here (with jwtAuthorizer, a browser passes its token as ?token=; with IAM, the upgrade request is SigV4-signed)',
        value: this.cluster.webSocketUrl,
      });
    }
    new CfnOutput(this, 'CoordinationTableName', { value: this.cluster.coordinationTable.tableName });
    new CfnOutput(this, 'BucketName', { value: this.cluster.bucket.bucketName });
    new CfnOutput(this, 'StageBucketName', { description: 'The group commit\'s stage: an S3 Express One Zone directory bucket', value: this.cluster.stageBucket.ref });
    if (this.cluster.dashboard) new CfnOutput(this, 'DashboardName', { value: this.cluster.dashboard.dashboardName });
    if (this.cluster.alarmTopic) {
      new CfnOutput(this, 'AlarmTopicArn', {
        description: 'Every alarm notifies this topic; an alarmEmail subscription receives nothing until its confirmation link is followed',
        value: this.cluster.alarmTopic.topicArn,
      });
    }
  }
}

/** A context value as given on the command line (a string) or in cdk.json (typed). */
function ctx(node: Node, key: string): string | undefined {
  const v: unknown = node.tryGetContext(key);
  return v === undefined || v === null || v === '' ? undefined : String(v);
}

const bool = (v: string | undefined): boolean | undefined => (v === undefined ? undefined : v === 'true');

/** Context `removalPolicy` values and what they mean. */
const REMOVAL_POLICIES: Readonly<Record<string, RemovalPolicy>> = {
  'retain-on-update-or-delete': RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
  retain: RemovalPolicy.RETAIN,
  destroy: RemovalPolicy.DESTROY,
};

/**
 * Context `brokers`: a count (`3`), or broker ids (`1,2,4`; a single id as `'[7]'`; or a list in
 * cdk.json). Values are not checked here: resolveProps says what is wrong with them.
 */
function brokersFromContext(node: Node): number | number[] | undefined {
  const v: unknown = node.tryGetContext('brokers');
  if (Array.isArray(v)) return v.map(Number);
  const text = ctx(node, 'brokers')?.trim();
  if (text === undefined) return undefined;
  const bracketed = /^\[.*\]$/.test(text);
  if (!bracketed && !text.includes(',')) return Number(text);
  const inner = bracketed ? text.slice(1, -1) : text;
  return inner.trim() === '' ? [] : inner.split(',').map((id) => (id.trim() === '' ? Number.NaN : Number(id)));
}

/**
 * The cluster's props from context: `brokers` (a count or ids: `3`, `1,2,4`), `racks`
 * (comma-separated, one per broker in `brokers` order), `tablePrefix`, `apiType` (http|rest),
 * `authorization` (iam|none), `removalPolicy` (retain-on-update-or-delete|retain|destroy),
 * `deletionProtection` (true|false), `alarmEmail`, `monitoring` (full|essential|none),
 * `s3ForcePathStyle` (true|false), `throttlingRateLimit`, `throttlingBurstLimit`, `stageAvailabilityZoneId`.
 */
export function clusterPropsFromContext(node: Node): TributaryClusterProps {
  const brokers = brokersFromContext(node);
  const removal = ctx(node, 'removalPolicy');
  if (removal !== undefined && REMOVAL_POLICIES[removal] === undefined) {
    throw new Error(`context removalPolicy must be one of ${Object.keys(REMOVAL_POLICIES).join(', ')}, got '${removal}'`);
  }
  const props: TributaryClusterProps = {
    ...(brokers !== undefined ? { brokers } : {}),
    ...(ctx(node, 'racks') !== undefined ? { racks: (ctx(node, 'racks') as string).split(',').map((r) => r.trim()) } : {}),
    ...(ctx(node, 'tablePrefix') !== undefined ? { tablePrefix: ctx(node, 'tablePrefix') } : {}),
    ...(ctx(node, 'apiType') !== undefined ? { apiType: ctx(node, 'apiType') as ApiType } : {}),
    ...(ctx(node, 'authorization') !== undefined ? { authorization: ctx(node, 'authorization') as ApiAuthorization } : {}),
    ...(removal !== undefined ? { removalPolicy: REMOVAL_POLICIES[removal] } : {}),
    ...(bool(ctx(node, 'deletionProtection')) !== undefined ? { deletionProtection: bool(ctx(node, 'deletionProtection')) } : {}),
    ...(ctx(node, 'throttlingRateLimit') !== undefined ? { throttlingRateLimit: Number(ctx(node, 'throttlingRateLimit')) } : {}),
    ...(ctx(node, 'throttlingBurstLimit') !== undefined ? { throttlingBurstLimit: Number(ctx(node, 'throttlingBurstLimit')) } : {}),
    ...(ctx(node, 'alarmEmail') !== undefined ? { alarmEmail: ctx(node, 'alarmEmail') } : {}),
    ...(ctx(node, 'monitoring') !== undefined ? { monitoring: ctx(node, 'monitoring') as Monitoring } : {}),
    ...(bool(ctx(node, 's3ForcePathStyle')) !== undefined ? { s3ForcePathStyle: bool(ctx(node, 's3ForcePathStyle')) } : {}),
    ...(ctx(node, 'stageAvailabilityZoneId') !== undefined ? { stageAvailabilityZoneId: ctx(node, 'stageAvailabilityZoneId') } : {}),
  };
  return props;
}
