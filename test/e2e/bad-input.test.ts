/**
 * Invariant 7 (docs/architecture.md, "Invariants"): bad input gets a clear 4xx with a Kafka-style error code and changes
 * nothing; no input crashes a handler. Tables of bad requests for every route, each checked for
 * its status, REST Proxy's error body `{error_code, message}` and — for produce — an unchanged log
 * end offset; then a property: no JSON value or string sent as a record answers 5xx or writes
 * anything unless it is a valid record.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { call, createTopic, uniqueTopic, v3, type Reply } from '../support/api.js';

/** The topic every case aims at: 2 partitions, max.message.bytes 10000, one record in each. */
const T = uniqueTopic('bad-input');
const PARTITIONS = 2;
const MAX_MESSAGE_BYTES = 10_000;
const BIN = { 'content-type': 'application/vnd.kafka.binary.v2+json' };
const JSON_V2 = { 'content-type': 'application/vnd.kafka.json.v2+json' };
const REST_CODE: Record<number, number> = { 400: 40002, 422: 42206 };

beforeAll(async () => {
  await createTopic(T, PARTITIONS, 1, [{ name: 'max.message.bytes', value: String(MAX_MESSAGE_BYTES) }]);
  for (let p = 0; p < PARTITIONS; p++) {
    const r = await call('POST', v3(`/topics/${T}/records`), { partition_id: p, value: { type: 'STRING', data: `seed-${p}` } });
    expect(r.status, r.text).toBe(200);
  }
});

async function endOffsets(topic = T): Promise<number[]> {
  const r = await call('GET', v3(`/topics/${topic}/partitions`));
  expect(r.status, r.text).toBe(200);
  return r.body.data.map((p: any) => p.log_end_offset);
}

/** A 4xx (never a 5xx) with exactly REST Proxy's error body, and the status, code and message asked for. */
function expectRejected(r: Reply, expected: { status?: number | number[]; code?: number; message?: RegExp } = {}): void {
  expect(r.status, r.text).toBeGreaterThanOrEqual(400);
  expect(r.status, r.text).toBeLessThan(500);
  expect(r.body, r.text).toEqual({ error_code: expect.any(Number), message: expect.any(String) });
  expect(r.body.message.length).toBeGreaterThan(0);
  if (Array.isArray(expected.status)) expect(expected.status, r.text).toContain(r.status);
  else if (expected.status !== undefined) expect(r.status, r.text).toBe(expected.status);
  const code = expected.code ?? REST_CODE[r.status];
  if (code !== undefined) expect(r.body.error_code, r.text).toBe(code);
  if (expected.message) expect(r.body.message).toMatch(expected.message);
}

/** Runs a produce request and asserts it was rejected and wrote nothing to T. */
async function expectNothingWritten(request: () => Promise<Reply>, expected: Parameters<typeof expectRejected>[1] = {}): Promise<void> {
  const before = await endOffsets();
  const r = await request();
  expectRejected(r, expected);
  expect(await endOffsets()).toEqual(before);
}

const record = (r: Record<string, unknown>): string => JSON.stringify(r);
const str = (data: string) => ({ type: 'STRING', data });
const deepJson = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

/** The cluster config the broker routes aim at; no other test file sets it (cluster-configs.test.ts sets and resets the others). */
const WATCHED_BROKER_CONFIG = 'leader.imbalance.check.interval.seconds';

interface BodyRoute {
  readonly route: string;
  readonly method: 'POST' | 'PUT' | 'PATCH';
  readonly path: () => string;
  readonly headers: Record<string, string>;
  /** A produce route: nothing may be written. */
  readonly produces: boolean;
}

const BODY_ROUTES: readonly BodyRoute[] = [
  { route: 'POST v3 records', method: 'POST', path: () => v3(`/topics/${T}/records`), headers: {}, produces: true },
  { route: 'POST v3 records:batch', method: 'POST', path: () => v3(`/topics/${T}/records:batch`), headers: {}, produces: true },
  { route: 'POST v2 /topics/{t}', method: 'POST', path: () => `/topics/${T}`, headers: BIN, produces: true },
  { route: 'POST v2 /topics/{t}/partitions/{p}', method: 'POST', path: () => `/topics/${T}/partitions/0`, headers: JSON_V2, produces: true },
  { route: 'POST v3 topics', method: 'POST', path: () => v3('/topics'), headers: {}, produces: false },
  { route: 'PUT v3 topic config', method: 'PUT', path: () => v3(`/topics/${T}/configs/retention.ms`), headers: {}, produces: false },
  { route: 'POST v3 configs:alter', method: 'POST', path: () => v3(`/topics/${T}/configs:alter`), headers: {}, produces: false },
  { route: 'PATCH v3 topic (partition count)', method: 'PATCH', path: () => v3(`/topics/${T}`), headers: {}, produces: false },
  { route: 'PUT v3 broker config', method: 'PUT', path: () => v3(`/broker-configs/${WATCHED_BROKER_CONFIG}`), headers: {}, produces: false },
  { route: 'POST v3 broker-configs:alter', method: 'POST', path: () => v3('/broker-configs:alter'), headers: {}, produces: false },
];

