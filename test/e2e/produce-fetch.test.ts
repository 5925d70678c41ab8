/**
 * The walking skeleton end to end: a 3-partition, RF 3 topic; 1,000 keyed
 * records produced in one batch and one at a time (streaming mode); every record read back from
 * the partition Kafka's partitioner picks, with its key, value, headers and offset.
 */
import { createRequire } from 'node:module';
import type * as Kafkajs from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { MAX_WAIT_MS } from '../../lib/http/fetch-routes.js';
import { call, createTopic, readRecords, uniqueTopic, v3 } from '../support/api.js';

// kafkajs is the oracle for Kafka's default partitioner (a dev dependency only).
const require = createRequire(import.meta.url);
const { Partitioners } = require('kafkajs') as typeof Kafkajs;
const kafkaPartition = Partitioners.DefaultPartitioner();
const expectedPartition = (key: string, n: number): number => kafkaPartition({
  topic: 't', message: { key, value: null },
  partitionMetadata: Array.from({ length: n }, (_, partitionId) => ({ partitionId, leader: 1, replicas: [], isr: [], partitionErrorCode: 0 })),
});

interface Sent { key: string; value: string; header: string }

describe('Produce and fetch over HTTP', () => {
  it('reads back 1,000 keyed records from the partitions Kafka would pick, with keys, values, headers and offsets', async () => {
    const topic = uniqueTopic('skeleton');
    await createTopic(topic, 3, 3);
    const sent: Sent[] = Array.from({ length: 1000 }, (_, i) => ({ key: `key-${i % 97}`, value: `value-${i}`, header: Buffer.from(`h${i}`).toString('base64') }));
    const asRecord = (s: Sent) => ({ key: { type: 'STRING', data: s.key }, value: { type: 'STRING', data: s.value }, headers: [{ name: 'seq', value: s.header }] });

    // 950 in one records:batch request...
    const batch = await call('POST', v3(`/topics/${topic}/records:batch`), { entries: sent.slice(0, 950).map((s, i) => ({ id: String(i), ...asRecord(s) })) });
    expect(batch.status).toBe(207);
    expect(batch.body.failures).toEqual([]);
    expect(batch.body.successes).toHaveLength(950);
    // ...and 50 one at a time, 10 requests in flight. (Each of the 10 is its own Lambda instance
    // committing acks=all alone, which costs several times what one process committing for all
    // ten did: see "Lambda-fidelity mode" in docs/architecture.md.)
    const single: any[] = new Array(50);
    for (let i = 950; i < 1000; i += 10) {
      await Promise.all(sent.slice(i, i + 10).map(async (s, j) => {
        const r = await call('POST', v3(`/topics/${topic}/records`), asRecord(s));
        expect(r.status).toBe(200);
        single[i - 950 + j] = r.body;
      }));
    }
    const reports = [...batch.body.successes, ...single];
    reports.forEach((rep, i) => {
      expect(rep.error_code).toBe(200);
      expect(rep.partition_id).toBe(expectedPartition((sent[i] as Sent).key, 3));
    });

    const byPartition = await Promise.all([0, 1, 2].map((p) => readRecords(v3(`/topics/${topic}/partitions/${p}/records`), { maxBytes: 65536 })));
    expect(byPartition.flat()).toHaveLength(1000);
    for (const [p, records] of byPartition.entries()) {
      records.forEach((rec, offset) => expect(rec.offset).toBe(offset));
      for (const rec of records) {
        const i = reports.findIndex((rep) => rep.partition_id === p && rep.offset === rec.offset);
        const s = sent[i] as Sent;
        expect(rec.key).toEqual({ type: 'STRING', data: s.key });
        expect(rec.value).toEqual({ type: 'STRING', data: s.value });
        expect(rec.headers).toEqual([{ name: 'seq', value: s.header }]);
      }
    }
    // The first 950 came in one request: each partition's share of them is one contiguous run of offsets.
    for (let p = 0; p < 3; p++) {
      const offsets = batch.body.successes.filter((s: any) => s.partition_id === p).map((s: any) => s.offset);
      expect(offsets).toEqual(offsets.map((_: number, i: number) => i));
    }
  });

  it('gives one delivery report per record, in order, in streaming mode', async () => {
    const topic = uniqueTopic('stream');
    await createTopic(topic, 1, 1);
    const body = [1, 2, 3].map((n) => JSON.stringify({ value: { type: 'JSON', data: { n } } })).join('\n');
    const r = await call('POST', v3(`/topics/${topic}/records`), body);
    expect(r.status).toBe(200);
    const reports = r.text.trim().split('\n').map((l) => JSON.parse(l));
    expect(reports.map((x) => x.offset)).toEqual([0, 1, 2]);
    const read = await call('GET', `/topics/${topic}/partitions/0/records?offset=0`, undefined, { accept: 'application/vnd.kafka.json.v2+json' });
    expect(read.headers.get('content-type')).toBe('application/vnd.kafka.json.v2+json');
    expect(read.body.map((x: any) => x.value)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
  });

  it('accepts the v2 produce forms and reads them back in binary', async () => {
    const topic = uniqueTopic('v2');
    await createTopic(topic, 2, 2);
    const bin = await call('POST', `/topics/${topic}`, { records: [{ key: 'a2V5', value: 'dmFsdWU=', partition: 1 }] }, { 'content-type': 'application/vnd.kafka.binary.v2+json' });
    expect(bin.status).toBe(200);
    expect(bin.body.offsets).toEqual([{ partition: 1, offset: 0, error_code: null, error: null }]);
    const json = await call('POST', `/topics/${topic}/partitions/1`, { records: [{ value: { x: 1 } }] }, { 'content-type': 'application/vnd.kafka.json.v2+json' });
    expect(json.body.offsets[0]).toMatchObject({ partition: 1, offset: 1 });
    const read = await call('GET', `/topics/${topic}/partitions/1/records?offset=0`, undefined, { accept: 'application/vnd.kafka.binary.v2+json' });
    expect(read.body).toHaveLength(2);
    expect(read.body[0]).toMatchObject({ topic, partition: 1, offset: 0, key: 'a2V5', value: 'dmFsdWU=' });
    expect(Buffer.from(read.body[1].value, 'base64').toString()).toBe('{"x":1}');
  });

  it('keeps batches larger than inline.max.bytes in S3 and reads them back byte for byte', async () => {
    const topic = uniqueTopic('large');
    await createTopic(topic, 1, 1, [{ name: 'inline.max.bytes', value: '1024' }]);
    const big = Buffer.alloc(200_000, 7).toString('base64');
    const r = await call('POST', v3(`/topics/${topic}/records`), { value: { type: 'BINARY', data: big } });
    expect(r.status).toBe(200);
    const small = await call('POST', v3(`/topics/${topic}/records`), { value: { type: 'STRING', data: 'small' } });
    expect(small.body.offset).toBe(1);
    const read = await call('GET', v3(`/topics/${topic}/partitions/0/records?offset=0`));
    expect(read.body.records.map((x: any) => x.offset)).toEqual([0, 1]);
    expect(read.body.records[0].value.data).toBe(big);
  });

  it("stops a fetch at what fits Lambda's 6 MB response (records that grow 9× as JSON), and the reader goes on from next_offset", async () => {
    const topic = uniqueTopic('fits');
    await createTopic(topic, 1, 1);
    // Each record: 100 empty headers, ~300 bytes in its batch and ~3 KB as JSON.
    const headers = Array.from({ length: 100 }, () => ({ name: 'h', value: null }));
    for (let i = 0; i < 2; i++) {
      const body = { entries: Array.from({ length: 1500 }, (_, j) => ({ id: String(j), partition_id: 0, value: { type: 'STRING', data: `r${i * 1500 + j}` }, headers })) };
      const r = await call('POST', v3(`/topics/${topic}/records:batch`), body);
      expect(r.status, r.text.slice(0, 300)).toBe(207);
      expect(r.body.failures, r.text.slice(0, 300)).toEqual([]);
    }
    const inResponse = (text: string) => Buffer.byteLength(JSON.stringify({ statusCode: 200, body: text }));
    const first = await call('GET', v3(`/topics/${topic}/partitions/0/records?offset=0&max_bytes=4000000&format=string`));
    expect(first.status).toBe(200);
    expect(inResponse(first.text)).toBeLessThanOrEqual(6_291_456);
    const got = first.body.records.length;
    expect(got).toBeGreaterThan(1);
    expect(got).toBeLessThan(3000);
    expect(first.body.next_offset).toBe(got);
    const rest = await call('GET', v3(`/topics/${topic}/partitions/0/records?offset=${got}&max_bytes=4000000&format=string`));
    expect(inResponse(rest.text)).toBeLessThanOrEqual(6_291_456);
    expect(rest.body.records[0].offset).toBe(got);
    const v2 = await call('GET', `/topics/${topic}/partitions/0/records?offset=0&max_bytes=4000000`, undefined, { accept: 'application/vnd.kafka.binary.v2+json' });
    expect(v2.status).toBe(200);
    expect(inResponse(v2.text)).toBeLessThanOrEqual(6_291_456);
    expect(v2.body.length).toBeGreaterThan(1);
    expect(v2.body.length).toBeLessThan(3000);
  });

  it('long-polls: a fetch at the end waits and returns when a record arrives, before its timeout', async () => {
    const topic = uniqueTopic('poll');
    await createTopic(topic, 1, 1);
    const started = Date.now();
    const pending = call('GET', v3(`/topics/${topic}/partitions/0/records?offset=0&timeout=${MAX_WAIT_MS}&format=string`));
    // With nothing to read, the fetch does not answer (however slow the machine, it cannot answer early).
    const early = await Promise.race([pending.then(() => 'answered'), new Promise((r) => setTimeout(() => r('waiting'), 300))]);
    expect(early).toBe('waiting');
    await call('POST', v3(`/topics/${topic}/records`), { value: { type: 'STRING', data: 'late' } });
    const r = await pending;
    expect(r.body.records.map((x: any) => x.value.data)).toEqual(['late']);
    // The longest wait allowed: an answer before it came from the record, not the timer.
    expect(Date.now() - started).toBeLessThan(MAX_WAIT_MS);
  });

  it('lists offsets: earliest, latest and by timestamp', async () => {
    const topic = uniqueTopic('offsets');
    await createTopic(topic, 1, 1);
    const base = Date.parse('2026-01-01T00:00:00Z');
    for (let i = 0; i < 5; i++) {
      await call('POST', v3(`/topics/${topic}/records`), { value: { type: 'STRING', data: `v${i}` }, timestamp: new Date(base + i * 1000).toISOString() });
    }
    const at = (spec: string) => call('GET', v3(`/topics/${topic}/partitions/0/offsets?timestamp=${spec}`));
    expect((await at('earliest')).body.offset).toBe(0);
    expect((await at('latest')).body.offset).toBe(5);
    expect((await at(String(base + 2500))).body).toMatchObject({ offset: 3, timestamp: new Date(base + 3000).toISOString() });
    expect((await at(String(base + 60_000))).body.offset).toBeNull();
    const v2 = await call('GET', `/topics/${topic}/partitions/0/offsets`);
    expect(v2.body).toEqual({ beginning_offset: 0, end_offset: 5 });
  });
});
