/**
 * Transactions meeting the rest of the log, against the shared stack's real stores: a
 * read_committed reader of a segment that holds an open transaction does not take it for
 * committed; compaction keeps a key's committed value over an aborted or open transaction's; a
 * producer whose epoch runs out gets a new producer id at its end instead of wedging the id.
 */
import { describe, expect, it } from 'vitest';
import { produce, type ProduceRecord } from '../../../lib/log/produce.js';
import { rollPartition } from '../../../lib/log/roll.js';
import { compactPartition } from '../../../lib/log/compaction.js';
import { fetchRecords, readFromLeader } from '../../../lib/log/read.js';
import { describeTransaction, endTransaction, initTransactions, produceInTransaction, type TxnProducer } from '../../../lib/orchestration/transactions.js';
import { readTxn, replaceTxn } from '../../../lib/storage/coordination/transactions.js';
import { createTopic, uniqueTopic } from '../../support/api.js';

const record = (key: string | null, value: string, sequence?: number): ProduceRecord => ({
  partition: 0, key: key === null ? null : Buffer.from(key), value: Buffer.from(value), headers: [], ...(sequence === undefined ? {} : { sequence }),
});

async function producer(): Promise<TxnProducer> {
  const transactionalId = uniqueTopic('tid');
  return { transactionalId, ...(await initTransactions(transactionalId)) };
}

async function plain(topic: string, key: string | null, value: string): Promise<void> {
  const [out] = await produce(topic, [record(key, value)]);
  expect(out?.ok).toBe(true);
}

async function inTxn(p: TxnProducer, topic: string, key: string | null, value: string, sequence = 0): Promise<void> {
  const [out] = await produceInTransaction(p, topic, [record(key, value, sequence)]);
  expect(out?.ok).toBe(true);
}

const readCommitted = (topic: string, offset: number) =>
  readFromLeader(topic, 0, (t) => fetchRecords(t, { offset, maxBytes: 1 << 20, maxWaitMs: 0, isolation: 'read_committed' }));
const values = (r: { records: readonly { value: Buffer | null }[] }) => r.records.map((x) => x.value?.toString());

describe('Feature: read_committed over segments', () => {
  it('where a segment read passes an open transaction, that transaction is not remembered as committed: once it aborts, its record is never returned', async () => {
    const topic = uniqueTopic('txn-segment');
    await createTopic(topic, 1, 1);
    const p = await producer();
    await plain(topic, null, 'a'); // offset 0
    await inTxn(p, topic, null, 'aborted'); // offset 1: the last stable offset
    await plain(topic, null, 'b'); // offset 2
    await rollPartition(topic, 0, { force: true });
    // The segment holds all three; the reader stops at the open transaction.
    const first = await readCommitted(topic, 0);
    expect(values(first)).toEqual(['a']);
    expect(first.nextOffset).toBe(1);
    await endTransaction(p, false);
    const second = await readCommitted(topic, first.nextOffset);
    expect(values(second)).toEqual(['b']);
  });
});

describe('Feature: compaction keeps what read_committed readers see', () => {
  for (const when of ['aborted before the compaction', 'open during the compaction, aborted after'] as const) {
    it(`where a key's last value is a transaction's, ${when}, the key's committed value survives`, async () => {
      const topic = uniqueTopic('txn-compact');
      await createTopic(topic, 1, 1, [{ name: 'cleanup.policy', value: 'compact' }, { name: 'min.cleanable.dirty.ratio', value: '0.01' }]);
      const p = await producer();
      await plain(topic, 'k', 'committed');
      await inTxn(p, topic, 'k', 'aborted');
      if (when === 'aborted before the compaction') await endTransaction(p, false);
      await plain(topic, 'z', 'filler');
      await rollPartition(topic, 0, { force: true });
      await compactPartition(topic, 0, { now: Date.now() + 60_000 });
      if (when !== 'aborted before the compaction') await endTransaction(p, false);
      const all = await readCommitted(topic, 0);
      expect(values(all)).toEqual(['committed', 'filler']);
    });
  }

  it('where a key\'s last value is a committed transaction\'s, compaction keeps it and drops the older one', async () => {
    const topic = uniqueTopic('txn-compact');
    await createTopic(topic, 1, 1, [{ name: 'cleanup.policy', value: 'compact' }, { name: 'min.cleanable.dirty.ratio', value: '0.01' }]);
    const p = await producer();
    await plain(topic, 'k', 'old');
    await inTxn(p, topic, 'k', 'new');
    await endTransaction(p, true);
    await plain(topic, 'z', 'filler');
    await rollPartition(topic, 0, { force: true });
    await compactPartition(topic, 0, { now: Date.now() + 60_000 });
    expect(values(await readCommitted(topic, 0))).toEqual(['new', 'filler']);
  });
});

describe('Feature: a producer epoch that runs out', () => {
  it('where a transaction ends at the last epoch, the end answers a new producer id at epoch 0, which runs the next transaction; a retry of that end gets the same answer', async () => {
    const topic = uniqueTopic('txn-epoch');
    await createTopic(topic, 1, 1);
    const transactionalId = uniqueTopic('tid');
    const first = await initTransactions(transactionalId);
    const r = (await readTxn(transactionalId))!;
    const { ver, ...rest } = r;
    expect(await replaceTxn({ ...rest, producerEpoch: 32_766 }, ver)).toBe(true);
    const p = { transactionalId, producerId: first.producerId, producerEpoch: 32_766 };
    await inTxn(p, topic, null, 'last epoch');
    const ended = await endTransaction(p, true);
    expect(ended.producerId).not.toBe(first.producerId);
    expect(ended.producerEpoch).toBe(0);
    expect(await endTransaction(p, true)).toEqual(ended);
    expect((await describeTransaction(transactionalId)).state).toBe('CompleteCommit');
    const next = { transactionalId, ...ended };
    await inTxn(next, topic, null, 'new producer id');
    await endTransaction(next, true);
    expect(values(await readCommitted(topic, 0))).toEqual(['last epoch', 'new producer id']);
  });
});
