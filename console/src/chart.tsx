/** A time-series line chart (uPlot), redrawn as samples arrive; labelled for screen readers. */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#4b5563', '#ca8a04'];

export function TimeChart(p: { label: string; names: readonly string[]; times: readonly number[]; series: readonly (readonly (number | null)[])[]; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);
  const shape = p.names.join('\u0000');

  useEffect(() => {
    const el = box.current;
    if (!el) return undefined;
    const opts: uPlot.Options = {
      width: Math.max(320, el.clientWidth || 640),
      height: p.height ?? 200,
      series: [{}, ...p.names.map((name, i) => ({ label: name, stroke: COLORS[i % COLORS.length], width: 2, spanGaps: false }))],
      axes: [{}, { size: 60 }],
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
    };
    plot.current = new uPlot(opts, [[], ...p.names.map(() => [])] as uPlot.AlignedData, el);
    const onResize = () => plot.current?.setSize({ width: Math.max(320, el.clientWidth), height: p.height ?? 200 });
    window.addEventListener('resize', onResize);
    return () => {
      window.removeEventListener('resize', onResize);
      plot.current?.destroy();
      plot.current = undefined;
    };
  }, [shape, p.height]);

  useEffect(() => {
    plot.current?.setData([p.times.slice(), ...p.names.map((_, i) => (p.series[i] ?? []).slice())] as uPlot.AlignedData);
  });

  const last = p.names.map((n, i) => `${n} ${p.series[i]?.[p.series[i]!.length - 1] ?? '—'}`).join(', ');
  return (
    <figure class="chart">
      <div ref={box} role="img" aria-label={p.label} />
      <figcaption>{p.label}{p.times.length > 0 ? ` — latest: ${last}` : ' — collecting samples…'}</figcaption>
    </figure>
  );
}
