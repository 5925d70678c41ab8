/**
 * Failover with real processes (issue 4): one DynamoDB Local per broker, two controller loops in
 * their own processes. The leader's store is SIGKILLed under continuous acks=all produce; a paused
 * controller is replaced and fenced; two of three brokers die; a partition whose ISR is gone stays
 * offline unless unclean election is allowed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLease, setBrokerState, LeaseLost } from '../../../lib/storage/coordination.js';
import { readHead } from '../../../lib/storage/replica.js';
import { logFingerprint, replicaLog, startFaultCluster, startProducers, type FaultCluster } from '../../support/cluster.js';

const SESSION_MS = 3000;
const TICK_MS = 500;
let c: FaultCluster;

beforeAll(async () => {
  c = await startFaultCluster({
    env: {
      TRIBUTARY_BROKER_SESSION_TIMEOUT_MS: String(SESSION_MS), TRIBUTARY_CONTROLLER_TICK_MS: String(TICK_MS),
      TRIBUTARY_REPLICA_LAG_TIME_MAX_MS: '3000', TRIBUTARY_REQUEST_TIMEOUT_MS: '15000', TRIBUTARY_STORE_TIMEOUT_MS: '1500',
    },
  });
}, 120_000);

afterAll(async () => {
  await c?.stop();
});

const partition = async (topic: string) => (await c.call('GET', c.v3(`/topics/${topic}/partitions/0`))).body;
const createTopic = async (name: string, rf: number, configs: { name: string; value: string }[] = []) =>
  expect((await c.call('POST', c.v3('/topics'), { topic_name: name, partitions_count: 1, replication_factor: rf, configs })).status).toBe(201);
const controllerStatus = async (name: string) => (await fetch(c.stack.supervisor.get(name)!.endpoint)).json() as Promise<any>;
const brokersUp = async () => {
  for (const b of [1, 2, 3]) {
    if (c.stack.supervisor.get(`broker-${b}`)?.state !== 'running') await c.call('POST', `/local/processes/broker-${b}/restart`);
  }
  await c.until('every broker alive', async () => (await c.call('GET', c.v3('/brokers'))).body.data.every((b: any) => b.state === 'alive'), 20_000);
};

describe('The controller with real processes', () => {
  it('where two controller loops contend, one holds the lease; paused past expiry, it is replaced and, resumed, can write nothing', async () => {
    const lease = await c.until('a controller', async () => readLease());
    const holder = lease.holder;
    const other = holder === 'controller-1' ? 'controller-2' : 'controller-1';
    expect((await controllerStatus(other)).lease).toBeNull();
    expect((await c.call('GET', c.v3(''))).body.controller).toMatchObject({ controller_id: holder, epoch: lease.epoch });
    const held = (await controllerStatus(holder)).lease;
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

  it('where the leader store is SIGKILLed during acks=all produce, a new leader is elected within the session timeout plus a tick, producers carry on, and nothing acknowledged is lost', async () => {
    await createTopic('failover', 3);
    const before = await partition('failover');
    const producers = startProducers(c, 'failover', { count: 4, acks: 'all' });
    await c.until('some writes', async () => producers.acked.length >= 40);
    const killedAt = Date.now();
    const ackedBefore = producers.acked.length;
    expect((await c.call('POST', `/local/processes/broker-${before.leader_id}/kill`)).body.state).toBe('killed');
    const elected = await c.until('a new leader', async () => {
      const p = await partition('failover');
      return p.leader_id !== before.leader_id && p.leader_id !== null ? { p, at: Date.now() } : undefined;
    }, 20_000);
    await c.until('a produce after the kill', async () => producers.acked.length > ackedBefore + 5, 20_000);
    const firstAfter = Date.now();
    expect(elected.at - killedAt).toBeLessThan(SESSION_MS + TICK_MS + 2500);
    expect(elected.p.leader_epoch).toBe(before.leader_epoch + 1);
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
    const read = new Map<number, string>();
    for (let offset = 0; ;) {
      const r = await c.call('GET', c.v3(`/topics/failover/partitions/0/records?offset=${offset}&format=string&max_bytes=4000000`));
      for (const rec of r.body.records) read.set(rec.offset, rec.value.data);
      if (r.body.next_offset >= r.body.high_watermark) break;
      offset = r.body.next_offset;
    }
    for (const a of producers.acked) expect(read.get(a.offset), `acknowledged offset ${a.offset}`).toBe(a.value);
    process.stdout.write(`failover: elected ${elected.at - killedAt} ms after the kill; producing again ${firstAfter - killedAt} ms after; ${producers.acked.length} acked, ${producers.failed} failed ${JSON.stringify(producers.errors)}\n`);
  });

  it('with two of three brokers dead and min.insync.replicas=2, acks=all fails cleanly with NOT_ENOUGH_REPLICAS and committed data is still read from the survivor', async () => {
    await brokersUp();
    await createTopic('two-dead', 3, [{ name: 'min.insync.replicas', value: '2' }]);
    for (let i = 0; i < 5; i++) expect((await c.call('POST', c.v3('/topics/two-dead/records'), { value: { type: 'STRING', data: `c${i}` } })).status).toBe(200);
    const p = await partition('two-dead');
    const survivor = p.leader_id as number;
    const dead = (p.replicas as any[]).map((r) => r.broker_id as number).filter((b) => b !== survivor);
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
    await brokersUp();
  });

  it('with unclean election off, a partition whose whole ISR is gone stays offline; allowing it brings a live out-of-sync replica in', async () => {
    await brokersUp();
    await createTopic('unclean', 2);
    const p = await partition('unclean');
    const [first, second] = [p.leader_id as number, (p.replicas as any[]).find((r) => !r.is_leader).broker_id as number];
    await c.call('POST', `/local/processes/broker-${second}/kill`);
    await c.until('the follower out of the ISR', async () => !(await partition('unclean')).isr.includes(second), 20_000);
    expect((await c.call('POST', c.v3('/topics/unclean/records'), { value: { type: 'STRING', data: 'only-on-leader' } })).status).toBe(200);
    await c.call('POST', `/local/processes/broker-${first}/kill`);
    await c.call('POST', `/local/processes/broker-${second}/restart`);
    await c.until('the partition offline', async () => (await partition('unclean')).leader_id === null, 20_000);
    await new Promise((r) => setTimeout(r, SESSION_MS));
    expect((await partition('unclean')).leader_id).toBeNull();
    const offline = await c.call('POST', c.v3('/topics/unclean/records?acks=1'), { value: { type: 'STRING', data: 'x' } });
    expect(offline.status).toBe(503);
    expect(offline.body.message).toMatch(/^LEADER_NOT_AVAILABLE/);
    // Allowing unclean election: the live replica leads, without the record only the old leader had.
    expect((await c.call('PUT', c.v3('/topics/unclean/configs/unclean.leader.election.enable'), { value: 'true' })).status).toBe(204);
    await c.until('an unclean leader', async () => (await partition('unclean')).leader_id === second, 20_000);
    const read = await c.call('GET', c.v3('/topics/unclean/partitions/0/records?offset=0&format=string'));
    expect(read.body.records.map((r: any) => r.value.data)).toEqual([]);
    await brokersUp();
  });
});
