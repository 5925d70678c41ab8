/**
 * REST Proxy v3 produce with registered schemas: keys and values of type AVRO, JSONSCHEMA and
 * PROTOBUF, named by `schema_id` or by subject (TopicNameStrategy, or given), are written in
 * Confluent's wire format — what Confluent's deserializers read — and data that does not
 * validate is 422 with nothing written.
 */
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { AvroDeserializer, SchemaRegistryClient, SerdeType } from '@confluentinc/schemaregistry';
import { beforeAll, describe, expect, it } from 'vitest';
import { baseUrl, call, createTopic, expectError, uniqueTopic, v3 } from '../support/api.js';

const topic = uniqueTopic('schema-produce');
const produce = (body: unknown) => call('POST', v3(`/topics/${topic}/records`), body);
/** Every record of partition 0, keys and values as bytes. */
async function records(): Promise<{ key: Buffer | null; value: Buffer | null }[]> {
  const r = await call('GET', v3(`/topics/${topic}/partitions/0/records?offset=0&format=binary`));
  expect(r.status, r.text).toBe(200);
  return r.body.records.map((x: any) => ({ key: x.key === null ? null : Buffer.from(x.key.data, 'base64'), value: x.value === null ? null : Buffer.from(x.value.data, 'base64') }));
}

const registry = () => new SchemaRegistry({ host: baseUrl() });
const avro = { type: 'record', name: 'Reading', namespace: 'tributary.produce', fields: [{ name: 'sensor', type: 'string' }, { name: 'celsius', type: 'double' }, { name: 'raw', type: 'bytes', default: '' }] };
let avroId: number;
let jsonId: number;
let protoId: number;

beforeAll(async () => {
  await createTopic(topic, 1, 3);
  const r = registry();
  avroId = (await r.register({ type: SchemaType.AVRO, schema: JSON.stringify(avro) }, { subject: `${topic}-value` })).id;
  jsonId = (await r.register({ type: SchemaType.JSON, schema: JSON.stringify({ type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] }) }, { subject: `${topic}-json` })).id;
  protoId = (await r.register({ type: SchemaType.PROTOBUF, schema: 'syntax = "proto3";\npackage tributary.produce;\nmessage Key { string id = 1; int64 n = 2; }\n' }, { subject: `${topic}-key` })).id;
});

describe('v3 produce with registered schemas', () => {
  it('writes AVRO (by TopicNameStrategy), JSONSCHEMA (by subject) and PROTOBUF (by schema_id) in Confluent\'s wire format, read back by Confluent\'s deserializers', async () => {
    const a = await produce({ partition_id: 0, key: { type: 'PROTOBUF', schema_id: protoId, data: { id: 'k-1', n: 7 } }, value: { type: 'AVRO', data: { sensor: 's-1', celsius: 21.5, raw: '\u0001\u0002' } } });
    expect(a.status, a.text).toBe(200);
    expect(a.body.value).toMatchObject({ type: 'AVRO' });
    expect(a.body.key).toMatchObject({ type: 'PROTOBUF' });
    const b = await produce({ partition_id: 0, value: { type: 'JSONSCHEMA', subject: `${topic}-json`, schema_version: 1, data: { sku: 'A-1' } } });
    expect(b.status, b.text).toBe(200);

    const [first, second] = await records();
    expect(first?.value?.[0]).toBe(0);
    expect(first?.value?.readInt32BE(1)).toBe(avroId);
    const kafkajs = registry();
    expect(await kafkajs.decode(first?.value as Buffer)).toEqual({ sensor: 's-1', celsius: 21.5, raw: Buffer.from([1, 2]) });
    expect(await kafkajs.decode(second?.value as Buffer)).toEqual({ sku: 'A-1' });
    const confluent = new AvroDeserializer(new SchemaRegistryClient({ baseURLs: [baseUrl()], maxRetries: 0 }), SerdeType.VALUE, {});
    expect(await confluent.deserialize(topic, first?.value as Buffer)).toEqual({ sensor: 's-1', celsius: 21.5, raw: Buffer.from([1, 2]) });
    // Protobuf: magic byte, id, the message index of the file's first message (one 0 byte), then the message.
    const key = first?.key as Buffer;
    expect(key.readInt32BE(1)).toBe(protoId);
    expect(key[5]).toBe(0);
    // (kafkajs's decoder skips the message indexes; it gives an int64 as a string)
    expect(JSON.parse(JSON.stringify(await kafkajs.decode(key)))).toEqual({ id: 'k-1', n: '7' });
  });

  it('answers 422 and writes nothing for data that does not validate, a type that is not the schema\'s, an unknown subject 404', async () => {
    const before = (await records()).length;
    expectError(await produce({ partition_id: 0, value: { type: 'AVRO', data: { sensor: 's-2', celsius: 'warm' } } }), 422, 42206, /does not match schema/);
    expectError(await produce({ partition_id: 0, value: { type: 'JSONSCHEMA', schema_id: jsonId, data: { nope: 1 } } }), 422, 42206, /does not match schema/);
    expectError(await produce({ partition_id: 0, key: { type: 'PROTOBUF', schema_id: protoId, data: { id: 'x', extra: 1 } }, value: { type: 'STRING', data: 'v' } }), 422, 42206);
    expectError(await produce({ partition_id: 0, value: { type: 'PROTOBUF', schema_id: avroId, data: {} } }), 422, 42206, /is AVRO/);
    expectError(await produce({ partition_id: 0, value: { type: 'AVRO', subject: `${topic}-none`, data: {} } }), 404, 40401);
    expectError(await produce({ partition_id: 0, value: { type: 'AVRO', schema_id: 2 ** 31 - 1, data: {} } }), 404, 40403);
    expectError(await produce({ partition_id: 0, value: { type: 'AVRO', schema: '"string"', data: 'x' } }), 422, 42206);
    expect((await records()).length).toBe(before);
  });
});

