/**
 * Live pages: `usePoll` runs a read now and then every `intervalMs` (2 s by default) while the tab
 * is visible, keeping the last good answer on screen when a read fails (a failover's moment of
 * errors should not blank the page).
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export const REFRESH_MS = 2_000;

export interface Polled<T> {
  readonly data: T | undefined;
  readonly error: unknown;
  /** Reads again now (after a change the page made). */
  readonly refresh: () => void;
  /** When the data on screen was read. */
  readonly at: number | undefined;
}

export function usePoll<T>(read: () => Promise<T>, deps: readonly unknown[], intervalMs = REFRESH_MS): Polled<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; at: number | undefined }>({ data: undefined, error: undefined, at: undefined });
  const readRef = useRef(read);
  readRef.current = read;
  const generation = useRef(0);
  const tick = useRef<() => void>(() => undefined);

  useEffect(() => {
    const mine = ++generation.current;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let running = false;
    setState({ data: undefined, error: undefined, at: undefined });
    const run = async () => {
      if (running) return;
      running = true;
      clearTimeout(timer);
      try {
        const data = await readRef.current();
        if (mine === generation.current) setState({ data, error: undefined, at: Date.now() });
      } catch (error) {
        if (mine === generation.current) setState((s) => ({ ...s, error }));
      } finally {
        running = false;
        if (mine === generation.current && intervalMs > 0) timer = setTimeout(() => void (document.hidden ? undefined : run()), intervalMs);
      }
    };
    tick.current = () => void run();
    const onVisible = () => {
      if (!document.hidden) void run();
    };
    document.addEventListener('visibilitychange', onVisible);
    void run();
    return () => {
      generation.current++;
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, deps);

  const refresh = useCallback(() => tick.current(), []);
  return { ...state, refresh };
}

/**
 * Samples over time for a chart: appends `values` (one number per series, or null) each time
 * `at` changes, keeping the last `max` samples.
 */
export function useSeries(at: number | undefined, values: readonly (number | null)[] | undefined, max = 300): { times: number[]; series: (number | null)[][] } {
  const ref = useRef<{ times: number[]; series: (number | null)[][]; last: number | undefined }>({ times: [], series: [], last: undefined });
  const s = ref.current;
  if (at !== undefined && values && at !== s.last) {
    s.last = at;
    s.times.push(at / 1000);
    for (let i = 0; i < Math.max(values.length, s.series.length); i++) {
      s.series[i] ??= s.times.slice(0, -1).map(() => null);
      (s.series[i] as (number | null)[]).push(values[i] ?? null);
    }
    if (s.times.length > max) {
      s.times.shift();
      for (const x of s.series) x.shift();
    }
  }
  return s;
}
