/**
 * The alarms and the dashboard query the metrics with the dimensions the code emits: every
 * `emitMetric` call site in lib/ is found, its EMF line captured, and every Tributary metric the
 * template reads (alarm dimensions, dashboard metrics and SEARCH expressions) must name one of
 * the dimension sets that metric is emitted with — a graph of a dimension set nobody emits is empty.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CLUSTER_METRICS, METRICS_NAMESPACE, emitMetric, type ClusterMetricKey } from '../../lib/metrics.js';
import { ROOT, resourcesOf, synth, type Synthesized } from './synth.js';

const METRIC_NAMES = new Map(Object.entries(CLUSTER_METRICS).map(([key, m]) => [m.name, key as ClusterMetricKey]));

/** Every `emitMetric('key', value, { Extra: ... })` in lib/: the metric key and its extra dimension names. */
function emitCalls(): { key: ClusterMetricKey; extras: string[] }[] {
  const files = fs.readdirSync(path.join(ROOT, 'lib'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts') && f !== 'metrics.ts');
  const calls: { key: ClusterMetricKey; extras: string[] }[] = [];
  for (const file of files) {
    const src = fs.readFileSync(path.join(ROOT, 'lib', file), 'utf8');
    for (const m of src.matchAll(/emitMetric\('(\w+)',[^;]*?(?:\{([^}]*)\})?\);/g)) {
      const extras = m[2] ? [...m[2].matchAll(/(\w+)\s*:/g)].map((e) => e[1] as string) : [];
      calls.push({ key: m[1] as ClusterMetricKey, extras });
    }
  }
  return calls;
}

/** The dimension-name sets an emitMetric call puts in its EMF line, by metric name. */
function emittedDimensionSets(): Map<string, Set<string>> {
  const lines: string[] = [];
  const write = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: any) => (lines.push(String(chunk)), true));
  try {
    for (const call of emitCalls()) emitMetric(call.key, 1, Object.fromEntries(call.extras.map((e) => [e, 'x'])));
  } finally {
    write.mockRestore();
  }
  const sets = new Map<string, Set<string>>();
  for (const line of lines) {
    const emf = JSON.parse(line)._aws.CloudWatchMetrics[0] as { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] };
    expect(emf.Namespace).toBe(METRICS_NAMESPACE);
    for (const metric of emf.Metrics) for (const dims of emf.Dimensions) {
      const set = sets.get(metric.Name) ?? new Set<string>();
      set.add([...dims].sort().join(','));
      sets.set(metric.Name, set);
    }
  }
  return sets;
}

/** The dashboard body with every token replaced by a placeholder string. */
function dashboardBody(s: Synthesized): any {
  const [[, dash]] = resourcesOf(s, 'AWS::CloudWatch::Dashboard') as [[string, any]];
  const body = dash.DashboardBody;
  const text = typeof body === 'string' ? body : (body['Fn::Join'][1] as unknown[]).map((p) => (typeof p === 'string' ? p : 'TOKEN')).join('');
  return JSON.parse(text);
}

/** Every (metric name, dimension-name set) the template reads from the Tributary namespace. */
function queried(s: Synthesized, coordinationTable: string): { metric: string; dims: string; where: string }[] {
  const out: { metric: string; dims: string; where: string }[] = [];
  for (const [id, alarm] of resourcesOf(s, 'AWS::CloudWatch::Alarm')) {
    const metrics = alarm.Metrics ? alarm.Metrics.flatMap((m: any) => (m.MetricStat ? [m.MetricStat.Metric] : [])) : [alarm];
    for (const m of metrics) {
      if (m.Namespace !== METRICS_NAMESPACE) continue;
      out.push({ metric: m.MetricName, dims: (m.Dimensions ?? []).map((d: any) => d.Name).sort().join(','), where: `alarm ${id}` });
    }
  }
  for (const widget of dashboardBody(s).widgets) {
    for (const row of (widget.properties?.metrics ?? []) as any[][]) {
      const expression = (row[0] as { expression?: string } | string);
      if (typeof expression === 'object' && expression.expression) {
        const search = /SEARCH\('\{([^}]*)\} MetricName="(\w+)" (.*)', '/.exec(expression.expression);
        if (!search) continue;
        const [namespace, ...dims] = (search[1] as string).split(',');
        if (namespace !== METRICS_NAMESPACE) continue;
        expect(search[3], 'the search is limited to this cluster').toContain(`"${coordinationTable}"`);
        out.push({ metric: search[2] as string, dims: dims.sort().join(','), where: `dashboard "${widget.properties.title}" (search)` });
      } else if (row[0] === METRICS_NAMESPACE) {
        const names = row.slice(2).filter((_, i) => i % 2 === 0 && typeof row[2 + i] === 'string');
        out.push({ metric: row[1], dims: names.sort().join(','), where: `dashboard "${widget.properties.title}"` });
      } else if (row[0] === '...' || row[0] === '.') {
        throw new Error('shorthand metric rows are not handled by this test');
      }
    }
  }
  return out;
}

describe('TributaryCluster: metric dimensions', () => {
  let s: Synthesized;
  let emitted: Map<string, Set<string>>;
  const env = { metrics: process.env.TRIBUTARY_METRICS };
  beforeAll(() => {
    process.env.TRIBUTARY_METRICS = 'emf';
    s = synth({ brokers: 1, tablePrefix: 'dims' });
    emitted = emittedDimensionSets();
  });
  afterAll(() => {
    if (env.metrics === undefined) delete process.env.TRIBUTARY_METRICS;
    else process.env.TRIBUTARY_METRICS = env.metrics;
  });

  it('finds the call sites, Errors among them with its ErrorCode dimension', () => {
    expect(emitted.get(CLUSTER_METRICS.errors.name)).toEqual(new Set(['CoordinationTable,ErrorCode']));
    expect(emitted.get(CLUSTER_METRICS.offlinePartitions.name)).toEqual(new Set(['CoordinationTable']));
  });

  it('queries every Tributary metric with a dimension set the code emits it with', () => {
    const reads = queried(s, 'dims-coordination');
    expect(reads.length).toBeGreaterThan(10);
    for (const r of reads) {
      expect(METRIC_NAMES.has(r.metric), `${r.where}: ${r.metric} is in lib/metrics.ts`).toBe(true);
      expect([...(emitted.get(r.metric) ?? [])], `${r.where} reads ${r.metric} by {${r.dims}}`).toContain(r.dims);
    }
  });

  it('graphs the errors by Kafka error code', () => {
    expect(queried(s, 'dims-coordination').filter((r) => r.metric === CLUSTER_METRICS.errors.name).map((r) => r.dims)).toEqual(['CoordinationTable,ErrorCode']);
  });
});
