/**
 * `@confluentinc/schemaregistry`, Confluent's own JavaScript client, unmodified and pointed at the
 * local stack's URL: it registers and fetches AVRO and JSON Schema, its serializers and
 * deserializers encode and decode through the registry (Confluent's wire format), and it gets a
 * 409 for an incompatible change under BACKWARD. Its Protobuf serializer registers a serialized
 * descriptor and its deserializer asks for one (`?format=serialized`); the registry keeps .proto text.
 */
import { create, createFileRegistry, createMutableRegistry } from '@bufbuild/protobuf';
import { FieldDescriptorProto_Label, FieldDescriptorProto_Type, FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import {
  AvroDeserializer, AvroSerializer, JsonDeserializer, JsonSerializer, ProtobufDeserializer, ProtobufSerializer, SchemaRegistryClient, SerdeType,
} from '@confluentinc/schemaregistry';
import { describe, expect, it } from 'vitest';
import { baseUrl, call, createTopic, uniqueTopic, v3 } from '../support/api.js';

const tag = `${process.pid}-${Date.now().toString(36)}`;
const client = () => new SchemaRegistryClient({ baseURLs: [baseUrl()], maxRetries: 0 });

describe('@confluentinc/schemaregistry against Tributary', () => {
  it('registers AVRO, serializes with the latest version and deserializes with a client that fetches the schema by id', async () => {
    const topic = `confluent-${tag}-avro`;
    const subject = `${topic}-value`;
    const c = client();
    const schema = JSON.stringify({ type: 'record', name: 'User', namespace: 'tributary.confluent', fields: [{ name: 'name', type: 'string' }, { name: 'age', type: 'int' }] });
    const id = await c.register(subject, { schemaType: 'AVRO', schema });
    expect(await c.register(subject, { schemaType: 'AVRO', schema })).toBe(id);
    expect(await client().getId(subject, { schemaType: 'AVRO', schema })).toBe(id);
    const latest = await client().getLatestSchemaMetadata(subject);
    expect(latest).toMatchObject({ id, version: 1, subject });

    const ser = new AvroSerializer(c, SerdeType.VALUE, { useLatestVersion: true });
    const bytes = await ser.serialize(topic, { name: 'Bob Jones', age: 25 });
    expect(bytes[0]).toBe(0);
    expect(bytes.readInt32BE(1)).toBe(id);
    const de = new AvroDeserializer(client(), SerdeType.VALUE, {});
    expect(await de.deserialize(topic, bytes)).toEqual({ name: 'Bob Jones', age: 25 });

    const breaking = JSON.stringify({ type: 'record', name: 'User', namespace: 'tributary.confluent', fields: [{ name: 'name', type: 'string' }, { name: 'age', type: 'string' }] });
    await expect(c.register(subject, { schemaType: 'AVRO', schema: breaking })).rejects.toMatchObject({ status: 409 });
    expect(await c.testSubjectCompatibility(subject, { schemaType: 'AVRO', schema: breaking })).toBe(false);
  });

  it('registers a JSON Schema, serializes and deserializes, and gets a 409 for a breaking change', async () => {
    const topic = `confluent-${tag}-json`;
    const subject = `${topic}-value`;
    const c = client();
    const schema = { type: 'object', properties: { sku: { type: 'string' }, qty: { type: 'integer' } }, required: ['sku'], additionalProperties: false };
    const id = await c.register(subject, { schemaType: 'JSON', schema: JSON.stringify(schema) });
    const ser = new JsonSerializer(c, SerdeType.VALUE, { useLatestVersion: true });
    const bytes = await ser.serialize(topic, { sku: 'A-1', qty: 2 });
    expect(bytes.readInt32BE(1)).toBe(id);
    expect(await new JsonDeserializer(client(), SerdeType.VALUE, {}).deserialize(topic, bytes)).toEqual({ sku: 'A-1', qty: 2 });
    const breaking = { ...schema, required: ['sku', 'qty'] };
    await expect(c.register(subject, { schemaType: 'JSON', schema: JSON.stringify(breaking) })).rejects.toMatchObject({ status: 409 });
  });

  it('registers PROTOBUF as its serializer does (a serialized descriptor), deserializes, reads Tributary\'s bytes and gets a 409', async () => {
    const topic = uniqueTopic('confluent-proto');
    await createTopic(topic, 1, 3);
    // (a message type as protobuf-es builds one from a descriptor, no generated code)
    const scalar = (name: string, number: number, type: FieldDescriptorProto_Type) => ({ name, number, type, label: FieldDescriptorProto_Label.OPTIONAL, jsonName: name });
    const file = create(FileDescriptorProtoSchema, {
      name: 'shop/order.proto', package: 'shop.v1', syntax: 'proto3',
      messageType: [{ name: 'Order', field: [scalar('sku', 1, FieldDescriptorProto_Type.STRING), scalar('qty', 2, FieldDescriptorProto_Type.INT32)] }],
    });
    const Order = createFileRegistry(file, () => undefined).getMessage('shop.v1.Order');
    if (!Order) throw new Error('no Order in the descriptor');
    const ser = new ProtobufSerializer(client(), SerdeType.VALUE, { autoRegisterSchemas: true, registry: createMutableRegistry(Order) });
    const bytes = await ser.serialize(topic, create(Order, { sku: 'A-1', qty: 3 }));
    expect(bytes[0]).toBe(0);
    const id = bytes.readInt32BE(1);

    // kept as .proto text; given back as a descriptor with format=serialized
    const text = await (await fetch(`${baseUrl()}/schemas/ids/${id}/schema`)).text();
    expect(text).toMatch(/package shop\.v1;[\s\S]*message Order \{\s*string sku = 1;\s*int32 qty = 2;\s*\}/);
    const serialized = (await call('GET', `/subjects/${topic}-value/versions/latest?format=serialized`)).body;
    expect(serialized).toMatchObject({ id, version: 1, schemaType: 'PROTOBUF' });
    expect(serialized.schema).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(await new ProtobufDeserializer(client(), SerdeType.VALUE, {}).deserialize(topic, bytes)).toMatchObject({ sku: 'A-1', qty: 3 });

    // Tributary decodes the serializer's bytes, and Confluent's deserializer reads Tributary's
    const written = await call('POST', v3(`/topics/${topic}/records`), { value: { type: 'BINARY', data: bytes.toString('base64') } });
    expect(written.status, written.text).toBe(200);
    const mine = await call('POST', v3(`/topics/${topic}/records`), { value: { type: 'PROTOBUF', schema_id: id, data: { sku: 'B-2', qty: 4 } } });
    expect(mine.status, mine.text).toBe(200);
    const read = await call('GET', v3(`/topics/${topic}/partitions/0/records?offset=${written.body.offset}&format=protobuf`));
    expect(read.body.records.map((r: any) => r.value.data)).toEqual([{ sku: 'A-1', qty: 3 }, { sku: 'B-2', qty: 4 }]);
    const raw = await call('GET', v3(`/topics/${topic}/partitions/0/records?offset=${mine.body.offset}&format=binary`));
    const theirs = Buffer.from(raw.body.records[0].value.data, 'base64');
    expect(await new ProtobufDeserializer(client(), SerdeType.VALUE, {}).deserialize(topic, theirs)).toMatchObject({ sku: 'B-2', qty: 4 });

    const breaking = text.replace('int32 qty = 2;', 'string qty = 2;');
    await expect(client().register(`${topic}-value`, { schemaType: 'PROTOBUF', schema: breaking })).rejects.toMatchObject({ status: 409 });
  });
});
