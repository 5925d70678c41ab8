/**
 * The turns of a consumer's partitions at their log end (`ConsumerConfig.longPolls`): at most
 * `capacity` of them long-poll at once, in the order they asked; the others wait for a turn to end.
 */
export class LongPollTurns<T> {
  private readonly holders = new Set<T>();
  private readonly queue: T[] = [];
  private ended: { promise: Promise<void>; resolve: () => void } = LongPollTurns.signal();

  constructor(private readonly capacity: number) {}

  private static signal() {
    let resolve = () => {};
    const promise = new Promise<void>((r) => { resolve = r; });
    return { promise, resolve };
  }

  /** Whether `p` may long-poll now; if not, it is in line for a turn. */
  take(p: T): boolean {
    if (this.holders.has(p)) return true;
    const place = this.queue.indexOf(p);
    // (a partition whose turn just ended asks again behind those already in line)
    if (this.holders.size + (place >= 0 ? place : this.queue.length) < this.capacity) {
      if (place >= 0) this.queue.splice(place, 1);
      this.holders.add(p);
      return true;
    }
    if (place < 0) this.queue.push(p);
    return false;
  }

  /** `p`'s turn is over (its wait ended); the partitions in line check again. */
  end(p: T): void {
    if (!this.holders.delete(p)) return;
    const ended = this.ended;
    this.ended = LongPollTurns.signal();
    ended.resolve();
  }

  /** `p` has records to read, is paused or was revoked: out of line. */
  leave(p: T): void {
    this.end(p);
    const place = this.queue.indexOf(p);
    if (place >= 0) this.queue.splice(place, 1);
  }

  /** Resolves when a turn ends. */
  get nextEnd(): Promise<void> {
    return this.ended.promise;
  }
}
