/**
 * Confluent Schema Registry's API over HTTP against the shared stack (Lambda-fidelity mode):
 * registration and ids, versions, lookup, soft and permanent deletes, levels, the mode, the
 * compatibility test, references, schemas by id, and Confluent's error codes.
 */
import { describe, expect, it } from 'vitest';
import { call, expectError } from '../support/api.js';

const SR = 'application/vnd.schemaregistry.v1+json';
const tag = `${process.pid}-${Date.now().toString(36)}`;
const subject = (name: string) => `sr-${tag}-${name}`;
const post = (path: string, body: unknown) => call('POST', path, body, { 'content-type': SR, accept: SR });
const put = (path: string, body: unknown) => call('PUT', path, body, { 'content-type': SR });
const get = (path: string) => call('GET', path, undefined, { accept: SR });
const del = (path: string) => call('DELETE', path);
const enc = encodeURIComponent;

const user = (fields: object[]) => JSON.stringify({ type: 'record', name: 'User', namespace: 'tributary.test', fields: [{ name: 'id', type: 'long' }, ...fields] });

describe('Schema registry: registration, versions and lookup', () => {
  it('registers a schema (one id for the same content, whitespace and key order aside), lists and reads its versions', async () => {
    const s = subject('basic');
    const v1 = user([]);
    const first = await post(`/subjects/${enc(s)}/versions`, { schema: v1 });
    expect(first.status, first.text).toBe(200);
    expect(first.headers.get('content-type')).toBe(SR);
    expect(first.body).toEqual({ id: expect.any(Number) });
    const id1 = first.body.id as number;
    // The same schema, spaced and ordered differently: the same id, no new version.
    const again = await post(`/subjects/${enc(s)}/versions`, { schema: JSON.stringify(JSON.parse(v1), null, 2).replace('"type": "record",\n', '"type":"record",') });
    expect(again.body).toEqual({ id: id1 });
    const v2 = user([{ name: 'email', type: ['null', 'string'], default: null }]);
    const second = await post(`/subjects/${enc(s)}/versions`, { schema: v2, schemaType: 'AVRO' });
    expect(second.status, second.text).toBe(200);
    expect(second.body.id).toBeGreaterThan(id1);

    expect((await get(`/subjects/${enc(s)}/versions`)).body).toEqual([1, 2]);
    const latest = await get(`/subjects/${enc(s)}/versions/latest`);
    expect(latest.body).toMatchObject({ subject: s, version: 2, id: second.body.id });
    expect(latest.body.schemaType).toBeUndefined();
    expect(JSON.parse(latest.body.schema)).toEqual(JSON.parse(v2));
    expect((await get(`/subjects/${enc(s)}/versions/-1`)).body.version).toBe(2);
    expect((await get(`/subjects/${enc(s)}/versions/1`)).body.id).toBe(id1);
    const raw = await get(`/subjects/${enc(s)}/versions/1/schema`);
    expect(raw.body).toEqual(JSON.parse(v1));

    const byId = await get(`/schemas/ids/${id1}`);
    expect(JSON.parse(byId.body.schema)).toEqual(JSON.parse(v1));
    expect((await get(`/schemas/ids/${id1}/schema`)).body).toEqual(JSON.parse(v1));
    expect((await get(`/schemas/ids/${id1}/subjects`)).body).toEqual([s]);
    expect((await get(`/schemas/ids/${id1}/versions`)).body).toEqual([{ subject: s, version: 1 }]);
    expect((await get('/subjects')).body).toEqual(expect.arrayContaining([s]));

    // The same content under another subject: the same id, version 1 there.
    const other = subject('basic-other');
    expect((await post(`/subjects/${enc(other)}/versions`, { schema: v1 })).body).toEqual({ id: id1 });
    expect((await get(`/schemas/ids/${id1}/subjects`)).body.sort()).toEqual([s, other].sort());

    const found = await post(`/subjects/${enc(s)}`, { schema: v2 });
    expect(found.body).toEqual({ subject: s, version: 2, id: second.body.id, schema: expect.any(String) });
    expectError(await post(`/subjects/${enc(s)}`, { schema: user([{ name: 'x', type: 'int', default: 0 }]) }), 404, 40403);
    expectError(await post(`/subjects/${enc(subject('none'))}`, { schema: v1 }), 404, 40401);
  });

  it('answers Confluent\'s codes: 40401, 40402, 40403, 42201, 42202, 42203, 415', async () => {
    const s = subject('errors');
    expectError(await get(`/subjects/${enc(s)}/versions`), 404, 40401);
    expectError(await get(`/subjects/${enc(s)}/versions/1`), 404, 40401);
    expect((await post(`/subjects/${enc(s)}/versions`, { schema: '"string"' })).status).toBe(200);
    expectError(await get(`/subjects/${enc(s)}/versions/7`), 404, 40402);
    expectError(await get(`/subjects/${enc(s)}/versions/zero`), 422, 42202);
    expectError(await get(`/subjects/${enc(s)}/versions/0`), 422, 42202);
    expectError(await get('/schemas/ids/999999999'), 404, 40403);
    expectError(await get('/schemas/ids/abc'), 404, 40403);
    expectError(await post(`/subjects/${enc(s)}/versions`, { schema: '{"type":"record","name":"R","fields":[{"name":"a","type":"nope"}]}' }), 422, 42201);
    expectError(await post(`/subjects/${enc(s)}/versions`, { schema: '{' }), 422, 42201);
    expectError(await post(`/subjects/${enc(s)}/versions`, { schema: '{}', schemaType: 'XML' }), 422, 42201);
    expectError(await post(`/subjects/${enc(s)}/versions`, { nothing: true }), 422, 42201);
    expectError(await put(`/config/${enc(s)}`, { compatibility: 'SIDEWAYS' }), 422, 42203);
    expectError(await call('POST', `/subjects/${enc(s)}/versions`, { schema: '"int"' }, { 'content-type': 'text/plain' }), 415, 415);
    expect((await get('/schemas/types')).body.sort()).toEqual(['AVRO', 'JSON', 'PROTOBUF']);
  });
});

