/**
 * Hanging transactions (lib/orchestration/hanging-transactions.ts), on a quiet private stack whose
 * steps this test drives: a transaction its coordinator decided whose marker a partition lacks —
 * never written there, or cut by an unclean election — is found by DescribeProducers and ended by
 * the repair with the marker the coordinator decided (on request, or by the controller's full
 * pass); one its coordinator has not decided is left
 * open; the repair that loses the race to the producer's next transaction (a batch of the
 * marker's epoch landed between its read and its append) writes nothing, and so does a finisher's
 * marker that lands late, after the first was cut.
 */
import { describe, expect, it } from 'vitest';
import { appendToLeader } from '../../../lib/log/append.js';
import { prepareMarker } from '../../../lib/log/batches.js';
import { copyStep } from '../../../lib/log/copy.js';
import { appendMarker } from '../../../lib/log/produce.js';
import { fetchRecords, readFromLeader } from '../../../lib/log/read.js';
import { describeProducers, endHangingTransactions } from '../../../lib/orchestration/hanging-transactions.js';
import { ReplicationSweep } from '../../../lib/orchestration/sweep.js';
import { endTransaction, initTransactions, produceInTransaction, type TxnProducer } from '../../../lib/orchestration/transactions.js';
import { readTxn, replaceTxn } from '../../../lib/storage/coordination/transactions.js';
import { lastStableOffset } from '../../../lib/storage/model.js';
import { readHead, setRole } from '../../../lib/storage/replica/head.js';
import { useQuietCluster } from '../../support/cluster.js';
import { electLeader, rf3Partition } from '../../support/partition.js';

useQuietCluster();

let n = 0;

/** A transactional producer with `values` in its open transaction on partition 0 of a new RF 3 topic. */
async function openTransaction(prefix: string, values: string[]) {
  const p = await rf3Partition(prefix);
  const transactionalId = `${prefix}-tid-${process.pid}-${n++}`;
  const producer: TxnProducer = { transactionalId, ...(await initTransactions(transactionalId)) };
  const out = await produceInTransaction(producer, p.name, values.map((v, i) => ({ partition: 0, sequence: i, key: null, value: Buffer.from(v), headers: [] })));
  expect(out.every((o) => o.ok), JSON.stringify(out)).toBe(true);
  return { ...p, producer };
}

/**
 * The coordinator's end and finish as they would run, except the markers: the item moves to
 * Complete under the bumped epoch (an abort with its mark), as if its marker had been written and
 * then lost.
 */
async function decideWithoutMarker(transactionalId: string, commit: boolean): Promise<void> {
  const r = await readTxn(transactionalId);
  if (!r) throw new Error('no item');
  const { ver, ...fields } = r;
  const done = await replaceTxn(
    { ...fields, state: commit ? 'CompleteCommit' : 'CompleteAbort', producerEpoch: r.producerEpoch + 1, lastEpoch: r.producerEpoch, partitions: [], groups: {}, updatedAt: Date.now() },
    ver, commit ? {} : { aborted: { producerId: r.producerId, epoch: r.producerEpoch } },
  );
  expect(done).toBe(true);
}

/**
 * `value` in a transaction its coordinator committed without a marker on the partition, then the
 * producer's next transaction (epoch e0 + 1) with a batch landed there, joining the open span.
 */
async function committedThenNextLands(prefix: string, value: string) {
  const p = await openTransaction(prefix, [value]);
  const e0 = p.producer.producerEpoch;
  await decideWithoutMarker(p.producer.transactionalId, true);
  const next: TxnProducer = { ...p.producer, producerEpoch: e0 + 1 };
  const [landed] = await produceInTransaction(next, p.name, [{ partition: 0, sequence: 0, key: null, value: Buffer.from('n0'), headers: [] }]);
  expect(landed?.ok).toBe(true);
  return { p, e0, next };
}

/** What a read_committed reader reads of partition 0 from its start. */
const committedValues = async (topic: string) => {
  const read = await readFromLeader(topic, 0, (t) => fetchRecords(t, { offset: 0, maxBytes: 1 << 20, maxWaitMs: 0, isolation: 'read_committed' }));
  return read.records.map((r) => r.value?.toString());
};

