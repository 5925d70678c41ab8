/**
 * Reads and v2 produce with schemas: bytes that Confluent's and kafkajs's serializers wrote are
 * decoded by v3 reads (`format=avro|jsonschema|protobuf`), v2 partition reads and v2 consumer
 * instances in those embedded formats; and v2 produce in the `avro`, `jsonschema` and `protobuf`
 * embedded formats writes what those clients' deserializers read. Bad input is a 4xx and writes
 * nothing.
 */
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { AvroDeserializer, AvroSerializer, JsonSerializer, SchemaRegistryClient, SerdeType } from '@confluentinc/schemaregistry';
import { beforeAll, describe, expect, it } from 'vitest';
import { baseUrl, call, createTopic, expectError, uniqueTopic, v3 } from '../support/api.js';

const topic = uniqueTopic('schema-reads');
/** The v2 produce tests' topic: its subjects are its own. */
const written = uniqueTopic('schema-v2-produce');
const registry = () => new SchemaRegistry({ host: baseUrl() });
const confluent = () => new SchemaRegistryClient({ baseURLs: [baseUrl()], maxRetries: 0 });
const avro = { type: 'record', name: 'Order', namespace: 'tributary.reads', fields: [{ name: 'id', type: 'string' }, { name: 'qty', type: 'int' }, { name: 'note', type: ['null', 'string'], default: null }] };
const jsonSchema = { type: 'object', properties: { sku: { type: 'string' }, n: { type: 'integer' } }, required: ['sku'] };
const proto = 'syntax = "proto3";\npackage tributary.reads;\nmessage Line { string sku = 1; int64 n = 2; Inner inner = 3; message Inner { bool ok = 1; } }\nmessage Other { string x = 1; }\n';
let avroId: number;
let jsonId: number;
let protoId: number;

/** Writes raw bytes (already in the wire format) to partition `p` of the topic. */
async function produceBytes(p: number, value: Buffer, key?: Buffer): Promise<number> {
  const r = await call('POST', v3(`/topics/${topic}/records`), {
    partition_id: p, value: { type: 'BINARY', data: value.toString('base64') }, ...(key ? { key: { type: 'BINARY', data: key.toString('base64') } } : {}),
  });
  expect(r.status, r.text).toBe(200);
  return r.body.offset;
}

const V2 = { accept: 'application/vnd.kafka.v2+json', 'content-type': 'application/vnd.kafka.v2+json' };

beforeAll(async () => {
  await createTopic(topic, 4, 3);
  await createTopic(written, 1, 3);
  const r = registry();
  avroId = (await r.register({ type: SchemaType.AVRO, schema: JSON.stringify(avro) }, { subject: `${topic}-value` })).id;
  // (the subject Confluent's serializer names for its topic argument `${topic}-json`)
  jsonId = (await r.register({ type: SchemaType.JSON, schema: JSON.stringify(jsonSchema) }, { subject: `${topic}-json-value` })).id;
  protoId = (await r.register({ type: SchemaType.PROTOBUF, schema: proto }, { subject: `${topic}-proto` })).id;
});

