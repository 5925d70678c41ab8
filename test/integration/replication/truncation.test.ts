/**
 * Truncation against the real stores, on a private quiet stack (no background replicator: each
 * test drives every copy step itself): a follower's log never shrinks within one leader epoch,
 * a new epoch truncates it where KIP-101/KIP-279 say, and truncation cuts whole batches only.
 */
import { describe, expect, it } from 'vitest';
import { appendToLeader } from '../../../lib/log/append.js';
import { copyStep } from '../../../lib/log/copy.js';
import { replicate } from '../../../lib/log/commit.js';
import { readHead, setRole } from '../../../lib/storage/replica/head.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { truncateLog } from '../../../lib/storage/replica/truncation.js';
import { type ReplicaStoreRef } from '../../../lib/storage/replica/store.js';
import { batchOf } from '../../support/batches.js';
import { hookStoreClient } from '../../support/store-hooks.js';
import { logFingerprint, replicaLog, useQuietCluster } from '../../support/cluster.js';
import { electLeader, rf3Partition } from '../../support/partition.js';

useQuietCluster();

async function setup() {
  const { name, topic, p0, tp, store } = await rf3Partition('trunc');
  const ids = p0.replicas as [number, number, number];
  const append = (b: number, leaderEpoch: number, ...values: string[]) =>
    appendToLeader({ leader: store(b), topicId: topic.topicId, partition: 0, tp, leaderEpoch, inlineMaxBytes: 8192 }, batchOf(...values));
  const logOf = async (b: number) => logFingerprint(await replicaLog(store(b), tp));
  return { name, topic, p0, tp, ids, store, append, logOf };
}

const leoOf = async (s: ReplicaStoreRef, tp: string) => (await readHead(s, tp))?.leo;

describe('Function: copyStep within one leader epoch', () => {
  it('where a copier holds a stale leader head, it never truncates a follower that another copier brought further', async () => {
    const { name, topic, p0, tp, ids, store, append, logOf } = await setup();
    const [leader, f] = [p0.leader, ids.find((b) => b !== p0.leader)!];
    await append(leader, p0.leaderEpoch, 'a');
    await replicate(name, topic.topicId, 0, { deadline: Date.now() + 10_000, shrinkOnFailure: false, lagTimeMaxMs: 60_000 });

    // Copier A reads the leader's head (leo 1) and stalls.
    const stale = (await readHead(store(leader), tp))!;
    expect(stale.leo).toBe(1);
    // Meanwhile records are appended, copier B brings every follower up, and the high watermark
    // covers them: they are acknowledged.
    await append(leader, p0.leaderEpoch, 'b', 'c');
    await append(leader, p0.leaderEpoch, 'd');
    const r = await replicate(name, topic.topicId, 0, { deadline: Date.now() + 10_000, shrinkOnFailure: false, lagTimeMaxMs: 60_000 });
    expect(r.highWatermark).toBe(4);
    expect(await leoOf(store(f), tp)).toBe(4);

    // Copier A wakes up with its stale head: the follower's log end is past it (4 > 1).
    const out = await copyStep(store(leader), store(f), tp, stale);
    expect(out.kind).not.toBe('lost-race');
    expect(await leoOf(store(f), tp)).toBe(4);
    expect(await logOf(f)).toEqual(await logOf(leader));
    expect(await logOf(f)).toHaveLength(3);
  });
});

describe('Function: copyStep under a new leader epoch (KIP-279)', () => {
  it('where the leader never had the follower\'s last epoch, the follower truncates to its own end of the leader\'s largest epoch below it, and the logs converge', async () => {
    const { name, p0, tp, ids, store, append, logOf } = await setup();
    const [a, b, cc] = [p0.leader, ...ids.filter((x) => x !== p0.leader)] as [number, number, number];
    // Epoch 0, leader a: offset 0 reaches b and c; offset 1 reaches c only.
    await append(a, 0, 'm0');
    for (const f of [b, cc]) expect((await copyStep(store(a), store(f), tp)).kind).toBe('caught-up');
    await append(a, 0, 'm1');
    expect((await copyStep(store(a), store(cc), tp)).kind).toBe('caught-up');
    // Epoch 1, leader b: it appends at offset 1 and copies it nowhere.
    const s1 = await electLeader(name, 0, b);
    await setRole(store(b), tp, 'leader', s1.leaderEpoch, s1.isr);
    await append(b, s1.leaderEpoch, 'b1');
    // Epoch 2, leader c (which never had epoch 1): it appends at offset 2.
    const s2 = await electLeader(name, 0, cc);
    await setRole(store(cc), tp, 'leader', s2.leaderEpoch, s2.isr);
    await append(cc, s2.leaderEpoch, 'c2');
    expect((await readHead(store(cc), tp))?.epochs).toEqual([[0, 0], [s2.leaderEpoch, 2]]);
    expect((await readHead(store(b), tp))?.epochs).toEqual([[0, 0], [s1.leaderEpoch, 1]]);

    // b learns epoch 2. KIP-101 alone would keep its offset 1 (epoch 1 "ended" at 2 on c), which
    // differs from c's offset 1; KIP-279 truncates to b's own end of epoch 0 (1).
    await setRole(store(b), tp, 'follower', s2.leaderEpoch);
    for (let i = 0; i < 5 && (await copyStep(store(cc), store(b), tp)).kind !== 'caught-up'; i++);
    expect(await logOf(b)).toEqual(await logOf(cc));
    expect(await logOf(b)).toHaveLength(3);
    expect((await readHead(store(b), tp))?.epochs).toEqual([[0, 0], [s2.leaderEpoch, 2]]);
  });
});

