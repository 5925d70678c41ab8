/**
 * Broker liveness as the controller judges it, on a private quiet stack (one store process per
 * broker, no controller loops, no replicator), with controllers ticked by hand on a made-up clock:
 * fencing a broker unseen for the session timeout, unfencing it and catching its partitions up,
 * a store that lost its data, a role push that failed, and the store incarnation that tells a
 * wiped store from a healthy one — which a deposed controller must not be able to overwrite. Then
 * long partition walks on the same stack: a walk that outlasts the lease renews it as it goes and
 * announces every leader it elects; a controller that loses the lease mid-walk writes nothing
 * more, and its successor's walk announces the leaders it left unannounced.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Controller, type ControllerOptions, type TickReport } from '../../../lib/cluster/controller.js';
import { resetConfig } from '../../../lib/config.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { takeCapacity, trackCapacity } from '../../../lib/storage/metering.js';
import { resetClients } from '../../../lib/storage/clients.js';
import { acquireLease } from '../../../lib/storage/coordination/lease.js';
import { listBrokers } from '../../../lib/storage/coordination/brokers.js';
import { readTopic } from '../../../lib/storage/coordination/topics.js';
import { topicPartitionKey, type BrokerRecord, type PartitionRecord } from '../../../lib/storage/model.js';
import { probeStore, writeIncarnation } from '../../../lib/storage/replica/incarnation.js';
import { readHead } from '../../../lib/storage/replica/head.js';
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

/** A controller on the test clock that records the partitions it asks to catch up. */
function controller(extra: Partial<ControllerOptions> = {}) {
  const caughtUp: string[] = [];
  const ctl = new Controller({
    id: `liveness-${ids++}`, tickMs: 1000, leaseMs: LEASE, sessionTimeoutMs: SESSION, probeTimeoutMs: 15_000, clock: () => t,
    catchUp: async (topic, _topicId, partition) => {
      caughtUp.push(`${topic}/${partition}`);
    },
    ...extra,
  });
  return { ctl, caughtUp };
}

/** A new controller takes over (the last one's lease long expired). */
function takeOver(extra: Partial<ControllerOptions> = {}) {
  t += 10 * 60_000;
  return controller(extra);
}

const broker = async (id: number): Promise<BrokerRecord> => (await listBrokers()).find((b) => b.brokerId === id)!;
const partitions = async (topic: string): Promise<readonly PartitionRecord[]> => (await readTopic(topic))!.partitions;
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

