/**
 * The request, record, header and batch limits (docs/security.md, "Limits") over HTTP: each
 * over-the-limit request answers 413 or 422 with a message naming the limit, and writes nothing.
 * (The 6 MiB body, the 12 MiB decompressed body and a topic's own max.message.bytes are tested in
 * bad-input.test.ts and compressed-produce.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { MAX_HEADER_KEY_BYTES, MAX_HEADERS_PER_RECORD } from '../../lib/http/record-format.js';
import { MAX_BATCH_ENTRIES, MAX_RECORDS_PER_REQUEST } from '../../lib/http/produce-routes.js';
import { call, createTopic, expectError, uniqueTopic, v3 } from '../support/api.js';

async function latest(topic: string): Promise<number> {
  const r = await call('GET', v3(`/topics/${topic}/partitions/0/offset`));
  expect(r.status, r.text).toBe(200);
  return r.body.latest_offset;
}

describe('Limits on produce requests', () => {
  it('refuses over-the-limit records, headers and batches with 413/422 and writes nothing', async () => {
    const topic = uniqueTopic('limits');
    await createTopic(topic, 1, 1);
    const records = v3(`/topics/${topic}/records`);

    // max.message.bytes (1048588 by default, Kafka's): a value that cannot fit a batch alone.
    expectError(await call('POST', records, { value: { type: 'STRING', data: 'x'.repeat(1_048_600) } }), 413, 41301, /MESSAGE_TOO_LARGE.*max\.message\.bytes \(1048588\)/);

    const header = (name: string) => ({ name, value: null });
    expectError(await call('POST', records, { value: { type: 'STRING', data: 'v' }, headers: Array.from({ length: MAX_HEADERS_PER_RECORD + 1 }, (_, i) => header(`h${i}`)) }),
      422, 42206, new RegExp(`at most ${MAX_HEADERS_PER_RECORD} headers`));
    expectError(await call('POST', records, { value: { type: 'STRING', data: 'v' }, headers: [header('k'.repeat(MAX_HEADER_KEY_BYTES + 1))] }),
      422, 42206, new RegExp(`at most ${MAX_HEADER_KEY_BYTES} bytes`));
    // Bytes, not characters: 8193 two-byte characters are over 16384 bytes.
    expectError(await call('POST', records, { value: { type: 'STRING', data: 'v' }, headers: [header('é'.repeat(MAX_HEADER_KEY_BYTES / 2 + 1))] }),
      422, 42206, /header name/);

    const many = Array.from({ length: MAX_RECORDS_PER_REQUEST + 1 }, () => '{"value":null}').join('\n');
    expectError(await call('POST', records, many), 422, 42206, new RegExp(`at most ${MAX_RECORDS_PER_REQUEST} records`));
    expectError(await call('POST', `${records}:batch`, { entries: Array.from({ length: MAX_BATCH_ENTRIES + 1 }, (_, i) => ({ id: i })) }),
      422, 42206, /entries/);
    const v2 = await call('POST', `/topics/${topic}`, { records: Array.from({ length: MAX_RECORDS_PER_REQUEST + 1 }, () => ({ value: 1 })) },
      { 'content-type': 'application/vnd.kafka.json.v2+json' });
    expect(v2.status, v2.text.slice(0, 300)).toBe(422);
    expect(v2.body.error_code).toBe(42206);

    expect(await latest(topic)).toBe(0);

    // At the limits, everything passes.
    const ok = await call('POST', records, { value: { type: 'STRING', data: 'v' }, headers: [header('k'.repeat(MAX_HEADER_KEY_BYTES)), ...Array.from({ length: MAX_HEADERS_PER_RECORD - 1 }, (_, i) => header(`h${i}`))] });
    expect(ok.status, ok.text).toBe(200);
    const full = await call('POST', records, Array.from({ length: MAX_RECORDS_PER_REQUEST }, () => '{"value":null}').join('\n'));
    expect(full.status).toBe(200);
    expect(await latest(topic)).toBe(1 + MAX_RECORDS_PER_REQUEST);
  });
});
