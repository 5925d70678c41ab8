/**
 * acks=all waits only for the ISR: a replica outside it — catching up, or with its store paused —
 * is never contacted by an acks=all request, so it can never delay one. A private quiet stack (no
 * background replicator, no controllers). The out-of-ISR follower's store is reached through a
 * TCP relay that can be paused as SIGSTOP pauses a store — connections are accepted and nothing
 * ever comes back — and that counts what clients send, which shows whether anything contacted
 * the store at all. (The relay rather than SIGSTOP on an isolated store: one store per broker
 * means four more JVMs, which did not start within the stack's 60 s on this shared machine.)
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { invalidateMetadata, replicaStore } from '../../../lib/cluster/metadata.js';
import { shrinkIsr } from '../../../lib/cluster/partition-state.js';
import { produce } from '../../../lib/log/produce.js';
import { replicate } from '../../../lib/log/commit.js';
import { replicateChanges } from '../../../lib/log/replicator.js';
import { listBrokers, registerBroker } from '../../../lib/storage/coordination/brokers.js';
import { readPartition } from '../../../lib/storage/coordination/partitions.js';
import { readHead } from '../../../lib/storage/replica/head.js';
import { useQuietCluster } from '../../support/cluster.js';
import { rf3Partition } from '../../support/partition.js';

/** A TCP relay to `port` that counts the bytes clients send through it; paused, it forwards nothing either way. */
async function countingRelay(port: number) {
  const sockets = new Set<net.Socket>();
  const relay = { sent: 0, paused: false, endpoint: '', close: async () => undefined as void };
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    client.on('data', (chunk: Buffer) => {
      relay.sent += chunk.length;
      if (!relay.paused) upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!relay.paused) client.write(chunk);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  relay.endpoint = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  relay.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  };
  return relay;
}

const cluster = useQuietCluster();

describe('acks=all and replicas outside the ISR', () => {
  it('where a follower outside the ISR has its store paused, acks=all produces complete without ever contacting it', async () => {
    const { name, topic, p0, tp } = await rf3Partition('acks-isr');
    const out = p0.replicas.find((b) => b !== p0.leader)!;
    expect((await produce(name, [{ partition: 0, key: null, value: Buffer.from('before'), headers: [] }], { acks: 'all' }))[0]).toMatchObject({ ok: true, offset: 0 });

    // `out` leaves the ISR; from now on every request to its store goes through the relay.
    const shrunk = await shrinkIsr(name, 0, out, p0.leaderEpoch, 'test');
    expect(shrunk).toMatchObject({ shrunk: true });
    expect(shrunk.state.isr).not.toContain(out);
    const record = (await listBrokers()).find((b) => b.brokerId === out)!;
    const relay = await countingRelay(Number(new URL(cluster().store(out).endpoint!).port));
    await registerBroker({ brokerId: out, replicaTable: record.replicaTable, endpoint: relay.endpoint, rack: record.rack });
    invalidateMetadata();
    expect((await replicaStore(out)).endpoint).toBe(relay.endpoint);

    relay.paused = true;
    try {
      const acked = await produce(name, [1, 2, 3].map((i) => ({ partition: 0, key: null, value: Buffer.from(`v${i}`), headers: [] })), { acks: 'all' });
      expect(acked.map((o) => o.ok && o.offset)).toEqual([1, 2, 3]);
      const r = await replicate(name, topic.topicId, 0, { until: 4, leaderEpoch: p0.leaderEpoch, deadline: Date.now() + 10_000, shrinkOnFailure: true, lagTimeMaxMs: 60_000 });
      expect(r.highWatermark).toBe(4);
      expect(r.isr).not.toContain(out);
      expect(relay.sent).toBe(0);
    } finally {
      await relay.close();
    }
    // The leader counts only the ISR now, and the ISR holds every acknowledged record.
    const head = (await readHead(await replicaStore(p0.leader), tp))!;
    expect(head.isr).not.toContain(out);
    expect(head.hw).toBe(4);
    for (const b of (await readPartition(name, 0))!.isr) expect((await readHead(await replicaStore(b), tp))?.leo).toBe(4);

    // The store answers again. acks=all moved the high watermark past every new batch, but the
    // replicator still runs for them (a follower is behind), brings `out` up, and it rejoins the ISR.
    await registerBroker({ brokerId: out, replicaTable: record.replicaTable, endpoint: cluster().store(out).endpoint!, rack: record.rack });
    invalidateMetadata();
    const leaderTable = (await replicaStore(p0.leader)).replicaTable;
    expect(await replicateChanges([{ table: leaderTable, tp, off: 3, position: 'p' }])).toEqual([]);
    expect((await readPartition(name, 0))!.isr).toContain(out);
    expect((await readHead(await replicaStore(out), tp))?.leo).toBe(4);
    expect((await readHead(await replicaStore(p0.leader), tp))?.isr).toContain(out);
  });
});
