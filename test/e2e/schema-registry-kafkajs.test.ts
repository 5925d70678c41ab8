/**
 * `@kafkajs/confluent-schema-registry`, unmodified and pointed at the local stack's URL: it
 * registers, fetches and encodes/decodes AVRO, JSON Schema and PROTOBUF (references too), and
 * gets a 409 for an incompatible change under BACKWARD.
 */
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { describe, expect, it } from 'vitest';
import { baseUrl } from '../support/api.js';

const tag = `${process.pid}-${Date.now().toString(36)}`;
const subject = (name: string) => `kafkajs-${tag}-${name}`;
const registry = () => new SchemaRegistry({ host: baseUrl() });
/** A fresh client: nothing cached, so every read goes to the registry. */
const reader = () => new SchemaRegistry({ host: baseUrl() });

describe('@kafkajs/confluent-schema-registry against Tributary', () => {
  it('registers an AVRO schema, encodes with it and decodes with a client that fetches it by id', async () => {
    const r = registry();
    const schema = { type: 'record', name: 'Payment', namespace: 'tributary.kafkajs', fields: [{ name: 'id', type: 'string' }, { name: 'amount', type: 'double' }] };
    const s = subject('avro');
    const { id } = await r.register({ type: SchemaType.AVRO, schema: JSON.stringify(schema) }, { subject: s });
    expect((await r.register({ type: SchemaType.AVRO, schema: JSON.stringify(schema) }, { subject: s })).id).toBe(id);
    const bytes = await r.encode(id, { id: 'p-1', amount: 12.5 });
    expect(bytes[0]).toBe(0);
    expect(bytes.readInt32BE(1)).toBe(id);
    const other = reader();
    expect(await other.decode(bytes)).toEqual({ id: 'p-1', amount: 12.5 });
    expect(await other.getLatestSchemaId(s)).toBe(id);
    expect(await other.getRegistryId(s, 1)).toBe(id);
    expect(await other.getRegistryIdBySchema(s, { type: SchemaType.AVRO, schema: JSON.stringify(schema) })).toBe(id);

    // A field without a default breaks BACKWARD: the registry answers 409.
    const breaking = { ...schema, fields: [...schema.fields, { name: 'currency', type: 'string' }] };
    await expect(r.register({ type: SchemaType.AVRO, schema: JSON.stringify(breaking) }, { subject: s })).rejects.toMatchObject({ status: 409 });
    const evolved = { ...schema, fields: [...schema.fields, { name: 'currency', type: 'string', default: 'EUR' }] };
    const v2 = await r.register({ type: SchemaType.AVRO, schema: JSON.stringify(evolved) }, { subject: s });
    expect(v2.id).not.toBe(id);
    expect(await reader().decode(await r.encode(v2.id, { id: 'p-2', amount: 1, currency: 'USD' }))).toEqual({ id: 'p-2', amount: 1, currency: 'USD' });
  });

  it('registers an AVRO schema with a reference and decodes through it', async () => {
    const r = registry();
    const addr = subject('avro-address');
    await r.register({ type: SchemaType.AVRO, schema: JSON.stringify({ type: 'record', name: 'Address', namespace: 'tributary.kafkajs', fields: [{ name: 'city', type: 'string' }] }) }, { subject: addr });
    const s = subject('avro-customer');
    const { id } = await r.register({
      type: SchemaType.AVRO,
      schema: JSON.stringify({ type: 'record', name: 'Customer', namespace: 'tributary.kafkajs', fields: [{ name: 'name', type: 'string' }, { name: 'home', type: 'tributary.kafkajs.Address' }] }),
      references: [{ name: 'tributary.kafkajs.Address', subject: addr, version: 1 }],
    }, { subject: s });
    const value = { name: 'Ada', home: { city: 'London' } };
    expect(await reader().decode(await r.encode(id, value))).toEqual(value);
  });

  it('registers a JSON Schema, encodes and decodes, and gets a 409 for a breaking change', async () => {
    const r = registry();
    const s = subject('json');
    const schema = { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { sku: { type: 'string' }, qty: { type: 'integer' } }, required: ['sku'], additionalProperties: false };
    const { id } = await r.register({ type: SchemaType.JSON, schema: JSON.stringify(schema) }, { subject: s });
    const bytes = await r.encode(id, { sku: 'A-1', qty: 3 });
    expect(bytes.readInt32BE(1)).toBe(id);
    expect(await reader().decode(bytes)).toEqual({ sku: 'A-1', qty: 3 });
    const breaking = { ...schema, properties: { ...schema.properties, qty: { type: 'string' } } };
    await expect(r.register({ type: SchemaType.JSON, schema: JSON.stringify(breaking) }, { subject: s })).rejects.toMatchObject({ status: 409 });
    // Closed content model: a new optional property is compatible.
    const added = { ...schema, properties: { ...schema.properties, note: { type: 'string' } } };
    expect((await r.register({ type: SchemaType.JSON, schema: JSON.stringify(added) }, { subject: s })).id).not.toBe(id);
  });

  it('registers a PROTOBUF schema, encodes and decodes, and gets a 409 for a field whose type changes', async () => {
    const r = registry();
    const s = subject('proto');
    const schema = 'syntax = "proto3";\npackage tributary.kafkajs;\n\nmessage Shipment {\n  string id = 1;\n  int32 parcels = 2;\n  repeated string labels = 3;\n}\n';
    const { id } = await r.register({ type: SchemaType.PROTOBUF, schema }, { subject: s });
    const value = { id: 's-1', parcels: 2, labels: ['fragile'] };
    const bytes = await r.encode(id, value);
    expect(bytes.readInt32BE(1)).toBe(id);
    expect(await reader().decode(bytes)).toEqual(value);
    await expect(r.register({ type: SchemaType.PROTOBUF, schema: schema.replace('int32 parcels', 'string parcels') }, { subject: s })).rejects.toMatchObject({ status: 409 });
    const added = schema.replace('repeated string labels = 3;', 'repeated string labels = 3;\n  string carrier = 4;');
    expect((await r.register({ type: SchemaType.PROTOBUF, schema: added }, { subject: s })).id).not.toBe(id);
  });
});
