/**
 * A least-recently-used map bounded by its number of entries and by the weight its values are
 * said to take (bytes, characters: the caller's `weigh`, or the weight given to `set`). An entry
 * heavier than the whole bound is refused, unless `keepOversized`: then it stays, alone.
 */
export class BoundedCache<K, V> {
  private readonly map = new Map<K, { value: V; weight: number }>();
  private total = 0;
  constructor(
    readonly maxEntries: number, readonly maxWeight: number, private readonly weigh: (v: V) => number = () => 0,
    private readonly keepOversized = false,
  ) {}

  get(key: K): V | undefined {
    const hit = this.map.get(key);
    if (!hit) return undefined;
    this.map.delete(key);
    this.map.set(key, hit);
    return hit.value;
  }

  set(key: K, value: V, weight = this.weigh(value)): void {
    if (weight > this.maxWeight && !this.keepOversized) return;
    const old = this.map.get(key);
    if (old) {
      this.total -= old.weight;
      this.map.delete(key);
    }
    this.map.set(key, { value, weight });
    this.total += weight;
    for (const [k, v] of this.map) {
      if ((this.map.size <= this.maxEntries && this.total <= this.maxWeight) || this.map.size === 1) break;
      this.map.delete(k);
      this.total -= v.weight;
    }
  }

  get size(): number {
    return this.map.size;
  }

  get weight(): number {
    return this.total;
  }

  clear(): void {
    this.map.clear();
    this.total = 0;
  }
}
