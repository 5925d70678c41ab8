/**
 * The cluster changing shape under load, end to end over HTTP, on a stack with isolated broker
 * stores, controller loops and the HTTP functions in Lambda-fidelity mode: idempotent acks=all
 * producers on every partition and a consumer group of two SDK consumers run throughout while a broker is added
 * (3 → 4), another removed, and the topic grown. No acknowledged record may be lost or
 * duplicated, the group may see no gap or rewind (across handovers too), and the partitions must end balanced.
 * Produce latency before and during the move is reported (measured, not asserted).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tributary } from '../../../client/index.js';
import { startFaultCluster, type FaultCluster } from '../../support/cluster.js';

let c: FaultCluster;
beforeAll(async () => {
  c = await startFaultCluster({ brokers: 3, isolatedBrokers: true, controllers: 2, env: { TRIBUTARY_STORE_TIMEOUT_MS: '30000', TRIBUTARY_CONTROLLER_TICK_MS: '500' } });
}, 180_000);
afterAll(async () => {
  await c?.stop();
});

const TOPIC = 'live';

interface Sent { readonly partition: number; readonly seq: number; readonly value: string; readonly offset: number; readonly ms: number; readonly at: number }

/** One idempotent producer per partition: a record is retried with its sequence until acknowledged, so it is written exactly once. */
function startProducers(partitions: () => number) {
  let running = true;
  const sent: Sent[] = [];
  let failures = 0;
  const errors: string[] = [];
  const loops: Promise<void>[] = [];
  const started = new Set<number>();
  const loop = async (p: number) => {
    const init = await c.call('POST', c.v3('/producers'), {});
    const { producer_id: id, producer_epoch: epoch } = init.body as { producer_id: number; producer_epoch: number };
    for (let seq = 0; running; ) {
      const value = `p${p}-${seq}`;
      const t0 = Date.now();
      const r = await c.call('POST', c.v3(`/topics/${TOPIC}/records?acks=all&producer_id=${id}&producer_epoch=${epoch}`), { partition_id: p, value: { type: 'STRING', data: value }, sequence: seq }).catch(() => ({ status: 0, body: undefined }));
      if (r.status === 200) {
        sent.push({ partition: p, seq, value, offset: r.body.offset, ms: Date.now() - t0, at: t0 });
        seq++;
      } else {
        failures++;
        errors.push(`${r.status} ${JSON.stringify(r.body)?.slice(0, 200)}`);
        await new Promise((res) => setTimeout(res, 50));
      }
    }
  };
  const ensure = () => {
    for (let p = 0; p < partitions(); p++) if (!started.has(p)) {
      started.add(p);
      loops.push(loop(p));
    }
  };
  ensure();
  return { sent, errors, ensure, get failures() { return failures; }, async stop() { running = false; await Promise.all(loops); } };
}

/**
 * A consumer group of two SDK consumers (the native group protocol, from the beginning, offsets
 * committed as they go and before a partition is handed over): every record a member is handed
 * must be the partition's next offset — across members, so a handover that re-delivered or
 * skipped records shows as a rewind or a gap.
 */
async function startGroup(url: string) {
  const seen = new Map<number, { offset: number; value: string; member: number }[]>();
  const anomalies: string[] = [];
  const crashes: string[] = [];
  const members = [0, 1].map((m) => {
    const consumer = new Tributary({ url }).consumer({ groupId: 'live-group', maxWaitTimeInMs: 500 });
    consumer.on('consumer.crash', (e) => crashes.push(`member ${m}: ${String((e as { payload: { error: unknown } }).payload.error)}`));
    return { m, consumer };
  });
  for (const { m, consumer } of members) {
    await consumer.subscribe({ topics: [TOPIC], fromBeginning: true });
    await consumer.run({
      autoCommitInterval: 500,
      eachMessage: async ({ partition, message }) => {
        const mine = seen.get(partition) ?? [];
        seen.set(partition, mine);
        const offset = Number(message.offset);
        const next = (mine.at(-1)?.offset ?? -1) + 1;
        if (offset !== next) anomalies.push(`p${partition}: member ${m} was handed offset ${offset}, the next is ${next} (${offset > next ? 'gap' : 'rewind'})`);
        mine.push({ offset, value: new TextDecoder().decode(message.value ?? new Uint8Array()), member: m });
      },
    });
  }
  return {
    seen, anomalies, crashes,
    members: () => new Set([...seen.values()].flat().map((r) => r.member)).size,
    async stop() { await Promise.all(members.map(({ consumer }) => consumer.disconnect())); },
  };
}

