/**
 * Compatibility of AVRO, JSON Schema and Protobuf schemas under Confluent's levels, on the
 * examples Confluent documents for each format, and the canonical forms that give the same
 * content one id.
 */
import { describe, expect, it } from 'vitest';
import { parseAvro } from '../../../lib/schemas/avro.js';
import { incompatibilities, type CompatibilityLevel } from '../../../lib/schemas/compatibility.js';
import { parseJsonSchema } from '../../../lib/schemas/json-schema.js';
import { parseProtobuf } from '../../../lib/schemas/protobuf.js';
import { BoundedCache } from '../../../lib/schemas/cache.js';
import type { ResolvedReference, SchemaType } from '../../../lib/schemas/model.js';

// (each format's parser itself: compatibility.ts's parseSchema loads them on first use)
const PARSERS = { AVRO: parseAvro, JSON: parseJsonSchema, PROTOBUF: parseProtobuf } as const;
const parse = (type: SchemaType, schema: unknown, refs: ResolvedReference[] = []) =>
  PARSERS[type](typeof schema === 'string' ? schema : JSON.stringify(schema), refs);
/** Whether `next` may follow `previous` (oldest first) under `level`. */
const allowed = (type: SchemaType, level: CompatibilityLevel, previous: unknown[], next: unknown) =>
  incompatibilities(level, parse(type, next), previous.map((p) => parse(type, p))).length === 0;

describe('AVRO compatibility (Avro schema resolution, as Confluent applies it)', () => {
  // Confluent's tutorial schema: a Payment with an id and an amount.
  const payment = { type: 'record', name: 'Payment', namespace: 'io.confluent.examples.clients.basicavro', fields: [{ name: 'id', type: 'string' }, { name: 'amount', type: 'double' }] };
  const withRegion = { ...payment, fields: [...payment.fields, { name: 'region', type: 'string' }] };
  const withRegionDefault = { ...payment, fields: [...payment.fields, { name: 'region', type: 'string', default: 'EU' }] };
  const withoutAmount = { ...payment, fields: [payment.fields[0]] };

  it('refuses under BACKWARD a new field without a default (the tutorial\'s `region`), accepts it with one', () => {
    expect(allowed('AVRO', 'BACKWARD', [payment], withRegion)).toBe(false);
    expect(allowed('AVRO', 'BACKWARD', [payment], withRegionDefault)).toBe(true);
  });

  it('follows the summary table: BACKWARD deletes fields and adds optional ones; FORWARD adds fields and deletes optional ones; FULL both optional only', () => {
    expect(allowed('AVRO', 'BACKWARD', [payment], withoutAmount)).toBe(true);
    expect(allowed('AVRO', 'FORWARD', [payment], withRegion)).toBe(true);
    expect(allowed('AVRO', 'FORWARD', [payment], withoutAmount)).toBe(false);
    expect(allowed('AVRO', 'FORWARD', [withRegionDefault], payment)).toBe(true);
    expect(allowed('AVRO', 'FULL', [payment], withRegionDefault)).toBe(true);
    expect(allowed('AVRO', 'FULL', [payment], withRegion)).toBe(false);
    expect(allowed('AVRO', 'FULL', [withRegionDefault], payment)).toBe(true);
    expect(allowed('AVRO', 'NONE', [payment], { type: 'string' })).toBe(true);
  });

  it('promotes int to long for a reader, not the other way round; a renamed record needs an alias', () => {
    const n = (type: string) => ({ type: 'record', name: 'N', fields: [{ name: 'v', type }] });
    expect(allowed('AVRO', 'BACKWARD', [n('int')], n('long'))).toBe(true);
    expect(allowed('AVRO', 'BACKWARD', [n('long')], n('int'))).toBe(false);
    expect(allowed('AVRO', 'BACKWARD', [payment], { ...payment, name: 'Charge' })).toBe(false);
    expect(allowed('AVRO', 'BACKWARD', [payment], { ...payment, name: 'Charge', aliases: ['io.confluent.examples.clients.basicavro.Payment'] })).toBe(true);
  });

  it('checks the _TRANSITIVE levels against every version, the others against the latest only', () => {
    const v1 = { type: 'record', name: 'T', fields: [{ name: 'a', type: 'string' }] };
    const v2 = { type: 'record', name: 'T', fields: [{ name: 'a', type: 'string', default: '' }] };
    const v3 = { type: 'record', name: 'T', fields: [] };
    expect(allowed('AVRO', 'FORWARD', [v1, v2], v3)).toBe(true);
    expect(allowed('AVRO', 'FORWARD_TRANSITIVE', [v1, v2], v3)).toBe(false);
  });

  it('has one canonical form for one schema written differently, and keeps defaults, docs and logical types', () => {
    const a = parse('AVRO', '{"type":"record","name":"R","fields":[{"name":"t","type":{"type":"long","logicalType":"timestamp-millis"},"doc":"when","default":0}]}');
    const b = parse('AVRO', '{ "fields": [ { "default": 0, "doc": "when", "name": "t", "type": { "logicalType": "timestamp-millis", "type": "long" } } ], "name": "R", "type": "record" }');
    expect(a.canonical).toBe(b.canonical);
    expect(JSON.parse(a.canonical).fields[0]).toEqual({ name: 't', type: { type: 'long', logicalType: 'timestamp-millis' }, doc: 'when', default: 0 });
    expect(() => parse('AVRO', '{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":"x"}]}')).toThrow(expect.objectContaining({ errorCode: 42201 }));
  });

  it('parses a schema that names a type of a reference only with that reference', () => {
    const address: ResolvedReference = { name: 'x.Address', schemaType: 'AVRO', schema: JSON.stringify({ type: 'record', name: 'Address', namespace: 'x', fields: [{ name: 'city', type: 'string' }] }) };
    const customer = { type: 'record', name: 'Customer', namespace: 'x', fields: [{ name: 'home', type: 'x.Address' }] };
    expect(() => parse('AVRO', customer)).toThrow(expect.objectContaining({ errorCode: 42201 }));
    expect(JSON.parse(parse('AVRO', customer, [address]).canonical).fields[0].type).toBe('x.Address');
  });
});

