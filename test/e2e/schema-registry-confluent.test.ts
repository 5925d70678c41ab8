/**
 * `@confluentinc/schemaregistry`, Confluent's own JavaScript client, unmodified and pointed at the
 * local stack's URL: it registers and fetches AVRO and JSON Schema, its serializers and
 * deserializers encode and decode through the registry (Confluent's wire format), and it gets a
 * 409 for an incompatible change under BACKWARD.
 */
import {
  AvroDeserializer, AvroSerializer, JsonDeserializer, JsonSerializer, SchemaRegistryClient, SerdeType,
} from '@confluentinc/schemaregistry';
import { describe, expect, it } from 'vitest';
import { baseUrl } from '../support/api.js';

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
});
