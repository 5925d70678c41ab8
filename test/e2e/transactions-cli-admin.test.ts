/**
 * Transactions from the admin SDK (Kafka's listTransactions, describeTransactions,
 * abortTransaction) and from `tributary transactions`, run as a user runs it (a child process),
 * against the shared stack: an open transaction is listed and described with its partitions and
 * groups; a hanging transaction aborted from the CLI stops holding back read_committed readers and
 * fences the producer that left it; a partition's hanging transaction (decided by its coordinator,
 * its marker missing) is found by describeProducers and `find-hanging` and ended by `abort --topic
 * --partition` with the marker its coordinator decided; unknown ids and states are refused clearly.
 */
import { describe, expect, it } from 'vitest';
import { useCli } from '../support/cli.js';
import { baseUrl, call, createTopic, uniqueTopic, v3 } from '../support/api.js';
import { Tributary, TributaryProtocolError, type TransactionDescription } from '../../client/index.js';
import { readTxn, replaceTxn } from '../../lib/storage/coordination/transactions.js';

const cli = useCli();
const client = () => new Tributary({ url: baseUrl() });

/** A read of partition 0 as a read_committed consumer reads it (values as strings, and the offsets it stops at). */
async function readCommitted(topic: string) {
  const r = await call('GET', v3(`/topics/${topic}/partitions/0/records?offset=0&format=string&isolation_level=read_committed`));
  expect(r.status, r.text).toBe(200);
  return { values: r.body.records.map((x: { value: { data: string } }) => x.value.data) as string[], lso: r.body.last_stable_offset as number, hw: r.body.high_watermark as number };
}

