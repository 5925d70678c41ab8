/**
 * Alarms and the dashboard. Cluster health comes from the metrics the functions emit (metrics.ts);
 * the rest from what AWS measures anyway: Lambda errors, throttles and iterator age, the failure
 * queue, the API's 5xx, DynamoDB capacity.
 */
import { Duration } from 'aws-cdk-lib';
import * as cw from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { FunctionSpec } from '../lib/functions/catalog.js';
import type { ClusterApi } from './api.js';
import { CLUSTER_DIMENSION, CLUSTER_METRICS, METRICS_NAMESPACE, type ClusterMetricKey } from '../lib/metrics.js';
import type { Monitoring } from './props.js';

export interface ObservabilityOptions {
  /** Prefix of the alarm names and the dashboard name (the table prefix: unique per cluster). */
  readonly name: string;
  /** The value of the cluster metrics' dimension: the coordination table's name (metrics.ts). */
  readonly clusterDimension: string;
  readonly coordinationTable: ITable;
  readonly replicaTables: readonly ITable[];
  readonly specs: readonly FunctionSpec[];
  readonly functions: Readonly<Record<string, IFunction>>;
  readonly api: ClusterApi;
  readonly replicationFailures: IQueue;
  readonly topic: ITopic | undefined;
  /** What to create (props.ts, `monitoring`). */
  readonly monitoring: Monitoring;
}

export interface Observability {
  readonly alarms: Readonly<Record<string, cw.Alarm>>;
  /** Undefined unless `monitoring` is `full`. */
  readonly dashboard: cw.Dashboard | undefined;
}

/** The alarms `monitoring: 'essential'` keeps: the cluster's health, one each. */
export const ESSENTIAL_ALARMS = ['OfflinePartitions', 'UnderReplicatedPartitions', 'NoActiveController', 'ControllerNotRunning', 'ReplicationFailures', 'ApiServerErrors', 'TailOverdue'] as const;

const ONE_MINUTE = Duration.minutes(1);
const FIVE_MINUTES = Duration.minutes(5);

/** One of the cluster's own metrics (metrics.ts), for this cluster. */
export function clusterMetric(coordinationTable: string, key: ClusterMetricKey, statistic: string, period = ONE_MINUTE): cw.Metric {
  return new cw.Metric({
    namespace: METRICS_NAMESPACE, metricName: CLUSTER_METRICS[key].name, dimensionsMap: { [CLUSTER_DIMENSION]: coordinationTable }, statistic, period,
  });
}

/** `controller` → `Controller`, `websocket-authorizer` → `WebsocketAuthorizer` (construct ids, alarm names). */
const capitalized = (s: string): string => s.split('-').map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('');

/** The extra dimension the functions emit `Errors` with (lib/http/api.ts): the Kafka error's name. */
export const ERROR_CODE_DIMENSION = 'ErrorCode';

/**
 * `Errors` is emitted with the dimensions {CoordinationTable, ErrorCode} only (metrics.ts), so a
 * metric with CoordinationTable alone has no data: a search over this cluster's error codes
 * draws one line per Kafka error instead.
 */
export function errorsByCode(coordinationTable: string): cw.MathExpression {
  const schema = `{${METRICS_NAMESPACE},${CLUSTER_DIMENSION},${ERROR_CODE_DIMENSION}}`;
  return new cw.MathExpression({
    expression: `SEARCH('${schema} MetricName="${CLUSTER_METRICS.errors.name}" ${CLUSTER_DIMENSION}="${coordinationTable}"', 'Sum', 300)`,
    period: FIVE_MINUTES, usingMetrics: {},
  });
}

