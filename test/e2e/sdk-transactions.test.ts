/**
 * The SDK's transactional producer, as kafkajs's: `producer({ transactionalId })`, `transaction()`,
 * `send`, `sendOffsets`, `commit`, `abort`; its consumers read committed by default. And
 * consume-transform-produce over 2 input and 2 output partitions whose workers crash mid-transaction:
 * every output is there exactly once.
 */
import { describe, expect, it } from 'vitest';
import { baseUrl, createTopic, uniqueTopic } from '../support/api.js';
import { until } from '../support/cluster.js';
import { Tributary, TributaryProtocolError, type Consumer } from '../../client/index.js';

const client = () => new Tributary({ url: baseUrl() });
const IN_MEMORY = { everyMs: 50, retry: false, ms: 60_000 } as const;
const text = (b: Uint8Array | null | undefined) => (b ? Buffer.from(b).toString() : null);

/** The values a new consumer (read_committed unless asked) gets from the start, once it has `n`. */
async function consumeValues(t: Tributary, topic: string, n: number, readUncommitted = false): Promise<string[]> {
  const seen: string[] = [];
  const consumer = t.consumer({ groupId: uniqueTopic('txn-reader'), maxWaitTimeInMs: 200, readUncommitted });
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({ eachMessage: async ({ message }) => { seen.push(text(message.value) as string); } });
  await until(`${n} records`, () => seen.length >= n, IN_MEMORY);
  await new Promise((r) => setTimeout(r, 500));
  await consumer.disconnect();
  return seen;
}

describe('SDK transactions', () => {
  it('a committed transaction is read by a default (read_committed) consumer; an aborted one never is', async () => {
    const topic = uniqueTopic('sdk-txn');
    await createTopic(topic, 2, 3);
    const t = client();
    const producer = t.producer({ transactionalId: uniqueTopic('sdk-tid'), idempotent: true });
    await producer.connect();
    await expect(producer.send({ topic, messages: [{ value: 'outside' }] })).rejects.toThrow(/transaction/);
    const aborted = await producer.transaction();
    await aborted.send({ topic, messages: [{ partition: 0, value: 'a0' }, { partition: 1, value: 'a1' }] });
    await aborted.abort();
    expect(aborted.isActive()).toBe(false);
    const committed = await producer.transaction();
    await committed.send({ topic, messages: [{ partition: 0, value: 'c0' }, { partition: 1, value: 'c1' }] });
    await committed.commit();
    expect((await consumeValues(t, topic, 2)).sort()).toEqual(['c0', 'c1']);
    expect((await consumeValues(t, topic, 4, true)).sort()).toEqual(['a0', 'a1', 'c0', 'c1']);
    await producer.disconnect();
  });

  it('a read_committed consumer that starts at the latest offset while a transaction is open starts at its first record, and gets it once it commits', async () => {
    const topic = uniqueTopic('sdk-txn-latest');
    await createTopic(topic, 1, 3);
    const t = client();
    const producer = t.producer({ transactionalId: uniqueTopic('sdk-tid') });
    await producer.connect();
    const txn = await producer.transaction();
    await txn.send({ topic, messages: [{ partition: 0, value: 'open when the consumer started' }] });
    const seen: string[] = [];
    const consumer = t.consumer({ groupId: uniqueTopic('txn-latest'), maxWaitTimeInMs: 200 });
    await consumer.subscribe({ topic, fromBeginning: false });
    await consumer.run({ eachMessage: async ({ message }) => { seen.push(text(message.value) as string); } });
    await until('the consumer to own the partition', () => consumer.assignment().length === 1, IN_MEMORY);
    await new Promise((r) => setTimeout(r, 500));
    await txn.commit();
    await until('the committed record', () => seen.length >= 1, IN_MEMORY);
    await consumer.disconnect();
    await producer.disconnect();
    expect(seen).toEqual(['open when the consumer started']);
  });

  it('a second producer with the same transactionalId fences the first: its send and commit fail PRODUCER_FENCED', async () => {
    const topic = uniqueTopic('sdk-txn-fence');
    await createTopic(topic, 1, 3);
    const t = client();
    const id = uniqueTopic('sdk-tid');
    const first = t.producer({ transactionalId: id });
    await first.connect();
    const txn = await first.transaction();
    await txn.send({ topic, messages: [{ value: 'zombie' }] });
    const second = t.producer({ transactionalId: id });
    await second.connect();
    const failed = await txn.send({ topic, messages: [{ value: 'zombie-2' }] }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(TributaryProtocolError);
    expect((failed as TributaryProtocolError).type).toBe('PRODUCER_FENCED');
    const commit = await txn.commit().catch((e: unknown) => e);
    expect((commit as TributaryProtocolError).type).toBe('PRODUCER_FENCED');
    const ok = await second.transaction();
    await ok.send({ topic, messages: [{ value: 'fresh' }] });
    await ok.commit();
    expect(await consumeValues(t, topic, 1)).toEqual(['fresh']);
  });

  it('consume-transform-produce over 2 input and 2 output partitions, workers crashing mid-transaction: each output exactly once', async () => {
    const input = uniqueTopic('ctp-in');
    const output = uniqueTopic('ctp-out');
    await createTopic(input, 2, 3);
    await createTopic(output, 2, 3);
    const t = client();
    const feeder = t.producer();
    const total = 24;
    await feeder.send({ topic: input, messages: Array.from({ length: total }, (_, i) => ({ partition: i % 2, key: `k${i}`, value: `v${i}` })) });
    await feeder.disconnect();
    const groupId = uniqueTopic('ctp-group');
    const transactionalId = uniqueTopic('ctp-tid');
    // The n-th transaction of the run crashes its worker after sending and before committing.
    const crashAt = new Set([3, 9, 16]);
    let transactions = 0;
    let committedInputs = 0;
    for (let worker = 0; committedInputs < total && worker < 10; worker++) {
      const producer = t.producer({ transactionalId });
      await producer.connect(); // fences the crashed worker's producer and aborts its transaction
      const consumer: Consumer = t.consumer({ groupId, maxWaitTimeInMs: 200 });
      await consumer.subscribe({ topic: input, fromBeginning: true });
      let crashed = false;
      await consumer.run({
        autoCommit: false,
        eachMessage: async ({ topic, partition, message }) => {
          if (crashed) throw new Error('crashed');
          const txn = await producer.transaction();
          await txn.send({ topic: output, messages: [{ key: text(message.key) as string, value: `${text(message.value)}-out` }] });
          await txn.sendOffsets({ consumerGroupId: groupId, topics: [{ topic, partitions: [{ partition, offset: String(Number(message.offset) + 1) }] }],
            // the consumer, or (as Kafka's sendOffsetsToTransaction takes it) its group metadata
            consumer: transactions % 2 === 0 ? consumer : consumer.groupMetadata()! });
          if (crashAt.has(++transactions)) {
            crashed = true;
            throw new Error('crashed');
          }
          await txn.commit();
          committedInputs++;
        },
      });
      await until('a crash or the end', () => crashed || committedInputs >= total, IN_MEMORY);
      await consumer.disconnect();
    }
    expect(committedInputs).toBe(total);
    const out = await consumeValues(t, output, total);
    expect(out.length).toBe(total);
    expect(new Set(out).size).toBe(total);
    expect(out.sort()).toEqual(Array.from({ length: total }, (_, i) => `v${i}-out`).sort());
    // The crashed workers' sends are in the log, aborted: a read_uncommitted reader sees them too.
    expect((await consumeValues(t, output, total + crashAt.size, true)).length).toBeGreaterThanOrEqual(total + crashAt.size);
  });
});