describe('Admin transactions and tributary transactions', () => {
  it('lists and describes an open transaction (partitions, groups, start time) from the SDK and the CLI; after its commit it shows none open', async () => {
    const topic = uniqueTopic('txn-admin');
    await createTopic(topic, 2, 3);
    const t = client();
    const id = uniqueTopic('tid-admin');
    const group = uniqueTopic('txn-admin-g');
    const producer = t.producer({ transactionalId: id, transactionTimeout: 30_000 });
    await producer.connect();
    const before = Date.now();
    const txn = await producer.transaction();
    await txn.send({ topic, messages: [{ partition: 1, value: 'b' }, { partition: 0, value: 'a' }] });
    await txn.sendOffsets({ consumerGroupId: group, topics: [{ topic, partitions: [{ partition: 0, offset: '1' }] }] });

    const admin = t.admin();
    const open = (await admin.listTransactions({ states: ['Ongoing'] })).transactions.find((d) => d.transactionalId === id);
    expect(open).toMatchObject({ state: 'Ongoing', transactionTimeoutMs: 30_000, topics: [{ topic, partitions: [0, 1] }], groups: [group] });
    expect(open?.transactionStartTimeMs).toBeGreaterThanOrEqual(before - 1000);
    expect((await admin.listTransactions({ states: ['CompleteCommit', 'Empty'] })).transactions.map((d) => d.transactionalId)).not.toContain(id);
    const [described] = (await admin.describeTransactions([id])).transactions;
    expect(described).toEqual(open);

    const listed = await cli(['--json', 'transactions', 'list', '--state', 'Ongoing', 'PrepareCommit']);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as TransactionDescription[]).find((d) => d.transactionalId === id)).toEqual(open);
    const table = await cli(['transactions', 'describe', id]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/transactional id/);
    for (const shown of [id, 'Ongoing', `${topic}-0 ${topic}-1`, group, String(open?.producerId)]) expect(table.stdout).toContain(shown);

    await txn.commit();
    const done = JSON.parse((await cli(['--json', 'transactions', 'describe', id])).stdout) as TransactionDescription;
    expect(done).toMatchObject({ transactionalId: id, state: 'CompleteCommit', transactionStartTimeMs: null, topics: [], groups: [] });
    expect(done.producerEpoch).toBe((open?.producerEpoch ?? 0) + 1);
    await producer.disconnect();
  });

  it('a hanging transaction aborted with the CLI: read_committed reads move past it (the LSO advances) and its producer\'s commit fails PRODUCER_FENCED', async () => {
    const topic = uniqueTopic('txn-hanging');
    await createTopic(topic, 1, 3);
    const t = client();
    const id = uniqueTopic('tid-hanging');
    // A producer begins a transaction and goes away without ending it.
    const gone = t.producer({ transactionalId: id });
    await gone.connect();
    const hanging = await gone.transaction();
    await hanging.send({ topic, messages: [{ value: 'hanging-0' }, { value: 'hanging-1' }] });
    const plain = t.producer();
    await plain.send({ topic, messages: [{ value: 'after' }] });
    await plain.disconnect();
    const held = await readCommitted(topic);
    expect(held).toMatchObject({ values: [], lso: 0, hw: 3 });

    const aborted = await cli(['transactions', 'abort', id]);
    expect(aborted.code, aborted.stderr).toBe(0);
    expect(aborted.stderr).toContain(`Aborted: ${id}`);
    expect(aborted.stdout).toContain('CompleteAbort');

    const moved = await readCommitted(topic);
    expect(moved.values).toEqual(['after']);
    // The abort marker took an offset: everything is stable again.
    expect(moved.hw).toBe(4);
    expect(moved.lso).toBe(moved.hw);
    const commit = await hanging.commit().catch((e: unknown) => e);
    expect(commit).toBeInstanceOf(TributaryProtocolError);
    expect(commit).toMatchObject({ type: 'PRODUCER_FENCED', code: 90, status: 409, retriable: false });
    // Again: nothing is open, nothing changes.
    expect(await t.admin().abortTransaction(id)).toMatchObject({ transactionalId: id, state: 'CompleteAbort', topics: [] });
    expect((await readCommitted(topic)).hw).toBe(4);
  });

  it('a hanging transaction (committed by its coordinator, its marker missing on a partition) is found by describeProducers and find-hanging, and `abort --topic --partition` ends it with a commit marker', async () => {
    const topic = uniqueTopic('txn-lost-marker');
    await createTopic(topic, 1, 3);
    const t = client();
    const id = uniqueTopic('tid-lost-marker');
    const producer = t.producer({ transactionalId: id });
    await producer.connect();
    const txn = await producer.transaction();
    await txn.send({ topic, messages: [{ value: 'kept-0' }, { value: 'kept-1' }] });
    // The coordinator commits, but the partition's marker is lost (as an unclean election cuts it).
    const r = await readTxn(id);
    if (!r) throw new Error('no item');
    const { ver, ...fields } = r;
    expect(await replaceTxn({ ...fields, state: 'CompleteCommit', producerEpoch: r.producerEpoch + 1, lastEpoch: r.producerEpoch, partitions: [], groups: {}, updatedAt: Date.now() }, ver)).toBe(true);
    expect(await readCommitted(topic)).toMatchObject({ values: [], lso: 0, hw: 2 });

    const [described] = await t.admin().describeProducers([{ topic, partition: 0 }]);
    expect(described?.producers).toEqual([{ producerId: r.producerId, producerEpoch: r.producerEpoch, lastSequence: 1, currentTransactionStartOffset: 0, transactionalId: id, hanging: true }]);
    const found = await cli(['--json', 'transactions', 'find-hanging', '--topic', topic]);
    expect(found.code, found.stderr).toBe(0);
    expect(JSON.parse(found.stdout)).toEqual([expect.objectContaining({ topic, partition: 0, producerId: r.producerId, currentTransactionStartOffset: 0, hanging: true })]);
    // A start offset where none starts ends nothing; the right one is ended with the coordinator's decision.
    const none = await cli(['transactions', 'abort', '--topic', topic, '--partition', '0', '--start-offset', '1']);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stderr).toContain('No hanging transaction');
    const ended = await cli(['transactions', 'abort', '--topic', topic, '--partition', '0', '--start-offset', '0']);
    expect(ended.code, ended.stderr).toBe(0);
    expect(ended.stdout).toMatch(/COMMIT/);
    expect(await readCommitted(topic)).toMatchObject({ values: ['kept-0', 'kept-1'], lso: 3, hw: 3 });
    expect((await t.admin().describeProducers([{ topic, partition: 0 }]))[0]?.producers[0]).toMatchObject({ currentTransactionStartOffset: -1, hanging: false });
    // Usage: a partition's hanging transactions need both --topic and --partition.
    expect((await cli(['transactions', 'abort', '--topic', topic])).code).toBe(2);
    await producer.disconnect();
  });

  it('an unknown transactional id is TRANSACTIONAL_ID_NOT_FOUND from the SDK, and a one-line error with exit 1 from the CLI', async () => {
    const id = uniqueTopic('tid-unknown');
    const admin = client().admin();
    const expected = { type: 'TRANSACTIONAL_ID_NOT_FOUND', code: 105, status: 404, retriable: false };
    await expect(admin.describeTransactions([id])).rejects.toMatchObject(expected);
    await expect(admin.abortTransaction(id)).rejects.toMatchObject(expected);
    for (const verb of ['describe', 'abort']) {
      const r = await cli(['transactions', verb, id]);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(new RegExp(`^tributary: TRANSACTIONAL_ID_NOT_FOUND: .*${id}`));
    }
  });

  it('a state Kafka does not have is refused: by the CLI before any request (exit 2), by the server for the SDK (400)', async () => {
    const r = await cli(['transactions', 'list', '--state', 'Ongoing', 'Open']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/'Open' is invalid.*Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort/s);
    expect((await cli(['transactions', 'describe'])).code).toBe(2);
    const refused = await client().admin().listTransactions({ states: ['Open' as 'Ongoing'] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TributaryProtocolError);
    expect(refused).toMatchObject({ status: 400, errorCode: 40002 });
    expect((refused as Error).message).toMatch(/'state'.*Open/);
  });
});