describe('Schema registry: compatibility levels', () => {
  it('refuses an incompatible schema under BACKWARD with 409, and accepts it under NONE', async () => {
    const s = subject('compat');
    expect((await post(`/subjects/${enc(s)}/versions`, { schema: user([]) })).status).toBe(200);
    // A new field without a default: the new schema cannot read old data.
    const breaking = user([{ name: 'email', type: 'string' }]);
    expectError(await post(`/subjects/${enc(s)}/versions`, { schema: breaking }), 409, 409);
    const test = await post(`/compatibility/subjects/${enc(s)}/versions/latest?verbose=true`, { schema: breaking });
    expect(test.body.is_compatible).toBe(false);
    expect(test.body.messages.length).toBeGreaterThan(0);
    expect((await post(`/compatibility/subjects/${enc(s)}/versions/1`, { schema: user([{ name: 'email', type: 'string', default: '' }]) })).body).toEqual({ is_compatible: true });

    expectError(await get(`/config/${enc(s)}`), 404, 40408);
    expect((await get(`/config/${enc(s)}?defaultToGlobal=true`)).body).toEqual({ compatibilityLevel: expect.any(String) });
    expect((await put(`/config/${enc(s)}`, { compatibility: 'NONE' })).body).toEqual({ compatibility: 'NONE' });
    expect((await get(`/config/${enc(s)}`)).body).toEqual({ compatibilityLevel: 'NONE' });
    expect((await post(`/subjects/${enc(s)}/versions`, { schema: breaking })).status).toBe(200);
    expect((await del(`/config/${enc(s)}`)).body).toEqual({ compatibilityLevel: 'NONE' });
    expectError(await del(`/config/${enc(s)}`), 404, 40408);
    expect((await get('/config')).body).toEqual({ compatibilityLevel: expect.any(String) });
    expect((await get('/mode')).body).toEqual({ mode: 'READWRITE' });
    expectError(await put('/mode', { mode: 'IMPORT' }), 422, 42204);
  });

  it('checks FORWARD_TRANSITIVE against every live version', async () => {
    const s = subject('transitive');
    expect((await put(`/config/${enc(s)}`, { compatibility: 'NONE' })).status).toBe(200);
    expect((await post(`/subjects/${enc(s)}/versions`, { schema: user([{ name: 'a', type: 'string' }]) })).status).toBe(200);
    expect((await post(`/subjects/${enc(s)}/versions`, { schema: user([{ name: 'a', type: 'string', default: '' }]) })).status).toBe(200);
    await put(`/config/${enc(s)}`, { compatibility: 'FORWARD' });
    // Dropping `a`: version 2 (with a default) reads the new data, version 1 (without) does not.
    const dropped = user([]);
    expect((await post(`/compatibility/subjects/${enc(s)}/versions`, { schema: dropped })).body).toEqual({ is_compatible: true });
    await put(`/config/${enc(s)}`, { compatibility: 'FORWARD_TRANSITIVE' });
    expect((await post(`/compatibility/subjects/${enc(s)}/versions`, { schema: dropped })).body).toEqual({ is_compatible: false });
    expectError(await post(`/subjects/${enc(s)}/versions`, { schema: dropped }), 409, 409);
  });
});

