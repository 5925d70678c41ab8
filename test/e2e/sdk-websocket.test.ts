/**
 * The SDK consumer's WebSocket transport on the shared Lambda-fidelity stack: records pushed over
 * `/ws` (no fetch while it waits), a connection the server closes opened again and every partition
 * resumed from the next offset expected, and long polls where no WebSocket API answers.
 */
import { describe, expect, it } from 'vitest';
import { Tributary, type KafkaMessage } from '../../client/index.js';
import { requireTopic } from '../../lib/cluster/metadata.js';
import { listSubscriptions } from '../../lib/storage/coordination/connections.js';
import { baseUrl, call, createTopic, uniqueTopic, v3 } from '../support/api.js';
import { until } from '../support/cluster.js';

/** A fetch that counts the record reads (GET …/records) it sends. */
function counting() {
  const counts = { recordReads: 0 };
  const fetchLike = (input: string, init: RequestInit) => {
    if ((init.method ?? 'GET') === 'GET' && new URL(input).pathname.endsWith('/records')) counts.recordReads++;
    return globalThis.fetch(input, init);
  };
  return { counts, fetchLike };
}

const produce = async (topic: string, partition: number, values: string[]) => {
  for (const v of values) expect((await call('POST', v3(`/topics/${topic}/records`), { partition_id: partition, value: { type: 'STRING', data: v } })).status).toBe(200);
};

async function running(topic: string, o: { websocketUrl?: string | false; transport?: 'auto' | 'websocket' | 'long-poll' } = {}) {
  const { counts, fetchLike } = counting();
  const client = new Tributary({ url: baseUrl(), fetch: fetchLike, ...(o.websocketUrl !== undefined ? { websocketUrl: o.websocketUrl } : {}) });
  const consumer = client.consumer({ groupId: `${topic}-g`, maxWaitTimeInMs: 1000, ...(o.transport ? { transport: o.transport } : {}) });
  const got: { partition: number; message: KafkaMessage }[] = [];
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({ eachMessage: async ({ partition, message }) => { got.push({ partition, message }); } });
  const values = (p: number) => got.filter((g) => g.partition === p).map((g) => g.message.value?.toString());
  const offsets = (p: number) => got.filter((g) => g.partition === p).map((g) => Number(g.message.offset));
  return { consumer, counts, got, values, offsets };
}

describe('SDK consumer over the WebSocket API', () => {
  it('reads pushed records, and while it waits sends no fetch', async () => {
    const topic = uniqueTopic('sdk-ws');
    await createTopic(topic, 2, 3);
    await produce(topic, 0, ['a', 'b']);
    const c = await running(topic);
    try {
      expect(c.consumer.transport).toBe('websocket');
      await until('the records produced before', () => c.values(0).length === 2);
      const before = c.counts.recordReads;
      await new Promise((r) => setTimeout(r, 3000));
      await produce(topic, 1, ['c']);
      await produce(topic, 0, ['d']);
      await until('the records produced after', () => c.values(0).length === 3 && c.values(1).length === 1);
      expect(c.counts.recordReads - before).toBe(0);
      expect(c.counts.recordReads).toBe(0);
      expect(c.values(0)).toEqual(['a', 'b', 'd']);
      expect(c.values(1)).toEqual(['c']);
    } finally {
      await c.consumer.disconnect();
    }
  });

  it('opens a connection the server closed again and resumes every partition at the next offset: nothing lost, nothing twice', async () => {
    const topic = uniqueTopic('sdk-ws-reconnect');
    await createTopic(topic, 1, 3);
    const c = await running(topic);
    try {
      await produce(topic, 0, ['one', 'two']);
      await until('the first records', () => c.values(0).length === 2);
      const { topicId } = (await requireTopic(topic)).topic;
      const [sub] = await listSubscriptions(topicId, 0);
      // API Gateway's DeleteConnection (as its idle timeout or two-hour lifetime would close it).
      const closed = await fetch(`${baseUrl()}/@connections/${encodeURIComponent(sub!.connectionId)}`, { method: 'DELETE' });
      expect(closed.status).toBe(204);
      await produce(topic, 0, ['three', 'four']);
      await until('the records produced while it reconnected', () => c.values(0).length === 4, { ms: 20_000 });
      await produce(topic, 0, ['five']);
      await until('the record after', () => c.values(0).length === 5);
      expect(c.values(0)).toEqual(['one', 'two', 'three', 'four', 'five']);
      expect(c.offsets(0)).toEqual([0, 1, 2, 3, 4]);
      const [again] = await listSubscriptions(topicId, 0);
      expect(again?.connectionId).not.toBe(sub!.connectionId);
      expect(c.consumer.transport).toBe('websocket');
    } finally {
      await c.consumer.disconnect();
    }
  });

  it('long-polls where no WebSocket API answers (auto), and refuses to run when websocket is required', async () => {
    const topic = uniqueTopic('sdk-ws-none');
    await createTopic(topic, 1, 1);
    await produce(topic, 0, ['x']);
    const nowhere = `${baseUrl().replace(/^http/, 'ws')}/not-a-websocket-api`;
    const c = await running(topic, { websocketUrl: nowhere });
    try {
      expect(c.consumer.transport).toBe('long-poll');
      await until('the record', () => c.values(0).length === 1);
      expect(c.counts.recordReads).toBeGreaterThan(0);
    } finally {
      await c.consumer.disconnect();
    }
    await expect(running(`${topic}-b`, { websocketUrl: nowhere, transport: 'websocket' })).rejects.toThrow(/did not accept|closed/);
    const off = await running(`${topic}-c`, { websocketUrl: false });
    expect(off.consumer.transport).toBe('long-poll');
    await off.consumer.disconnect();
  });
});
