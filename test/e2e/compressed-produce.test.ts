/**
 * Produce requests with compressed bodies (`Content-Encoding: gzip` / `deflate`), over raw HTTP and
 * through the SDK's `compression` option: every record of a compressed batch is written; a corrupt
 * body, a decompression bomb and an unknown coding are refused with nothing written.
 */
import { deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { SignatureV4 } from '@smithy/signature-v4';
import { Sha256 } from '@aws-crypto/sha256-js';
import { baseUrl, createTopic, expectError, readRecords, replyOf, uniqueTopic, v3, type Reply } from '../support/api.js';
import { CompressionTypes, Tributary, TributaryError, type FetchLike } from '../../client/index.js';

const BINARY = 'application/octet-stream';

/** POSTs `body` as it is (bytes or text) with `headers`. */
async function post(path: string, body: Uint8Array | string, headers: Record<string, string>): Promise<Reply> {
  return replyOf(await fetch(`${baseUrl()}${path}`, { method: 'POST', headers, body }));
}

const batchOf = (n: number, prefix: string) => ({
  entries: Array.from({ length: n }, (_, i) => ({ id: String(i), partition_id: i % 2, key: { type: 'STRING', data: `k${i}` }, value: { type: 'STRING', data: `${prefix}-${i}` } })),
});

/** Every value in the topic's partitions, in partition then offset order. */
async function values(topic: string, partitions: number): Promise<string[]> {
  const out: string[] = [];
  for (let p = 0; p < partitions; p++) {
    out.push(...(await readRecords(v3(`/topics/${topic}/partitions/${p}/records`))).map((x: { value: { data: string } }) => x.value.data));
  }
  return out;
}

describe('Content-Encoding on produce requests (raw HTTP)', () => {
  it('writes every record of a gzip batch and of a deflate batch, and answers as for the same batch uncompressed', async () => {
    const topic = uniqueTopic('gz-raw');
    await createTopic(topic, 2, 3);
    const gz = await post(v3(`/topics/${topic}/records:batch`), gzipSync(JSON.stringify(batchOf(500, 'gz'))), { 'content-type': BINARY, 'content-encoding': 'gzip' });
    expect(gz.status, gz.text).toBe(207);
    expect(gz.body.failures).toEqual([]);
    expect(gz.body.successes).toHaveLength(500);
    const df = await post(v3(`/topics/${topic}/records:batch`), deflateSync(JSON.stringify(batchOf(300, 'df'))), { 'content-type': BINARY, 'content-encoding': 'deflate' });
    expect(df.status, df.text).toBe(207);
    expect(df.body.successes).toHaveLength(300);
    // identity is no coding at all; gzip applied twice is undone twice.
    const id = await post(v3(`/topics/${topic}/records:batch`), JSON.stringify(batchOf(2, 'id')), { 'content-type': 'application/json', 'content-encoding': 'identity' });
    expect(id.status, id.text).toBe(207);
    const twice = await post(v3(`/topics/${topic}/records:batch`), gzipSync(gzipSync(JSON.stringify(batchOf(2, 'x2')))), { 'content-type': BINARY, 'content-encoding': 'gzip, gzip' });
    expect(twice.status, twice.text).toBe(207);

    const got = await values(topic, 2);
    expect(got).toHaveLength(804);
    const expected = [...batchOf(500, 'gz').entries, ...batchOf(300, 'df').entries, ...batchOf(2, 'id').entries, ...batchOf(2, 'x2').entries].map((e) => e.value.data);
    expect([...got].sort()).toEqual([...expected].sort());
  });

  it('refuses a corrupt gzip body with 400 and writes nothing', async () => {
    const topic = uniqueTopic('gz-bad');
    await createTopic(topic, 2, 3);
    const good = gzipSync(JSON.stringify(batchOf(10, 'bad')));
    const truncated = good.subarray(0, good.length - 12);
    expectError(await post(v3(`/topics/${topic}/records:batch`), truncated, { 'content-type': BINARY, 'content-encoding': 'gzip' }), 400, 40002, /not valid gzip data/);
    // Plain JSON that claims to be gzip.
    expectError(await post(v3(`/topics/${topic}/records:batch`), JSON.stringify(batchOf(10, 'bad')), { 'content-type': BINARY, 'content-encoding': 'gzip' }), 400, 40002, /not valid gzip data/);
    // A text Content-Type makes the gateway hand the body over as UTF-8 text, which the gzip bytes are not: refused, with the fix in the message.
    expectError(await post(v3(`/topics/${topic}/records:batch`), good, { 'content-type': 'application/json', 'content-encoding': 'gzip' }), 400, 40002, /binary Content-Type/);
    expect(await values(topic, 2)).toEqual([]);
  });

  it('refuses a decompression bomb (50 MB of zeros in ~50 KB of gzip) with 413 and writes nothing', async () => {
    const topic = uniqueTopic('gz-bomb');
    await createTopic(topic, 2, 3);
    const bomb = gzipSync(Buffer.alloc(50 * 1024 * 1024), { level: 9 });
    expect(bomb.length).toBeLessThan(100_000);
    expectError(await post(v3(`/topics/${topic}/records:batch`), bomb, { 'content-type': BINARY, 'content-encoding': 'gzip' }), 413, 413, /decompresses to more than/);
    expect(await values(topic, 2)).toEqual([]);
  });

  it('refuses a Content-Encoding it does not know (br, zstd) with 415 and writes nothing', async () => {
    const topic = uniqueTopic('gz-br');
    await createTopic(topic, 2, 3);
    for (const coding of ['br', 'zstd', 'gzip, br']) {
      expectError(await post(v3(`/topics/${topic}/records:batch`), gzipSync(JSON.stringify(batchOf(3, 'br'))), { 'content-type': BINARY, 'content-encoding': coding }), 415, 415, /Unsupported Media Type/);
    }
    expect(await values(topic, 2)).toEqual([]);
  });
});

describe('Producer compression (SDK)', () => {
  /** A client whose fetch counts requests and request body bytes (as sent: compressed when gzip). */
  function counted(): { t: Tributary; sent: { requests: number; bytes: number; produceBodies: number[] } } {
    const sent = { requests: 0, bytes: 0, produceBodies: [] as number[] };
    const countingFetch: FetchLike = async (input, init) => {
      const b = init.body;
      const n = b === undefined || b === null ? 0 : typeof b === 'string' ? Buffer.byteLength(b) : (b as Uint8Array).byteLength;
      sent.requests++;
      sent.bytes += n;
      if (input.includes('/records:batch')) sent.produceBodies.push(n);
      return fetch(input, init);
    };
    return { t: new Tributary({ url: baseUrl(), fetch: countingFetch }), sent };
  }

  it('round-trips 10,000 small records with GZIP in fewer request bytes than without', async () => {
    const results: Record<string, { requests: number; bytes: number; produceBodies: number[] }> = {};
    for (const [name, compression] of [['none', CompressionTypes.None], ['gzip', CompressionTypes.GZIP]] as const) {
      const topic = uniqueTopic(`gz-sdk-${name}`);
      await createTopic(topic, 3, 3);
      const { t, sent } = counted();
      const producer = t.producer({ compression, lingerMs: 20 });
      await producer.connect();
      const messages = Array.from({ length: 10_000 }, (_, i) => ({ key: `user-${i % 100}`, value: JSON.stringify({ id: i, event: 'click', page: `/p/${i % 37}` }) }));
      const meta = await producer.send({ topic, messages });
      expect(meta.reduce((n, m) => n + m.offsets.length, 0)).toBe(10_000);
      await producer.disconnect();
      const got = await values(topic, 3);
      expect(got).toHaveLength(10_000);
      expect(new Set(got)).toEqual(new Set(messages.map((m) => m.value)));
      results[name] = sent;
    }
    const none = results.none!;
    const gzip = results.gzip!;
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    // The numbers docs/compression.md quotes.
    console.log(`[compressed-produce] 10,000 records: none ${none.produceBodies.length} produce requests, ${sum(none.produceBodies)} body bytes (${none.produceBodies.join(', ')}); `
      + `gzip ${gzip.produceBodies.length} requests, ${sum(gzip.produceBodies)} body bytes (${gzip.produceBodies.join(', ')})`);
    expect(gzip.produceBodies.length).toBe(none.produceBodies.length);
    expect(sum(gzip.produceBodies)).toBeLessThan(sum(none.produceBodies) / 3);
  });

  it('gzips the requests of a send that asks for GZIP (kafkajs\'s per-send option) on an uncompressed producer', async () => {
    const topic = uniqueTopic('gz-send');
    await createTopic(topic, 1, 3);
    const seen: Record<string, string>[] = [];
    const t = new Tributary({
      url: baseUrl(),
      fetch: async (input, init) => {
        if (input.includes('/records:batch')) seen.push({ ...(init.headers as Record<string, string>) });
        return fetch(input, init);
      },
    });
    const producer = t.producer();
    await producer.send({ topic, compression: CompressionTypes.GZIP, messages: [{ value: 'a' }, { value: 'b' }] });
    await producer.send({ topic, messages: [{ value: 'c' }] });
    await producer.disconnect();
    expect(seen.map((h) => h['content-encoding'])).toEqual(['gzip', undefined]);
    expect(seen.map((h) => h['content-type'])).toEqual([BINARY, 'application/json']);
    expect(await values(topic, 1)).toEqual(['a', 'b', 'c']);
  });

  it('refuses Snappy, LZ4 and ZSTD clearly: at producer creation, and on a send that asks for one', async () => {
    const t = new Tributary({ url: baseUrl() });
    for (const c of [CompressionTypes.Snappy, CompressionTypes.LZ4, CompressionTypes.ZSTD, 9]) {
      expect(() => t.producer({ compression: c })).toThrow(TributaryError);
    }
    expect(() => t.producer({ compression: CompressionTypes.LZ4 })).toThrow(/LZ4 is not supported over HTTP/);
    const topic = uniqueTopic('gz-lz4');
    await createTopic(topic, 1, 3);
    const producer = t.producer({ idempotent: false });
    await expect(producer.send({ topic, compression: CompressionTypes.ZSTD, messages: [{ value: 'z' }] })).rejects.toThrow(/ZSTD is not supported over HTTP/);
    await producer.disconnect();
    expect(await values(topic, 1)).toEqual([]);
  });

  it('signs (SigV4) the compressed bytes it sends, and the cluster writes them', async () => {
    const topic = uniqueTopic('gz-iam');
    await createTopic(topic, 1, 3);
    const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
    const sent: { url: string; headers: Record<string, string>; body: Uint8Array }[] = [];
    const t = new Tributary({
      url: baseUrl(),
      auth: { type: 'iam', region: 'us-east-1', credentials },
      fetch: async (input, init) => {
        if (input.includes('/records:batch')) sent.push({ url: input, headers: { ...(init.headers as Record<string, string>) }, body: init.body as Uint8Array });
        return fetch(input, init);
      },
    });
    const producer = t.producer({ compression: CompressionTypes.GZIP, idempotent: false });
    await producer.send({ topic, messages: [{ value: 'signed' }] });
    await producer.disconnect();
    expect(sent).toHaveLength(1);
    const [{ url, headers, body }] = sent as [typeof sent[0]];
    expect(body).toBeInstanceOf(Uint8Array);
    expect(body[0]).toBe(0x1f); // gzip's magic bytes
    expect(body[1]).toBe(0x8b);
    const u = new URL(url);
    const d = headers['x-amz-date'] as string;
    const signingDate = new Date(`${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)}T${d.slice(9, 11)}:${d.slice(11, 13)}:${d.slice(13, 15)}Z`);
    const { authorization: _a, 'x-amz-date': _d, 'x-amz-content-sha256': _h, ...unsigned } = headers;
    const reference = await new SignatureV4({ service: 'execute-api', region: 'us-east-1', credentials, sha256: Sha256 }).sign({
      method: 'POST', protocol: u.protocol, hostname: u.hostname, port: Number(u.port), path: u.pathname, query: Object.fromEntries(u.searchParams),
      headers: { ...unsigned, host: u.host }, body,
    }, { signingDate });
    expect(headers.authorization).toBe(reference.headers.authorization);
    expect(headers['x-amz-content-sha256']).toBe(Buffer.from(await crypto.subtle.digest('SHA-256', body)).toString('hex'));
    expect(await values(topic, 1)).toEqual(['signed']);
  });
});