const p99 = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * 0.99))] ?? 0;
};

async function replicaCounts(): Promise<Record<number, number>> {
  const r = await c.call('GET', c.v3('/brokers'));
  return Object.fromEntries((r.body.data as { broker_id: number; replica_count: number }[]).map((b) => [b.broker_id, b.replica_count]));
}

const balancerIdle = async () => {
  const b = await c.call('GET', c.v3('/balancer'));
  const moving = await c.call('GET', c.v3('/topics/-/partitions/-/reassignment'));
  return b.body?.status === 'IDLE' && moving.body?.data?.length === 0;
};

/** What a stalled catch-up needs explained: per partition what was acknowledged, read and committed, and who owns it. */
async function groupState(last: Map<number, number>, group: Awaited<ReturnType<typeof startGroup>>): Promise<string> {
  const g = `/consumer-groups/live-group`;
  const lags = (await c.call('GET', c.v3(`${g}/lags`))).body?.data as { partition_id: number; current_offset: number; log_end_offset: number; consumer_id: string }[] | undefined;
  const members = (await c.call('GET', c.v3(`${g}/consumers`))).body?.data as { consumer_id: string }[] | undefined;
  const owners: string[] = [];
  for (const m of members ?? []) {
    const a = (await c.call('GET', c.v3(`${g}/consumers/${m.consumer_id}/assignments`))).body?.data as { partition_id: number }[] | undefined;
    owners.push(`${m.consumer_id.slice(0, 8)}:[${(a ?? []).map((x) => x.partition_id).join(',')}]`);
  }
  const parts = [...last].map(([p, o]) => {
    const lag = lags?.find((l) => l.partition_id === p);
    const seen = group.seen.get(p)?.at(-1);
    return `p${p} acked ${o} read ${seen?.offset ?? -1} (member ${seen?.member ?? '-'}) committed ${lag?.current_offset ?? '-'} end ${lag?.log_end_offset ?? '-'}`;
  });
  return `${parts.join('; ')}; owners ${owners.join(' ')}; crashes ${group.crashes.slice(-3).join(' | ')}`;
}

