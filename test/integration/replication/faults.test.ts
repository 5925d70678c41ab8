/**
 * Replication under real faults (issue 3): a private stack with one DynamoDB Local process per
 * broker. A follower's store is SIGKILLed and restarted with its data (incremental sync), or
 * restarted empty (full sync via snapshot), while producers keep writing; afterwards every replica
 * holds the same batches, byte for byte, at the same offsets, and every acknowledged record is there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listKeys } from '../../../lib/storage/objects.js';
import { readHead } from '../../../lib/storage/replica.js';
import { logFingerprint, replicaLog, startFaultCluster, startProducers, type Acked, type FaultCluster } from '../../support/cluster.js';

let c: FaultCluster;

beforeAll(async () => {
  c = await startFaultCluster({ env: { TRIBUTARY_REPLICA_LAG_TIME_MAX_MS: '1500' } });
}, 120_000);

afterAll(async () => {
  await c?.stop();
});

async function topicWithFollower(name: string) {
  const created = await c.call('POST', c.v3('/topics'), { topic_name: name, partitions_count: 1, replication_factor: 3 });
  expect(created.status).toBe(201);
  const p = (await c.call('GET', c.v3(`/topics/${name}/partitions/0`))).body;
  return { tp: `${created.body.topic_id}#0`, leader: p.leader_id as number, follower: p.replicas.find((r: any) => !r.is_leader).broker_id as number };
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
  const read: Map<number, string> = new Map();
  for (let offset = 0; ;) {
    const r = await c.call('GET', c.v3(`/topics/${name}/partitions/0/records?offset=${offset}&format=string&max_bytes=4000000`));
    for (const rec of r.body.records) read.set(rec.offset, rec.value.data);
    if (r.body.next_offset >= r.body.high_watermark) break;
    offset = r.body.next_offset;
  }
  for (const a of acked) expect(read.get(a.offset), `acknowledged offset ${a.offset}`).toBe(a.value);
  expect(new Set(read.values()).size).toBe(read.size);
}

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
      return r.isr.includes(follower) && r.replicas.find((x: any) => x.broker_id === follower)?.state === 'in-sync';
    }, 30_000);
    await producers.stop();
    await expectConverged(name, tp, producers.acked);
  });

  it('with many concurrent acks=all producers on one partition, offsets are unique and gap-free and every acknowledged record is readable exactly once', async () => {
    const name = 'concurrent';
    const { tp } = await topicWithFollower(name);
    const producers = startProducers(c, name, { count: 16, acks: 'all' });
    await c.until('400 writes', async () => producers.acked.length >= 400, 60_000);
    await producers.stop();
    const offsets = producers.acked.map((a) => a.offset).sort((a, b) => a - b);
    expect(new Set(offsets).size).toBe(offsets.length);
    expect(producers.failed).toBe(0);
    expect(offsets).toEqual(offsets.map((_, i) => i));
    await expectConverged(name, tp, producers.acked);
  });
});
