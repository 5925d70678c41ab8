/** The history of a chaos run: every operation with its start, end, outcome and values, one JSON line each. */
import fs from 'node:fs';
import { toJsonl, type HistoryEvent } from './history.js';

type Draft = HistoryEvent extends infer E ? (E extends HistoryEvent ? Omit<E, 'id'> : never) : never;

export class Recorder {
  readonly events: HistoryEvent[] = [];
  private next = 1;
  private readonly out: number | undefined;

  constructor(file?: string) {
    this.out = file ? fs.openSync(file, 'w') : undefined;
  }

  add(e: Draft): HistoryEvent {
    const event = { ...e, id: this.next++ } as HistoryEvent;
    this.events.push(event);
    if (this.out !== undefined) fs.writeSync(this.out, toJsonl([event]));
    return event;
  }

  close(): void {
    if (this.out !== undefined) fs.closeSync(this.out);
  }
}

/** A seeded pseudo-random generator (mulberry32): the same seed replays the same choices. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A seed for one named stream of choices, derived from the run's seed (FNV-1a over the name, mixed
 * with the seed by a murmur3 finalizer): streams of one run are independent of each other.
 */
export function deriveSeed(seed: number, stream: string): number {
  let h = 0x811c9dc5 ^ (seed >>> 0);
  for (let i = 0; i < stream.length; i++) h = Math.imul(h ^ stream.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * The run's generators, one per stream. The workloads draw as fast as their requests return, so
 * they have their own: the nemesis's schedule then depends on the seed alone, never on request timing.
 */
export function generators(seed: number): { workload: () => number; transactions: () => number; push: () => number; nemesis: () => number } {
  return {
    workload: rng(deriveSeed(seed, 'workload')), transactions: rng(deriveSeed(seed, 'transactions')), push: rng(deriveSeed(seed, 'push')), nemesis: rng(deriveSeed(seed, 'nemesis')),
  };
}
