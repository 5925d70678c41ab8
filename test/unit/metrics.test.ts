import { afterEach, describe, expect, it, vi } from 'vitest';
import { CLUSTER_METRICS, emitMetric, METRICS_NAMESPACE } from '../../lib/metrics.js';

describe('Function: emitMetric', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    delete process.env.TRIBUTARY_METRICS;
  });

  it('writes a CloudWatch EMF line the construct\'s alarms read, with the cluster dimension', () => {
    process.env.TRIBUTARY_METRICS = 'emf';
    const lines: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    });
    emitMetric('offlinePartitions', 2);
    emitMetric('errors', 1, { ErrorCode: 'NOT_ENOUGH_REPLICAS' });
    const [offline, errors] = lines.map((l) => JSON.parse(l));
    expect(offline._aws.CloudWatchMetrics[0]).toMatchObject({ Namespace: METRICS_NAMESPACE, Metrics: [{ Name: CLUSTER_METRICS.offlinePartitions.name, Unit: 'Count' }] });
    expect(offline[CLUSTER_METRICS.offlinePartitions.name]).toBe(2);
    expect(offline.CoordinationTable).toBe(process.env.TRIBUTARY_COORDINATION_TABLE);
    expect(errors._aws.CloudWatchMetrics[0].Dimensions).toEqual([['CoordinationTable', 'ErrorCode']]);
    expect(errors.ErrorCode).toBe('NOT_ENOUGH_REPLICAS');
  });

  it('stays silent outside Lambda unless asked', () => {
    const write = vi.spyOn(process.stderr, 'write');
    emitMetric('produceRecords', 5);
    expect(write).not.toHaveBeenCalled();
  });
});