describe('reads with schemas', () => {
  it('decodes AVRO written by both clients\' serializers, in v3 reads, v2 partition reads and a v2 consumer instance', async () => {
    const kafkajsBytes = await registry().encode(avroId, { id: 'o-1', qty: 2, note: 'rush' });
    const serializer = new AvroSerializer(confluent(), SerdeType.VALUE, { useLatestVersion: true });
    const confluentBytes = await serializer.serialize(topic, { id: 'o-2', qty: 5, note: null });
    const first = await produceBytes(0, kafkajsBytes, Buffer.from(await registry().encode(avroId, { id: 'key', qty: 0, note: null })));
    await produceBytes(0, confluentBytes);

    const v3read = await call('GET', v3(`/topics/${topic}/partitions/0/records?offset=${first}&format=avro`));
    expect(v3read.status, v3read.text).toBe(200);
    expect(v3read.body.records.map((x: any) => x.value)).toEqual([
      { type: 'AVRO', schema_id: avroId, data: { id: 'o-1', qty: 2, note: { string: 'rush' } } },
      { type: 'AVRO', schema_id: avroId, data: { id: 'o-2', qty: 5, note: null } },
    ]);
    expect(v3read.body.records[0].key).toEqual({ type: 'AVRO', schema_id: avroId, data: { id: 'key', qty: 0, note: null } });

    const v2read = await call('GET', `/topics/${topic}/partitions/0/records?offset=${first}`, undefined, { accept: 'application/vnd.kafka.avro.v2+json' });
    expect(v2read.status, v2read.text).toBe(200);
    expect(v2read.headers.get('content-type')).toContain('application/vnd.kafka.avro.v2+json');
    expect(v2read.body.map((x: any) => x.value)).toEqual([{ id: 'o-1', qty: 2, note: { string: 'rush' } }, { id: 'o-2', qty: 5, note: null }]);

    const group = uniqueTopic('schema-reads-group');
    let created = await call('POST', `/consumers/${group}`, { name: 'i1', format: 'avro', 'auto.offset.reset': 'earliest' }, V2);
    for (let i = 0; created.status !== 200 && i < 20; i++) created = await call('POST', `/consumers/${group}`, { name: 'i1', format: 'avro', 'auto.offset.reset': 'earliest' }, V2);
    expect(created.status, created.text).toBe(200);
    const base = `/consumers/${group}/instances/i1`;
    expect((await call('POST', `${base}/assignments`, { partitions: [{ topic, partition: 0 }] }, V2)).status).toBe(204);
    let polled: any[] = [];
    for (let i = 0; polled.length < 2 && i < 20; i++) {
      const r = await call('GET', `${base}/records?timeout=1000`, undefined, { accept: 'application/vnd.kafka.avro.v2+json' });
      expect(r.status, r.text).toBe(200);
      polled = [...polled, ...r.body];
    }
    expect(polled.map((x) => x.value)).toEqual([{ id: 'o-1', qty: 2, note: { string: 'rush' } }, { id: 'o-2', qty: 5, note: null }]);
    // The instance reads in its own format only (Confluent's 40601).
    expectError(await call('GET', `${base}/records?timeout=0`, undefined, { accept: 'application/vnd.kafka.json.v2+json' }), 406, 40601);
    expect((await call('DELETE', base, undefined, V2)).status).toBe(204);
  });

  it('decodes JSON Schema and Protobuf (with Confluent\'s message indexes or without, and a nested message by its indexes)', async () => {
    const json = await new JsonSerializer(confluent(), SerdeType.VALUE, { useLatestVersion: true }).serialize(`${topic}-json`, { sku: 'A-1', n: 3 });
    const from = await produceBytes(1, Buffer.from(json));
    await produceBytes(1, await registry().encode(jsonId, { sku: 'A-2' }));
    const readJson = await call('GET', v3(`/topics/${topic}/partitions/1/records?offset=${from}&format=jsonschema`));
    expect(readJson.status, readJson.text).toBe(200);
    expect(readJson.body.records.map((x: any) => x.value)).toEqual([
      { type: 'JSONSCHEMA', schema_id: jsonId, data: { sku: 'A-1', n: 3 } },
      { type: 'JSONSCHEMA', schema_id: jsonId, data: { sku: 'A-2' } },
    ]);

    const kafkajsProto = await registry().encode(protoId, { sku: 'p-1', n: 9, inner: { ok: true } });
    const header = Buffer.alloc(5);
    header.writeInt32BE(protoId, 1);
    const message = kafkajsProto.subarray(kafkajsProto[5] === 0 ? 6 : 5);
    const withIndex = Buffer.concat([header, Buffer.from([0]), message]);
    const withoutIndex = Buffer.concat([header, message]);
    // Line.Inner is message [0, 0]: the count 2 (zigzag 4), then 0 and 0.
    const nested = Buffer.concat([header, Buffer.from([4, 0, 0]), Buffer.from([0x08, 0x01])]);
    const p = await produceBytes(2, withIndex);
    await produceBytes(2, withoutIndex);
    await produceBytes(2, nested);
    const read = await call('GET', v3(`/topics/${topic}/partitions/2/records?offset=${p}&format=protobuf`));
    expect(read.status, read.text).toBe(200);
    const line = { sku: 'p-1', n: '9', inner: { ok: true } };
    expect(read.body.records.map((x: any) => x.value.data)).toEqual([line, line, { ok: true }]);
    const v2read = await call('GET', `/topics/${topic}/partitions/2/records?offset=${p}`, undefined, { accept: 'application/vnd.kafka.protobuf.v2+json' });
    expect(v2read.body.map((x: any) => x.value)).toEqual([line, line, { ok: true }]);
  });

  it('refuses with 406 a value that is not in the wire format, or whose schema is of another type', async () => {
    const at = await produceBytes(3, Buffer.from('plain text'));
    expectError(await call('GET', v3(`/topics/${topic}/partitions/3/records?offset=${at}&format=avro`)), 406, 40601, /wire format/);
    const avroBytes = await registry().encode(avroId, { id: 'o-3', qty: 1, note: null });
    const next = await produceBytes(3, avroBytes);
    expectError(await call('GET', v3(`/topics/${topic}/partitions/3/records?offset=${next}&format=protobuf`)), 406, 40601, /AVRO schema/);
    expectError(await call('GET', v3(`/topics/${topic}/partitions/3/records?offset=${next}&format=xml`)), 400, 40002);
  });

  it('with undecodable=binary answers what the format cannot read as BINARY and decodes the rest in the same read', async () => {
    const avroBytes = await registry().encode(avroId, { id: 'o-4', qty: 3, note: null });
    const at = await produceBytes(2, Buffer.from(avroBytes), Buffer.from('plain key'));
    await produceBytes(2, Buffer.from('plain value'));
    const r = await call('GET', v3(`/topics/${topic}/partitions/2/records?offset=${at}&format=avro&undecodable=binary`));
    expect(r.status, r.text).toBe(200);
    expect(r.body.records.map((x: any) => [x.key, x.value])).toEqual([
      [{ type: 'BINARY', data: Buffer.from('plain key').toString('base64') }, { type: 'AVRO', schema_id: avroId, data: { id: 'o-4', qty: 3, note: null } }],
      [null, { type: 'BINARY', data: Buffer.from('plain value').toString('base64') }],
    ]);
    expectError(await call('GET', v3(`/topics/${topic}/partitions/2/records?offset=${at}&format=avro&undecodable=string`)), 400, 40002);
  });
});

