/**
 * Brokers joining and leaving, and the self-balancer, on a private quiet stack: the controller is
 * ticked and the replication sweep run by hand until the balancer is idle, so each test checks
 * where every replica ended, how many moved (against the fewest possible), and that no
 * acknowledged record was lost on the way.
 */
import { describe, expect, it } from 'vitest';
import { balanceCluster } from '../../support/balance.js';
import { movesLowerBound } from '../../../lib/cluster/balance-plan.js';
import { addBroker, removeBroker } from '../../../lib/cluster/brokers.js';
import { Controller } from '../../../lib/cluster/controller.js';
import { createTopic, listTopics } from '../../../lib/cluster/topics.js';
import { produce } from '../../../lib/log/produce.js';
import { ReplicationSweep } from '../../../lib/orchestration/sweep.js';
import { listBrokers } from '../../../lib/storage/coordination/brokers.js';
import { markLagging } from '../../../lib/storage/coordination/lag-index.js';
import { readBalancerStatus, writeBalancerStatus } from '../../../lib/storage/coordination/balancer.js';
import { topicPartitionKey } from '../../../lib/storage/model.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { acquireLease } from '../../../lib/storage/coordination/lease.js';
import { emptyStore } from '../../../lib/storage/replica/deletion.js';
import { createHeads, readHead } from '../../../lib/storage/replica/head.js';
import { probeStore, writeIncarnation } from '../../../lib/storage/replica/incarnation.js';
import { useQuietCluster } from '../../support/cluster.js';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo } from '../../../lib/storage/clients.js';
import { INCARNATION_KEY } from '../../../lib/storage/tables.js';

const cluster = useQuietCluster({ brokers: 3 });

let t = Date.now() + 60 * 60_000;
const ctl = new Controller({ id: 'balancer-test', tickMs: 1000, leaseMs: 3000, sessionTimeoutMs: 600_000, probeTimeoutMs: 15_000, clock: () => t, catchUp: async (topic, topicId, partition) => { await markLagging(topic, topicId, partition); } });
const sweep = new ReplicationSweep({ lagTimeMaxMs: 60_000 });
const step = async () => {
  await sweep.sweep();
  t += 1500;
  return ctl.tick(t);
};

/** Replicas and preferred leaders per broker, over every topic. */
async function counts() {
  const replicas = new Map<number, number>();
  const leaders = new Map<number, number>();
  for (const { partitions } of await listTopics()) {
    for (const p of partitions) {
      for (const r of p.replicas) replicas.set(r, (replicas.get(r) ?? 0) + 1);
      leaders.set(p.leader, (leaders.get(p.leader) ?? 0) + 1);
    }
  }
  return { replicas: Object.fromEntries([...replicas].sort(([a], [b]) => a - b)), leaders: Object.fromEntries([...leaders].sort(([a], [b]) => a - b)) };
}