describe('Schema registry: deletes', () => {
  it('soft-deletes, then permanently deletes a version and a subject; the schema id stays readable', async () => {
    const s = subject('deletes');
    const id1 = (await post(`/subjects/${enc(s)}/versions`, { schema: user([]) })).body.id;
    await post(`/subjects/${enc(s)}/versions`, { schema: user([{ name: 'b', type: 'int', default: 1 }]) });
    expectError(await del(`/subjects/${enc(s)}/versions/1?permanent=true`), 404, 40407);
    expect((await del(`/subjects/${enc(s)}/versions/1`)).body).toBe(1);
    expectError(await del(`/subjects/${enc(s)}/versions/1`), 404, 40406);
    expect((await get(`/subjects/${enc(s)}/versions`)).body).toEqual([2]);
    expect((await get(`/subjects/${enc(s)}/versions?deleted=true`)).body).toEqual([1, 2]);
    expectError(await get(`/subjects/${enc(s)}/versions/1`), 404, 40402);
    expect((await get(`/subjects/${enc(s)}/versions/1?deleted=true`)).body.id).toBe(id1);
    expect((await del(`/subjects/${enc(s)}/versions/1?permanent=true`)).body).toBe(1);
    expect((await get(`/subjects/${enc(s)}/versions?deleted=true`)).body).toEqual([2]);

    expectError(await del(`/subjects/${enc(s)}?permanent=true`), 404, 40405);
    expect((await del(`/subjects/${enc(s)}`)).body).toEqual([2]);
    expectError(await del(`/subjects/${enc(s)}`), 404, 40404);
    expect((await get('/subjects')).body).not.toContain(s);
    expect((await get('/subjects?deleted=true')).body).toContain(s);
    expect((await del(`/subjects/${enc(s)}?permanent=true`)).body).toEqual([2]);
    expectError(await get(`/subjects/${enc(s)}/versions?deleted=true`), 404, 40401);
    expect((await get(`/schemas/ids/${id1}`)).status).toBe(200);
    // Registered again: the same id, a version number after the ones removed... or 1 when none is left.
    expect((await post(`/subjects/${enc(s)}/versions`, { schema: user([]) })).body).toEqual({ id: id1 });
    expect((await get(`/subjects/${enc(s)}/versions`)).body).toEqual([1]);
  });
});