describe('v2 produce in the schema embedded formats', () => {
  const v2produce = (format: string, body: unknown, path = `/topics/${written}/partitions/0`) =>
    call('POST', path, body, { 'content-type': `application/vnd.kafka.${format}.v2+json`, accept: 'application/vnd.kafka.v2+json' });

  it('registers an inline value schema, writes with a key schema id, and Confluent\'s deserializers read both', async () => {
    const valueSchema = JSON.stringify({ type: 'record', name: 'Payment', namespace: 'tributary.v2', fields: [{ name: 'amount', type: 'long' }, { name: 'memo', type: ['null', 'string'], default: null }] });
    const r = await v2produce('avro', {
      key_schema_id: avroId, value_schema: valueSchema,
      records: [{ key: { id: 'k', qty: 1, note: null }, value: { amount: 12, memo: { string: 'x' } } }, { value: { amount: 13, memo: null } }],
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.key_schema_id).toBe(avroId);
    expect(r.body.value_schema_id).toEqual(expect.any(Number));
    const registered = await call('GET', `/subjects/${written}-value/versions/latest`);
    expect(registered.body.id).toBe(r.body.value_schema_id);
    const offsets = r.body.offsets.map((o: any) => o.offset);
    const read = await call('GET', v3(`/topics/${written}/partitions/0/records?offset=${offsets[0]}&format=binary`));
    const [first, second] = read.body.records;
    const value = Buffer.from(first.value.data, 'base64');
    const deserializer = new AvroDeserializer(confluent(), SerdeType.VALUE, {});
    expect(await deserializer.deserialize(written, value)).toEqual({ amount: 12, memo: 'x' });
    expect(await registry().decode(Buffer.from(first.key.data, 'base64'))).toEqual({ id: 'k', qty: 1, note: null });
    expect(second.key).toBeNull();
    expect(await registry().decode(Buffer.from(second.value.data, 'base64'))).toEqual({ amount: 13, memo: null });
  });

  it('writes jsonschema and protobuf by schema id', async () => {
    const j = await v2produce('jsonschema', { value_schema_id: jsonId, records: [{ value: { sku: 'J-1' } }] });
    expect(j.status, j.text).toBe(200);
    // (a read decodes every record it returns: this one before the Protobuf record follows)
    const jr = await call('GET', v3(`/topics/${written}/partitions/0/records?offset=${j.body.offsets[0].offset}&format=jsonschema`));
    expect(jr.status, jr.text).toBe(200);
    expect(jr.body.records[0].value.data).toEqual({ sku: 'J-1' });
    const p = await v2produce('protobuf', { value_schema_id: protoId, records: [{ value: { sku: 'P-1', n: '4' } }] });
    expect(p.status, p.text).toBe(200);
    const pr = await call('GET', v3(`/topics/${written}/partitions/0/records?offset=${p.body.offsets[0].offset}&format=protobuf`));
    expect(pr.body.records[0].value.data).toEqual({ sku: 'P-1', n: '4', inner: null });
  });

  it('answers REST Proxy\'s 422s and writes nothing: keys without a key schema, values without a value schema, data the schema does not take', async () => {
    const before = JSON.stringify(await call('GET', v3(`/topics/${written}/partitions/0/records?offset=0&format=binary`)).then((r) => r.body.records.length));
    expectError(await v2produce('avro', { value_schema_id: avroId, records: [{ key: { id: 'k' }, value: { id: 'v', qty: 1, note: null } }] }), 422, 42201);
    expectError(await v2produce('avro', { key_schema_id: avroId, records: [{ key: { id: 'k', qty: 1, note: null }, value: { id: 'v' } }] }), 422, 42202);
    expectError(await v2produce('avro', { value_schema_id: avroId, records: [{ value: { id: 'v', qty: 'many', note: null } }] }), 422, 42203);
    expectError(await v2produce('jsonschema', { value_schema_id: jsonId, records: [{ value: { sku: 1 } }] }), 422, 42203);
    expectError(await v2produce('avro', { value_schema: '{"type": "record"', records: [{ value: 1 }] }), 422, 42201);
    expectError(await v2produce('binary', { value_schema_id: avroId, records: [{ value: 'AA==' }] }), 422, 42206);
    expectError(await v2produce('xml', { records: [{ value: 1 }] }), 415, 415);
    expect(JSON.stringify(await call('GET', v3(`/topics/${written}/partitions/0/records?offset=0&format=binary`)).then((r) => r.body.records.length))).toBe(before);
  });
});