describe('Brokers joining and leaving, balanced by the controller', () => {
  const values: string[] = [];
  let topicId = '';

  it('a new broker gets its share: 3 → 4 brokers with 12 partitions of RF 3 moves 9 replicas, the fewest possible', async () => {
    const { topic } = await createTopic({ name: 'balance', partitions: 12, replicationFactor: 3 });
    topicId = topic.topicId;
    for (let p = 0; p < 12; p++) values.push(`v${p}`);
    const acked = await produce('balance', values.map((v, p) => ({ partition: p, key: null, headers: [], value: Buffer.from(v) })), { acks: 'all' });
    expect(acked.every((a) => a.ok)).toBe(true);
    await step(); // the controller takes the lease and walks: balanced as placed

    const { broker, created } = await addBroker({});
    expect(created).toBe(true);
    expect(broker).toMatchObject({ brokerId: 4, state: 'alive' });
    const parts = (await listTopics()).flatMap((d) => d.partitions.map((p) => ({ topic: d.topic.name, partition: p.partition, replicas: p.replicas, bytes: 0 })));
    const brokers = (await listBrokers()).map((b) => ({ brokerId: b.brokerId, rack: b.rack, state: 'alive' as const }));
    expect(movesLowerBound(brokers, parts)).toBe(9);

    const moved = await balanceCluster(step);
    expect(moved).toBe(9);
    expect((await counts()).replicas).toEqual({ 1: 9, 2: 9, 3: 9, 4: 9 });
    expect(await readBalancerStatus()).toMatchObject({ status: 'IDLE', movesDone: 9, movesTotal: 9 });
  });

  it('a removed broker is drained, emptied and deregistered; every acknowledged record is still there', async () => {
    const removing = await removeBroker(2);
    expect(removing.decommissioning).toBe(true);
    const held = (await counts()).replicas[2] ?? 0;
    const moved = await balanceCluster(step);
    expect(moved).toBe(held);
    expect((await listBrokers()).map((b) => b.brokerId)).toEqual([1, 3, 4]);
    expect((await counts()).replicas).toEqual({ 1: 12, 3: 12, 4: 12 });
    const store2 = cluster().store(2);
    for (let p = 0; p < 12; p++) expect(await readHead(store2, topicPartitionKey(topicId, p))).toBeUndefined();
    // Every acknowledged record, on every replica.
    for (const d of await listTopics()) {
      for (const p of d.partitions) {
        for (const r of p.replicas) {
          const store = (await listBrokers()).find((b) => b.brokerId === r)!;
          const batches = await queryBatches(store, topicPartitionKey(topicId, p.partition), { fromOffset: 0, toOffset: 1e9, maxBytes: 1e9 });
          expect(batches.map((b) => b.baseOffset), `p${p.partition} on ${r}`).toEqual([0]);
        }
      }
    }
  });

  it('refuses to remove a broker when the rest could not hold every partition\'s replicas, and changes nothing', async () => {
    await expect(removeBroker(1)).rejects.toMatchObject({ kafkaName: 'INVALID_REPLICATION_FACTOR' });
    expect((await listBrokers()).every((b) => !b.decommissioning)).toBe(true);
  });

  it('over HTTP: POST registers a broker (201, v3 broker shape), the balancer reports, DELETE answers 202 and the broker goes', async () => {
    const c = cluster();
    const added = await c.call('POST', c.v3('/brokers'), { broker_id: 7, rack: null });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ kind: 'KafkaBroker', broker_id: 7, state: 'alive', rack: null });
    expect((await c.call('POST', c.v3('/brokers'), { broker_id: 7 })).status).toBe(200);
    expect((await c.call('POST', c.v3('/brokers'), { broker_id: -1 })).status).toBe(422);
    await balanceCluster(step);
    const status = await c.call('GET', c.v3('/balancer'));
    expect(status.body).toMatchObject({ kind: 'KafkaBalancer', status: 'IDLE' });
    expect(status.body.moves_total).toBeGreaterThan(0);
    const removed = await c.call('DELETE', c.v3('/brokers/7'));
    expect(removed.status).toBe(202);
    expect(removed.body).toMatchObject({ broker_id: 7, state: 'decommissioning' });
    await balanceCluster(step);
    expect((await c.call('GET', c.v3('/brokers/7'))).status).toBe(404);
    expect((await c.call('DELETE', c.v3('/brokers/7'))).status).toBe(404);
  });

  it('accepts a removal while moves are in flight: a partition being moved counts its target replicas, not old and new together', async () => {
    await addBroker({ brokerId: 8 });
    for (let i = 0; i < 5 && (await listTopics()).every((d) => d.partitions.every((p) => p.replicas.length === 3)); i++) await step();
    expect((await listTopics()).some((d) => d.partitions.some((p) => p.replicas.length === 4))).toBe(true);
    await expect(removeBroker(8)).resolves.toMatchObject({ brokerId: 8, decommissioning: true });
    await balanceCluster(step);
    expect((await listBrokers()).map((b) => b.brokerId)).toEqual([1, 3, 4]);
    expect((await counts()).replicas).toEqual({ 1: 12, 3: 12, 4: 12 });
  });

  describe('races of the controller', () => {
    // A second controller with a hook between its read of the brokers and its walk: its clock runs
    // past the first one's lease, so its first tick takes the lease over.
    let removeDuringTick: (() => Promise<void>) | undefined;
    const racer = new Controller({
      id: 'balancer-racer', tickMs: 1000, leaseMs: 3000, sessionTimeoutMs: 600_000, probeTimeoutMs: 15_000, clock: () => t,
      catchUp: async (topic, id, partition) => { await markLagging(topic, id, partition); },
      hooks: { afterBrokersRead: async () => { const f = removeDuringTick; removeDuringTick = undefined; await f?.(); } },
    });
    const racerStep = async () => {
      await sweep.sweep();
      t += 1500;
      return racer.tick(t);
    };

    it('a removal that lands after a tick read the brokers is drained from the next tick on (the walk does not take the change as seen)', async () => {
      await addBroker({ brokerId: 9 });
      await balanceCluster(step);
      expect((await counts()).replicas[9]).toBeGreaterThan(0);
      t += 10_000; // the first controller's lease has run out
      removeDuringTick = async () => { await removeBroker(9); };
      expect((await racerStep()).role).toBe('controller');
      expect(removeDuringTick).toBeUndefined();
      // The walk of that tick planned with the brokers it had read (9 not leaving); the next one sees the removal.
      await racerStep();
      expect((await listTopics()).some((d) => d.partitions.some((p) => p.removingReplicas?.includes(9))), 'broker 9 being drained').toBe(true);
      await balanceCluster(racerStep);
      expect((await listBrokers()).map((b) => b.brokerId)).toEqual([1, 3, 4]);
    });

    it('a controller that regains the lease reads the balancer status afresh: a MOVING status another controller left is brought to IDLE', async () => {
      expect((await readBalancerStatus()).status).toBe('IDLE'); // as the racer last wrote it
      t += 10_000;
      expect((await ctl.tick(t)).role).toBe('controller');
      // While the racer was away, the other controller began a plan (and lost the lease before it ended).
      await writeBalancerStatus(ctl.held!, { status: 'MOVING', movesDone: 0, movesTotal: 1, lastPlanAt: t });
      t += 10_000;
      expect((await racer.tick(t)).role).toBe('controller');
      expect(await readBalancerStatus()).toMatchObject({ status: 'IDLE', movesDone: 1, movesTotal: 1 });
    });
  });

  it('a deposed controller that wakes to empty a removed broker\'s table deletes nothing once its successor claimed the store', async () => {
    // Broker 2's table, removed above, as a table a broker was given again: an incarnation and a partition.
    const store2 = cluster().store(2);
    const tps = ['reused-0', 'reused-1'];
    await createHeads(store2, tps.map((tp) => ({ tp, role: 'follower' as const, leaderEpoch: 0, isr: [] })));
    t += 10_000;
    const deposed = (await acquireLease('deposed', 3000, t))!;
    t += 10_000;
    const successor = (await acquireLease('successor', 3000, t))!;
    expect(await writeIncarnation(store2, { incarnation: 'given-again', controllerEpoch: successor.epoch, replaces: null })).toBe(true);

    expect(await emptyStore(store2, deposed.epoch)).toBeUndefined();
    for (const tp of tps) expect(await readHead(store2, tp)).toBeDefined();
    expect(await probeStore(store2, 5000)).toBe('given-again');

    // The successor's own emptying takes everything, the incarnation item last.
    expect(await emptyStore(store2, successor.epoch)).toBe(tps.length + 1);
    for (const tp of tps) expect(await readHead(store2, tp)).toBeUndefined();
    expect(await probeStore(store2, 5000)).toBeNull();
    t += 10_000; // (the file's controllers take the lease back)
  });

  it('a broker whose store is wiped after it registered, before the controller first probed it, is fenced as a store that lost its data', async () => {
    const { broker } = await addBroker({ brokerId: 7 });
    // Registration stamped the store and recorded what it stamped.
    expect(broker.incarnation).toBeDefined();
    expect(await probeStore(broker, 5000)).toBe(broker.incarnation);
    // Wiped before any tick saw it: the controller must not take the empty store for the one registered.
    await dynamo(broker.endpoint).send(new DeleteCommand({ TableName: broker.replicaTable, Key: INCARNATION_KEY }));
    expect((await step()).fenced).toContain(7);
    expect((await listBrokers()).find((b) => b.brokerId === 7)?.state).toBe('fenced');
  });
});