describe('Hanging transactions', () => {
  it('a decided transaction whose marker never reached the partition is shown hanging and ended with a commit marker: the last stable offset moves and read_committed reads it', async () => {
    const p = await openTransaction('hang-commit', ['t0', 't1']);
    await decideWithoutMarker(p.producer.transactionalId, true);
    const before = (await readHead(p.store(p.p0.leader), p.tp))!;
    expect(lastStableOffset(before)).toBe(0);
    expect(await describeProducers(p.name, 0)).toEqual([expect.objectContaining({
      producerId: p.producer.producerId, currentTransactionStartOffset: 0, transactionalId: p.producer.transactionalId, hanging: true,
    })]);

    const { ended } = await endHangingTransactions([{ topic: p.name, partition: 0 }]);
    expect(ended).toEqual([{ topic: p.name, partition: 0, producerId: p.producer.producerId, startOffset: 0, markerEpoch: p.producer.producerEpoch + 1, commit: true, markerOffset: 2 }]);
    const after = (await readHead(p.store(p.p0.leader), p.tp))!;
    expect(lastStableOffset(after)).toBe(3);
    expect(await committedValues(p.name)).toEqual(['t0', 't1']);
    expect((await describeProducers(p.name, 0))[0]).toMatchObject({ currentTransactionStartOffset: -1, hanging: false });
    // a second repair finds nothing open
    expect(await endHangingTransactions([{ topic: p.name, partition: 0 }])).toEqual({ ended: [], errors: [] });
  });

  it('a marker cut by an unclean election opens its transaction again; the repair writes the abort the coordinator decided, under the epoch after the batches\'', async () => {
    const p = await openTransaction('hang-cut', ['a0', 'a1']);
    const e0 = p.producer.producerEpoch;
    await decideWithoutMarker(p.producer.transactionalId, false);
    const [old, next, third] = p.p0.replicas as [number, number, number];
    // `old` is cut off and the others elect `next`; `old` still appends the abort marker under its epoch.
    const e1 = await electLeader(p.name, 0, next);
    await setRole(p.store(next), p.tp, 'leader', e1.leaderEpoch);
    await setRole(p.store(third), p.tp, 'follower', e1.leaderEpoch);
    const zombie = { leader: p.store(old), topicId: p.topic.topicId, partition: 0, tp: p.tp, leaderEpoch: p.p0.leaderEpoch, inlineMaxBytes: 8192 };
    await appendToLeader(zombie, [prepareMarker(p.producer.producerId, e0 + 1, false)]);
    // `old` follows `next`: its truncation cuts the marker, its transaction open again (its state at the marker's epoch, no batch of it).
    await setRole(p.store(old), p.tp, 'follower', e1.leaderEpoch);
    expect((await copyStep(p.store(next), p.store(old), p.tp)).kind).toBe('caught-up');
    // ... and is elected again, cleanly: the partition's leader has the transaction open, its marker gone.
    const e2 = await electLeader(p.name, 0, old, e1);
    for (const b of p.p0.replicas) await setRole(p.store(b), p.tp, b === old ? 'leader' : 'follower', e2.leaderEpoch);
    expect(lastStableOffset((await readHead(p.store(old), p.tp))!)).toBe(0);

    const [ended] = (await endHangingTransactions([{ topic: p.name, partition: 0 }])).ended;
    expect(ended).toMatchObject({ producerId: p.producer.producerId, startOffset: 0, markerEpoch: e0 + 1, commit: false, markerOffset: 2 });
    expect(lastStableOffset((await readHead(p.store(old), p.tp))!)).toBe(3);
    expect(await committedValues(p.name)).toEqual([]);
  });

  it('the controller\'s full pass ends a hanging transaction with no one asking', async () => {
    const p = await openTransaction('hang-sweep', ['w0']);
    await decideWithoutMarker(p.producer.transactionalId, true);
    const report = await new ReplicationSweep().sweep();
    expect(report.full).toBe(true);
    expect(report.hangingEnded).toBeGreaterThanOrEqual(1);
    expect(lastStableOffset((await readHead(p.store(p.p0.leader), p.tp))!)).toBe(2);
    expect(await committedValues(p.name)).toEqual(['w0']);
  });

  it('a transaction its coordinator has not decided is not hanging: the repair writes nothing', async () => {
    const p = await openTransaction('hang-open', ['o0']);
    expect((await describeProducers(p.name, 0))[0]).toMatchObject({ currentTransactionStartOffset: 0, hanging: false });
    expect(await endHangingTransactions([{ topic: p.name, partition: 0 }])).toEqual({ ended: [], errors: [] });
    const head = (await readHead(p.store(p.p0.leader), p.tp))!;
    expect([head.leo, lastStableOffset(head)]).toEqual([1, 0]);
    // its own end closes it
    await endTransaction(p.producer, true);
    expect(await committedValues(p.name)).toEqual(['o0']);
  });

  it('a repair that loses the race to the producer\'s next transaction (a batch of the marker\'s epoch landed after its read) writes nothing, and that transaction\'s own marker ends both', async () => {
    // The repair has read the partition (marker epoch e0 + 1, decided); then the producer's next transaction lands a batch under e0 + 1.
    const { p, e0, next } = await committedThenNextLands('hang-race', 'h0');
    // Its append: the guard finds a batch of the marker's epoch in the open transaction, and writes nothing.
    expect(await appendMarker(p.name, 0, p.producer.producerId, e0 + 1, true, undefined, { repair: true })).toBe(-1);
    const head = (await readHead(p.store(p.p0.leader), p.tp))!;
    expect([head.leo, lastStableOffset(head)]).toEqual([2, 0]);
    expect(await committedValues(p.name)).toEqual([]);
    // A repair that reads now finds the transaction undecided (its newest batch's epoch is the coordinator's).
    expect(await endHangingTransactions([{ topic: p.name, partition: 0 }])).toEqual({ ended: [], errors: [] });
    // The next transaction's abort: its marker closes both; the decided commit's record is read, the aborted one not.
    await endTransaction(next, false);
    expect(await committedValues(p.name)).toEqual(['h0']);
  });

  it('a finisher\'s marker that lands late, after the first was cut and the producer\'s next transaction landed a batch, writes nothing: it never closes that transaction', async () => {
    // The first finisher's marker (epoch e0 + 1) was written and then cut; the coordinator completed the commit.
    const { p, e0, next } = await committedThenNextLands('late-marker', 'l0');
    // A second finisher of the same transaction, slowed by the election, appends the same marker now.
    expect(await appendMarker(p.name, 0, p.producer.producerId, e0 + 1, true)).toBe(-1);
    const head = (await readHead(p.store(p.p0.leader), p.tp))!;
    expect([head.leo, lastStableOffset(head)]).toEqual([2, 0]);
    expect(await committedValues(p.name)).toEqual([]);
    // The next transaction aborts: its marker closes both, and only the committed record is read.
    await endTransaction(next, false);
    expect(await committedValues(p.name)).toEqual(['l0']);
  });
});
