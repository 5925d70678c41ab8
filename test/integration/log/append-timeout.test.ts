/**
 * An append whose outcome the server cannot know (the transaction reached the store, its answer
 * did not) must never be appended a second time by the server itself: not by the SDK's retry of
 * the request, nor by the append's race loop, nor by produce's stale-route retry. The lost answer
 * is made by a hook on the real storage client that lets the request through to DynamoDB Local
 * and then fails the response as a socket timeout would — the store itself is real.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { MiddlewareStack } from '@smithy/types';
import { replicaStore } from '../../../lib/cluster/metadata.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { appendToLeader, type AppendTarget } from '../../../lib/log/append.js';
import { prepareBatches } from '../../../lib/log/batches.js';
import { produce } from '../../../lib/log/produce.js';
import { initProducer } from '../../../lib/cluster/producers.js';
import { config } from '../../../lib/config.js';
import { dynamo } from '../../../lib/storage/clients.js';
import { topicPartitionKey } from '../../../lib/storage/model.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { readHead } from '../../../lib/storage/replica/head.js';

const opts = { compression: 'none' as const, timestampType: 'CreateTime' as const, maxMessageBytes: 1_048_588, timestampBeforeMaxMs: Number.MAX_SAFE_INTEGER, timestampAfterMaxMs: Number.MAX_SAFE_INTEGER };
const batchOf = (...values: string[]) => prepareBatches(values.map((v) => ({ key: null, value: Buffer.from(v), headers: [] })), opts);
let n = 0;

async function newPartition(): Promise<AppendTarget & { name: string }> {
  const { topic, partitions } = await createTopic({ name: `append-lost-${process.pid}-${Date.now()}-${n++}`, partitions: 1, replicationFactor: 1 });
  const state = partitions[0]!;
  return {
    name: topic.name, leader: await replicaStore(state.leader), topicId: topic.topicId, partition: 0,
    tp: topicPartitionKey(topic.topicId, 0), leaderEpoch: state.leaderEpoch, inlineMaxBytes: 8192,
  };
}

const HOOK = 'test-lose-transact-responses';
let armedStack: MiddlewareStack<any, any> | undefined;
afterEach(() => {
  armedStack?.remove(HOOK);
  armedStack = undefined;
});

/**
 * The next `count` TransactWriteItems calls on `t`'s partition reach the store (and apply, or
 * fail there), and then their responses are lost: the caller sees a socket timeout.
 * Returns how many were lost so far.
 */
function loseTransactResponses(t: AppendTarget, count: number): () => number {
  let lost = 0;
  const stack = dynamo(t.leader.endpoint).middlewareStack as MiddlewareStack<any, any>;
  stack.add((next, context) => async (args) => {
    const input = args.input as { TransactItems?: { Update?: { Key?: { tp?: unknown } } }[] };
    const ours = String(context.commandName).includes('TransactWrite') && JSON.stringify(input.TransactItems ?? []).includes(t.tp);
    if (!ours || lost >= count) return next(args);
    lost++;
    await next(args).catch(() => undefined);
    throw Object.assign(new Error('socket timed out (response lost by the test hook)'), { name: 'TimeoutError', $metadata: {} });
  }, { step: 'deserialize', name: HOOK, priority: 'low' });
  armedStack = stack;
  return () => lost;
}

const logOf = async (t: AppendTarget) => (await queryBatches(t.leader, t.tp, { fromOffset: 0, toOffset: 1e9, maxBytes: 1e9 })).map((b) => `${b.baseOffset}-${b.lastOffset}`);

describe('Append whose answer was lost', () => {
  it('where the first response to an append transaction is lost and the request is sent again, the batch is written once', async () => {
    const t = await newPartition();
    const lost = loseTransactResponses(t, 1);
    const ranges = await appendToLeader(t, batchOf('once'));
    expect(lost()).toBe(1);
    expect(ranges).toEqual([{ baseOffset: 0, lastOffset: 0 }]);
    expect(await logOf(t)).toEqual(['0-0']);
    expect((await readHead(t.leader, t.tp))?.leo).toBe(1);
  });

  it('where every response to an acks=1 append is lost, produce answers REQUEST_TIMED_OUT and the record is in the log once', async () => {
    const t = await newPartition();
    const attempts = config().storeMaxAttempts;
    const lost = loseTransactResponses(t, attempts * 3);
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
    loseTransactResponses(t, config().storeMaxAttempts);
    const first = await produce(t.name, records, { acks: 1, producer, deadlineMs: 10_000 });
    expect(first.map((o) => (o.ok ? o.offset : o.error.kafkaName))).toEqual(['REQUEST_TIMED_OUT', 'REQUEST_TIMED_OUT']);
    const retry = await produce(t.name, records, { acks: 1, producer, deadlineMs: 10_000 });
    expect(retry.map((o) => (o.ok ? o.offset : o.error.kafkaName))).toEqual([0, 1]);
    expect(await logOf(t)).toEqual(['0-1']);
  });
});