describe('Function: truncateLog', () => {
  it('where the truncation point falls inside a batch, cuts that whole batch and sets the log end to its base offset (no hole)', async () => {
    const { p0, tp, ids, store, append } = await setup();
    const f = ids.find((x) => x !== p0.leader)!;
    await append(p0.leader, p0.leaderEpoch, 'x0');
    await append(p0.leader, p0.leaderEpoch, 'x1', 'x2', 'x3');
    expect((await copyStep(store(p0.leader), store(f), tp)).kind).toBe('caught-up');
    const head = (await readHead(store(f), tp))!;
    expect(head.leo).toBe(4);
    // A new epoch (the follower must reconcile), and a truncation point inside [1..3].
    await setRole(store(f), tp, 'follower', p0.leaderEpoch + 1);
    const end = await truncateLog(store(f), tp, (await readHead(store(f), tp))!, 2);
    expect(end).toBe(1);
    const after = (await readHead(store(f), tp))!;
    expect(after.leo).toBe(1);
    const log = await replicaLog(store(f), tp);
    expect(log.map((x) => `${x.baseOffset}-${x.lastOffset}`)).toEqual(['0-0']);
  });

  it('refuses to truncate a follower already reconciled with its leader epoch, deleting nothing', async () => {
    const { p0, tp, ids, store, append, logOf } = await setup();
    const f = ids.find((x) => x !== p0.leader)!;
    await append(p0.leader, p0.leaderEpoch, 'y0');
    await append(p0.leader, p0.leaderEpoch, 'y1');
    expect((await copyStep(store(p0.leader), store(f), tp)).kind).toBe('caught-up');
    const head = (await readHead(store(f), tp))!;
    expect(head.syncEpoch).toBe(head.leaderEpoch);
    await expect(truncateLog(store(f), tp, head, 1)).rejects.toThrow();
    expect(await leoOf(store(f), tp)).toBe(2);
    expect(await logOf(f)).toEqual(await logOf(p0.leader));
  });

  it('where it stops part way through a long cut, leaves a shorter log and no hole (its head never claims a batch that is gone), and the next copy step finishes', async () => {
    const { name, p0, tp, ids, store, append, logOf } = await setup();
    const [a, b] = [p0.leader, ids.find((x) => x !== p0.leader)!];
    await append(a, 0, 'm0');
    expect((await copyStep(store(a), store(b), tp)).kind).toBe('caught-up');
    // Epoch 1, leader b: 120 batches that reach no other replica (more than one transaction deletes).
    const s1 = await electLeader(name, 0, b);
    await setRole(store(b), tp, 'leader', s1.leaderEpoch, s1.isr);
    for (let i = 0; i < 120; i++) await append(b, s1.leaderEpoch, `b${i}`);
    // Epoch 2, leader a (which never had epoch 1): b truncates to 1.
    const s2 = await electLeader(name, 0, a);
    await setRole(store(a), tp, 'leader', s2.leaderEpoch, s2.isr);
    await setRole(store(b), tp, 'follower', s2.leaderEpoch);
    // Every transaction on b's table after the first fails: the truncator stops part way.
    let writes = 0;
    hookStoreClient(store(b).endpoint, 'initialize', (next, context) => async (args) => {
      if (String(context.commandName).includes('TransactWrite') && JSON.stringify(args.input).includes(store(b).replicaTable) && ++writes > 1) {
        throw Object.assign(new Error('connect ECONNREFUSED (refused by the test hook)'), { code: 'ECONNREFUSED', $metadata: {} });
      }
      return next(args);
    });
    await copyStep(store(a), store(b), tp).catch(() => undefined);
    expect(writes).toBeGreaterThan(1);
    const head = (await readHead(store(b), tp))!;
    expect(head.syncEpoch).not.toBe(s2.leaderEpoch);
    const held = await queryBatches(store(b), tp, { fromOffset: 0, toOffset: 1e9, maxBytes: Number.MAX_SAFE_INTEGER });
    // The batches are exactly [0, leo): contiguous, none above the head's log end.
    expect(held.at(-1)!.lastOffset + 1).toBe(head.leo);
    held.forEach((x, i) => expect(x.baseOffset).toBe(i === 0 ? 0 : held[i - 1]!.lastOffset + 1));
    expect(head.leo).toBeLessThan(121);

    writes = -1e9;
    for (let i = 0; i < 5 && (await copyStep(store(a), store(b), tp)).kind !== 'caught-up'; i++);
    expect(await logOf(b)).toEqual(await logOf(a));
    expect((await readHead(store(b), tp))!.leo).toBe(1);
  });
});
