/**
 * The transaction coordinator's failure paths, driven step by step against the shared stack's
 * real stores: every compare-and-set on a transactional id's item that loses writes nothing (nor
 * an aborted mark with it); concurrent inits hand out distinct epochs and leave one producer
 * current; an end whose answer was lost is answered again by its retry; a finish cut short after
 * one partition's marker is completed by the controller's pass; a commit that wins against the
 * timeout is not aborted after it; offsets whose consumer's group moved on between the check and
 * the write are refused; a stable read that raced a commit reads the committed offsets.
 */
import { describe, expect, it } from 'vitest';
import { appendMarker } from '../../../lib/log/produce.js';
import {
  addOffsets, describeTransaction, endTransaction, expireTransactions, initTransactions, produceInTransaction, type TxnProducer,
} from '../../../lib/orchestration/transactions.js';
import { committed } from '../../../lib/groups/coordinator.js';
import { config } from '../../../lib/config.js';
import { abortedAmong, deleteTxn, readTxn, replaceTxn } from '../../../lib/storage/coordination/transactions.js';
import { call, createTopic, uniqueTopic, v3 } from '../../support/api.js';
import { hookStoreClient, loseTransactResponses } from '../../support/store-hooks.js';
import { updateMember } from '../../../lib/storage/coordination/groups.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function producer(timeoutMs?: number): Promise<TxnProducer> {
  const transactionalId = uniqueTopic('tid');
  return { transactionalId, ...(await initTransactions(transactionalId, timeoutMs)) };
}

async function committedValues(topic: string, partition: number): Promise<string[]> {
  const r = await call('GET', v3(`/topics/${topic}/partitions/${partition}/records?offset=0&format=string&isolation_level=read_committed`));
  expect(r.status, r.text).toBe(200);
  return r.body.records.map((x: { value: { data: string } }) => x.value.data);
}

/** One record in the producer's transaction; throws the partition's error when it refuses it. */
async function send(p: TxnProducer, topic: string, partition: number, value: string, sequence = 0): Promise<void> {
  const [out] = await produceInTransaction(p, topic, [{ partition, sequence, key: null, value: Buffer.from(value), headers: [] }]);
  if (!out?.ok) throw out?.error ?? new Error('no outcome');
}

const kafkaName = async (p: Promise<unknown>): Promise<string | undefined> => {
  try {
    await p;
    return undefined;
  } catch (err) {
    return (err as { kafkaName?: string }).kafkaName ?? (err as Error).name;
  }
};