describe('JSON Schema compatibility (Confluent\'s rules by content model)', () => {
  const open = { type: 'object', properties: { foo: { type: 'string' }, bar: { type: 'string' } } };
  const closed = { ...open, additionalProperties: false };
  const partial = { ...open, additionalProperties: { type: 'string' } };
  const without = (s: Record<string, any>, name: string) => ({ ...s, properties: Object.fromEntries(Object.entries(s.properties).filter(([k]) => k !== name)) });
  const plus = (s: Record<string, any>, name: string, schema: unknown) => ({ ...s, properties: { ...s.properties, [name]: schema } });

  it('open content model: removing a property is backward compatible, adding one is not', () => {
    expect(allowed('JSON', 'BACKWARD', [open], without(open, 'bar'))).toBe(true);
    expect(allowed('JSON', 'BACKWARD', [open], plus(open, 'baz', { type: 'number' }))).toBe(false);
    // ... and so FORWARD is the mirror image.
    expect(allowed('JSON', 'FORWARD', [open], plus(open, 'baz', { type: 'number' }))).toBe(true);
    expect(allowed('JSON', 'FORWARD', [open], without(open, 'bar'))).toBe(false);
  });

  it('closed content model: adding a property is backward compatible, removing one is not', () => {
    expect(allowed('JSON', 'BACKWARD', [closed], plus(closed, 'baz', { type: 'number' }))).toBe(true);
    expect(allowed('JSON', 'BACKWARD', [closed], without(closed, 'bar'))).toBe(false);
  });

  it('partially open content model: a property added or removed must fit the additionalProperties schema', () => {
    expect(allowed('JSON', 'BACKWARD', [partial], plus(partial, 'baz', { type: 'string' }))).toBe(true);
    expect(allowed('JSON', 'BACKWARD', [partial], plus(partial, 'baz', { type: 'number' }))).toBe(false);
    expect(allowed('JSON', 'BACKWARD', [partial], without(partial, 'bar'))).toBe(true);
    expect(allowed('JSON', 'BACKWARD', [plus(partial, 'n', { type: 'number' })], without(plus(partial, 'n', { type: 'number' }), 'n'))).toBe(false);
  });

  it('type changes: narrowing or changing a type is incompatible, widening integer to number is not', () => {
    const t = (type: unknown) => ({ type: 'object', properties: { v: { type } }, additionalProperties: false });
    expect(allowed('JSON', 'BACKWARD', [t('string')], t('integer'))).toBe(false);
    expect(allowed('JSON', 'BACKWARD', [t('integer')], t('number'))).toBe(true);
    expect(allowed('JSON', 'BACKWARD', [t('number')], t('integer'))).toBe(false);
    expect(allowed('JSON', 'BACKWARD', [t('string')], t(['string', 'null']))).toBe(true);
    expect(allowed('JSON', 'BACKWARD', [t(['string', 'null'])], t('string'))).toBe(false);
  });

  it('required changes: a new required property is incompatible (unless it has a default), dropping one from required is not', () => {
    const req = (required: string[], extra: object = {}) => ({ ...closed, properties: { ...closed.properties, ...extra }, required });
    expect(allowed('JSON', 'BACKWARD', [req([])], req(['foo']))).toBe(false);
    expect(allowed('JSON', 'BACKWARD', [req(['foo'])], req([]))).toBe(true);
    expect(allowed('JSON', 'BACKWARD', [req([])], req(['baz'], { baz: { type: 'string', default: 'x' } }))).toBe(true);
  });

  it('enums, bounds and nested objects', () => {
    const e = (values: string[]) => ({ type: 'string', enum: values });
    expect(allowed('JSON', 'BACKWARD', [e(['a', 'b'])], e(['a', 'b', 'c']))).toBe(true);
    expect(allowed('JSON', 'BACKWARD', [e(['a', 'b'])], e(['a']))).toBe(false);
    expect(allowed('JSON', 'BACKWARD', [{ type: 'string', maxLength: 10 }], { type: 'string', maxLength: 20 })).toBe(true);
    expect(allowed('JSON', 'BACKWARD', [{ type: 'string', maxLength: 10 }], { type: 'string', maxLength: 5 })).toBe(false);
    expect(allowed('JSON', 'BACKWARD', [{ type: 'string' }], { type: 'string', minLength: 1 })).toBe(false);
    const nested = (inner: object) => ({ type: 'object', properties: { o: inner }, additionalProperties: false });
    expect(allowed('JSON', 'BACKWARD', [nested(closed)], nested(without(closed, 'bar')))).toBe(false);
    expect(allowed('JSON', 'BACKWARD', [nested({ type: 'integer' })], nested({ type: 'number' }))).toBe(true);
  });

  it('follows local $refs, and rejects what ajv cannot compile', () => {
    const viaRef = { definitions: { s: { type: 'string' } }, type: 'object', properties: { v: { $ref: '#/definitions/s' } }, additionalProperties: false };
    expect(allowed('JSON', 'BACKWARD', [viaRef], { type: 'object', properties: { v: { type: 'integer' } }, additionalProperties: false })).toBe(false);
    expect(allowed('JSON', 'BACKWARD', [viaRef], { type: 'object', properties: { v: { type: 'string' } }, additionalProperties: false })).toBe(true);
    expect(() => parse('JSON', { type: 12 })).toThrow(expect.objectContaining({ errorCode: 42201 }));
    expect(() => parse('JSON', '[1]')).toThrow(expect.objectContaining({ errorCode: 42201 }));
    expect(parse('JSON', '{ "type": "object",  "properties": {} }').canonical).toBe('{"properties":{},"type":"object"}');
  });
});

