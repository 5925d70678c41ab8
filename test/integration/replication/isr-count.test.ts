/**
 * The leader's ISR count (the members its high watermark waits for) against the real store: a
 * new topic's leader counts the partition state's ISR, and every write to the count or to the
 * high watermark is compare-and-set on the count's version — the loser of a race writes nothing.
 * A private quiet stack (no background replicator): only these tests move a high watermark.
 */
import { describe, expect, it } from 'vitest';
import { produce } from '../../../lib/log/produce.js';
import { advanceHighWatermark } from '../../../lib/storage/replica/batches.js';
import { readHead, setHeadIsr, setRole } from '../../../lib/storage/replica/head.js';
import { useQuietCluster } from '../../support/cluster.js';
import { rf3Partition } from '../../support/partition.js';

useQuietCluster();

async function setup() {
  const { name, p0: p, tp, store: storeOf } = await rf3Partition('count');
  const store = storeOf(p.leader);
  const head = async () => (await readHead(store, tp))!;
  return { name, p, store, tp, head };
}

describe('Leader ISR count', () => {
  it('starts as the partition state ISR on the leader, version 0', async () => {
    const { p, head } = await setup();
    const h = await head();
    expect([...h.isr].sort()).toEqual([...p.isr].sort());
    expect(h.joining).toEqual([]);
    expect(h.isrVersion).toBe(0);
  });

  it('where two writers edit the count from the same version, one wins and the other writes nothing', async () => {
    const { p, store, tp, head } = await setup();
    const [l, f1, f2] = [p.leader, ...p.replicas.filter((r) => r !== p.leader)] as [number, number, number];
    const results = await Promise.all([
      setHeadIsr(store, tp, p.leaderEpoch, 0, { isr: [l, f1], joining: [], leaving: [] }),
      setHeadIsr(store, tp, p.leaderEpoch, 0, { isr: [l, f1, f2], joining: [9], leaving: [] }),
    ]);
    expect(results.filter(Boolean)).toHaveLength(1);
    const h = await head();
    expect(h.isrVersion).toBe(1);
    expect(h.joining).toEqual(results[0] ? [] : [9]);
    // A stale version and a wrong epoch both lose.
    expect(await setHeadIsr(store, tp, p.leaderEpoch, 0, { isr: [l], joining: [], leaving: [] })).toBe(false);
    expect(await setHeadIsr(store, tp, p.leaderEpoch + 1, 1, { isr: [l], joining: [], leaving: [] })).toBe(false);
    expect(await head()).toEqual(h);
  });

  it('refuses a high watermark computed over a count that changed meanwhile', async () => {
    const { name, p, store, tp, head } = await setup();
    await produce(name, [0, 1, 2].map((i) => ({ partition: 0, key: null, value: Buffer.from(`v${i}`), headers: [] })), { acks: 1 });
    const before = await head();
    expect(before.leo).toBe(3);
    expect(await setHeadIsr(store, tp, p.leaderEpoch, before.isrVersion, { isr: before.isr, joining: [7], leaving: [] })).toBe(true);
    expect(await advanceHighWatermark(store, tp, p.leaderEpoch, 3, {}, before.isrVersion)).toBe(false);
    expect((await head()).hw).toBe(before.hw);
    expect(await advanceHighWatermark(store, tp, p.leaderEpoch, 3, {}, before.isrVersion + 1)).toBe(true);
    expect((await head()).hw).toBe(3);
  });

  it('resets to the partition state ISR when a leader role is pushed, bumping the version', async () => {
    const { p, store, tp, head } = await setup();
    await setHeadIsr(store, tp, p.leaderEpoch, 0, { isr: [p.leader], joining: [5], leaving: [] });
    await setRole(store, tp, 'leader', p.leaderEpoch + 1, p.replicas);
    const h = await head();
    expect(h).toMatchObject({ leaderEpoch: p.leaderEpoch + 1, isr: p.replicas, joining: [], isrVersion: 2 });
  });
});
