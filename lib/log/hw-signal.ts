/**
 * In-process wake-ups for long polls: a fetch waiting for records at the end of a partition sleeps
 * between reads of the leader's head, and a commit made by this same instance (a produce's fast
 * commit, a replication run) wakes it at once instead of at its next read. Across instances (two
 * Lambda containers) nothing is shared, and the poll's own reads find the new high watermark.
 *
 * It also keeps the highest high watermark this instance saw per partition (committed offsets
 * stay committed under any later leader): a fetch below it reads the table together with the
 * head, a fetch at or past it — most likely a consumer at the end of the log — reads the head first.
 */
const waiters = new Map<string, Set<() => void>>();
const known = new Map<string, number>();
const listeners = new Set<(tp: string, hw: number) => void>();

/**
 * Calls `listener` each time this instance moves a high watermark (the WebSocket deliveries'
 * wake, lib/http/websocket-wake.ts). It must not throw nor block: it runs inside the commit.
 */
export function onHighWatermarkMoved(listener: (tp: string, hw: number) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The highest high watermark of `tp` this instance saw (0 when none). */
export const knownHighWatermark = (tp: string): number => known.get(tp) ?? 0;

/** Records a high watermark read from a leader's head. */
export function noteHighWatermark(tp: string, hw: number): void {
  if (known.size > 100_000) known.clear();
  if (hw > (known.get(tp) ?? 0)) known.set(tp, hw);
}

/** Records a high watermark this instance moved, and wakes every fetch of this instance waiting on `tp`. */
export function highWatermarkMoved(tp: string, hw: number): void {
  noteHighWatermark(tp, hw);
  for (const listener of listeners) listener(tp, hw);
  const set = waiters.get(tp);
  if (!set) return;
  waiters.delete(tp);
  for (const wake of set) wake();
}

/** Resolves after `ms`, or sooner when this instance moves `tp`'s high watermark. */
export function sleepUntilMoved(tp: string, ms: number): Promise<void> {
  return new Promise((resolve) => {
    let set = waiters.get(tp);
    if (!set) {
      set = new Set();
      waiters.set(tp, set);
    }
    const mine = set;
    const wake = (): void => {
      clearTimeout(timer);
      mine.delete(wake);
      if (mine.size === 0 && waiters.get(tp) === mine) waiters.delete(tp);
      resolve();
    };
    const timer = setTimeout(wake, ms);
    mine.add(wake);
  });
}