describe('Rebalancing under load', () => {
  it('3 → 4 brokers, then one removed, then the topic grown: nothing lost or duplicated, no gap or rewind, balanced', async () => {
    let partitions = 4;
    expect((await c.call('POST', c.v3('/topics'), { topic_name: TOPIC, partitions_count: partitions, replication_factor: 3 })).status).toBe(201);
    const producers = startProducers(() => partitions);
    const group = await startGroup(c.url);
    await c.until(`records flowing on every partition (${producers.failures} failures: ${producers.errors.slice(-3).join('; ')})`, async () => new Set(producers.sent.map((s) => s.partition)).size === partitions, 60_000);
    // Steady load before the move: its latencies are the baseline (warm instances only).
    const steadyFrom = Date.now();
    await new Promise((r) => setTimeout(r, 5000));

    // 3 → 4 brokers: the new broker's store starts, and the balancer moves its share to it.
    const moveStart = Date.now();
    const before = producers.sent.filter((s) => s.at >= steadyFrom && s.at < moveStart).map((s) => s.ms);
    const added = await c.call('POST', c.v3('/brokers'), {});
    expect(added.status).toBe(201);
    expect(added.body.broker_id).toBe(4);
    expect(((await c.call('GET', '/local/processes')).body.processes as { name: string }[]).map((x) => x.name)).toContain('broker-4');
    await c.until('the balancer to move replicas to broker 4', async () => (await replicaCounts())[4] === 3 && (await balancerIdle()), 120_000);
    const moveMs = Date.now() - moveStart;
    const during = producers.sent.filter((s) => s.at >= moveStart && s.at <= moveStart + moveMs).map((s) => s.ms);
    expect(await replicaCounts()).toEqual({ 1: 3, 2: 3, 3: 3, 4: 3 });

    // One removed (not the last id): drained, then gone.
    expect((await c.call('DELETE', c.v3('/brokers/2'))).status).toBe(202);
    await c.until('broker 2 drained and removed', async () => (await c.call('GET', c.v3('/brokers/2'))).status === 404 && (await balancerIdle()), 120_000)
      .catch(async (err: unknown) => {
        const parts = (await c.call('GET', c.v3(`/topics/${TOPIC}/partitions`))).body.data.map((p: { partition_id: number; leader_id: number; isr: number[]; replica_states: { broker_id: number }[] }) => `${p.partition_id}:${p.leader_id}:${p.replica_states.map((r) => r.broker_id)}/${p.isr}`);
        throw new Error(`${(err as Error).message}; brokers ${JSON.stringify(await replicaCounts())}, balancer ${JSON.stringify((await c.call('GET', c.v3('/balancer'))).body)}, moving ${JSON.stringify((await c.call('GET', c.v3('/topics/-/partitions/-/reassignment'))).body.data)}, partitions ${parts.join(' ')}`);
      });
    expect(await replicaCounts()).toEqual({ 1: 4, 3: 4, 4: 4 });

    // The live topic grows: the producers and the group take the new partitions on.
    const grown = await c.call('PATCH', c.v3(`/topics/${TOPIC}`), { partitions_count: 6 });
    expect(grown.status).toBe(200);
    partitions = 6;
    producers.ensure();
    await c.until('records on the new partitions', async () => new Set(producers.sent.map((s) => s.partition)).size === 6, 60_000);
    await c.until('the balancer at rest', balancerIdle, 60_000);

    await producers.stop();
    // The group catches up with everything acknowledged, on every partition, the new ones too.
    const last = new Map<number, number>();
    for (const s of producers.sent) last.set(s.partition, Math.max(last.get(s.partition) ?? -1, s.offset));
    await c.until('the group caught up', async () => [...last].every(([p, o]) => (group.seen.get(p)?.at(-1)?.offset ?? -1) >= o), 60_000)
      .catch(async (err: unknown) => { throw new Error(`${(err as Error).message}; ${await groupState(last, group)}`); });
    await group.stop();

    expect(group.crashes).toEqual([]);
    expect(group.anomalies).toEqual([]);
    expect(group.members(), 'both members consumed').toBe(2);
    expect([...group.seen.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5]);
    for (const [p, records] of group.seen) {
      const values = records.map((r) => r.value);
      expect(new Set(values).size, `p${p}: a value read twice`).toBe(values.length);
      const acked = producers.sent.filter((s) => s.partition === p);
      for (const s of acked) expect(records[s.offset]?.value, `p${p} offset ${s.offset}`).toBe(s.value);
      // Exactly once: every sequence of the partition's producer in order, none twice.
      expect(values, `p${p}`).toEqual(acked.map((s) => s.value));
    }
    const counts = Object.values(await replicaCounts());
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    console.log(`rebalance under load: ${producers.sent.length} records acknowledged (${producers.failures} retries); 3 → 4 brokers moved in ${moveMs} ms; produce p99 ${p99(before)} ms before the move (n=${before.length}), ${p99(during)} ms during it (n=${during.length})`);
  }, 600_000);
});
