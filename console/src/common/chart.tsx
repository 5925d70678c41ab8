/**
 * A time-series line chart (uPlot), redrawn as samples arrive; labelled for screen readers. uPlot
 * is loaded when a chart is first shown: pages without one don't carry it, and a browser whose
 * locale uPlot cannot format with loses the chart, not the page.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

let loading: Promise<typeof uPlot> | undefined;
const loadUPlot = () => (loading ??= import('uplot').then((m) => m.default));

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#4b5563', '#ca8a04'];

export function TimeChart(p: { label: string; names: readonly string[]; times: readonly number[]; series: readonly (readonly (number | null)[])[]; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);
  const shape = p.names.join('\u0000');
  const [UPlot, setUPlot] = useState<typeof uPlot | undefined>();
  const [failed, setFailed] = useState<string | undefined>();

  useEffect(() => {
    loadUPlot().then((u) => setUPlot(() => u), (e: unknown) => setFailed(e instanceof Error ? e.message : String(e)));
  }, []);

  useEffect(() => {
    const el = box.current;
    if (!el || !UPlot) return undefined;
    const opts: uPlot.Options = {
      width: Math.max(320, el.clientWidth || 640),
      height: p.height ?? 200,
      series: [{}, ...p.names.map((name, i) => ({ label: name, stroke: COLORS[i % COLORS.length], width: 2, spanGaps: false }))],
      axes: [{}, { size: 60 }],
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
    };
    plot.current = new UPlot(opts, [[], ...p.names.map(() => [])] as uPlot.AlignedData, el);
    const onResize = () => plot.current?.setSize({ width: Math.max(320, el.clientWidth), height: p.height ?? 200 });
    window.addEventListener('resize', onResize);
    return () => {
      window.removeEventListener('resize', onResize);
      plot.current?.destroy();
      plot.current = undefined;
    };
  }, [shape, p.height, UPlot]);

  useEffect(() => {
    plot.current?.setData([p.times.slice(), ...p.names.map((_, i) => (p.series[i] ?? []).slice())] as uPlot.AlignedData);
  });

  const last = p.names.map((n, i) => `${n} ${p.series[i]?.[p.series[i]!.length - 1] ?? '—'}`).join(', ');
  return (
    <figure class="chart">
      <div ref={box} role="img" aria-label={p.label} />
      {failed && <p class="muted">The chart could not be drawn here ({failed}).</p>}
      <figcaption>{p.label}{p.times.length > 0 ? ` — latest: ${last}` : ' — collecting samples…'}</figcaption>
    </figure>
  );
}
