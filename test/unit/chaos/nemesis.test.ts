import { describe, expect, it } from 'vitest';
import type { FaultProxy } from '../../../local/fault-proxy.js';
import type { LocalStack } from '../../../local/stack.js';
import type { FaultEvent } from '../../../chaos/history.js';
import { FAULT_KINDS, type PlannedFault } from '../../../chaos/faults.js';
import { Nemesis, type NemesisControls } from '../../../chaos/nemesis.js';
import { generators, Recorder } from '../../../chaos/recorder.js';
import { fakeShape } from './fake-shape.js';

// A stack whose processes only answer: the nemesis's choices are what is under test, not the faults.
function fakeStack(): LocalStack {
  const info = (name: string) => ({ name, role: name, kind: 'node' as const, pid: 1, port: 1, endpoint: 'http://127.0.0.1:1', state: 'running' as const, dataDir: null, startedAt: null });
  const supervisor = { get: info, kill: info, pause: info, resume: info, restart: async (name: string) => info(name) };
  return { supervisor, restart: async (name: string) => info(name) } as unknown as LocalStack;
}
const proxy = { set: () => undefined, lostAnswers: 0 } as unknown as FaultProxy;
const controls: NemesisControls = {
  ...fakeShape([1, 2, 3]),
  healthy: async () => true,
  leaderOf: async (tp) => ({ leader: 1 + (tp.partition % 3), epoch: 1, isr: [1, 2, 3], replicas: [1, 2, 3] }),
  electedLogEnd: async () => 0,
  deleteRecords: async () => ({ detail: 'DeleteRecords to 0: 200', deletion: { offset: 0, answered: true } }),
  nextWrite: async () => ({ value: 'v', offset: 0 }),
  leaseHolder: async () => 'controller-2',
  dropDeliveries: () => undefined,
  droppedDeliveries: () => 0,
  killFunctionInstance: async () => 4242,
};

/**
 * Runs the nemesis, with every fault kind, until it has injected `faults` faults while a stand-in
 * workload draws from its own generator at `drawsPerMs`: the workload's pace stands for request timing.
 */
async function schedule(seed: number, drawsPerMs: number, faults: number): Promise<{ planned: PlannedFault[]; injected: string[] }> {
  const shape = fakeShape([1, 2, 3]);
  const g = generators(seed);
  const h = new Recorder();
  const nemesis = new Nemesis(fakeStack(), {
    random: g.nemesis, kinds: FAULT_KINDS, brokers: [1, 2, 3], controllers: ['controller-1', 'controller-2'], gateways: ['gateway', 'gateway-2'],
    partitions: [{ topic: 'a', partition: 0 }, { topic: 'a', partition: 1 }, { topic: 'b', partition: 0 }],
    proxies: new Map([[1, proxy], [2, proxy], [3, proxy]]), holdMs: [1, 6], gapMs: [1, 6], outlastSessionMs: 0, outlastLeaseMs: 0, controls: { ...controls, ...shape },
    steps: { gatewayDownMs: [0, 3], copyMs: 3, catchUpMs: 3, rejoinMs: 1 },
  }, h);
  const workload = setInterval(() => {
    for (let i = 0; i < drawsPerMs; i++) g.workload();
  }, 1);
  nemesis.start();
  while (h.events.filter((e) => e.type === 'fault').length < faults) await new Promise((r) => setTimeout(r, 2));
  await nemesis.stop();
  clearInterval(workload);
  return {
    planned: nemesis.planned.slice(0, faults),
    injected: h.events.filter((e): e is FaultEvent => e.type === 'fault').slice(0, faults).map((e) => `${e.kind} ${e.target}`),
  };
}

describe('Class: Nemesis', () => {
  it('replays the same fault schedule from the same seed, however fast the workload draws', async () => {
    // Prepare / act: one seed, two workload paces; another seed.
    const slow = await schedule(20261201, 1, 20);
    const fast = await schedule(20261201, 37, 20);
    const other = await schedule(7, 1, 20);
    // Assess
    expect(fast.planned).toEqual(slow.planned);
    expect(fast.injected).toEqual(slow.injected);
    expect(new Set(slow.injected).size).toBeGreaterThan(5);
    expect(other.planned).not.toEqual(slow.planned);
  });
});