let n = 0;
async function newTopic(count: number): Promise<{ name: string; topicId: string; parts: readonly PartitionRecord[] }> {
  const name = `live-${n++}`;
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

/** Every store running and every broker alive again, for the next test. */
async function healAll(): Promise<void> {
  for (const id of [1, 2, 3]) {
    const state = c.stack.supervisor.get(storeName(id))?.state;
    if (state === 'paused') c.stack.supervisor.resume(storeName(id));
    else if (state !== 'running') await c.stack.restart(storeName(id));
  }
  const { ctl } = takeOver();
  for (let i = 0; i < 5 && (await listBrokers()).some((b) => b.state !== 'alive'); i++) {
    await ctl.tick(t);
    t += 1000;
  }
  expect((await listBrokers()).map((b) => b.state)).toEqual(['alive', 'alive', 'alive']);
}

describe('Controller: broker liveness', () => {
  it('fences a broker unseen for the session timeout (not before), then unfences it, demotes its heads and catches up its partitions', async () => {
    await healAll();
    const { name, topicId, parts } = await newTopic(3);
    const { ctl, caughtUp } = takeOver();
    c.stack.supervisor.kill(storeName(2)); // refuses at once: unseen, whatever the probe timeout
    expect((await ctl.tick(t)).role).toBe('controller'); // an unseen broker gets grace from the takeover
    t += SESSION - 1;
    expect((await ctl.tick(t)).fenced).toEqual([]);
    t += 2;
    const fencing = await ctl.tick(t);
    expect(fencing.fenced).toEqual([2]);
    expect((await broker(2)).state).toBe('fenced');
    const after = await partitions(name);
    for (const p of after) {
      expect(p.leader).not.toBe(2);
      expect(p.isr).not.toContain(2);
    }
    expect(fencing.elections).toBe(parts.filter((p) => p.leader === 2).length);

    await c.stack.restart(storeName(2)); // back with its data
    caughtUp.length = 0;
    t += 1000;
    const back = await ctl.tick(t);
    expect(back.unfenced).toEqual([2]);
    const record = await broker(2);
    expect(record.state).toBe('alive');
    expect(await probeStore(c.store(2), 1000)).toBe(record.incarnation);
    // Its heads follow the current epochs, and every partition it replicates is caught up.
    for (const p of after) {
      expect(await readHead(c.store(2), topicPartitionKey(topicId, p.partition))).toMatchObject({ role: 'follower', leaderEpoch: p.leaderEpoch });
    }
    expect(caughtUp.filter((x) => x.startsWith(`${name}/`)).sort()).toEqual(parts.map((p) => `${name}/${p.partition}`));
  });

  it('after a gap with no tick longer than a session (a scheduled controller), fences a broker only once it has failed for a whole session while watched', async () => {
    await healAll();
    const { ctl } = takeOver();
    expect((await ctl.tick(t)).unseen).toEqual([]);
    t += 60_000; // the next scheduled pass
    c.stack.supervisor.kill(storeName(2));
    expect(await ctl.tick(t)).toMatchObject({ role: 'controller', fenced: [], unseen: [2] });
    t += SESSION - 1;
    expect((await ctl.tick(t)).fenced).toEqual([]);
    t += 2;
    expect((await ctl.tick(t)).fenced).toEqual([2]);
  });

  it("where a fenced broker leaves the ISR of a partition whose leader stays, the leader's count drops it too (min.insync.replicas counts what the ISR says)", async () => {
    await healAll();
    const { name, topicId, parts } = await newTopic(3);
    const { ctl } = takeOver();
    c.stack.supervisor.kill(storeName(2));
    await ctl.tick(t);
    await watchSession(ctl);
    expect((await ctl.tick(t)).fenced).toEqual([2]);
    const kept = parts.filter((p) => p.leader !== 2);
    expect(kept.length).toBeGreaterThan(0);
    for (const p of kept) {
      const head = (await readHead(c.store(p.leader), topicPartitionKey(topicId, p.partition)))!;
      expect(head.isr).not.toContain(2);
      expect(head.leaving).toEqual([]);
      expect((await partitions(name))[p.partition]!.isr).not.toContain(2);
    }
  });

  it('treats a store that lost its data as a failed broker: fenced, its replicas out of every ISR, then unfenced as a new incarnation and fully synced', async () => {
    await healAll();
    const { name, parts } = await newTopic(3);
    const { ctl, caughtUp } = takeOver();
    await ctl.tick(t);
    const before = (await broker(1)).incarnation;
    expect(before).toBeDefined();
    // Back at once, empty: only its incarnation gives it away.
    await c.stack.restart(storeName(1), { wipe: true });
    t += 1000;
    const lost = await ctl.tick(t);
    expect(lost.fenced).toEqual([1]);
    for (const p of await partitions(name)) {
      expect(p.leader).not.toBe(1);
      expect(p.isr).not.toContain(1);
    }
    caughtUp.length = 0;
    t += 1000;
    expect((await ctl.tick(t)).unfenced).toEqual([1]);
    const record = await broker(1);
    expect(record.state).toBe('alive');
    expect(record.incarnation).not.toBe(before);
    expect(await probeStore(c.store(1), 1000)).toBe(record.incarnation);
    // Every partition it replicates lost its log there: each gets a catch-up (a full sync).
    expect(caughtUp.filter((x) => x.startsWith(`${name}/`)).sort()).toEqual(parts.map((p) => `${name}/${p.partition}`));
  });

  it('retries a role push that failed on a later tick instead of forgetting it', async () => {
    await healAll();
    const { name, topicId, parts } = await newTopic(3);
    const victim = parts.find((p) => p.leader === 3) ?? parts[0]!;
    const dead = victim.leader;
    const heir = victim.replicas.find((r) => r !== dead)!;
    let armed = false;
    let paused = false;
    const { ctl } = takeOver({
      hooks: {
        // The new leader's store dies just as the roles go out (killed, not paused: a paused
        // store would still apply the buffered push when it resumes).
        beforePush: async (list) => {
          if (!armed || paused || !list.some((x) => x.topic === name)) return;
          paused = true;
          c.stack.supervisor.kill(storeName(heir));
        },
      },
    });
    c.stack.supervisor.kill(storeName(dead));
    await ctl.tick(t);
    await watchSession(ctl);
    armed = true;
    const fencing = await ctl.tick(t);
    expect(fencing.fenced).toEqual([dead]);
    expect(paused).toBe(true);
    const elected = (await partitions(name)).find((p) => p.partition === victim.partition)!;
    expect(elected.leader).toBe(heir);
    await c.stack.restart(storeName(heir));
    const tp = topicPartitionKey(topicId, victim.partition);
    expect((await readHead(c.store(heir), tp))?.role).toBe('follower'); // the push did fail
    t += 1000;
    await ctl.tick(t);
    expect(await readHead(c.store(heir), tp)).toMatchObject({ role: 'leader', leaderEpoch: elected.leaderEpoch });
  });
});

describe('Controller: store incarnation', () => {
  it('probes with a strongly consistent read (an eventually consistent one may miss the last incarnation written)', async () => {
    await healAll();
    trackCapacity(true);
    try {
      const { incarnation } = await broker(1);
      takeCapacity();
      expect(await probeStore(c.store(1), 1000)).toBe(incarnation);
      // DynamoDB bills a strongly consistent read of a small item one unit, an eventually consistent one half.
      expect(takeCapacity().readUnits).toBe(1);
    } finally {
      trackCapacity(false);
    }
  });

  it("where a deposed controller's incarnation write lands after its successor's, it fails and the healthy broker is not fenced", async () => {
    await healAll();
    const { name } = await newTopic(3);
    const successor = controller();
    let late = false;
    const { ctl: deposed } = takeOver({
      hooks: {
        // The deposed controller stalls just before stamping the store; meanwhile its lease
        // expires and the successor unfences the broker with its own incarnation.
        beforeIncarnationWrite: async (id) => {
          if (late || id !== 1) return;
          late = true;
          t += LEASE + 1;
          const r = await successor.ctl.tick(t);
          expect(r.role).toBe('controller');
          expect(r.unfenced).toEqual([1]);
        },
      },
    });
    c.stack.supervisor.kill(storeName(1));
    await deposed.tick(t);
    await watchSession(deposed);
    expect((await deposed.tick(t)).fenced).toEqual([1]);
    await c.stack.restart(storeName(1));
    t += 1000;
    const isrBefore = (await partitions(name)).map((p) => p.isr);
    expect((await deposed.tick(t)).role).toBe('standby');
    expect(late).toBe(true);
    // The store still holds the successor's incarnation, so its next probe finds the broker healthy.
    const record = await broker(1);
    expect(await probeStore(c.store(1), 1000)).toBe(record.incarnation);
    t += 1000;
    const next = await successor.ctl.tick(t);
    expect(next.fenced).toEqual([]);
    expect((await broker(1)).state).toBe('alive');
    expect((await partitions(name)).map((p) => p.isr)).toEqual(isrBefore);
  });

  it('a write from an older controller epoch, or one expecting an incarnation the store no longer holds, changes nothing', async () => {
    await healAll();
    const store = c.store(2);
    const current = (await probeStore(store, 1000)) ?? null;
    t += 10 * 60_000;
    const old = (await acquireLease('incarnation-old', LEASE, t))!;
    t += 10 * 60_000;
    const newer = (await acquireLease('incarnation-new', LEASE, t))!;
    expect(await writeIncarnation(store, { incarnation: 'from-newer', controllerEpoch: newer.epoch, replaces: current })).toBe(true);
    // The deposed controller read the same value before it stalled.
    expect(await writeIncarnation(store, { incarnation: 'from-older', controllerEpoch: old.epoch, replaces: current })).toBe(false);
    expect(await probeStore(store, 1000)).toBe('from-newer');
    // Even when it expects the right value, its epoch is too old.
    expect(await writeIncarnation(store, { incarnation: 'from-older', controllerEpoch: old.epoch, replaces: 'from-newer' })).toBe(false);
    // A store wiped (or rewritten) after the probe is not stamped as if it held what was accounted for.
    expect(await writeIncarnation(store, { incarnation: 'blind', controllerEpoch: newer.epoch, replaces: current })).toBe(false);
    expect(await probeStore(store, 1000)).toBe('from-newer');
    // Put the controller's own incarnation back.
    expect(await writeIncarnation(store, { incarnation: current as string, controllerEpoch: newer.epoch, replaces: 'from-newer' })).toBe(true);
  });
});

describe('Controller: long partition walks', () => {
  it('where a walk outlasts the lease, the controller renews it as it goes, keeps it, and announces every leader it elected', async () => {
    await healAll();
    const { name, topicId, parts } = await newTopic(12);
    const rival = controller().ctl;
    const rivalReports: TickReport[] = [];
    let slow = false;
    // Each partition takes 60% of a lease: the walk of twelve lasts more than seven leases,
    // and a rival controller tries to take over at every step.
    const { ctl } = takeOver({
      hooks: {
        beforePartition: async (topic) => {
          if (!slow || topic !== name) return;
          t += 0.6 * LEASE;
          rivalReports.push(await rival.tick(t));
        },
      },
    });
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
    const { ctl } = takeOver({
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
    const next = controller().ctl;
    expect((await next.tick(t)).role).toBe('controller');
    expect(await announced(topicId, await partitions(name), 2)).toEqual([]);
    await healAll();
  });

  it('where the lease is lost mid-walk after fencing a store that lost its data, the next controller still takes that broker out of every ISR before it unfences it', async () => {
    await healAll();
    const { name, parts } = await newTopic(6);
    expect(parts.some((p) => p.leader === 1)).toBe(true);
    let armed = false;
    let stolen = false;
    const { ctl } = takeOver({
      hooks: {
        // The walk that follows the fence stalls at the topic's first partition past its lease,
        // and another controller takes the lease (and stalls before doing anything with it).
        beforePartition: async (topic) => {
          if (!armed || stolen || topic !== name) return;
          stolen = true;
          t += LEASE + 1;
          expect(await acquireLease('thief', LEASE, t)).toBeDefined();
        },
      },
    });
    await ctl.tick(t);
    // Back at once, empty: only its incarnation gives it away.
    await c.stack.restart(storeName(1), { wipe: true });
    t += 1000;
    armed = true;
    expect(await ctl.tick(t)).toMatchObject({ role: 'standby', fenced: [1] });
    expect(stolen).toBe(true);
    expect((await broker(1)).state).toBe('fenced');
    // The cut-short walk left the topic as it was: broker 1 still leads some of it.
    expect((await partitions(name)).filter((p) => p.leader === 1).length).toBeGreaterThan(0);
    // The thief never comes back. The next controller finds broker 1 fenced and answering: it
    // returns, but its store is still not the incarnation the cluster knows.
    t += LEASE + 1;
    const { ctl: next, caughtUp } = controller();
    expect(await next.tick(t)).toMatchObject({ role: 'controller', unfenced: [1] });
    for (const p of await partitions(name)) {
      expect(p.leader).not.toBe(1);
      expect(p.isr).not.toContain(1);
    }
    expect((await broker(1)).state).toBe('alive');
    // Every partition it replicates gets a catch-up (a full sync) now that it is back.
    expect(caughtUp.filter((x) => x.startsWith(`${name}/`)).sort()).toEqual(parts.map((p) => `${name}/${p.partition}`));
    await healAll();
  });
});
