/**
 * The nemesis: a seeded schedule of real faults, one at a time — SIGKILL and restart a broker's
 * store (with its data, or empty), SIGSTOP a broker store or a controller past its timeout, kill
 * the gateway process mid-request, and network faults through a broker's proxy. Every fault acts
 * on a process by its pid (through the supervisor) and goes to the history.
 */
import type { FaultProxy } from '../local/fault-proxy.js';
import type { LocalStack } from '../local/stack.js';
import type { Recorder } from './recorder.js';

export const FAULT_KINDS = ['kill-broker', 'wipe-broker', 'pause-broker', 'pause-controller', 'kill-gateway', 'net-delay', 'net-drop', 'net-reset'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface NemesisOptions {
  readonly random: () => number;
  readonly kinds: readonly FaultKind[];
  readonly brokers: readonly number[];
  readonly controllers: readonly string[];
  readonly proxies: ReadonlyMap<number, FaultProxy>;
  /** How long a fault lasts (ms), and the quiet time between faults. */
  readonly holdMs: readonly [number, number];
  readonly gapMs: readonly [number, number];
  /** A pause must outlast this to matter (broker session timeout, controller lease). */
  readonly sessionTimeoutMs: number;
  readonly leaseMs: number;
  /** Whether every partition has its full ISR (an empty restart waits for that, so two never stack up). */
  readonly healthy: () => Promise<boolean>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Nemesis {
  private running = true;
  private loop: Promise<void> | undefined;
  readonly counts: Record<string, number> = {};

  constructor(private readonly stack: LocalStack, private readonly o: NemesisOptions, private readonly h: Recorder) {}

  start(): void {
    this.loop = this.run();
  }

  /** Stops injecting and heals the fault in progress. */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  private between([min, max]: readonly [number, number]): number {
    return min + Math.floor(this.o.random() * (max - min));
  }

  private pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.o.random() * xs.length)] as T;
  }

  /** Sleeps up to `ms`, cut short when the run ends. */
  private async hold(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (this.running && Date.now() < until) await sleep(Math.min(200, until - Date.now()));
  }

  private async run(): Promise<void> {
    await this.hold(this.between(this.o.gapMs));
    while (this.running) {
      let kind = this.pick(this.o.kinds);
      if (kind === 'wipe-broker' && !(await this.o.healthy().catch(() => false))) kind = 'kill-broker';
      const start = Date.now();
      const { target, detail } = await this.inject(kind);
      this.counts[kind] = (this.counts[kind] ?? 0) + 1;
      this.h.add({ type: 'fault', kind, target, start, end: Date.now(), ...(detail ? { detail } : {}) });
      await this.hold(this.between(this.o.gapMs));
    }
  }

  /** Applies one fault, holds it, heals it. */
  private async inject(kind: FaultKind): Promise<{ target: string; detail?: string }> {
    const s = this.stack.supervisor;
    const broker = this.pick(this.o.brokers);
    const store = `broker-${broker}`;
    switch (kind) {
      case 'kill-broker':
      case 'wipe-broker': {
        const pid = s.get(store)?.pid;
        s.kill(store);
        await this.hold(this.between(this.o.holdMs));
        await this.stack.restart(store, { wipe: kind === 'wipe-broker' });
        return { target: store, detail: `pid ${pid}` };
      }
      case 'pause-broker': {
        const pid = s.get(store)?.pid;
        s.pause(store);
        await this.hold(Math.max(this.between(this.o.holdMs), this.o.sessionTimeoutMs + 1500));
        s.resume(store);
        return { target: store, detail: `pid ${pid}` };
      }
      case 'pause-controller': {
        const name = this.pick(this.o.controllers);
        const pid = s.get(name)?.pid;
        s.pause(name);
        await this.hold(Math.max(this.between(this.o.holdMs), this.o.leaseMs + 1000));
        s.resume(name);
        return { target: name, detail: `pid ${pid}` };
      }
      case 'kill-gateway': {
        const pid = s.get('gateway')?.pid;
        s.kill('gateway');
        await this.hold(this.between([500, 2000]));
        await s.restart('gateway');
        return { target: 'gateway', detail: `pid ${pid}` };
      }
      case 'net-delay':
      case 'net-drop':
      case 'net-reset': {
        const proxy = this.o.proxies.get(broker);
        if (!proxy) return { target: store, detail: 'no proxy' };
        proxy.set(kind === 'net-delay' ? { kind: 'delay', ms: 300 } : kind === 'net-drop' ? { kind: 'drop' } : { kind: 'reset' });
        await this.hold(this.between(this.o.holdMs));
        proxy.set({ kind: 'pass' });
        return { target: store, detail: kind };
      }
    }
  }
}