describe('Transaction coordinator: lost races and interrupted steps', () => {
  it('a compare-and-set that read an older version writes nothing, and no aborted mark with it', async () => {
    const p = await producer();
    const r = await readTxn(p.transactionalId);
    if (!r) throw new Error('no item');
    const { ver, ...fields } = r;
    expect(await replaceTxn({ ...fields, state: 'Ongoing', updatedAt: Date.now() }, ver)).toBe(true);
    const lost = await replaceTxn({ ...fields, state: 'PrepareAbort', producerEpoch: r.producerEpoch + 1, lastEpoch: r.producerEpoch, updatedAt: Date.now() }, ver, { aborted: { producerId: r.producerId, epoch: r.producerEpoch } });
    expect(lost).toBe(false);
    expect((await readTxn(p.transactionalId))?.state).toBe('Ongoing');
    expect([...await abortedAmong([{ producerId: r.producerId, epoch: r.producerEpoch }])]).toEqual([]);
    // The expiry's delete loses to a change made after the pass listed the id.
    expect(await deleteTxn(p.transactionalId, ver)).toBe(false);
    expect(await readTxn(p.transactionalId)).toBeDefined();
  });

  it('concurrent inits of one id each get their own epoch; only the highest is current, every other is fenced', async () => {
    const id = uniqueTopic('tid');
    const inits = await Promise.all(Array.from({ length: 5 }, () => initTransactions(id)));
    const epochs = inits.map((x) => x.producerEpoch);
    expect(new Set(epochs).size).toBe(5);
    expect(new Set(inits.map((x) => x.producerId)).size).toBe(1);
    const current = await describeTransaction(id);
    expect(current.producerEpoch).toBe(Math.max(...epochs));
    const topic = uniqueTopic('txn-inits');
    await createTopic(topic, 1, 3);
    for (const x of inits) {
      const out = kafkaName(send({ transactionalId: id, ...x }, topic, 0, `e${x.producerEpoch}`));
      expect(await out).toBe(x.producerEpoch === current.producerEpoch ? undefined : 'PRODUCER_FENCED');
    }
  });

  it('an end whose store answer was lost (the write applied) finds its own write and finishes; the caller\'s retry gets the same answer', async () => {
    const topic = uniqueTopic('txn-lost-end');
    await createTopic(topic, 1, 3);
    const p = await producer();
    await send(p, topic, 0, 'kept');
    // The abort's compare-and-set (a transaction with the aborted mark) applies and its answer is
    // lost: the step re-reads the item, finds its own end applied, and finishes it.
    const lost = loseTransactResponses(undefined, p.transactionalId, 1);
    const first = await endTransaction(p, false);
    expect(lost()).toBe(1);
    expect(first.producerEpoch).toBe(p.producerEpoch + 1);
    expect(await readTxn(p.transactionalId)).toMatchObject({ state: 'CompleteAbort', producerEpoch: p.producerEpoch + 1, lastEpoch: p.producerEpoch });
    // The caller's own retry (its HTTP answer lost) gets the same answer.
    expect((await endTransaction(p, false)).producerEpoch).toBe(p.producerEpoch + 1);
    expect(await committedValues(topic, 0)).toEqual([]);
    // A retry that asks the other outcome is refused; the transaction stays aborted.
    expect(await kafkaName(endTransaction(p, true))).toBe('PRODUCER_FENCED');
    expect(await kafkaName(endTransaction({ ...p, producerEpoch: first.producerEpoch }, true))).toBeUndefined();
  });

  it('a finish cut short after one partition\'s marker is completed by the controller\'s pass: both partitions, then the offsets', async () => {
    const topic = uniqueTopic('txn-finish');
    await createTopic(topic, 2, 3);
    const group = uniqueTopic('g');
    const p = await producer();
    await send(p, topic, 0, 'left');
    await send(p, topic, 1, 'right');
    await addOffsets(p, group, [{ topic, partition: 0, offset: 3 }]);
    // The end's compare-and-set lands; its process writes partition 0's marker and dies.
    const r = await readTxn(p.transactionalId);
    if (!r) throw new Error('no item');
    const { ver, ...fields } = r;
    expect(await replaceTxn({ ...fields, state: 'PrepareCommit', lastEpoch: r.producerEpoch, producerEpoch: r.producerEpoch + 1, updatedAt: Date.now() }, ver)).toBe(true);
    await appendMarker(topic, 0, p.producerId, p.producerEpoch + 1, true);
    expect(await committedValues(topic, 0)).toEqual(['left']);
    expect(await committedValues(topic, 1)).toEqual([]);
    expect((await call('GET', v3(`/consumer-groups/${group}/offsets`))).body.data ?? []).toEqual([]);
    // Not yet stuck: the pass leaves a fresh prepare to its own finisher.
    await expireTransactions();
    expect((await readTxn(p.transactionalId))?.state).toBe('PrepareCommit');
    // Untouched for longer than a finisher's markers may take (the request timeout): stuck.
    const prepared = (await readTxn(p.transactionalId))!;
    const { ver: preparedVer, ...preparedFields } = prepared;
    expect(await replaceTxn({ ...preparedFields, updatedAt: Date.now() - config().requestTimeoutMs - 6_000 }, preparedVer)).toBe(true);
    // (this pass finishes it, or one that another file on the shared stack ran meanwhile)
    await expireTransactions();
    expect((await readTxn(p.transactionalId))?.state).toBe('CompleteCommit');
    expect(await committedValues(topic, 0)).toEqual(['left']);
    expect(await committedValues(topic, 1)).toEqual(['right']);
    const offsets = await call('GET', v3(`/consumer-groups/${group}/offsets`));
    expect(offsets.body.data.map((o: { offset: number }) => o.offset)).toEqual([3]);
    // The producer's retry of the commit gets the epoch the prepare gave it.
    expect((await endTransaction(p, true)).producerEpoch).toBe(p.producerEpoch + 1);
  });

  it('a commit that wins against the timeout stays committed; the pass after it aborts nothing of it', async () => {
    const topic = uniqueTopic('txn-race-timeout');
    await createTopic(topic, 1, 3);
    const p = await producer(1000);
    await send(p, topic, 0, 'won');
    await sleep(1100);
    await endTransaction(p, true);
    await expireTransactions();
    expect((await readTxn(p.transactionalId))?.state).toBe('CompleteCommit');
    expect(await committedValues(topic, 0)).toEqual(['won']);
    expect([...await abortedAmong([{ producerId: p.producerId, epoch: p.producerEpoch }])]).toEqual([]);
  });

  it('offsets a transaction holds make a stable read wait (UNSTABLE_OFFSET_COMMIT) until it completes; other partitions and plain reads do not wait', async () => {
    const topic = uniqueTopic('txn-stable');
    await createTopic(topic, 2, 3);
    const group = uniqueTopic('g');
    const p = await producer();
    await addOffsets(p, group, [{ topic, partition: 0, offset: 4 }]);
    expect(await kafkaName(committed(group, undefined, { requireStable: true }))).toBe('UNSTABLE_OFFSET_COMMIT');
    expect(await kafkaName(committed(group, [{ topic, partition: 1 }], { requireStable: true }))).toBeUndefined();
    expect(await committed(group)).toEqual([]);
    const http = await call('GET', v3(`/consumer-groups/${group}/offsets?require_stable=true`));
    expect(http.status).toBe(409);
    expect(http.body.message).toMatch(/^UNSTABLE_OFFSET_COMMIT/);
    expect((await call('GET', v3(`/consumer-groups/${group}/offsets?require_stable=maybe`))).status).toBe(400);
    // Prepared and not finished (its finisher died): still unstable.
    const r = (await readTxn(p.transactionalId))!;
    const { ver, ...fields } = r;
    expect(await replaceTxn({ ...fields, state: 'PrepareCommit', lastEpoch: r.producerEpoch, producerEpoch: r.producerEpoch + 1, updatedAt: Date.now() }, ver)).toBe(true);
    expect(await kafkaName(committed(group, undefined, { requireStable: true }))).toBe('UNSTABLE_OFFSET_COMMIT');
    // Completed: the offsets are there and the read is stable.
    expect((await endTransaction(p, true)).producerEpoch).toBe(p.producerEpoch + 1);
    expect((await committed(group, undefined, { requireStable: true })).map((o) => o.offset)).toEqual([4]);
    // An aborted transaction's offsets never show, and do not hold the read once it completed.
    const next = { ...p, producerEpoch: p.producerEpoch + 1 };
    await addOffsets(next, group, [{ topic, partition: 0, offset: 9 }]);
    expect(await kafkaName(committed(group, undefined, { requireStable: true }))).toBe('UNSTABLE_OFFSET_COMMIT');
    await endTransaction(next, false);
    expect((await committed(group, undefined, { requireStable: true })).map((o) => o.offset)).toEqual([4]);
  });

  it('a pending item left by a transaction whose finish died before clearing it holds no reader once the transaction moved on', async () => {
    const topic = uniqueTopic('txn-stale-pending');
    await createTopic(topic, 1, 3);
    const group = uniqueTopic('g');
    const p = await producer();
    await addOffsets(p, group, [{ topic, partition: 0, offset: 2 }]);
    // The transaction completes without its finish clearing the group's item (a crash in between).
    const r = (await readTxn(p.transactionalId))!;
    const { ver, ...fields } = r;
    expect(await replaceTxn({ ...fields, state: 'CompleteAbort', partitions: [], groups: {}, lastEpoch: r.producerEpoch, producerEpoch: r.producerEpoch + 1, updatedAt: Date.now() }, ver)).toBe(true);
    expect(await committed(group, undefined, { requireStable: true })).toEqual([]);
  });

  it('where the consumer\'s group moves on between the member check and the write, the offsets are refused (ILLEGAL_GENERATION) and nothing is written', async () => {
    const topic = uniqueTopic('txn-fence');
    await createTopic(topic, 1, 3);
    const group = uniqueTopic('g');
    const joined = await call('POST', v3(`/consumer-groups/${group}/heartbeat`), { member_epoch: 0, subscribed_topic_names: [topic], session_timeout_ms: 30_000 });
    expect(joined.status, joined.text).toBe(200);
    const member = { memberId: joined.body.member_id as string, generationId: joined.body.member_epoch as number };
    const p = await producer();
    // The transaction's write (it carries the pending item) is about to go: a rebalance lands first.
    let moved = false;
    hookStoreClient(undefined, 'initialize', (next, context) => async (args) => {
      const items = (args.input as { TransactItems?: unknown[] }).TransactItems;
      if (!moved && context.commandName?.startsWith('TransactWrite') && JSON.stringify(items ?? []).includes(p.transactionalId)) {
        moved = true;
        await updateMember(group, member.memberId, { memberEpoch: member.generationId + 1 });
      }
      return next(args);
    });
    expect(await kafkaName(addOffsets(p, group, [{ topic, partition: 0, offset: 5 }], member))).toBe('ILLEGAL_GENERATION');
    expect(moved).toBe(true);
    const r = await readTxn(p.transactionalId);
    expect(r?.groups).toEqual({});
    expect(await kafkaName(committed(group, undefined, { requireStable: true }))).toBeUndefined();
  });

  it('where a stable read finds a transaction complete that committed its offsets after the read\'s query, it reads them again and answers the committed ones', async () => {
    const topic = uniqueTopic('txn-stable-race');
    await createTopic(topic, 1, 3);
    const group = uniqueTopic('g');
    const p = await producer();
    await addOffsets(p, group, [{ topic, partition: 0, offset: 6 }]);
    // The stable read's first Query of the group's offsets answers; then the transaction commits.
    let queries = 0;
    hookStoreClient(undefined, 'initialize', (next, context) => async (args) => {
      const out = await next(args);
      if (context.commandName === 'QueryCommand' && JSON.stringify(args.input).includes(group) && ++queries === 1) await endTransaction(p, true);
      return out;
    });
    expect((await committed(group, undefined, { requireStable: true })).map((o) => o.offset)).toEqual([6]);
    expect(queries).toBeGreaterThanOrEqual(2);
  });
});