export function buildObservability(scope: Construct, o: ObservabilityOptions): Observability {
  const alarms: Record<string, cw.Alarm> = {};
  const metric = (key: ClusterMetricKey, statistic: string, period?: Duration) => clusterMetric(o.clusterDimension, key, statistic, period);
  const alarm = (name: string, props: cw.AlarmProps): void => {
    if (o.monitoring === 'none' || (o.monitoring === 'essential' && !(ESSENTIAL_ALARMS as readonly string[]).includes(name))) return;
    const a = new cw.Alarm(scope, `${name}Alarm`, { ...props, alarmName: `${o.name}-${name}` });
    if (o.topic) a.addAlarmAction(new SnsAction(o.topic));
    alarms[name] = a;
  };

  // Cluster health (Kafka's three alarms every operator has).
  alarm('OfflinePartitions', {
    alarmDescription: 'Partitions without a live leader: produce and fetch fail with LEADER_NOT_AVAILABLE.',
    metric: metric('offlinePartitions', 'Maximum'), threshold: 1, evaluationPeriods: 1,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, treatMissingData: cw.TreatMissingData.NOT_BREACHING,
  });
  alarm('UnderReplicatedPartitions', {
    alarmDescription: 'Partitions whose ISR has been smaller than their replica set for 5 minutes.',
    metric: metric('underReplicatedPartitions', 'Maximum'), threshold: 1, evaluationPeriods: 5,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, treatMissingData: cw.TreatMissingData.NOT_BREACHING,
  });
  alarm('NoActiveController', {
    alarmDescription: 'The controller ran but held no lease for 3 minutes: no elections, no fencing.',
    metric: metric('activeControllerCount', 'Maximum'), threshold: 1, evaluationPeriods: 3,
    comparisonOperator: cw.ComparisonOperator.LESS_THAN_THRESHOLD, treatMissingData: cw.TreatMissingData.NOT_BREACHING,
  });

  // The tiered log: a lost or damaged segment is never a silent gap (reads fail; these say why).
  alarm('SegmentStorage', {
    alarmDescription: 'A live S3 segment\'s object was missing or failed its checksums on read: reads of those offsets fail (SegmentMissing, SegmentCorrupt).',
    metric: new cw.MathExpression({
      expression: 'FILL(missing, 0) + FILL(corrupt, 0)', label: 'segment read failures', period: ONE_MINUTE,
      usingMetrics: { missing: metric('segmentMissing', 'Sum'), corrupt: metric('segmentCorrupt', 'Sum') },
    }),
    threshold: 1, evaluationPeriods: 1,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, treatMissingData: cw.TreatMissingData.NOT_BREACHING,
  });

  alarm('TailOverdue', {
    alarmDescription: 'A table tail has not rolled to S3 for an hour past its due time (segment.ms, at most a day): rolls are failing, and its batches expire three days after their append.',
    metric: metric('tailOverdue', 'Maximum', FIVE_MINUTES), threshold: 1, evaluationPeriods: 1,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, treatMissingData: cw.TreatMissingData.NOT_BREACHING,
  });

  for (const spec of o.specs) {
    const fn = o.functions[spec.name];
    if (!fn) continue;
    const name = capitalized(spec.name);
    alarm(`${name}Errors`, {
      alarmDescription: `The ${spec.name} function failed (uncaught error or timeout).`,
      metric: fn.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' }), threshold: 1, evaluationPeriods: 1,
      comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, treatMissingData: cw.TreatMissingData.NOT_BREACHING,
    });
    if (spec.trigger === 'schedule') {
      alarm(`${name}NotRunning`, {
        alarmDescription: `The ${spec.name} function has not been invoked for 3 minutes: no controller is running.`,
        metric: fn.metricInvocations({ period: ONE_MINUTE, statistic: 'Sum' }), threshold: 1, evaluationPeriods: 3,
        comparisonOperator: cw.ComparisonOperator.LESS_THAN_THRESHOLD, treatMissingData: cw.TreatMissingData.BREACHING,
      });
    }
    // No function reserves concurrency: a throttle means the account's concurrency ran out.
    alarm(`${name}Throttles`, {
      alarmDescription: `The ${spec.name} function was throttled (the account's Lambda concurrency is exhausted).`,
      metric: fn.metricThrottles({ period: FIVE_MINUTES, statistic: 'Sum' }), threshold: 1, evaluationPeriods: 1,
      comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, treatMissingData: cw.TreatMissingData.NOT_BREACHING,
    });
    if (spec.trigger === 'streams') {
      alarm(`${name}IteratorAge`, {
        alarmDescription: `The ${spec.name} function is more than a minute behind the replica tables' streams.`,
        metric: fn.metric('IteratorAge', { period: ONE_MINUTE, statistic: 'Maximum' }), threshold: 60_000, evaluationPeriods: 3,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, treatMissingData: cw.TreatMissingData.NOT_BREACHING,
      });
    }
  }
  alarm('ReplicationFailures', {
    alarmDescription: 'Stream batches the replicator gave up on (the controller catches the followers up, but look why).',
    metric: o.replicationFailures.metricApproximateNumberOfMessagesVisible({ period: FIVE_MINUTES, statistic: 'Maximum' }), threshold: 1, evaluationPeriods: 1,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, treatMissingData: cw.TreatMissingData.NOT_BREACHING,
  });
  alarm('ApiServerErrors', {
    alarmDescription: 'The API answered 5xx at least 10 times in 5 minutes (503s are retriable: failovers, unavailable stores).',
    metric: o.api.metrics.serverErrors.with({ period: FIVE_MINUTES, statistic: 'Sum' }), threshold: 10, evaluationPeriods: 1,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, treatMissingData: cw.TreatMissingData.NOT_BREACHING,
  });

  if (o.monitoring !== 'full') return { alarms, dashboard: undefined };
  const dashboard = new cw.Dashboard(scope, 'Dashboard', {
    dashboardName: o.name.replace(/[^A-Za-z0-9_-]/g, '_'),
    defaultInterval: Duration.hours(3),
  });
  const sum = (key: ClusterMetricKey) => metric(key, 'Sum', FIVE_MINUTES);
  const max = (key: ClusterMetricKey) => metric(key, 'Maximum');
  const graph = (title: string, left: cw.IMetric[], right: cw.IMetric[] = []) => new cw.GraphWidget({ title, left, right, width: 8, height: 6 });
  const perFunction = (title: string, m: (fn: IFunction) => cw.Metric, only: (s: FunctionSpec) => boolean = () => true) => new cw.GraphWidget({
    title, width: 8, height: 6,
    left: o.specs.filter(only).flatMap((s) => (o.functions[s.name] ? [m(o.functions[s.name] as IFunction).with({ label: s.name })] : [])),
  });
  const tables = [o.coordinationTable, ...o.replicaTables];
  dashboard.addWidgets(
    new cw.AlarmStatusWidget({ title: 'Alarms', alarms: Object.values(alarms), width: 24, height: 4 }),
  );
  dashboard.addWidgets(
    graph('Partitions: offline, under-replicated', [max('offlinePartitions'), max('underReplicatedPartitions')]),
    graph('Controller: active, elections', [max('activeControllerCount')], [metric('leaderElections', 'Sum')]),
    graph('ISR shrinks / expands, failover time', [sum('isrShrinks'), sum('isrExpands')], [metric('failoverTimeMs', 'Maximum', FIVE_MINUTES)]),
  );
  dashboard.addWidgets(
    graph('Records produced / fetched', [sum('produceRecords'), sum('fetchRecords')]),
    graph('Bytes produced / fetched', [sum('produceBytes'), sum('fetchBytes')]),
    graph('Errors (Kafka codes), replication lag', [errorsByCode(o.clusterDimension)], [metric('replicationLag', 'Maximum', FIVE_MINUTES)]),
  );
  dashboard.addWidgets(
    graph('API requests and errors', [o.api.metrics.count.with({ statistic: 'Sum' })], [o.api.metrics.clientErrors.with({ statistic: 'Sum' }), o.api.metrics.serverErrors.with({ statistic: 'Sum' })]),
    graph('API latency p50 / p99', [o.api.metrics.latency.with({ statistic: 'p50' }), o.api.metrics.latency.with({ statistic: 'p99' })]),
    graph('Replication failures queued', [o.replicationFailures.metricApproximateNumberOfMessagesVisible()]),
  );
  dashboard.addWidgets(
    perFunction('Invocations', (fn) => fn.metricInvocations({ statistic: 'Sum' })),
    perFunction('Errors', (fn) => fn.metricErrors({ statistic: 'Sum' })),
    perFunction('Throttles', (fn) => fn.metricThrottles({ statistic: 'Sum' })),
  );
  dashboard.addWidgets(
    perFunction('Duration p99', (fn) => fn.metricDuration({ statistic: 'p99' })),
    perFunction('Stream iterator age (max)', (fn) => fn.metric('IteratorAge', { statistic: 'Maximum' }), (s) => s.trigger === 'streams'),
    new cw.GraphWidget({
      title: 'DynamoDB write / read units', width: 8, height: 6,
      left: tables.map((t) => t.metricConsumedWriteCapacityUnits({ statistic: 'Sum' })),
      right: tables.map((t) => t.metricConsumedReadCapacityUnits({ statistic: 'Sum' })),
    }),
  );
  return { alarms, dashboard };
}
