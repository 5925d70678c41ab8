/**
 * Real faults on one private stack: one DynamoDB Local process per broker and two
 * controller loops in their own processes. Replication: a follower's store SIGKILLed and restarted
 * with its data (incremental sync) or empty (full sync) under load, and many producers on one
 * partition. Controller: a paused controller replaced and fenced, the leader's store SIGKILLed
 * under acks=all produce, two of three brokers dead, unclean election. One file, so these heavy
 * scenarios run one after another rather than against each other on a two-core machine; it runs
 * in the multi-process project (vitest.config.ts), after and apart from every other file. How fast
 * a failover is belongs to `npm run bench -- failover`, not here.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LeaseLost, readLease } from '../../lib/storage/coordination/lease.js';
import { setBrokerState } from '../../lib/storage/coordination/brokers.js';
import { listKeys } from '../../lib/storage/objects.js';
import { readHead } from '../../lib/storage/replica/head.js';
import { readValues } from '../support/api.js';
import { logFingerprint, replicaLog, startFaultCluster, startProducers as startProducersOn, type Acked, type FaultCluster } from '../support/cluster.js';

const SESSION_MS = 4000;
const TICK_MS = 500;
let c: FaultCluster;

beforeAll(async () => {
  c = await startFaultCluster({
    env: {
      TRIBUTARY_BROKER_SESSION_TIMEOUT_MS: String(SESSION_MS), TRIBUTARY_CONTROLLER_TICK_MS: String(TICK_MS),
      TRIBUTARY_BROKER_PROBE_TIMEOUT_MS: '1500', TRIBUTARY_REPLICA_LAG_TIME_MAX_MS: '2000',
      TRIBUTARY_REQUEST_TIMEOUT_MS: '15000', TRIBUTARY_STORE_TIMEOUT_MS: '2000',
    },
  });
}, 120_000);

afterAll(async () => {
  await c?.stop();
});

// Each test starts from three live brokers and leaves no producer behind, so one failure does not
// fail the tests after it (a dead broker makes every RF 3 topic creation fail).
let producing: ReturnType<typeof startProducersOn>[] = [];
const startProducers = (...args: Parameters<typeof startProducersOn>) => {
  const p = startProducersOn(...args);
  producing.push(p);
  return p;
};
beforeEach(async () => {
  await brokersUp();
}, 60_000);
afterEach(async () => {
  await Promise.all(producing.map((p) => p.stop()));
  producing = [];
});

async function topicWithFollower(name: string) {
  const created = await c.call('POST', c.v3('/topics'), { topic_name: name, partitions_count: 1, replication_factor: 3 });
  expect(created.status).toBe(201);
  const p = (await c.call('GET', c.v3(`/topics/${name}/partitions/0`))).body;
  return { tp: `${created.body.topic_id}#0`, leader: p.leader_id as number, follower: p.replica_states.find((r: any) => !r.is_leader).broker_id as number };
}

const isr = async (name: string): Promise<number[]> => (await c.call('GET', c.v3(`/topics/${name}/partitions/0`))).body.isr;

/** Waits for every replica to hold the leader's whole log, then checks they are identical and hold every acknowledged record. */
async function expectConverged(name: string, tp: string, acked: readonly Acked[]) {
  const stores = [1, 2, 3].map((b) => c.store(b));
  await c.until('replicas to converge', async () => {
    const heads = await Promise.all(stores.map((s) => readHead(s, tp)));
    const leos = new Set(heads.map((h) => h?.leo));
    const leader = heads.find((h) => h?.role === 'leader');
    return leos.size === 1 && leader && leader.hw === leader.leo && (await isr(name)).length === 3;
  }, 40_000);
  const logs = await Promise.all(stores.map(async (s) => logFingerprint(await replicaLog(s, tp))));
  expect(logs[1]).toEqual(logs[0]);
  expect(logs[2]).toEqual(logs[0]);
  const read = await readValues(c.v3(`/topics/${name}/partitions/0/records`), { call: c.call });
  for (const a of acked) expect(read.get(a.offset), `acknowledged offset ${a.offset}`).toBe(a.value);
  expect(new Set(read.values()).size).toBe(read.size);
}

const partition = async (topic: string) => (await c.call('GET', c.v3(`/topics/${topic}/partitions/0`))).body;
const createTopic = async (name: string, rf: number, configs: { name: string; value: string }[] = []) =>
  expect((await c.call('POST', c.v3('/topics'), { topic_name: name, partitions_count: 1, replication_factor: rf, configs })).status).toBe(201);
