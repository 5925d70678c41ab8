/**
 * The replica head's unstable transactions (what the last stable offset is read from) on every replica, on a quiet private stack whose steps this test drives: appended on
 * the leader and copied to followers alike, closed by a marker everywhere, brought back by a
 * follower's truncation that cuts a marker its leader never had, and installed by a full sync.
 */
import { describe, expect, it } from 'vitest';
import { initProducer } from '../../../lib/cluster/producers.js';
import { appendToLeader } from '../../../lib/log/append.js';
import { prepareMarker } from '../../../lib/log/batches.js';
import { copyStep } from '../../../lib/log/copy.js';
import { fullSync } from '../../../lib/log/full-sync.js';
import { appendMarker, produce } from '../../../lib/log/produce.js';
import { lastStableOffset } from '../../../lib/storage/model.js';
import { readHead, setRole } from '../../../lib/storage/replica/head.js';
import { listProducerStates } from '../../../lib/storage/replica/producer-states.js';
import { fetchRecords, readFromLeader } from '../../../lib/log/read.js';
import { useQuietCluster } from '../../support/cluster.js';
import { electLeader, rf3Partition } from '../../support/partition.js';

useQuietCluster();

async function transactional(prefix: string) {
  const p = await rf3Partition(prefix);
  const { producerId, producerEpoch } = await initProducer();
  /** Transactional records, acks=all, with sequences from `sequence`. */
  const send = async (values: string[], sequence: number) => {
    const records = values.map((v, i) => ({ partition: 0, sequence: sequence + i, key: null, value: Buffer.from(v), headers: [] }));
    const out = await produce(p.name, records, { producer: { producerId, producerEpoch, transactional: true }, acks: 'all' });
    expect(out.every((o) => o.ok), JSON.stringify(out)).toBe(true);
  };
  const heads = async () => Promise.all(p.p0.replicas.map(async (b) => (await readHead(p.store(b), p.tp))!));
  return { ...p, producerId, producerEpoch, send, heads };
}

describe('Open transactions on every replica', () => {
  it('a transactional append opens the producer\'s transaction on the leader and every follower; its marker closes it on all', async () => {
    const p = await transactional('txn-open');
    await p.send(['plain'], 0);
    expect((await p.heads()).map((h) => h.openTxns)).toEqual(p.p0.replicas.map(() => ({ [p.producerId]: 0 })));
    await appendMarker(p.name, 0, p.producerId, p.producerEpoch + 1, true);
    const closed = await p.heads();
    // no open transaction left; the closed one is stable where the high watermark passed its marker
    // (the leader's; a follower learns that high watermark with its next copy)
    expect(closed.map((h) => Object.keys(h.openTxns ?? {}).filter((k) => !k.includes(':')))).toEqual([[], [], []]);
    expect(closed[0]!.hw).toBe(2);
    expect(lastStableOffset(closed[0]!)).toBe(2);
  });

  it('a marker the high watermark has not passed holds the last stable offset, so a failover that cuts the marker never moves it back', async () => {
    const p = await transactional('txn-unreplicated');
    await p.send(['t0', 't1'], 0);
    const [old, next] = p.p0.replicas as [number, number, number];
    // The leader appends the commit marker; it fails before any follower copies it.
    const leader = { leader: p.store(old), topicId: p.topic.topicId, partition: 0, tp: p.tp, leaderEpoch: p.p0.leaderEpoch, inlineMaxBytes: 8192 };
    await appendToLeader(leader, [prepareMarker(p.producerId, p.producerEpoch + 1, true)]);
    const before = (await readHead(p.store(old), p.tp))!;
    expect([before.leo, before.hw]).toEqual([3, 2]);
    expect(lastStableOffset(before)).toBe(0);
    // The follower elected next has the transaction open: its last stable offset is where the old leader's was.
    await electLeader(p.name, 0, next);
    expect(lastStableOffset((await readHead(p.store(next), p.tp))!)).toBe(0);
  });

  it('a follower whose truncation cuts a marker its new leader never had opens the transaction again, as the leader has it', async () => {
    const p = await transactional('txn-trunc');
    await p.send(['t0', 't1'], 0);
    const [old, next, third] = p.p0.replicas as [number, number, number];
    // `old` is cut off and the others elect `next`; `old` still appends the commit marker under its epoch.
    const e1 = await electLeader(p.name, 0, next);
    await setRole(p.store(next), p.tp, 'leader', e1.leaderEpoch);
    await setRole(p.store(third), p.tp, 'follower', e1.leaderEpoch);
    const zombie = { leader: p.store(old), topicId: p.topic.topicId, partition: 0, tp: p.tp, leaderEpoch: p.p0.leaderEpoch, inlineMaxBytes: 8192 };
    await appendToLeader(zombie, [prepareMarker(p.producerId, p.producerEpoch + 1, true)]);
    expect((await readHead(p.store(old), p.tp))?.openTxns).toEqual({ [`${p.producerId}:2`]: 0 });
    // `old` learns the new epoch: its copy step truncates the marker away, and the transaction is open there again.
    await setRole(p.store(old), p.tp, 'follower', e1.leaderEpoch);
    expect((await copyStep(p.store(next), p.store(old), p.tp)).kind).toBe('caught-up');
    const reopened = (await readHead(p.store(old), p.tp))!;
    expect(reopened.leo).toBe(2);
    expect(reopened.openTxns).toEqual({ [p.producerId]: 0 });
    expect(lastStableOffset(reopened)).toBe(0);
  });

  it('a full sync carries each producer\'s transaction state: elected, the synced follower keeps the open transaction at its first offset, and read_committed stops there', async () => {
    const p = await transactional('txn-sync-lead');
    await p.send(['s0'], 0);
    const [old, next] = p.p0.replicas as [number, number, number];
    expect(await fullSync(p.store(old), p.store(next), p.tp)).toBe(true);
    const [state] = await listProducerStates(p.store(next), p.tp);
    expect(state).toMatchObject({ producerId: p.producerId, txnFirst: 0 });
    // The synced follower leads; the transaction's next record must not move its first offset.
    const e1 = await electLeader(p.name, 0, next);
    await setRole(p.store(next), p.tp, 'leader', e1.leaderEpoch);
    await p.send(['s1'], 1);
    const head = (await readHead(p.store(next), p.tp))!;
    expect(head.openTxns).toEqual({ [p.producerId]: 0 });
    expect(lastStableOffset(head)).toBe(0);
    // The transaction is open: a read_committed reader gets neither record (it would keep them, decided, for good).
    const read = await readFromLeader(p.name, 0, (t) => fetchRecords(t, { offset: 0, maxBytes: 1 << 20, maxWaitMs: 0, isolation: 'read_committed' }));
    expect(read.records).toEqual([]);
    expect(read.lastStableOffset).toBe(0);
  });

  it('a full sync installs the leader\'s open transactions on the follower', async () => {
    const p = await transactional('txn-sync');
    await p.send(['s0'], 0);
    const follower = p.store(p.followers[0]!);
    const leader = p.store(p.p0.leader);
    expect(await fullSync(leader, follower, p.tp)).toBe(true);
    expect((await readHead(follower, p.tp))?.openTxns).toEqual({ [p.producerId]: 0 });
    await appendMarker(p.name, 0, p.producerId, p.producerEpoch + 1, false);
    expect(await fullSync(leader, follower, p.tp)).toBe(true);
    const synced = (await readHead(follower, p.tp))!;
    expect(synced.openTxns).toEqual((await readHead(leader, p.tp))!.openTxns);
    expect(synced.openTxns?.[p.producerId]).toBeUndefined();
  });
});
