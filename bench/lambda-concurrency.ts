/**
 * Writers on one partition, in the local stack's two modes: the handlers in one
 * process, and Lambda-fidelity mode, where each concurrent request is its own execution
 * environment with its own caches (docs/architecture.md, "Lambda-fidelity mode"). The same
 * closed-loop writers (each sends its next 1-record produce when the last is answered) for a fixed
 * time per point; acknowledged records per second. In one process, concurrent requests share the
 * leader's cached head and one replication run commits for all of them; as Lambda runs them, every
 * instance appends and commits alone, and they race for the partition's head. Run:
 * `npm run bench -- lambda-concurrency`.
 */
import { startLocalStack } from '../local/stack.js';
import { barChart, isQuick, writeResult } from './lib/report.js';

// (the quick form, a smoke test in `npm test`, runs the smallest points only)
const WRITERS = isQuick() ? [1, 4] : [1, 4, 16];
const SECONDS = isQuick() ? 1 : 10;

interface Point { mode: 'one process' | 'Lambda'; acks: 'all' | '1'; writers: number; perSecond: number; failed: number }

async function measure(lambda: boolean): Promise<Point[]> {
  const s = await startLocalStack({ port: 0, inMemory: true, controllers: 0, controllerScheduleMs: 0, lambda });
  const points: Point[] = [];
  try {
    const v3 = `${s.url}/v3/clusters/${s.clusterId}`;
    const post = (p: string, b: unknown) => fetch(`${v3}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(b) }).then(async (r) => ({ status: r.status, text: await r.text() }));
    for (const acks of ['1', 'all'] as const) {
      const topic = `contention-${acks}`;
      await post('/topics', { topic_name: topic, partitions_count: 1, replication_factor: 3 });
      // Warm-up: every environment the largest point needs, started once.
      await Promise.all(Array.from({ length: Math.max(...WRITERS) }, () => post(`/topics/${topic}/records?acks=${acks}`, { partition_id: 0, value: { type: 'STRING', data: 'warm' } })));
      for (const writers of WRITERS) {
        const started = performance.now();
        let acked = 0;
        let failed = 0;
        await Promise.all(Array.from({ length: writers }, async () => {
          while (performance.now() - started < SECONDS * 1000) {
            const r = await post(`/topics/${topic}/records?acks=${acks}`, { partition_id: 0, value: { type: 'STRING', data: 'v' } });
            if (r.status === 200) acked++;
            else {
              failed++;
              if (process.env.BENCH_SHOW_FAILURES) console.log(r.status, r.text);
            }
          }
        }));
        points.push({ mode: lambda ? 'Lambda' : 'one process', acks, writers, perSecond: acked / ((performance.now() - started) / 1000), failed });
      }
    }
  } finally {
    await s.stop();
  }
  return points;
}

const points = [...await measure(false), ...await measure(true)];
const rate = (p: Point | undefined) => (p ? `${p.perSecond.toFixed(1)}${p.failed > 0 ? ` (${p.failed} failed)` : ''}` : '—');
const find = (mode: Point['mode'], acks: Point['acks'], writers: number) => points.find((p) => p.mode === mode && p.acks === acks && p.writers === writers);
await writeResult({
  scenario: 'lambda-concurrency',
  title: 'Concurrent writers on one partition: one process vs Lambda',
  description: `Closed-loop writers of 1-record produce requests to one RF 3 partition, ${SECONDS} s per point after a warm-up that starts every environment; acknowledged records per second. The baseline is the same load on the handlers in one process.`,
  tables: [{
    title: 'Acknowledged records per second',
    columns: ['acks', 'writers', 'one process', 'Lambda-fidelity', 'Lambda vs one process'],
    rows: (['1', 'all'] as const).flatMap((acks) => WRITERS.map((w) => {
      const one = find('one process', acks, w);
      const lam = find('Lambda', acks, w);
      return [acks, String(w), rate(one), rate(lam), one && lam ? `${(lam.perSecond / one.perSecond).toFixed(2)} ×` : '—'];
    })),
    notes: [
      'In one process, concurrent requests share the leader\'s cached head and one replication run commits for all of them (a group commit). In Lambda each request is its own environment: it appends under a head its cache does not know and loses the race to the others, and it commits alone.',
      'A producer that needs more than a few concurrent requests per partition should send its records in batches (records:batch, or the streaming form of POST records) rather than many single-record requests.',
    ],
  }],
  charts: [{ title: 'acks=all, records/s by writers', spec: barChart(points.filter((p) => p.acks === 'all').map((p) => ({ writers: String(p.writers), mode: p.mode, perSecond: p.perSecond })), { x: { field: 'writers', type: 'ordinal' }, y: { field: 'perSecond', type: 'quantitative' }, color: { field: 'mode', type: 'nominal' } }) }],
  data: { points, seconds: SECONDS },
});
