/** Bounded fan-out: many independent calls, a few at a time. */

/**
 * `fn` over `items` with at most `limit` calls in flight, results in order. A request that reads
 * one item per topic or per range uses it instead of an unbounded `Promise.all`: a fresh process
 * opens one connection per call in flight, and a burst of hundreds overflows a store's accept
 * queue (a refused connection costs a second before its retry).
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  }));
  return out;
}
