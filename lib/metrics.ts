/**
 * The cluster's own CloudWatch metrics: what the functions emit as CloudWatch Embedded Metric
 * Format (EMF) log lines and what the construct's alarms and dashboard read. This list is the
 * contract between the two; the names follow Kafka's JMX metrics where Kafka has one.
 *
 * Every metric is emitted in {@link METRICS_NAMESPACE} with the dimension
 * {@link CLUSTER_DIMENSION} = the coordination table's name (the environment variable
 * `TRIBUTARY_COORDINATION_TABLE`), which both the deployment and every function know, so two
 * clusters in one account and region never mix their metrics.
 */

export const METRICS_NAMESPACE = 'Tributary';
export const CLUSTER_DIMENSION = 'CoordinationTable';

export interface ClusterMetricSpec {
  readonly name: string;
  readonly unit: 'Count' | 'Bytes' | 'Milliseconds';
  /** The function that emits it. */
  readonly emittedBy: 'controller' | 'produce' | 'fetch' | 'replicator' | 'http';
  /** How often and with what value. */
  readonly description: string;
}

const m = (s: ClusterMetricSpec): ClusterMetricSpec => s;

export const CLUSTER_METRICS = {
  /** Kafka's `kafka.controller:type=KafkaController,name=OfflinePartitionsCount`. */
  offlinePartitions: m({
    name: 'OfflinePartitions', unit: 'Count', emittedBy: 'controller',
    description: 'Every tick (or at least once a minute): partitions without a live leader.',
  }),
  /** Kafka's `kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions`, cluster-wide. */
  underReplicatedPartitions: m({
    name: 'UnderReplicatedPartitions', unit: 'Count', emittedBy: 'controller',
    description: 'Every tick (or at least once a minute): partitions whose ISR is smaller than their replica set.',
  }),
  /** Kafka's `kafka.controller:type=KafkaController,name=ActiveControllerCount`. */
  activeControllerCount: m({
    name: 'ActiveControllerCount', unit: 'Count', emittedBy: 'controller',
    description: 'Every tick: 1 when this controller holds the lease after the tick, else 0.',
  }),
  leaderElections: m({
    name: 'LeaderElections', unit: 'Count', emittedBy: 'controller',
    description: 'Per tick that elected leaders: the number of partitions whose leader changed.',
  }),
  failoverTimeMs: m({
    name: 'FailoverTimeMs', unit: 'Milliseconds', emittedBy: 'controller',
    description: 'Per fenced broker: from its lastSeenAt to the end of the tick that moved its leaderships.',
  }),
  isrShrinks: m({
    name: 'IsrShrinks', unit: 'Count', emittedBy: 'controller',
    description: 'Per change: followers removed from an ISR (by the controller or an acks=all producer).',
  }),
  isrExpands: m({
    name: 'IsrExpands', unit: 'Count', emittedBy: 'controller',
    description: 'Per change: followers that rejoined an ISR.',
  }),
  fastCommitFallbacks: m({
    name: 'FastCommitFallbacks', unit: 'Count', emittedBy: 'produce',
    description: 'Per acks=all commit that could not be made from the batches in memory (a follower or the ISR changed, a member down) and replicated instead.',
  }),
  replicationLag: m({
    name: 'ReplicationLag', unit: 'Count', emittedBy: 'replicator',
    description: 'Per replicated partition: leader log end offset minus the slowest follower\'s, after the copy.',
  }),
  produceRecords: m({
    name: 'ProduceRecords', unit: 'Count', emittedBy: 'produce',
    description: 'Per request: records appended.',
  }),
  produceBytes: m({
    name: 'ProduceBytes', unit: 'Bytes', emittedBy: 'produce',
    description: 'Per request: record batch bytes appended.',
  }),
  fetchRecords: m({
    name: 'FetchRecords', unit: 'Count', emittedBy: 'fetch',
    description: 'Per request: records returned.',
  }),
  fetchBytes: m({
    name: 'FetchBytes', unit: 'Bytes', emittedBy: 'fetch',
    description: 'Per request: record batch bytes returned.',
  }),
  segmentsRolled: m({
    name: 'SegmentsRolled', unit: 'Count', emittedBy: 'replicator',
    description: 'Per roll: 1 when a table tail became a live S3 segment (the replicator, the sweep or the controller rolls).',
  }),
  segmentBytes: m({
    name: 'SegmentBytes', unit: 'Bytes', emittedBy: 'replicator',
    description: 'Per roll: the size of the segment object written.',
  }),
  segmentMissing: m({
    name: 'SegmentMissing', unit: 'Count', emittedBy: 'fetch',
    description: 'Per read: 1 when a live segment\'s object is missing from S3 (an error to investigate; the read fails, never skips).',
  }),
  tailOverdue: m({
    name: 'TailOverdue', unit: 'Count', emittedBy: 'controller',
    description: 'Every full pass of the sweep (5 min): partitions whose table tail is past its roll by an hour; its batches expire (DynamoDB TTL) three days after their append.',
  }),
  segmentAheadOfLeader: m({
    name: 'SegmentAheadOfLeader', unit: 'Count', emittedBy: 'replicator',
    description: 'Per roll attempt: 1 when a leader lacks records a live segment holds (only after an unclean election).',
  }),
  errors: m({
    name: 'Errors', unit: 'Count', emittedBy: 'http',
    description: 'Per failed request: 1, under the dimensions [CoordinationTable, ErrorCode] (the Kafka error): its only dimension set.',
  }),
  /** A segment object failed a check (CRC, footer, index): the read answered CORRUPT_MESSAGE. */
  segmentCorrupt: m({
    name: 'SegmentCorrupt', unit: 'Count', emittedBy: 'fetch',
    description: 'Per read that found a segment object failing its checks: 1.',
  }),
} as const;

export type ClusterMetricKey = keyof typeof CLUSTER_METRICS;

// ---- emitting -------------------------------------------------------------------------------

/**
 * Metrics are written as EMF log lines (CloudWatch extracts them from the function's logs) when
 * running in Lambda, or when `TRIBUTARY_METRICS=emf`; otherwise they cost nothing.
 */
const enabled = (): boolean => process.env.TRIBUTARY_METRICS === 'emf' || (process.env.AWS_LAMBDA_FUNCTION_NAME !== undefined && process.env.TRIBUTARY_METRICS !== 'off');

/** Emits one metric value (as one EMF line on stderr, which Lambda sends to CloudWatch Logs). */
export function emitMetric(key: ClusterMetricKey, value: number, extra: Readonly<Record<string, string>> = {}): void {
  if (!enabled()) return;
  const spec = CLUSTER_METRICS[key];
  const dimensions = { [CLUSTER_DIMENSION]: process.env.TRIBUTARY_COORDINATION_TABLE ?? 'unknown', ...extra };
  const line = {
    _aws: {
      Timestamp: Date.now(),
      CloudWatchMetrics: [{ Namespace: METRICS_NAMESPACE, Dimensions: [Object.keys(dimensions)], Metrics: [{ Name: spec.name, Unit: spec.unit }] }],
    },
    ...dimensions,
    [spec.name]: value,
  };
  process.stderr.write(`${JSON.stringify(line)}\n`);
}
