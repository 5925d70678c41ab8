import { describe, expect, it } from 'vitest';
import type { FaultProxy } from '../../../lib/local/fault-proxy.js';
import type { LocalStack } from '../../../lib/local/stack.js';
import type { FaultEvent } from '../../../lib/chaos/history.js';
import { Nemesis, type FaultKind } from '../../../lib/chaos/nemesis.js';
import { generators, Recorder } from '../../../lib/chaos/recorder.js';

// A stack whose processes only answer: the nemesis's choices are what is under test, not the faults.
function fakeStack(): LocalStack {
  const info = (name: string) => ({ name, role: name, kind: 'node' as const, pid: 1, port: 1, endpoint: 'http://127.0.0.1:1', state: 'running' as const, dataDir: null, startedAt: null });
  const supervisor = { get: info, kill: info, pause: info, resume: info, restart: async (name: string) => info(name) };
  return { supervisor, restart: async (name: string) => info(name) } as unknown as LocalStack;
}
const proxy = { set: () => undefined } as unknown as FaultProxy;

/**
 * Runs the nemesis until it has injected `faults` faults while a stand-in workload draws from its
 * own generator at `drawsPerMs`: the workload's pace stands for request timing.
 */
async function schedule(seed: number, drawsPerMs: number, faults: number): Promise<string[]> {
  const g = generators(seed);
  const h = new Recorder();
  const kinds: FaultKind[] = ['kill-broker', 'wipe-broker', 'net-delay', 'net-drop', 'net-reset'];
  const nemesis = new Nemesis(fakeStack(), {
    random: g.nemesis, kinds, brokers: [1, 2, 3], controllers: ['controller-1', 'controller-2'], proxies: new Map([[1, proxy], [2, proxy], [3, proxy]]),
    holdMs: [1, 6], gapMs: [1, 6], sessionTimeoutMs: 0, leaseMs: 0, healthy: async () => true,
  }, h);
  const workload = setInterval(() => {
    for (let i = 0; i < drawsPerMs; i++) g.workload();
  }, 1);
  nemesis.start();
  while (h.events.filter((e) => e.type === 'fault').length < faults) await new Promise((r) => setTimeout(r, 2));
  await nemesis.stop();
  clearInterval(workload);
  return h.events.filter((e): e is FaultEvent => e.type === 'fault').slice(0, faults).map((e) => `${e.kind} ${e.target}`);
}

describe('Class: Nemesis', () => {
  it('replays the same fault schedule from the same seed, however fast the workload draws', async () => {
    // Prepare / act: one seed, two workload paces.
    const slow = await schedule(20261201, 1, 12);
    const fast = await schedule(20261201, 37, 12);
    // Assess
    expect(fast).toEqual(slow);
    expect(new Set(slow).size).toBeGreaterThan(1);
  });
});