describe('Protobuf compatibility (Confluent\'s change rules)', () => {
  const base = `syntax = "proto3";
package shop;
message Order {
  string id = 1;
  int32 quantity = 2;
  Item item = 3;
  oneof payment { string card = 4; string iban = 5; }
}
message Item { string sku = 1; }
enum Status { NEW = 0; DONE = 1; }`;
  const ok = (next: string) => allowed('PROTOBUF', 'BACKWARD', [base], next);

  it('accepts added, removed and renamed fields, added messages, enum changes, int32 to int64', () => {
    expect(ok(base.replace('Item item = 3;', 'Item item = 3;\n  string note = 6;'))).toBe(true);
    expect(ok(base.replace('int32 quantity = 2;', ''))).toBe(true);
    expect(ok(base.replace('int32 quantity', 'int32 count'))).toBe(true);
    expect(ok(`${base}\nmessage Extra { bool x = 1; }`)).toBe(true);
    expect(ok(base.replace('DONE = 1;', 'DONE = 1; CANCELLED = 2;'))).toBe(true);
    expect(ok(base.replace('enum Status { NEW = 0; DONE = 1; }', ''))).toBe(true);
    expect(ok(base.replace('int32 quantity', 'int64 quantity'))).toBe(true);
    expect(ok(base.replace('string id = 1', 'bytes id = 1'))).toBe(true);
    expect(ok(base.replace('string id = 1', 'repeated string id = 1'))).toBe(true);
  });

  it('refuses a field type change across scalar groups, kinds or message types, a removed message, a new package', () => {
    expect(ok(base.replace('int32 quantity', 'string quantity'))).toBe(false);
    expect(ok(base.replace('int32 quantity', 'sint32 quantity'))).toBe(false);
    expect(ok(base.replace('int32 quantity', 'Item quantity'))).toBe(false);
    expect(ok(base.replace('int32 quantity = 2', 'repeated int32 quantity = 2'))).toBe(false);
    expect(ok(base.replace('Item item = 3', 'Order item = 3'))).toBe(false);
    expect(ok(base.replace('message Item { string sku = 1; }', '').replace('Item item = 3;', ''))).toBe(false);
    expect(ok(base.replace('package shop;', 'package store;'))).toBe(false);
    // The field numbers are what the wire carries: the same name under another number is a remove and an add.
    expect(ok(base.replace('int32 quantity = 2', 'string quantity = 7'))).toBe(true);
  });

  it('refuses fields moved into an existing oneof, or several into a new one', () => {
    expect(ok(base.replace('string iban = 5; }', 'string iban = 5; int32 quantity = 2; }').replace('  int32 quantity = 2;\n', ''))).toBe(false);
    expect(ok(base.replace('  string id = 1;\n  int32 quantity = 2;\n', '  oneof ident { string id = 1; int32 quantity = 2; }\n'))).toBe(false);
    expect(ok(base.replace('  string id = 1;\n', '  oneof ident { string id = 1; }\n'))).toBe(true);
  });

  it('resolves imports from references and Google\'s well-known types; refuses unresolved types', () => {
    const dep: ResolvedReference = { name: 'common/money.proto', schemaType: 'PROTOBUF', schema: 'syntax = "proto3"; package common; message Money { int64 units = 1; }' };
    const withImport = 'syntax = "proto3";\nimport "common/money.proto";\nimport "google/protobuf/timestamp.proto";\nmessage Invoice { common.Money total = 1; google.protobuf.Timestamp at = 2; }';
    expect(() => parse('PROTOBUF', withImport)).toThrow(expect.objectContaining({ errorCode: 42201 }));
    expect(parse('PROTOBUF', withImport, [dep]).schemaType).toBe('PROTOBUF');
    expect(() => parse('PROTOBUF', 'syntax = "proto3"; message A { Missing m = 1; }')).toThrow(expect.objectContaining({ errorCode: 42201 }));
    expect(parse('PROTOBUF', 'syntax = "proto3";  \r\nmessage A { int32 x = 1; }\r\n\r\n').canonical).toBe('syntax = "proto3";\nmessage A { int32 x = 1; }');
  });
});

describe('Levels across formats', () => {
  it('reports a different schema type as incompatible, whatever the level but NONE', () => {
    const avro = parse('AVRO', '"string"');
    const json = parse('JSON', '{"type":"string"}');
    expect(incompatibilities('BACKWARD', json, [avro])).toHaveLength(1);
    expect(incompatibilities('NONE', json, [avro])).toEqual([]);
  });
});

describe('Class: BoundedCache', () => {
  it('keeps at most its entries and weight, dropping the least recently used first', () => {
    const c = new BoundedCache<string, string>(3, 10, (v) => v.length);
    c.set('a', 'xx');
    c.set('b', 'xx');
    c.set('c', 'xx');
    c.get('a');
    c.set('d', 'xx');
    expect([c.get('a'), c.get('b'), c.get('d')]).toEqual(['xx', undefined, 'xx']);
    c.set('e', 'xxxxxxx');
    expect(c.weight).toBeLessThanOrEqual(10);
    expect(c.get('e')).toBe('xxxxxxx');
    c.set('huge', 'x'.repeat(11));
    expect(c.get('huge')).toBeUndefined();
  });
});
