/**
 * An append whose outcome the server cannot know (the transaction reached the store, its answer
 * did not) must never be appended a second time by the server itself: not by the SDK's retry of
 * the request, nor by the append's race loop, nor by produce's stale-route retry. The lost answer
 * is made by a hook on the real storage client that lets the request through to DynamoDB Local
 * and then fails the response as a socket timeout would — the store itself is real.
 */
import { describe, expect, it } from 'vitest';
import { appendToLeader, type AppendTarget } from '../../../lib/log/append.js';
import { produce } from '../../../lib/log/produce.js';
import { initProducer } from '../../../lib/cluster/producers.js';
import { config } from '../../../lib/config.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { readHead } from '../../../lib/storage/replica/head.js';
import { batchOf } from '../../support/batches.js';
import { newAppendTarget } from '../../support/partition.js';
import { loseTransactResponses } from '../../support/store-hooks.js';

const newPartition = () => newAppendTarget('append-lost');

const logOf = async (t: AppendTarget) => (await queryBatches(t.leader, t.tp, { fromOffset: 0, toOffset: 1e9, maxBytes: 1e9 })).map((b) => `${b.baseOffset}-${b.lastOffset}`);

describe('Append whose answer was lost', () => {
  it('where the first response to an append transaction is lost and the request is sent again, the batch is written once', async () => {
    const t = await newPartition();
    const lost = loseTransactResponses(t.leader.endpoint, t.tp, 1);
    const ranges = await appendToLeader(t, batchOf('once'));
    expect(lost()).toBe(1);
    expect(ranges).toEqual([{ baseOffset: 0, lastOffset: 0 }]);
    expect(await logOf(t)).toEqual(['0-0']);
    expect((await readHead(t.leader, t.tp))?.leo).toBe(1);
  });

  it('where every response to an acks=1 append is lost, produce answers REQUEST_TIMED_OUT and the record is in the log once', async () => {
    const t = await newPartition();
    const attempts = config().storeMaxAttempts;
    const lost = loseTransactResponses(t.leader.endpoint, t.tp, attempts * 3);
    const out = await produce(t.name, [{ partition: 0, key: null, value: Buffer.from('maybe'), headers: [] }], { acks: 1, deadlineMs: 10_000 });
    expect(out[0]).toMatchObject({ ok: false, error: { kafkaName: 'REQUEST_TIMED_OUT' } });
    expect(lost()).toBe(attempts);
    expect(await logOf(t)).toEqual(['0-0']);
    expect((await readHead(t.leader, t.tp))?.leo).toBe(1);
  });

  it('where an idempotent append timed out, the producer\'s retry is answered with the offsets it got and writes nothing', async () => {
    const t = await newPartition();
    const producer = await initProducer();
    const records = [0, 1].map((sequence) => ({ partition: 0, sequence, key: null, value: Buffer.from(`s${sequence}`), headers: [] }));
    loseTransactResponses(t.leader.endpoint, t.tp, config().storeMaxAttempts);
    const first = await produce(t.name, records, { acks: 1, producer, deadlineMs: 10_000 });
    expect(first.map((o) => (o.ok ? o.offset : o.error.kafkaName))).toEqual(['REQUEST_TIMED_OUT', 'REQUEST_TIMED_OUT']);
    const retry = await produce(t.name, records, { acks: 1, producer, deadlineMs: 10_000 });
    expect(retry.map((o) => (o.ok ? o.offset : o.error.kafkaName))).toEqual([0, 1]);
    expect(await logOf(t)).toEqual(['0-1']);
  });
});