const controllerStatus = async (name: string) => (await fetch(c.stack.supervisor.get(name)!.endpoint)).json() as Promise<any>;
/** Resolves once the lease holder has finished `n` more ticks: every rule of a tick has then been applied to what is now true. */
const ticks = async (n: number) => {
  const holder = (await c.until('a controller', async () => readLease())).holder;
  const seen = new Set<string>();
  await c.until(`${n} controller ticks`, async () => {
    const last = (await controllerStatus(holder)).lastTick;
    if (last?.role === 'controller') seen.add(last.at);
    return seen.size > n;
  }, 20_000);
};
const brokersUp = async () => {
  for (const b of [1, 2, 3]) {
    if (c.stack.supervisor.get(`broker-${b}`)?.state !== 'running') await c.call('POST', `/local/processes/broker-${b}/restart`);
  }
  await c.until('every broker alive', async () => (await c.call('GET', c.v3('/brokers'))).body.data.every((b: any) => b.state === 'alive'), 20_000);
};

describe('Replication with real store failures', () => {
  it('where a follower store is SIGKILLed during acks=1 writes and restarted with its data, it catches up incrementally and rejoins the ISR', async () => {
    const name = 'incremental';
    const { tp, follower } = await topicWithFollower(name);
    const producers = startProducers(c, name, { count: 3, acks: '1' });
    await c.until('some writes', async () => producers.acked.length >= 30);
    expect((await c.call('POST', `/local/processes/broker-${follower}/kill`)).body.state).toBe('killed');
    await c.until('the ISR to drop the dead follower', async () => !(await isr(name)).includes(follower), 20_000);
    const whileDown = producers.acked.length;
    await c.until('writes while the follower is down', async () => producers.acked.length >= whileDown + 30);
    expect((await c.call('POST', `/local/processes/broker-${follower}/restart`)).body.state).toBe('running');
    await c.until('the follower to rejoin the ISR', async () => (await isr(name)).includes(follower), 30_000);
    await producers.stop();
    await expectConverged(name, tp, producers.acked);
    expect(producers.acked.length).toBeGreaterThan(60);
    // Incremental: no snapshot was needed.
    expect(await listKeys(`snapshots/${tp.replace('#', '/')}/`)).toEqual([]);
  });

  it('where a follower store comes back empty while producers keep writing, it gets a snapshot, replays it, catches up, and its log equals the leader\'s', async () => {
    const name = 'full-sync';
    const { tp, follower } = await topicWithFollower(name);
    const producers = startProducers(c, name, { count: 3, acks: 'all' });
    await c.until('some writes', async () => producers.acked.length >= 60);
    expect((await c.call('POST', `/local/processes/broker-${follower}/restart?wipe=true`)).body.state).toBe('running');
    await c.until('a full sync', async () => (await listKeys(`snapshots/${tp.replace('#', '/')}/`)).length > 0, 30_000);
    await c.until('the follower to be in sync', async () => {
      const r = (await c.call('GET', c.v3(`/topics/${name}/partitions/0`))).body;
      return r.isr.includes(follower) && r.replica_states.find((x: any) => x.broker_id === follower)?.state === 'in-sync';
    }, 30_000);
    await producers.stop();
    await expectConverged(name, tp, producers.acked);
  });

  it('with many concurrent acks=all producers on one partition, offsets are unique and gap-free and every acknowledged record is readable exactly once', async () => {
    const name = 'concurrent';
    const { tp } = await topicWithFollower(name);
    // Four writers: each request is its own Lambda environment racing the others for the
    // partition's head, so many more would measure contention (bench/lambda-concurrency.ts), not offsets.
    const producers = startProducers(c, name, { count: 4, acks: 'all' });
    await c.until('80 writes', async () => producers.acked.length >= 80, 60_000);
    await producers.stop();
    const offsets = producers.acked.map((a) => a.offset).sort((a, b) => a - b);
    expect(new Set(offsets).size).toBe(offsets.length);
    expect(producers.failed).toBe(0);
    expect(offsets).toEqual(offsets.map((_, i) => i));
    await expectConverged(name, tp, producers.acked);
  });
});