describe('Schema registry: references and other types', () => {
  it('resolves AVRO references when parsing, stores and answers them', async () => {
    const addr = subject('address');
    await post(`/subjects/${enc(addr)}/versions`, { schema: JSON.stringify({ type: 'record', name: 'Address', namespace: 'tributary.test', fields: [{ name: 'city', type: 'string' }] }) });
    const s = subject('with-ref');
    const schema = JSON.stringify({ type: 'record', name: 'Customer', namespace: 'tributary.test', fields: [{ name: 'home', type: 'tributary.test.Address' }] });
    expectError(await post(`/subjects/${enc(s)}/versions`, { schema }), 422, 42201);
    const references = [{ name: 'tributary.test.Address', subject: addr, version: 1 }];
    const r = await post(`/subjects/${enc(s)}/versions`, { schema, references });
    expect(r.status, r.text).toBe(200);
    expect((await get(`/subjects/${enc(s)}/versions/1`)).body.references).toEqual(references);
    expect((await get(`/schemas/ids/${r.body.id}`)).body.references).toEqual(references);
  });

  it('registers JSON Schema and Protobuf, and refuses their breaking changes under BACKWARD', async () => {
    const j = subject('json');
    const js = { type: 'object', properties: { name: { type: 'string' } }, additionalProperties: false };
    const a = await post(`/subjects/${enc(j)}/versions`, { schemaType: 'JSON', schema: JSON.stringify(js) });
    expect(a.status, a.text).toBe(200);
    expect((await get(`/subjects/${enc(j)}/versions/1`)).body.schemaType).toBe('JSON');
    expectError(await post(`/subjects/${enc(j)}/versions`, { schemaType: 'JSON', schema: JSON.stringify({ ...js, properties: { name: { type: 'integer' } } }) }), 409, 409);
    expectError(await post(`/subjects/${enc(j)}/versions`, { schemaType: 'JSON', schema: '{"type": 12}' }), 422, 42201);

    const p = subject('proto');
    const proto = 'syntax = "proto3";\npackage tributary.test;\n\nmessage Order {\n  string id = 1;\n  int64 amount = 2;\n}\n';
    const b = await post(`/subjects/${enc(p)}/versions`, { schemaType: 'PROTOBUF', schema: proto });
    expect(b.status, b.text).toBe(200);
    expect((await post(`/subjects/${enc(p)}/versions`, { schemaType: 'PROTOBUF', schema: proto.replace(/\n/g, '\r\n') })).body).toEqual({ id: b.body.id });
    expectError(await post(`/subjects/${enc(p)}/versions`, { schemaType: 'PROTOBUF', schema: proto.replace('int64 amount', 'string amount') }), 409, 409);
    expect((await post(`/subjects/${enc(p)}/versions`, { schemaType: 'PROTOBUF', schema: proto.replace('}', '  string note = 3;\n}') })).status).toBe(200);
    expectError(await post(`/subjects/${enc(p)}/versions`, { schemaType: 'PROTOBUF', schema: 'message {' }), 422, 42201);
  });
});

describe('Schema registry: concurrent registrations', () => {
  it('gives one id to the same schema registered concurrently from many instances, and different schemas different ids', async () => {
    const s = subject('race');
    const schema = user([{ name: 'race', type: 'string', default: tag }]);
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 8 }, () => post(`/subjects/${enc(s)}/versions`, { schema })));
    const ms = Date.now() - started;
    for (const a of answers) expect(a.status, a.text).toBe(200);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect((await get(`/subjects/${enc(s)}/versions`)).body).toEqual([1]);

    const distinct = await Promise.all(Array.from({ length: 8 }, (_, i) => post(`/subjects/${enc(subject(`race-${i}`))}/versions`, { schema: user([{ name: `f${i}`, type: 'string', default: tag }]) })));
    for (const a of distinct) expect(a.status, a.text).toBe(200);
    expect(new Set(distinct.map((a) => a.body.id)).size).toBe(8);
    console.log(`8 concurrent registrations of one schema: ${ms} ms`);
  });
});
