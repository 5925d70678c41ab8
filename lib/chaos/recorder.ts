/** The history of a chaos run: every operation with its start, end, outcome and values, one JSON line each. */
import fs from 'node:fs';
import type { HistoryEvent } from './history.js';

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
    if (this.out !== undefined) fs.writeSync(this.out, `${JSON.stringify(event)}\n`);
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