describe('The controller with real processes', () => {
  it('where two controller loops contend, one holds the lease; paused past expiry, it is replaced and, resumed, can write nothing', async () => {
    // One consistent view: the table, both loops and the API agree on who holds which epoch.
    const { lease, held } = await c.until('one controller that both loops and the API agree on', async () => {
      const l = await readLease();
      if (!l) return undefined;
      const other = l.holder === 'controller-1' ? 'controller-2' : 'controller-1';
      const [mine, theirs, api] = await Promise.all([controllerStatus(l.holder), controllerStatus(other), c.call('GET', c.v3(''))]);
      const agreed = mine.lease?.epoch === l.epoch && theirs.lease === null
        && api.body.controller_lease?.controller_id === l.holder && api.body.controller_lease?.epoch === l.epoch;
      return agreed ? { lease: l, held: mine.lease } : undefined;
    }, 15_000);
    const holder = lease.holder;
    const other = holder === 'controller-1' ? 'controller-2' : 'controller-1';
    expect((await c.call('POST', `/local/processes/${holder}/pause`)).body.state).toBe('paused');
    const next = await c.until('a takeover', async () => {
      const l = await readLease();
      return l && l.holder === other ? l : undefined;
    }, 15_000);
    expect(next.epoch).toBe(lease.epoch + 1);
    // What the paused one would write when it wakes: fenced by the lease check.
    await expect(setBrokerState(held, 1, 'alive')).rejects.toBeInstanceOf(LeaseLost);
    expect((await c.call('POST', `/local/processes/${holder}/resume`)).body.state).toBe('running');
    await c.until('the resumed controller to stand by', async () => (await controllerStatus(holder)).lease === null, 10_000);
    expect((await readLease())?.holder).toBe(other);
  });

  it('where the leader store is SIGKILLed during acks=all produce, a new leader is elected under the next leader epoch, producers carry on, and nothing acknowledged is lost', async () => {
    await createTopic('failover', 3);
    const before = await partition('failover');
    const producers = startProducers(c, 'failover', { count: 4, acks: 'all' });
    await c.until('some writes', async () => producers.acked.length >= 40);
    const ackedBefore = producers.acked.length;
    expect((await c.call('POST', `/local/processes/broker-${before.leader_id}/kill`)).body.state).toBe('killed');
    const elected = await c.until('a new leader', async () => {
      const p = await partition('failover');
      return p.leader_id !== before.leader_id && p.leader_id !== null ? p : undefined;
    }, 30_000);
    await c.until('a produce after the kill', async () => producers.acked.length > ackedBefore + 5, 20_000);
    expect(elected.leader_epoch).toBe(before.leader_epoch + 1);
    await producers.stop();
    // The killed broker returns: demoted, truncated if it must, caught up, back in the ISR.
    expect((await c.call('POST', `/local/processes/broker-${before.leader_id}/restart`)).body.state).toBe('running');
    const tp = `${(await c.call('GET', c.v3('/topics/failover'))).body.topic_id}#0`;
    await c.until('the old leader to rejoin the ISR', async () => (await partition('failover')).isr.includes(before.leader_id), 30_000);
    await c.until('every replica to hold the whole log', async () => {
      const heads = await Promise.all([1, 2, 3].map((b) => readHead(c.store(b), tp)));
      return new Set(heads.map((h) => h?.leo)).size === 1 && heads.find((h) => h?.role === 'leader')?.hw === heads[0]?.leo;
    }, 30_000);
    const logs = await Promise.all([1, 2, 3].map(async (b) => logFingerprint(await replicaLog(c.store(b), tp))));
    expect(logs[1]).toEqual(logs[0]);
    expect(logs[2]).toEqual(logs[0]);
    const read = await readValues(c.v3('/topics/failover/partitions/0/records'), { call: c.call });
    for (const a of producers.acked) expect(read.get(a.offset), `acknowledged offset ${a.offset}`).toBe(a.value);
  });

  it("where the leader's store comes back empty within the session timeout, the controller sees it lost its data, elects an in-sync follower, and nothing acknowledged is lost", async () => {
    await createTopic('wiped-leader', 3);
    const before = await partition('wiped-leader');
    const acked: string[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await c.call('POST', c.v3('/topics/wiped-leader/records'), { value: { type: 'STRING', data: `w${i}` } });
      expect(r.status).toBe(200);
      acked.push(`w${i}`);
    }
    // Back at once (well within the session timeout): only its lost incarnation gives it away.
    expect((await c.call('POST', `/local/processes/broker-${before.leader_id}/restart?wipe=true`)).body.state).toBe('running');
    const after = await c.until('a new leader', async () => {
      const p = await partition('wiped-leader');
      return p.leader_id !== before.leader_id && p.leader_id !== null ? p : undefined;
    }, 20_000);
    expect(after.leader_epoch).toBeGreaterThan(before.leader_epoch);
    // The new leader's high watermark catches up once its in-sync follower is counted again.
    const read = await c.until('every acknowledged record readable', async () => {
      const r = await c.call('GET', c.v3('/topics/wiped-leader/partitions/0/records?offset=0&format=string'));
      return r.body.records?.length >= acked.length ? r : undefined;
    }, 15_000);
    expect(read.body.records.map((r: any) => r.value.data)).toEqual(acked);
    // The wiped broker gets a full sync and rejoins.
    await c.until('the wiped broker back in the ISR', async () => (await partition('wiped-leader')).isr.includes(before.leader_id), 30_000);
  });

  it('with two of three brokers dead and min.insync.replicas=2, acks=all fails cleanly with NOT_ENOUGH_REPLICAS and committed data is still read from the survivor', async () => {
    await createTopic('two-dead', 3, [{ name: 'min.insync.replicas', value: '2' }]);
    for (let i = 0; i < 5; i++) expect((await c.call('POST', c.v3('/topics/two-dead/records'), { value: { type: 'STRING', data: `c${i}` } })).status).toBe(200);
    const p = await partition('two-dead');
    const survivor = p.leader_id as number;
    const dead = (p.replica_states as any[]).map((r) => r.broker_id as number).filter((b) => b !== survivor);
    for (const b of dead) await c.call('POST', `/local/processes/broker-${b}/kill`);
    await c.until('the ISR to shrink to the survivor', async () => {
      const now = await partition('two-dead');
      return now.isr.length === 1 && now.leader_id === survivor;
    }, 20_000);
    const refused = await c.call('POST', c.v3('/topics/two-dead/records'), { value: { type: 'STRING', data: 'x' } });
    expect(refused.status).toBe(503);
    expect(refused.body.message).toMatch(/^NOT_ENOUGH_REPLICAS/);
    const read = await c.call('GET', c.v3('/topics/two-dead/partitions/0/records?offset=0&format=string'));
    expect(read.body.records.map((r: any) => r.value.data)).toEqual(['c0', 'c1', 'c2', 'c3', 'c4']);
  });

  it('with unclean election off, a partition whose whole ISR is gone stays offline; allowing it brings a live out-of-sync replica in', async () => {
    await createTopic('unclean', 2);
    const p = await partition('unclean');
    const [first, second] = [p.leader_id as number, (p.replica_states as any[]).find((r) => !r.is_leader).broker_id as number];
    await c.call('POST', `/local/processes/broker-${second}/kill`);
    await c.until('the follower out of the ISR', async () => !(await partition('unclean')).isr.includes(second), 20_000);
    expect((await c.call('POST', c.v3('/topics/unclean/records'), { value: { type: 'STRING', data: 'only-on-leader' } })).status).toBe(200);
    await c.call('POST', `/local/processes/broker-${first}/kill`);
    await c.call('POST', `/local/processes/broker-${second}/restart`);
    await c.until('the partition offline', async () => (await partition('unclean')).leader_id === null, 20_000);
    // The controller has seen the out-of-sync replica alive and walked the partition since: it could have elected it, and did not.
    await c.until('the out-of-sync replica seen alive', async () => (await c.call('GET', c.v3('/brokers'))).body.data.find((b: any) => b.broker_id === second)?.state === 'alive', 20_000);
    await ticks(2);
    expect((await partition('unclean')).leader_id).toBeNull();
    const offline = await c.call('POST', c.v3('/topics/unclean/records?acks=1'), { value: { type: 'STRING', data: 'x' } });
    expect(offline.status).toBe(503);
    expect(offline.body.message).toMatch(/^LEADER_NOT_AVAILABLE/);
    // Allowing unclean election: the live replica leads, without the record only the old leader had.
    expect((await c.call('PUT', c.v3('/topics/unclean/configs/unclean.leader.election.enable'), { value: 'true' })).status).toBe(204);
    await c.until('an unclean leader', async () => (await partition('unclean')).leader_id === second, 20_000);
    const read = await c.call('GET', c.v3('/topics/unclean/partitions/0/records?offset=0&format=string'));
    expect(read.body.records.map((r: any) => r.value.data)).toEqual([]);
  });
});
