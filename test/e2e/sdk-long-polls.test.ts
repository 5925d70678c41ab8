/**
 * The SDK consumer's waits take turns (`ConsumerConfig.longPolls`): in Lambda a waiting
 * fetch holds a function instance for its whole wait, so a consumer at the log end of several
 * partitions holds one waiting fetch by default, not one per partition — and still reads every
 * record produced to any of them. Against the shared local stack; the waits are counted at the
 * SDK's fetch.
 */
import { describe, expect, it } from 'vitest';
import { Tributary, TributaryError, type FetchLike, type KafkaMessage } from '../../client/index.js';
import { baseUrl, call, createTopic, uniqueTopic, v3 } from '../support/api.js';
import { until } from '../support/cluster.js';

/**
 * A fetch that counts the record fetches in flight that may wait (`timeout` > 0), and those that may
 * not. With `gate`, the first waiting fetches are held before they are sent until `gate` of them are
 * in flight together (or 15 s pass): whether the consumer waits on several partitions at once then
 * does not depend on how fast each wait is answered (a cold function instance can take longer than
 * the whole wait).
 */
function countingFetch(gate?: number) {
  const c = { waiting: 0, maxWaiting: 0, waits: 0, checks: 0 };
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => { open = resolve; });
  let holding = gate !== undefined;
  const fetchLike: FetchLike = async (input, init) => {
    const url = new URL(input);
    const records = /\/partitions\/\d+\/records$/.test(url.pathname) && init.method === 'GET';
    const waits = records && Number(url.searchParams.get('timeout') ?? 0) > 0;
    if (waits) {
      c.waits++;
      c.maxWaiting = Math.max(c.maxWaiting, ++c.waiting);
    } else if (records) c.checks++;
    try {
      if (waits && holding) {
        if (c.waiting >= (gate ?? 0)) {
          holding = false;
          open();
        } else {
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([opened, new Promise((resolve) => { timer = setTimeout(resolve, 15_000); })]).finally(() => clearTimeout(timer));
          holding = false;
        }
      }
      return await globalThis.fetch(input, init);
    } finally {
      if (waits) c.waiting--;
    }
  };
  return { counts: c, fetchLike };
}

async function consumeIdle(longPolls: number | undefined, gate?: number) {
  const topic = uniqueTopic('sdk-long-polls');
  await createTopic(topic, 4, 1);
  const { counts, fetchLike } = countingFetch(gate);
  const consumer = new Tributary({ url: baseUrl(), fetch: fetchLike }).consumer({
    groupId: `${topic}-group`, transport: 'long-poll', maxWaitTimeInMs: 800, ...(longPolls !== undefined ? { longPolls } : {}),
  });
  const got: { partition: number; message: KafkaMessage }[] = [];
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({ eachMessage: async ({ partition, message }) => { got.push({ partition, message }); } });
  await until('the consumer to own the 4 partitions', async () => consumer.assignment().length === 4);
  // Several rounds of waits at the log end of every partition.
  const from = counts.waits;
  await until('six waits at the log end', async () => counts.waits >= from + 6, 30_000);
  const idle = { ...counts };
  for (let partition = 0; partition < 4; partition++) {
    expect((await call('POST', v3(`/topics/${topic}/records`), { partition_id: partition, value: { type: 'STRING', data: `p${partition}` } })).status).toBe(200);
  }
  await until('a record from each partition', async () => got.length >= 4, 30_000);
  await consumer.disconnect();
  return { idle, counts, got };
}

describe('SDK consumer: waits at the log end take turns', () => {
  it('holds at most one waiting fetch for 4 idle partitions by default, checks the others as each wait ends, and reads a record produced to each', async () => {
    const { idle, counts, got } = await consumeIdle(undefined);
    expect(idle.maxWaiting).toBe(1);
    // The partitions without a turn checked with fetches that do not wait.
    expect(idle.checks).toBeGreaterThan(0);
    expect(counts.maxWaiting).toBe(1);
    expect(got.map((g) => [g.partition, new TextDecoder().decode(g.message.value ?? new Uint8Array())]).sort()).toEqual([[0, 'p0'], [1, 'p1'], [2, 'p2'], [3, 'p3']]);
  });

  it('with longPolls: Infinity waits on every partition at once (Kafka\'s latency, one function instance each)', async () => {
    // Held until all four wait together: a consumer that waited on one partition at a time would
    // reach the 15 s timeout with one in flight, and fail here.
    const { idle, got } = await consumeIdle(Infinity, 4);
    expect(idle.maxWaiting).toBe(4);
    expect(got).toHaveLength(4);
  });

  it('refuses a longPolls below 1', () => {
    expect(() => new Tributary({ url: baseUrl() }).consumer({ groupId: 'g', longPolls: 0 })).toThrow(TributaryError);
  });
});
