/**
 * Long partition walks, on a private quiet stack with controllers ticked by hand on a made-up
 * clock: a walk that outlasts the lease renews it as it goes and announces every leader it
 * elects; a controller that loses the lease mid-walk writes nothing more, and its successor's
 * walk announces the leaders it left unannounced.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Controller, type ControllerOptions, type TickReport } from '../../../lib/cluster/controller.js';
import { resetConfig } from '../../../lib/config.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { resetClients } from '../../../lib/storage/clients.js';
import { acquireLease, listBrokers, readTopic } from '../../../lib/storage/coordination.js';
import { topicPartitionKey, type PartitionRecord } from '../../../lib/storage/model.js';
import { readHead } from '../../../lib/storage/replica.js';
import { startFaultCluster, type FaultCluster } from '../../support/cluster.js';

let c: FaultCluster;
beforeAll(async () => {
  // Patient while the stores start on a busy machine...
  c = await startFaultCluster({ isolatedBrokers: true, controllers: 0, replicator: false, env: { TRIBUTARY_STORE_TIMEOUT_MS: '30000' } });
  // ...then this process's clients give up on a paused store in seconds.
  Object.assign(process.env, { TRIBUTARY_STORE_TIMEOUT_MS: '3000', TRIBUTARY_STORE_MAX_ATTEMPTS: '2' });
  resetConfig();
  resetClients();
}, 120_000);
afterAll(async () => {
  await c?.stop();
});

const LEASE = 3000;
const SESSION = 9000;
/** The controllers' clock: far past any lease, moved only by the tests. */
let t = Date.now() + 60 * 60_000;
let ids = 0;

function controller(extra: Partial<ControllerOptions> = {}): Controller {
  return new Controller({
    id: `walk-${ids++}`, tickMs: 1000, leaseMs: LEASE, sessionTimeoutMs: SESSION, probeTimeoutMs: 15_000, clock: () => t,
    catchUp: async () => undefined, ...extra,
  });
}

const storeName = (id: number) => `broker-${id}`;

/**
 * Moves the clock just past a whole session, ticking once within it: the controller watched the
 * whole time (a gap of a whole session between ticks resets what it has seen).
 */
async function watchSession(ctl: Controller): Promise<void> {
  t += SESSION - 1;
  await ctl.tick(t);
  t += 2;
}
const partitions = async (topic: string): Promise<readonly PartitionRecord[]> => (await readTopic(topic))!.partitions;

let n = 0;
async function newTopic(count: number) {
  const name = `walk-${n++}`;
  const { topic, partitions: parts } = await createTopic({ name, partitions: count, replicationFactor: 3 });
  return { name, topicId: topic.topicId, parts };
}

/** Whether every live replica's head says the role and epoch its partition state says. */
async function announced(topicId: string, parts: readonly PartitionRecord[], dead: number): Promise<string[]> {
  const wrong: string[] = [];
  for (const p of parts) {
    for (const r of p.replicas) {
      if (r === dead) continue;
      const head = await readHead(c.store(r), topicPartitionKey(topicId, p.partition));
      const role = p.leader === r ? 'leader' : 'follower';
      if (head?.role !== role || head.leaderEpoch !== p.leaderEpoch) wrong.push(`p${p.partition}@${r}: ${head?.role}/${head?.leaderEpoch}, not ${role}/${p.leaderEpoch}`);
    }
  }
  return wrong;
}

/** Every store running and every broker alive again. */
async function healAll(): Promise<void> {
  for (const id of [1, 2, 3]) {
    const state = c.stack.supervisor.get(storeName(id))?.state;
    if (state === 'paused') c.stack.supervisor.resume(storeName(id));
    else if (state !== 'running') await c.stack.restart(storeName(id));
  }
  t += 10 * 60_000;
  const ctl = controller();
  for (let i = 0; i < 5 && (await listBrokers()).some((b) => b.state !== 'alive'); i++) {
    await ctl.tick(t);
    t += 1000;
  }
  expect((await listBrokers()).map((b) => b.state)).toEqual(['alive', 'alive', 'alive']);
}

describe('Controller: long partition walks', () => {
  it('where a walk outlasts the lease, the controller renews it as it goes, keeps it, and announces every leader it elected', async () => {
    await healAll();
    const { name, topicId, parts } = await newTopic(12);
    const rival = controller();
    const rivalReports: TickReport[] = [];
    let slow = false;
    // Each partition takes 60% of a lease: the walk of twelve lasts more than seven leases,
    // and a rival controller tries to take over at every step.
    const ctl = controller({
      hooks: {
        beforePartition: async (topic) => {
          if (!slow || topic !== name) return;
          t += 0.6 * LEASE;
          rivalReports.push(await rival.tick(t));
        },
      },
    });
    t += 10 * 60_000;
    c.stack.supervisor.kill(storeName(1));
    expect((await ctl.tick(t)).role).toBe('controller');
    const epoch = ctl.held?.epoch;
    await watchSession(ctl);
    slow = true;
    const walk = await ctl.tick(t);
    slow = false;
    expect(walk).toMatchObject({ role: 'controller', epoch, fenced: [1], elections: parts.filter((p) => p.leader === 1).length });
    expect(rivalReports).toHaveLength(12);
    expect(rivalReports.map((r) => r.role)).toEqual(Array(12).fill('standby'));
    const after = await partitions(name);
    expect(after.filter((p) => p.leader === 1)).toEqual([]);
    expect(await announced(topicId, after, 1)).toEqual([]);
    await healAll();
  });

  it('where the lease is lost mid-walk, the controller writes nothing more, and the next controller announces the leaders it left unannounced', async () => {
    await healAll();
    const { name, topicId, parts } = await newTopic(6);
    let armed = false;
    let stolen = false;
    const ctl = controller({
      hooks: {
        // Between the elections and the role pushes, the walk stalls past its lease and another
        // controller takes the lease (and stalls before doing anything with it).
        beforePush: async (list) => {
          if (!armed || stolen || !list.some((x) => x.topic === name)) return;
          stolen = true;
          t += LEASE + 1;
          expect(await acquireLease('thief', LEASE, t)).toBeDefined();
        },
      },
    });
    t += 10 * 60_000;
    c.stack.supervisor.kill(storeName(2));
    await ctl.tick(t);
    await watchSession(ctl);
    armed = true;
    expect((await ctl.tick(t)).role).toBe('standby');
    expect(stolen).toBe(true);
    const elected = await partitions(name);
    const moved = elected.filter((p) => parts.find((q) => q.partition === p.partition)?.leader === 2);
    expect(moved.length).toBeGreaterThan(0);
    for (const p of moved) expect(p.leader).not.toBe(2);
    // Elected, but the deposed controller told no replica.
    const unannounced = await announced(topicId, moved, 2);
    expect(unannounced).toHaveLength(moved.length * 2);
    // The thief never comes back; the next controller's walk announces them.
    t += LEASE + 1;
    const next = controller();
    expect((await next.tick(t)).role).toBe('controller');
    expect(await announced(topicId, await partitions(name), 2)).toEqual([]);
    await healAll();
  });
});
