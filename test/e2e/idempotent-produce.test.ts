/**
 * The idempotent producer over HTTP against the shared stack: `POST .../producers` hands out a
 * producer id and epoch; records carrying `sequence` with `producer_id`/`producer_epoch` in the
 * query string are written once however often they are sent; gaps, stale epochs and old
 * sequences get Kafka's errors. And `acks=0`: 202 with no offsets, and the record does arrive.
 */
import { describe, expect, it } from 'vitest';
import { call, createTopic, uniqueTopic, v3 } from '../support/api.js';

const rec = (sequence: number, value = `v${sequence}`) => ({ partition_id: 0, sequence, value: { type: 'STRING', data: value } });
const lines = (text: string) => text.trim().split('\n').map((l) => JSON.parse(l));

async function newProducer(producerId?: number): Promise<{ producer_id: number; producer_epoch: number }> {
  const r = await call('POST', v3('/producers'), producerId === undefined ? undefined : { producer_id: producerId });
  expect(r.status).toBe(200);
  expect(r.body).toMatchObject({ kind: 'KafkaProducerId', producer_id: expect.any(Number), producer_epoch: expect.any(Number) });
  return r.body;
}

async function send(topic: string, p: { producer_id: number; producer_epoch: number }, records: object[], extra = '') {
  const body = records.map((r) => JSON.stringify(r)).join('\n');
  return call('POST', v3(`/topics/${topic}/records?producer_id=${p.producer_id}&producer_epoch=${p.producer_epoch}${extra}`), body);
}

async function readValues(topic: string): Promise<string[]> {
  const r = await call('GET', v3(`/topics/${topic}/partitions/0/records?offset=0&max_bytes=1048576&format=string`));
  expect(r.status).toBe(200);
  return r.body.records.map((x: { value: { data: string } }) => x.value.data);
}

describe('Idempotent produce over HTTP', () => {
  it('where a request is sent again (its response was lost), the retry returns the original offsets and writes nothing', async () => {
    const topic = uniqueTopic('idem-http');
    await createTopic(topic, 1, 3);
    const p = await newProducer();
    const first = await send(topic, p, [rec(0), rec(1), rec(2)]);
    expect(first.status).toBe(200);
    expect(lines(first.text).map((d) => d.offset)).toEqual([0, 1, 2]);
    const retry = await send(topic, p, [rec(0), rec(1), rec(2)]);
    expect(lines(retry.text).map((d) => [d.error_code, d.offset])).toEqual([[200, 0], [200, 1], [200, 2]]);
    const next = await send(topic, p, [rec(3)]);
    expect(next.status).toBe(200);
    expect(next.body.offset).toBe(3);
    expect(await readValues(topic)).toEqual(['v0', 'v1', 'v2', 'v3']);
  });

  it('where a request is split into more batches than the dedup window by a small max.message.bytes, its retry still returns every original offset', async () => {
    const topic = uniqueTopic('idem-split');
    await createTopic(topic, 1, 1, [{ name: 'max.message.bytes', value: '120' }]);
    const p = await newProducer();
    const records = Array.from({ length: 12 }, (_, i) => rec(i));
    const first = await send(topic, p, records);
    expect(lines(first.text).map((d) => d.offset)).toEqual(Array.from({ length: 12 }, (_, i) => i));
    const retry = await send(topic, p, records);
    expect(lines(retry.text).map((d) => d.offset)).toEqual(Array.from({ length: 12 }, (_, i) => i));
    expect(await readValues(topic)).toHaveLength(12);
  });

  it('refuses a gap with OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch with INVALID_PRODUCER_EPOCH, and writes nothing for either', async () => {
    const topic = uniqueTopic('idem-errors');
    await createTopic(topic, 1, 1);
    const p = await newProducer();
    expect((await send(topic, p, [rec(0)])).status).toBe(200);
    const gap = await send(topic, p, [rec(2)]);
    expect(gap.status).toBe(409);
    expect(gap.text).toContain('OUT_OF_ORDER_SEQUENCE_NUMBER');
    const bumped = await newProducer(p.producer_id);
    expect(bumped.producer_epoch).toBe(p.producer_epoch + 1);
    expect((await send(topic, bumped, [rec(0, 'new-epoch')])).body.offset).toBe(1);
    const stale = await send(topic, p, [rec(1)]);
    expect(stale.status).toBe(409);
    expect(stale.text).toContain('INVALID_PRODUCER_EPOCH');
    expect(await readValues(topic)).toEqual(['v0', 'new-epoch']);
  });

  it('refuses records without a sequence, and a sequence without a producer, as invalid payloads (422)', async () => {
    const topic = uniqueTopic('idem-shape');
    await createTopic(topic, 1, 1);
    const p = await newProducer();
    expect((await send(topic, p, [{ partition_id: 0, value: { type: 'STRING', data: 'x' } }])).status).toBe(422);
    expect((await call('POST', v3(`/topics/${topic}/records`), rec(0))).status).toBe(422);
    expect(await readValues(topic)).toEqual([]);
  });
});

describe('Produce with acks=0', () => {
  it('answers 202 with no offsets, and the record arrives', async () => {
    const topic = uniqueTopic('acks0');
    await createTopic(topic, 1, 3);
    const r = await call('POST', v3(`/topics/${topic}/records?acks=0`), { partition_id: 0, value: { type: 'STRING', data: 'fire-and-forget' } });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ error_code: 202, partition_id: 0, offset: null, timestamp: null });
    // Written to the leader before the answer; readable once the replicator commits it: poll, bounded.
    let values: string[] = [];
    for (let i = 0; i < 100 && values.length === 0; i++) {
      values = await readValues(topic);
      if (values.length === 0) await new Promise((res) => setTimeout(res, 100));
    }
    expect(values).toEqual(['fire-and-forget']);
  });
});