/** Bodies no route accepts, and the statuses they may get. */
const BAD_BODIES: readonly [string, string, number[]][] = [
  ['malformed JSON', '{"value": {', [400]],
  ['text that is not JSON', 'hello', [400]],
  ['an empty body', '', [400]],
  ['whitespace only', ' \n\t ', [400]],
  ['an empty array', '[]', [422]],
  ['an array of objects', '[{"value":null}]', [422]],
  ['a JSON string', '"records"', [400, 422]],
  ['a JSON number', '42', [400, 422]],
  ['JSON null', 'null', [400, 422]],
  ['nested garbage', '{"a":{"b":[{"c":null,"d":[1,{"e":{}}]}]}}', [422]],
  ['a non-breaking space before a document', '\u00a0{}', [400]],
];

describe('Invariant 7: malformed and mis-shaped bodies, on every route that takes one', () => {
  const cases = BODY_ROUTES.flatMap((route) => BAD_BODIES.map(([what, body, statuses]) => ({ ...route, what, body, statuses })));

  it.each(cases)('$route with $what: 4xx, nothing changed', async ({ method, path, headers, body, statuses, produces }) => {
    const configs = async () => [
      (await call('GET', v3(`/topics/${T}/configs`))).body.data,
      (await call('GET', v3(`/topics/${T}`))).body.partitions_count,
      (await call('GET', v3(`/broker-configs/${WATCHED_BROKER_CONFIG}`))).body,
    ];
    const before = produces ? undefined : await configs();
    if (produces) await expectNothingWritten(() => call(method, path(), body, headers), { status: statuses });
    else {
      expectRejected(await call(method, path(), body, headers), { status: statuses });
      expect(await configs()).toEqual(before);
    }
  });
});

