/**
 * Replication converges with no new writes, end to end on a fault cluster (one DynamoDB Local per
 * broker, two controller processes). A topic with 1 partition, RF 3, min.insync.replicas=2 takes 50 acks=all writes; one follower's store is SIGKILLed; 50 acks=1
 * writes follow; then nothing is written. Whether the store comes back with its data or stays
 * down, the high watermark must reach the leader's log end (every acknowledged record readable)
 * with no further writes — through the controller's sweep, which re-drives lagging partitions and
 * judges replica.lag.time.max.ms by the clock. The time to converge is measured and printed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readHead } from '../../../lib/storage/replica/head.js';
import { readValues } from '../../support/api.js';
import { startFaultCluster, type Acked, type FaultCluster } from '../../support/cluster.js';

// The session timeout is long on purpose: fencing (and the controller's catch-up after unfencing)
// must not do the sweep's job here, so the follower stays in the ISR while down.
const LAG_TIME_MAX_MS = 12_000;
const SESSION_TIMEOUT_MS = 60_000;
/** Writes before the kill, and as many after it. */
const WRITES = 50;
let c: FaultCluster;

beforeAll(async () => {
  c = await startFaultCluster({
    controllers: 2,
    env: {
      TRIBUTARY_CONTROLLER_TICK_MS: '500', TRIBUTARY_BROKER_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS), TRIBUTARY_BROKER_PROBE_TIMEOUT_MS: '1500',
      TRIBUTARY_REPLICA_LAG_TIME_MAX_MS: String(LAG_TIME_MAX_MS), TRIBUTARY_REQUEST_TIMEOUT_MS: '15000', TRIBUTARY_STORE_TIMEOUT_MS: '5000',
    },
  });
}, 240_000);

afterAll(async () => {
  await c?.stop();
});

const v3 = (p: string) => c.v3(p);
const partition = async (topic: string) => (await c.call('GET', v3(`/topics/${topic}/partitions/0`))).body;

/** One writer, one record a request: convergence, not contention, is what this file measures. */
async function write(topic: string, acks: 'all' | '1', count: number, tag: string): Promise<Acked[]> {
  const acked: Acked[] = [];
  for (let i = 0; i < count; i++) {
    const value = `${tag}-${i}`;
    const r = await c.call('POST', v3(`/topics/${topic}/records?acks=${acks}`), { partition_id: 0, value: { type: 'STRING', data: value } });
    expect(r.status, `${acks} write ${value}: ${JSON.stringify(r.body)}`).toBe(200);
    acked.push({ partition: 0, offset: r.body.offset, value });
  }
  return acked;
}

/** The scenario up to the last write; returns the topic's leader, the killed follower and every acknowledged record. */
async function scenario(topic: string) {
  const created = await c.call('POST', v3('/topics'), {
    topic_name: topic, partitions_count: 1, replication_factor: 3, configs: [{ name: 'min.insync.replicas', value: '2' }],
  });
  expect(created.status).toBe(201);
  const tp = `${created.body.topic_id}#0`;
  const p = await partition(topic);
  const leader = p.leader_id as number;
  const follower = p.replica_states.find((r: any) => !r.is_leader).broker_id as number;
  const t0 = Date.now();
  const acked = await write(topic, 'all', WRITES, 'all');
  expect((await c.call('POST', `/local/processes/broker-${follower}/kill`)).body.state).toBe('killed');
  const killedAt = Date.now();
  acked.push(...(await write(topic, '1', WRITES, 'one')));
  const lastWriteAt = Date.now();
  process.stdout.write(`${topic}: ${WRITES} acks=all writes in ${killedAt - t0} ms, ${WRITES} acks=1 writes in ${lastWriteAt - killedAt} ms\n`);
  return { tp, leader, follower, acked, killedAt, lastWriteAt };
}

/** Polls (no writes) until the leader's high watermark is its log end offset and, if asked, the follower holds the whole log. */
async function converged(tp: string, leader: number, follower: number | undefined, ms: number) {
  return c.until('the high watermark to reach the leader\'s log end with no new writes', async () => {
    const l = await readHead(c.store(leader), tp);
    if (!l || l.leo !== 2 * WRITES || l.hw !== l.leo) return false;
    if (follower !== undefined && (await readHead(c.store(follower), tp))?.leo !== l.leo) return false;
    return Date.now();
  }, ms);
}

async function expectReadable(topic: string, acked: readonly Acked[]) {
  const read = await readValues(v3(`/topics/${topic}/partitions/0/records`), { call: c.call });
  for (const a of acked) expect(read.get(a.offset), `acknowledged offset ${a.offset}`).toBe(a.value);
  expect(read.size).toBe(2 * WRITES);
}

describe('Replication liveness with no new writes', () => {
  it('where a follower store is SIGKILLed during acks=1 writes and restarted with its data, it catches up and the high watermark reaches the log end', async () => {
    const topic = 'liveness-restart';
    const s = await scenario(topic);
    const restarting = Date.now();
    expect((await c.call('POST', `/local/processes/broker-${s.follower}/restart`)).body.state).toBe('running');
    const restartedAt = Date.now();
    process.stdout.write(`${topic}: store restarted in ${restartedAt - restarting} ms\n`);
    // A generous bound: the time to converge is measured and printed below, not asserted.
    const at = await converged(s.tp, s.leader, s.follower, 120_000);
    await expectReadable(topic, s.acked);
    process.stdout.write(`liveness (store restarted with its data): converged ${at - restartedAt} ms after the restart (${at - s.lastWriteAt} ms after the last write), no writes meanwhile\n`);
  }, 300_000);

  it('where the follower store stays down, it leaves the ISR by replica.lag.time.max.ms and the high watermark reaches the log end', async () => {
    // the other brokers are up (the first test restarted its follower)
    await c.until('every broker alive', async () => (await c.call('GET', v3('/brokers'))).body.data.every((b: any) => b.state === 'alive'), 60_000);
    const topic = 'liveness-down';
    const s = await scenario(topic);
    const at = await converged(s.tp, s.leader, undefined, 90_000);
    await expectReadable(topic, s.acked);
    expect((await partition(topic)).isr).not.toContain(s.follower);
    process.stdout.write(`liveness (store stays down): high watermark at the log end ${at - s.lastWriteAt} ms after the last write (${at - s.killedAt} ms after the kill; replica.lag.time.max.ms ${LAG_TIME_MAX_MS}), no writes meanwhile\n`);
    expect((await c.call('POST', `/local/processes/broker-${s.follower}/restart`)).body.state).toBe('running');
  }, 300_000);
});