describe('Invariant 7: v3 single-record produce', () => {
  const R = () => v3(`/topics/${T}/records`);
  const big = 'x'.repeat(2 * MAX_MESSAGE_BYTES);
  const cases: [string, string, { status: number; code?: number; message?: RegExp }][] = [
    ['an unknown value type name', record({ value: { type: 'FOO', data: 'x' } }), { status: 422, message: /BINARY, JSON or STRING/ }],
    ['an unknown type name and no data', record({ value: { type: 'FOO' } }), { status: 422, message: /BINARY, JSON or STRING/ }],
    ['a lower-case unknown key type', record({ key: { type: 'bytes', data: 'eA==' } }), { status: 422 }],
    ['a schema registry type whose subject has no schema', record({ key: { type: 'AVRO', data: 'x' } }), { status: 404, code: 40401, message: /-key' not found/ }],
    ['a number as the type', record({ value: { type: 5, data: 'x' } }), { status: 422 }],
    ['a bare string as the value', record({ value: 'plain' }), { status: 422 }],
    ['a number as STRING data', record({ value: { type: 'STRING', data: 5 } }), { status: 422, message: /must be a string/ }],
    ['invalid base64 as BINARY data', record({ value: { type: 'BINARY', data: '!!!' } }), { status: 422, message: /base64/ }],
    ['unpadded base64 as BINARY data', record({ value: { type: 'BINARY', data: 'YQ' } }), { status: 422, message: /base64/ }],
    ['base64 with a space as BINARY key', record({ key: { type: 'BINARY', data: 'YW Jj' } }), { status: 422, message: /base64/ }],
    ['a number as BINARY data', record({ value: { type: 'BINARY', data: 12 } }), { status: 422, message: /base64/ }],
    ['a header value that is not base64', record({ value: str('x'), headers: [{ name: 'h', value: 'not base64!' }] }), { status: 422, message: /headers\.0\.value/ }],
    ['a header without a name', record({ headers: [{ value: 'eA==' }] }), { status: 422 }],
    ['a header with an empty name', record({ headers: [{ name: '', value: 'eA==' }] }), { status: 422 }],
    ['a header with a number as name', record({ headers: [{ name: 1, value: 'eA==' }] }), { status: 422 }],
    ['headers as an object', record({ headers: { h: 'eA==' } }), { status: 422 }],
    ['a header with an unknown field', record({ headers: [{ name: 'h', value: 'eA==', type: 'x' }] }), { status: 422 }],
    ['a timestamp that is not a date', record({ value: str('x'), timestamp: 'yesterday' }), { status: 422, message: /timestamp/ }],
    ['a negative timestamp', record({ value: str('x'), timestamp: -1 }), { status: 422, message: /timestamp/ }],
    ['a fractional timestamp', record({ value: str('x'), timestamp: 1.5 }), { status: 422, message: /timestamp/ }],
    ['an impossible date', record({ value: str('x'), timestamp: '2026-13-45T00:00:00Z' }), { status: 422, message: /timestamp/ }],
    ['a date before 1970', record({ value: str('x'), timestamp: '1969-12-31T23:59:59Z' }), { status: 422, message: /timestamp/ }],
    ['a timestamp after the last Date', record({ value: str('x'), timestamp: 9_000_000_000_000_000 }), { status: 422, message: /timestamp/ }],
    ['a boolean timestamp', record({ value: str('x'), timestamp: true }), { status: 422 }],
    ['partition_id -1', record({ partition_id: -1, value: str('x') }), { status: 404, code: 40402, message: /UNKNOWN_TOPIC_OR_PARTITION/ }],
    ['partition_id beyond the partitions', record({ partition_id: PARTITIONS, value: str('x') }), { status: 404, code: 40402, message: /UNKNOWN_TOPIC_OR_PARTITION/ }],
    ['partition_id 2^31', record({ partition_id: 2 ** 31, value: str('x') }), { status: 404, code: 40402 }],
    ['partition_id 1.5', record({ partition_id: 1.5, value: str('x') }), { status: 422, message: /partition_id/ }],
    ['partition_id as a string', record({ partition_id: '0', value: str('x') }), { status: 422, message: /partition_id/ }],
    ['partition_id 99999999999999999999', '{"partition_id":99999999999999999999}', { status: 422, message: /partition_id/ }],
    ['an unknown top-level field', record({ value: str('x'), partition: 0 }), { status: 422, message: /partition/ }],
    ['an unknown field inside the value', record({ value: { ...str('x'), encoding: 'utf8' } }), { status: 422 }],
    ['a "__proto__" field', '{"__proto__":{"value":null}}', { status: 422, message: /__proto__/ }],
    ['JSON data nested 20,000 deep', `{"value":{"type":"JSON","data":${deepJson(20_000)}}}`, { status: 422, message: /deeper/ }],
    ['a record larger than max.message.bytes', record({ value: str(big) }), { status: 413, code: 41301, message: /MESSAGE_TOO_LARGE.*10000/ }],
    ['a record then garbage (streaming mode)', '{"value":null} garbage', { status: 400 }],
    ['a string before a record (streaming mode)', '"junk"{"value":null}', { status: 400 }],
    ['unbalanced braces (streaming mode)', '{"value":null}}', { status: 400 }],
    ['a truncated second record (streaming mode)', '{"value":null}\n{"value":', { status: 400 }],
  ];

  it.each(cases)('%s: 4xx, nothing written', async (_what, body, expected) => {
    await expectNothingWritten(() => call('POST', R(), body), expected);
  });

  it('rejects an unknown topic (404 40401) and an unknown cluster (404)', async () => {
    await expectNothingWritten(() => call('POST', v3(`/topics/${uniqueTopic('nope')}/records`), { value: str('x') }), { status: 404, code: 40401, message: /UNKNOWN_TOPIC_OR_PARTITION/ });
    await expectNothingWritten(() => call('POST', `/v3/clusters/no-such-cluster/topics/${T}/records`, { value: str('x') }), { status: 404, code: 404 });
  });
});

describe('Invariant 7: v2 produce', () => {
  const good = record({ records: [{ value: 'eA==' }] });

  it.each([
    'text/plain', 'application/xml', 'application/octet-stream', 'application/x-www-form-urlencoded',
    'application/vnd.kafka.xml.v2+json', 'application/vnd.kafka.binary.v1+json', '',
  ])('answers 415 to Content-Type %j and writes nothing', async (type) => {
    await expectNothingWritten(() => call('POST', `/topics/${T}`, good, { 'content-type': type }), { status: 415, code: 415, message: /Unsupported Media Type/ });
    await expectNothingWritten(() => call('POST', `/topics/${T}/partitions/0`, good, { 'content-type': type }), { status: 415, code: 415 });
  });

  it.each(['avro', 'jsonschema', 'protobuf'])('answers 42202 to values in the %s format without a value schema, and writes nothing', async (format) => {
    await expectNothingWritten(() => call('POST', `/topics/${T}`, good, { 'content-type': `application/vnd.kafka.${format}.v2+json` }), { status: 422, code: 42202, message: /value schema/ });
  });

  const cases: [string, string, Record<string, string>, { status: number; code?: number; message?: RegExp }][] = [
    ['no records', record({ records: [] }), BIN, { status: 422 }],
    ['records as an object', record({ records: { value: 'eA==' } }), BIN, { status: 422 }],
    ['records missing', record({ value: 'eA==' }), BIN, { status: 422 }],
    ['a value that is not base64', record({ records: [{ value: 'not base64' }] }), BIN, { status: 422, message: /records\.0\.value/ }],
    ['a key that is a number in binary', record({ records: [{ key: 7, value: 'eA==' }] }), BIN, { status: 422, message: /records\.0\.key/ }],
    ['one good record and one bad', record({ records: [{ value: 'eA==' }, { value: '%%%' }] }), BIN, { status: 422, message: /records\.1\.value/ }],
    ['an unknown field in a record', record({ records: [{ value: 'eA==', headers: [] }] }), BIN, { status: 422 }],
    ['an unknown top-level field', record({ records: [{ value: 'eA==' }], acks: 1 }), BIN, { status: 422 }],
    ['a value schema in the binary format', record({ records: [{ value: 'eA==' }], value_schema: '{"type":"string"}' }), BIN, { status: 422 }],
    ['partition -1', record({ records: [{ value: 'eA==', partition: -1 }] }), BIN, { status: 404, code: 40402 }],
    ['a partition beyond the partitions', record({ records: [{ value: 'eA==', partition: PARTITIONS }] }), BIN, { status: 404, code: 40402, message: /UNKNOWN_TOPIC_OR_PARTITION/ }],
    ['partition 1.5', record({ records: [{ value: 'eA==', partition: 1.5 }] }), BIN, { status: 422 }],
    ['a record larger than max.message.bytes', record({ records: [{ value: Buffer.alloc(2 * MAX_MESSAGE_BYTES).toString('base64') }] }), BIN, { status: 413, code: 41301, message: /MESSAGE_TOO_LARGE/ }],
    ['embedded JSON nested 20,000 deep', `{"records":[{"value":${deepJson(20_000)}}]}`, JSON_V2, { status: 422, message: /deeper/ }],
  ];

  it.each(cases)('POST /topics/{t} with %s: 4xx, nothing written', async (_what, body, headers, expected) => {
    await expectNothingWritten(() => call('POST', `/topics/${T}`, body, headers), expected);
  });

  it.each(['2', '99', '-1', 'x', '1.5', '%20', '9999999999'])('POST /topics/{t}/partitions/%s: 404 40402, nothing written', async (p) => {
    await expectNothingWritten(() => call('POST', `/topics/${T}/partitions/${p}`, good, BIN), { status: 404, code: 40402, message: /UNKNOWN_TOPIC_OR_PARTITION/ });
  });

  it('rejects an unknown topic on both forms (404 40401)', async () => {
    const t = uniqueTopic('nope');
    await expectNothingWritten(() => call('POST', `/topics/${t}`, good, BIN), { status: 404, code: 40401 });
    await expectNothingWritten(() => call('POST', `/topics/${t}/partitions/0`, good, BIN), { status: 404, code: 40401 });
  });
});

describe('Invariant 7: records:batch', () => {
  const B = () => v3(`/topics/${T}/records:batch`);
  const entry = (id: unknown, extra: Record<string, unknown> = {}) => ({ id, value: str(`batch-${String(id)}`), ...extra });

  it.each([
    ['duplicate ids', { entries: [entry('a'), entry('b'), entry('a')] }, { status: 400, code: 40002, message: /Duplicate.*'a'/ }],
    ['ids 1 and "1"', { entries: [entry(1), entry('1')] }, { status: 400, code: 40002, message: /Duplicate/ }],
    ['no entries', { entries: [] }, { status: 422 }],
    ['entries missing', { records: [entry('a')] }, { status: 422 }],
    ['an entry without an id', { entries: [{ value: str('x') }] }, { status: 422 }],
    ['an object as an id', { entries: [entry({ n: 1 })] }, { status: 422 }],
    ['a null entry', { entries: [entry('a'), null] }, { status: 422 }],
    ['entries as an object', { entries: { a: entry('a') } }, { status: 422 }],
    ['an unknown top-level field', { entries: [entry('a')], validate_only: true }, { status: 422 }],
  ] as const)('rejects a batch with %s, writing nothing', async (_what, body, expected) => {
    await expectNothingWritten(() => call('POST', B(), body), expected);
  });

  it('rejects a batch of more than 10,000 entries, writing nothing', async () => {
    const entries = Array.from({ length: 10_001 }, (_, i) => ({ id: i, value: null }));
    await expectNothingWritten(() => call('POST', B(), { entries }), { status: 422, message: /10000/ });
  });

  it('writes the good entries of a mixed batch and reports each bad one with its error code (207)', async () => {
    const before = await endOffsets();
    const r = await call('POST', B(), {
      entries: [
        entry('good-1', { partition_id: 0 }),
        { id: 'bad-string', partition_id: 0, value: { type: 'STRING', data: 5 } },
        entry('bad-partition', { partition_id: 7 }),
        { id: 'bad-base64', partition_id: 0, value: { type: 'BINARY', data: '%%' } },
        entry('good-2', { partition_id: 0 }),
        // Alone on partition 1: MESSAGE_TOO_LARGE fails every record of its partition (lib/log).
        { id: 'too-large', partition_id: 1, value: str('x'.repeat(2 * MAX_MESSAGE_BYTES)) },
        { id: 'bad-field', partition_id: 0, value: null, colour: 'red' },
        entry('bad-timestamp', { partition_id: 0, timestamp: 'soon' }),
      ],
    });
    expect(r.status, r.text).toBe(207);
    expect(r.body.successes.map((s: any) => [s.id, s.error_code, s.partition_id, s.offset])).toEqual([
      ['good-1', 200, 0, before[0]],
      ['good-2', 200, 0, (before[0] as number) + 1],
    ]);
    const failures = new Map(r.body.failures.map((f: any) => [f.id, f]));
    expect([...failures.keys()]).toEqual(['bad-string', 'bad-partition', 'bad-base64', 'too-large', 'bad-field', 'bad-timestamp']);
    for (const f of failures.values()) expect(f).toEqual({ id: expect.any(String), error_code: expect.any(Number), message: expect.any(String) });
    expect(failures.get('bad-string')).toMatchObject({ error_code: 42206 });
    expect(failures.get('bad-partition')).toMatchObject({ error_code: 40402, message: expect.stringMatching(/UNKNOWN_TOPIC_OR_PARTITION/) });
    expect(failures.get('bad-base64')).toMatchObject({ error_code: 42206, message: expect.stringMatching(/base64/) });
    expect(failures.get('too-large')).toMatchObject({ error_code: 41301, message: expect.stringMatching(/MESSAGE_TOO_LARGE/) });
    expect(failures.get('bad-field')).toMatchObject({ error_code: 42206 });
    expect(failures.get('bad-timestamp')).toMatchObject({ error_code: 42206 });

    expect(await endOffsets()).toEqual([(before[0] as number) + 2, before[1]]);
    const read = await call('GET', v3(`/topics/${T}/partitions/0/records?offset=${before[0]}&format=string`));
    expect(read.body.records.map((x: any) => x.value.data)).toEqual(['batch-good-1', 'batch-good-2']);
  });

  it('writes nothing when every entry of a batch is bad, and reports them all (207)', async () => {
    const before = await endOffsets();
    const r = await call('POST', B(), { entries: [{ id: 'a', value: 'plain' }, { id: 'b', partition_id: -1 }] });
    expect(r.status, r.text).toBe(207);
    expect(r.body.successes).toEqual([]);
    expect(r.body.failures.map((f: any) => [f.id, f.error_code])).toEqual([['a', 42206], ['b', 40402]]);
    expect(await endOffsets()).toEqual(before);
  });
});

describe('Invariant 7: oversize bodies', () => {
  /** Sends a whole body just over the 6 MiB limit, as a client would: it must see the 413, not a reset connection. */
  const oversizeBody = (method: string, path: string, headers: Record<string, string>): Promise<Reply> =>
    call(method, path, `{"value":{"type":"STRING","data":"${'x'.repeat(6 * 1024 * 1024)}"}}`, headers);

  // The shared stack runs as Lambda does: an event over Lambda's 6 MB never reaches the function,
  // and API Gateway answers 413 in its own shape.
  it.each(BODY_ROUTES)('$route: a body over 6 MiB gets API Gateway\'s 413, nothing written', async ({ method, path, headers }) => {
    const before = await endOffsets();
    const r = await oversizeBody(method, path(), headers);
    expect(r.status, r.text).toBe(413);
    expect(r.body).toEqual({ message: 'Request Entity Too Large' });
    expect(await endOffsets()).toEqual(before);
  });
});

describe('Invariant 7: fetch and list offsets', () => {
  const F = (q: string, p: string | number = 0) => v3(`/topics/${T}/partitions/${p}/records${q}`);
  const F2 = (q: string, p: string | number = 0) => `/topics/${T}/partitions/${p}/records${q}`;

  it.each([
    ['no offset', ''],
    ['offset -1', '?offset=-1'],
    ['offset abc', '?offset=abc'],
    ['offset 1.5', '?offset=1.5'],
    ['offset 1e3', '?offset=1e3'],
    ['offset 0x10', '?offset=0x10'],
    ['offset " "', '?offset=%20'],
    ['offset 99999999999999999999', '?offset=99999999999999999999'],
    ['offset twice', '?offset=0&offset=1'],
    ['max_bytes 0', '?offset=0&max_bytes=0'],
    ['max_bytes -1', '?offset=0&max_bytes=-1'],
    ['max_bytes abc', '?offset=0&max_bytes=abc'],
    ['timeout abc', '?offset=0&timeout=abc'],
    ['timeout -1', '?offset=0&timeout=-1'],
    ['timeout 1.5', '?offset=0&timeout=1.5'],
  ])('answers 400 40002 to %s, in v3 and v2', async (_what, q) => {
    expectRejected(await call('GET', F(q)), { status: 400, code: 40002 });
    expectRejected(await call('GET', F2(q)), { status: 400, code: 40002 });
  });

  it('answers 400 to an unknown v3 format and 406 to an unacceptable v2 Accept', async () => {
    expectRejected(await call('GET', F('?offset=0&format=xml')), { status: 400, code: 40002, message: /format/ });
    expectRejected(await call('GET', F2('?offset=0'), undefined, { accept: 'text/html' }), { status: 406, code: 406 });
  });

  it('answers OFFSET_OUT_OF_RANGE with the valid range to an offset beyond the end', async () => {
    const [end] = await endOffsets();
    for (const offset of [(end as number) + 1, 1_000_000, Number.MAX_SAFE_INTEGER]) {
      expectRejected(await call('GET', F(`?offset=${offset}`)), { status: 416, code: 41601, message: new RegExp(`OFFSET_OUT_OF_RANGE.*\\[0, ${end}\\]`) });
      expectRejected(await call('GET', F2(`?offset=${offset}`)), { status: 416, code: 41601, message: /OFFSET_OUT_OF_RANGE/ });
    }
  });

  it.each(['2', '99', '-1', 'x', '1.5', '%20', '9999999999'])('answers 404 40402 to partition %s on every partition route', async (p) => {
    for (const path of [F('?offset=0', p), F2('?offset=0', p), v3(`/topics/${T}/partitions/${p}/offsets`), `/topics/${T}/partitions/${p}/offsets`, v3(`/topics/${T}/partitions/${p}`)]) {
      expectRejected(await call('GET', path), { status: 404, code: 40402, message: /UNKNOWN_TOPIC_OR_PARTITION/ });
    }
  });

  it('answers 404 40401 to an unknown topic on every read route', async () => {
    const t = uniqueTopic('nope');
    for (const path of [
      v3(`/topics/${t}`), v3(`/topics/${t}/partitions`), v3(`/topics/${t}/partitions/0`), v3(`/topics/${t}/configs`),
      v3(`/topics/${t}/partitions/0/records?offset=0`), v3(`/topics/${t}/partitions/0/offsets`),
      `/topics/${t}/partitions/0/records?offset=0`, `/topics/${t}/partitions/0/offsets`,
    ]) expectRejected(await call('GET', path), { status: 404, code: 40401, message: /UNKNOWN_TOPIC_OR_PARTITION/ });
    expectRejected(await call('DELETE', v3(`/topics/${t}`)), { status: 404, code: 40401 });
  });

  it.each(['abc', '-5', '1e3', '99999999999999999999', '9000000000000000', '2026-13-45T00:00:00Z', 'yesterday'])(
    'answers 400 40002 to list-offsets timestamp=%s', async (ts) => {
      expectRejected(await call('GET', v3(`/topics/${T}/partitions/0/offsets?timestamp=${ts}`)), { status: 400, code: 40002, message: /timestamp/ });
    });

  it('answers 406, not 500, when a record asked for as JSON is too deeply nested to embed', async () => {
    const t = uniqueTopic('bad-deep');
    await createTopic(t, 1, 1);
    const w = await call('POST', v3(`/topics/${t}/records`), { value: str(deepJson(50_000)) });
    expect(w.status, w.text).toBe(200);
    expectRejected(await call('GET', v3(`/topics/${t}/partitions/0/records?offset=0&format=json`)), { status: 406, code: 40601 });
    expectRejected(await call('GET', `/topics/${t}/partitions/0/records?offset=0`, undefined, { accept: 'application/vnd.kafka.json.v2+json' }), { status: 406, code: 40601 });
    expect((await call('GET', v3(`/topics/${t}/partitions/0/records?offset=0&format=string`))).status).toBe(200);
  });
});

describe('Invariant 7: path parameters with URL-encoded junk', () => {
  const JUNK = ['%00', 'a%2Fb', '..%2F..%2Fetc', '%E2%82%AC', '%25', '%20', '%E0%A4%A', '%7B%7D', "x'y", 'a'.repeat(3000), '%F0%9F%92%A9'];
  const good = record({ value: str('x') });

  it.each(JUNK.map((j) => [j.length > 20 ? `${j.slice(0, 8)}… (${j.length} chars)` : j, j]))('answers 4xx, never 5xx, to %s in every path parameter', async (_label, junk) => {
    const before = await endOffsets();
    const requests: [string, string, string?, Record<string, string>?][] = [
      ['GET', `/v3/clusters/${junk}`],
      ['GET', `/v3/clusters/${junk}/topics`],
      ['GET', v3(`/brokers/${junk}`)],
      ['GET', v3(`/topics/${junk}`)],
      ['DELETE', v3(`/topics/${junk}`)],
      ['PATCH', v3(`/topics/${junk}`), record({ partitions_count: 5 })],
      ['GET', v3(`/topics/${junk}/partitions`)],
      ['GET', v3(`/topics/${T}/partitions/${junk}`)],
      ['GET', v3(`/topics/${T}/configs/${junk}`)],
      ['PUT', v3(`/topics/${T}/configs/${junk}`), record({ value: '1' })],
      ['DELETE', v3(`/topics/${T}/configs/${junk}`)],
      ['POST', v3(`/topics/${junk}/records`), good],
      ['POST', `/v3/clusters/${junk}/topics/${T}/records`, good],
      ['POST', v3(`/topics/${junk}/records:batch`), record({ entries: [{ id: 1, value: null }] })],
      ['POST', `/topics/${junk}`, record({ records: [{ value: 'eA==' }] }), BIN],
      ['POST', `/topics/${T}/partitions/${junk}`, record({ records: [{ value: 'eA==' }] }), BIN],
      ['GET', v3(`/topics/${T}/partitions/${junk}/records?offset=0`)],
      ['GET', v3(`/topics/${junk}/partitions/0/records?offset=0`)],
      ['GET', `/topics/${junk}/partitions/0/records?offset=0`],
      ['GET', `/topics/${T}/partitions/${junk}/offsets`],
    ];
    for (const [method, path, body, headers] of requests) {
      const r = await call(method, path, body, headers);
      expect(r.status, `${method} ${path.slice(0, 120)}: ${r.text.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
      expectRejected(r);
    }
    expect(await endOffsets()).toEqual(before);
  });

  it('answers 404 to unknown routes and methods', async () => {
    for (const [method, path] of [['GET', '/nope'], ['DELETE', '/v3/clusters'], ['PATCH', v3(`/topics/${T}/configs`)], ['POST', v3(`/topics/${T}/partitions`)], ['GET', v3(`/topics/${T}/records`)]] as const) {
      expectRejected(await call(method, path), { status: 404, code: 404 });
    }
  });
});

// --- the property ----------------------------------------------------------------------------

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const SCHEMA_FIELDS = ['subject', 'subject_name_strategy', 'schema_id', 'schema_version', 'schema'];
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const onlyKeys = (o: Record<string, unknown>, keys: readonly string[]) => Object.keys(o).every((k) => keys.includes(k));

/** A v3 key or value as REST Proxy defines it: `{type?, data?}`, type BINARY (base64), JSON (default) or STRING. */
function validData(d: unknown): boolean {
  if (d === undefined || d === null) return true;
  if (!isObject(d) || !onlyKeys(d, ['type', 'data', ...SCHEMA_FIELDS])) return false;
  if (SCHEMA_FIELDS.some((k) => d[k] !== undefined && d[k] !== null)) return false;
  if (d.type !== undefined && typeof d.type !== 'string') return false;
  const type = ((d.type as string | undefined) ?? 'JSON').toUpperCase();
  if (!['BINARY', 'JSON', 'STRING'].includes(type)) return false;
  if (d.data === undefined || d.data === null) return true;
  if (type === 'BINARY') return typeof d.data === 'string' && BASE64.test(d.data);
  if (type === 'STRING') return typeof d.data === 'string';
  return true;
}

/** The oracle: whether a parsed body is one valid record for a topic of `partitions` partitions. */
function validRecord(v: unknown, partitions: number): boolean {
  if (!isObject(v) || !onlyKeys(v, ['partition_id', 'headers', 'key', 'value', 'timestamp'])) return false;
  const p = v.partition_id;
  if (p !== undefined && p !== null && !(Number.isSafeInteger(p) && (p as number) >= 0 && (p as number) < partitions)) return false;
  const h = v.headers;
  if (h !== undefined && !(Array.isArray(h) && h.every((x) => isObject(x) && onlyKeys(x, ['name', 'value'])
    && typeof x.name === 'string' && x.name.length > 0
    && (x.value === undefined || x.value === null || (typeof x.value === 'string' && BASE64.test(x.value)))))) return false;
  const t = v.timestamp;
  const timestampOk = t === undefined || t === null
    || (typeof t === 'number' && Number.isSafeInteger(t) && t >= 0 && t <= 8.64e15)
    || (typeof t === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(t) && Date.parse(t) >= 0);
  return timestampOk && validData(v.key) && validData(v.value);
}

function parsedBody(body: string): { ok: true; value: unknown } | { ok: false } {
  try {
    // What the server receives: fetch sends lone surrogates as U+FFFD.
    return { ok: true, value: JSON.parse(Buffer.from(body, 'utf8').toString('utf8')) };
  } catch {
    return { ok: false };
  }
}

const base64Arb = fc.uint8Array({ maxLength: 24 }).map((b) => Buffer.from(b).toString('base64'));
const dataArb = fc.record({
  type: fc.constantFrom('BINARY', 'JSON', 'STRING', 'binary', 'string', 'Json', 'AVRO', 'FOO', ''),
  data: fc.oneof(base64Arb, fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }), fc.constant(null)),
}, { requiredKeys: [] });
const recordArb = fc.record({
  key: fc.option(dataArb),
  value: fc.option(dataArb),
  partition_id: fc.option(fc.oneof(fc.integer({ min: -2, max: PARTITIONS + 1 }), fc.double(), fc.string({ maxLength: 3 }))),
  headers: fc.array(fc.record({ name: fc.string({ maxLength: 5 }), value: fc.option(fc.oneof(base64Arb, fc.string({ maxLength: 8 }))) }, { requiredKeys: ['name'] }), { maxLength: 3 }),
  timestamp: fc.option(fc.oneof(
    fc.integer({ min: -10, max: 4_000_000_000_000 }),
    fc.date({ min: new Date(-1e12), max: new Date(4e12), noInvalidDate: true }).map((d) => d.toISOString()),
    fc.string({ maxLength: 10 }),
    fc.constant(9e15),
  )),
  extra: fc.jsonValue({ maxDepth: 1 }),
}, { requiredKeys: [] });
/** Records that are valid by construction, so the property also covers the accepting side. */
const goodDataArb = fc.oneof(
  fc.record({ type: fc.constantFrom('BINARY', 'binary'), data: base64Arb }),
  fc.record({ type: fc.constantFrom('STRING', 'String'), data: fc.string({ maxLength: 12 }) }),
  fc.record({ type: fc.constant('JSON'), data: fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: [] }),
  fc.constant(null),
);
const goodRecordArb = fc.record({
  key: goodDataArb,
  value: goodDataArb,
  partition_id: fc.option(fc.integer({ min: 0, max: PARTITIONS - 1 })),
  headers: fc.array(fc.record({ name: fc.string({ minLength: 1, maxLength: 5 }), value: fc.option(base64Arb) }), { maxLength: 2 }),
  timestamp: fc.option(fc.oneof(
    fc.integer({ min: 0, max: 4_000_000_000_000 }),
    fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }).map((d) => d.toISOString()),
  )),
}, { requiredKeys: [] });
/** A valid record with one field drawn from the wild generator: one defect at a time, where the oracle's edges are. */
const oneFieldOffArb = fc.tuple(goodRecordArb, recordArb, fc.constantFrom('key', 'value', 'partition_id', 'headers', 'timestamp', 'extra'))
  .map(([good, wild, field]) => ({ ...good, [field]: (wild as Record<string, unknown>)[field] }));
const bodyArb = fc.oneof(
  { arbitrary: fc.jsonValue().map((v) => JSON.stringify(v)), weight: 3 },
  { arbitrary: fc.string(), weight: 2 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 30 }), weight: 1 },
  { arbitrary: recordArb.map((r) => JSON.stringify(r)), weight: 2 },
  { arbitrary: goodRecordArb.map((r) => JSON.stringify(r)), weight: 2 },
  { arbitrary: oneFieldOffArb.map((r) => JSON.stringify(r)), weight: 4 },
);

describe('Invariant 7: a property of the single-record produce route', () => {
  it('never answers 5xx to a random JSON value or string, and writes exactly one record when, and only when, the body is a valid record', async () => {
    const t = uniqueTopic('bad-prop');
    await createTopic(t, PARTITIONS, 1);
    let ends = await endOffsets(t);
    let valid = 0;
    await fc.assert(fc.asyncProperty(bodyArb, async (body) => {
      const parsed = parsedBody(body);
      const expectWrite = parsed.ok && validRecord(parsed.value, PARTITIONS);
      const r = await call('POST', v3(`/topics/${t}/records`), body);
      // Carried from run to run, and updated before asserting, so a failing run does not fail the shrunk ones.
      const before = ends;
      const after = await endOffsets(t);
      ends = after;
      expect(r.status, `${body.slice(0, 200)} → ${r.text.slice(0, 300)}`).toBeLessThan(500);
      if (expectWrite) {
        valid++;
        expect(r.status, r.text).toBe(200);
        const p = r.body.partition_id as number;
        expect(r.body.offset).toBe(before[p]);
        expect(after).toEqual(before.map((e, i) => (i === p ? e + 1 : e)));
      } else {
        expectRejected(r);
        expect(after).toEqual(before);
      }
    }), { numRuns: 250 });
    // The generators reach both sides of the oracle.
    expect(valid).toBeGreaterThan(20);
  });
});
