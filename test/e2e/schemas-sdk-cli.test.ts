/**
 * The SDK's schema registry (`tributary/schemas`) and `tributary schemas`, against the shared
 * stack: AVRO, JSON and PROTOBUF registered through the SDK; what the SDK encodes
 * `@kafkajs/confluent-schema-registry` decodes and the other way round; a value its schema does
 * not take throws; the registry's error codes reach the caller; SDK-encoded values produced by
 * the SDK producer are read back by a v3 read with `format=avro`; and every CLI subcommand once.
 */
import { SchemaRegistry as KafkajsRegistry } from '@kafkajs/confluent-schema-registry';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { baseUrl, call, createTopic, uniqueTopic, v3 } from '../support/api.js';
import { useCli } from '../support/cli.js';
import { Tributary, TributaryProtocolError } from '../../client/index.js';
import { SchemaRegistry, SchemaType, SchemaValidationError, isRegistryError } from '../../client/schemas.js';

const subject = (name: string) => uniqueTopic(`sdk-schemas-${name}`);
/** Every request's method, path and headers, seen on their way to the real fetch. */
const sent: { method: string; path: string; headers: Record<string, string> }[] = [];
const tributary = () => new Tributary({
  url: baseUrl(),
  fetch: (input, init) => {
    sent.push({ method: String(init.method), path: new URL(input).pathname, headers: init.headers as Record<string, string> });
    return fetch(input, init);
  },
});
const sdk = () => new SchemaRegistry(tributary());
const kafkajs = () => new KafkajsRegistry({ host: baseUrl() });
const cli = useCli();

const order = { type: 'record', name: 'Order', namespace: 'tributary.sdk', fields: [{ name: 'id', type: 'string' }, { name: 'qty', type: 'int' }, { name: 'note', type: ['null', 'string'], default: null }] };
const item = { type: 'object', properties: { sku: { type: 'string' }, n: { type: 'integer' } }, required: ['sku'] };
const proto = 'syntax = "proto3";\npackage tributary.sdk;\n\nmessage Shipment {\n  string id = 1;\n  int32 parcels = 2;\n  repeated string labels = 3;\n}\n';

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

describe('SchemaRegistry (SDK)', () => {
  it('registers AVRO, JSON and PROTOBUF; what it encodes kafkajs decodes, and what kafkajs encodes it decodes', async () => {
    const r = sdk();
    const [sa, sj, sp] = [subject('avro'), subject('json'), subject('proto')];
    const avroId = (await r.register({ type: SchemaType.AVRO, schema: JSON.stringify(order) }, { subject: sa })).id;
    expect((await r.register({ type: 'AVRO', schema: JSON.stringify(order) }, { subject: sa })).id).toBe(avroId);
    const jsonId = (await r.register({ type: 'JSON', schema: JSON.stringify(item) }, { subject: sj })).id;
    const protoId = (await r.register({ type: 'PROTOBUF', schema: proto }, { subject: sp })).id;
    const registryCalls = sent.filter((s) => s.path.startsWith('/subjects/'));
    expect(registryCalls.length).toBeGreaterThan(0);
    for (const c of registryCalls) expect(c.headers).toMatchObject({ 'content-type': 'application/vnd.schemaregistry.v1+json', accept: 'application/vnd.schemaregistry.v1+json' });

    const cases: [number, unknown][] = [
      [avroId, { id: 'o-1', qty: 2, note: 'rush' }],
      [jsonId, { sku: 'A-1', n: 3 }],
      [protoId, { id: 's-1', parcels: 2, labels: ['fragile'] }],
    ];
    for (const [id, value] of cases) {
      const bytes = await r.encode(id, value);
      expect(bytes[0]).toBe(0);
      expect(bytes.readInt32BE(1)).toBe(id);
      expect(await kafkajs().decode(bytes)).toEqual(value);
      // A fresh instance: the schema is fetched by the id the bytes carry.
      expect(await sdk().decode(await kafkajs().encode(id, value))).toEqual(value);
      expect(await sdk().decode(bytes)).toEqual(value);
    }
    // Protobuf without the message indexes (as some clients write it): the file's first message.
    const withIndexes = await r.encode(protoId, { id: 's-2', parcels: 1, labels: [] });
    const without = Buffer.concat([withIndexes.subarray(0, 5), withIndexes.subarray(6)]);
    expect(await sdk().decode(without)).toEqual({ id: 's-2', parcels: 1, labels: [] });
  });

  it('resolves references when it reads a schema by id (AVRO record naming a type of another subject)', async () => {
    const r = sdk();
    const money = { type: 'record', name: 'Money', namespace: 'tributary.sdk', fields: [{ name: 'cents', type: 'long' }, { name: 'currency', type: 'string' }] };
    const ms = subject('money');
    await r.register({ type: 'AVRO', schema: JSON.stringify(money) }, { subject: ms });
    const invoice = { type: 'record', name: 'Invoice', namespace: 'tributary.sdk', fields: [{ name: 'total', type: 'tributary.sdk.Money' }] };
    const { id } = await r.register({ type: 'AVRO', schema: JSON.stringify(invoice), references: [{ name: 'tributary.sdk.Money', subject: ms, version: 1 }] }, { subject: subject('invoice') });
    const value = { total: { cents: 1250, currency: 'EUR' } };
    expect(await sdk().decode(await r.encode(id, value))).toEqual(value);
    expect(await kafkajs().decode(await r.encode(id, value))).toEqual(value);
  });

  it('throws a SchemaValidationError naming the problem for a value its schema does not take, and refuses bytes not in the wire format', async () => {
    const r = sdk();
    const avroId = (await r.register({ type: 'AVRO', schema: JSON.stringify(order) }, { subject: subject('bad-avro') })).id;
    const jsonId = (await r.register({ type: 'JSON', schema: JSON.stringify(item) }, { subject: subject('bad-json') })).id;
    const protoId = (await r.register({ type: 'PROTOBUF', schema: proto }, { subject: subject('bad-proto') })).id;

    const avro = await rejection(r.encode(avroId, { id: 'o-1', qty: 'two', note: null }));
    expect(avro).toBeInstanceOf(SchemaValidationError);
    expect((avro as Error).message).toMatch(new RegExp(`does not match schema ${avroId} \\(AVRO\\): qty: "two" is not int`));
    await expect(r.encode(jsonId, { n: 1 })).rejects.toThrow(/does not match schema \d+ \(JSON\): .*required property 'sku'/);
    await expect(r.encode(protoId, { id: 's', weight: 3 })).rejects.toThrow(/\(PROTOBUF\): Shipment has no field weight/);
    await expect(r.encode(protoId, { id: 's', labels: 'fragile' })).rejects.toThrow(/\(PROTOBUF\): .*labels: array expected/);
    await expect(r.decode(Buffer.from('plain text'))).rejects.toThrow(/not in the schema registry's wire format/);
    const truncated = (await r.encode(avroId, { id: 'o-1', qty: 2, note: 'x' })).subarray(0, 7);
    await expect(r.decode(truncated)).rejects.toBeInstanceOf(SchemaValidationError);
  });

  it("surfaces the registry's error_code on the thrown error (40401, 40403, 42201, 409, 42203)", async () => {
    const r = sdk();
    const s = subject('errors');
    const codeOf = async (p: Promise<unknown>) => {
      const e = await rejection(p);
      expect(e).toBeInstanceOf(TributaryProtocolError);
      return (e as TributaryProtocolError).errorCode;
    };
    expect(await codeOf(r.getLatestSchemaId(s))).toBe(40401);
    expect(await codeOf(r.getSchema(2 ** 31 - 2))).toBe(40403);
    expect(await codeOf(r.decode(Buffer.from([0, 0x7f, 0xff, 0xff, 0xfe, 1])))).toBe(40403);
    expect(await codeOf(r.register({ type: 'AVRO', schema: '{"type":"record"' }, { subject: s }))).toBe(42201);
    await r.register({ type: 'AVRO', schema: JSON.stringify(order) }, { subject: s });
    const breaking = { ...order, fields: [...order.fields, { name: 'currency', type: 'string' }] };
    const e = await rejection(r.register({ type: 'AVRO', schema: JSON.stringify(breaking) }, { subject: s }));
    expect(isRegistryError(e, 409)).toBe(true);
    expect(await codeOf(r.setConfig('SIDEWAYS' as never, s))).toBe(42203);
    expect(await codeOf(r.getRegistryIdBySchema(s, { type: 'AVRO', schema: JSON.stringify(breaking) }))).toBe(40403);
  });

  it('lists subjects and versions, reads versions and ids, tests compatibility, sets levels and deletes', async () => {
    const r = sdk();
    const s = subject('admin');
    const v1 = (await r.register({ type: 'AVRO', schema: JSON.stringify(order) }, { subject: s })).id;
    const evolved = { ...order, fields: [...order.fields, { name: 'currency', type: 'string', default: 'EUR' }] };
    const breaking = { ...order, fields: [...order.fields, { name: 'currency', type: 'string' }] };
    expect(await r.checkCompatibility(s, { type: 'AVRO', schema: JSON.stringify(evolved) })).toEqual({ isCompatible: true, messages: [] });
    const refused = await r.checkCompatibility(s, { type: 'AVRO', schema: JSON.stringify(breaking) }, { version: 1 });
    expect(refused.isCompatible).toBe(false);
    expect(refused.messages.join(' ')).toMatch(/currency/);
    const v2 = (await r.register({ type: 'AVRO', schema: JSON.stringify(evolved) }, { subject: s })).id;

    expect(await r.getSubjects()).toContain(s);
    expect(await r.getVersions(s)).toEqual([1, 2]);
    expect(await r.getLatestSchemaId(s)).toBe(v2);
    expect(await r.getRegistryId(s, 1)).toBe(v1);
    expect(await r.getRegistryIdBySchema(s, { type: 'AVRO', schema: JSON.stringify(order) })).toBe(v1);
    expect(await r.getSubjectVersion(s)).toMatchObject({ subject: s, version: 2, id: v2, type: 'AVRO', references: [] });
    expect(await r.getSchema(v1)).toMatchObject({ id: v1, type: 'AVRO', references: [] });
    expect(JSON.parse((await r.getSchema(v1)).schema)).toEqual(order);
    expect(await r.getSchemaVersions(v2)).toEqual([{ subject: s, version: 2 }]);

    expect(await r.getConfig(s, { defaultToGlobal: true })).toBe(await r.getConfig());
    expect(await r.setConfig('FULL', s)).toBe('FULL');
    expect(await r.getConfig(s)).toBe('FULL');

    expect(await r.deleteSubjectVersion(s, 2)).toBe(2);
    expect(await r.getVersions(s)).toEqual([1]);
    expect(await r.getVersions(s, { deleted: true })).toEqual([1, 2]);
    expect(await r.deleteSubjectVersion(s, 2, { permanent: true })).toBe(2);
    expect(await r.deleteSubject(s)).toEqual([1]);
    expect(await r.getSubjects()).not.toContain(s);
    expect(await r.getSubjects({ deleted: true })).toContain(s);
    expect(await r.deleteSubject(s, { permanent: true })).toEqual([1]);
    // Ids outlive versions: bytes written with them stay readable.
    expect(await sdk().decode(await r.encode(v1, { id: 'o-9', qty: 9, note: null }))).toEqual({ id: 'o-9', qty: 9, note: null });
  });

  it('values encoded by the SDK and produced by the SDK producer are read back by a v3 read with format=avro', async () => {
    const topic = uniqueTopic('sdk-schemas-produce');
    await createTopic(topic, 1, 3);
    const t = tributary();
    const r = new SchemaRegistry(t);
    const { id } = await r.register({ type: 'AVRO', schema: JSON.stringify(order) }, { subject: `${topic}-value` });
    const producer = t.producer();
    await producer.send({ topic, messages: [{ value: await r.encode(id, { id: 'o-1', qty: 2, note: 'rush' }) }, { value: await r.encode(id, { id: 'o-2', qty: 5, note: null }) }] });
    await producer.disconnect();

    const read = await call('GET', v3(`/topics/${topic}/partitions/0/records?offset=0&format=avro`));
    expect(read.status, read.text).toBe(200);
    expect(read.body.records.map((x: { value: unknown }) => x.value)).toEqual([
      { type: 'AVRO', schema_id: id, data: { id: 'o-1', qty: 2, note: { string: 'rush' } } },
      { type: 'AVRO', schema_id: id, data: { id: 'o-2', qty: 5, note: null } },
    ]);
    // And the SDK consumer's bytes decode back with the SDK.
    const fetched = await t.connection.fetch(topic, 0, 0);
    expect(await Promise.all(fetched.messages.map((m) => r.decode(m.value as Uint8Array)))).toEqual([{ id: 'o-1', qty: 2, note: 'rush' }, { id: 'o-2', qty: 5, note: null }]);
  });
});

describe('tributary schemas', () => {
  it('registers (from --schema and --file), lists, shows versions and ids, checks, diffs, sets levels and deletes', async () => {
    const s = subject('cli');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-schemas-cli-'));
    const evolvedFile = path.join(dir, 'order-v2.avsc');
    const evolved = { ...order, fields: [...order.fields, { name: 'currency', type: 'string', default: 'EUR' }] };
    fs.writeFileSync(evolvedFile, JSON.stringify(evolved));
    const ok = (r: { code: number; stderr: string }) => expect(r.code, r.stderr).toBe(0);

    const first = await cli(['--json', 'schemas', 'register', s, '--type', 'AVRO', '--schema', JSON.stringify(order)]);
    ok(first);
    const v1 = JSON.parse(first.stdout) as { subject: string; id: number; version: number };
    expect(v1).toMatchObject({ subject: s, version: 1 });
    const second = await cli(['schemas', 'register', s, '--type', 'AVRO', '--file', evolvedFile]);
    ok(second);
    const v2id = await sdk().getLatestSchemaId(s);
    expect(second.stdout).toMatch(new RegExp(`${s}\\s*│\\s*2\\s*│\\s*${v2id}`));
    const jsonSubject = subject('cli-json');
    ok(await cli(['schemas', 'register', jsonSubject, '--type', 'JSON', '--schema', JSON.stringify(item)]));
    const protoSubject = subject('cli-proto');
    ok(await cli(['schemas', 'register', protoSubject, '--type', 'PROTOBUF', '--schema', proto]));
    expect((await cli(['schemas', 'register', s, '--type', 'AVRO'])).code).toBe(2);

    const listed = await cli(['--json', 'schemas', 'list']);
    ok(listed);
    expect(JSON.parse(listed.stdout)).toEqual(expect.arrayContaining([s, jsonSubject, protoSubject]));
    const versions = await cli(['--json', 'schemas', 'versions', s]);
    expect(JSON.parse(versions.stdout)).toEqual([1, 2]);

    const latest = await cli(['schemas', 'get', s]);
    ok(latest);
    for (const shown of [s, String(v2id), 'AVRO', '"name": "currency"', '"default": "EUR"']) expect(latest.stdout).toContain(shown);
    const one = JSON.parse((await cli(['--json', 'schemas', 'get', s, '1'])).stdout);
    expect(one).toMatchObject({ subject: s, version: 1, id: v1.id, type: 'AVRO' });
    const proto1 = await cli(['schemas', 'get', protoSubject]);
    expect(proto1.stdout).toContain('message Shipment {');
    const byId = await cli(['schemas', 'get-id', String(v1.id)]);
    ok(byId);
    expect(byId.stdout).toContain(`${s}:1`);
    expect(byId.stdout).toContain('"name": "Order"');
    expect((await cli(['schemas', 'get-id', '2147483646'])).code).toBe(1);

    const compatible = await cli(['schemas', 'check', s, '--type', 'AVRO', '--schema', JSON.stringify({ ...evolved, fields: [...evolved.fields, { name: 'tag', type: ['null', 'string'], default: null }] })]);
    expect(compatible.code, compatible.stderr).toBe(0);
    expect(compatible.stdout).toBe('compatible\n');
    const breaking = { ...evolved, fields: [...evolved.fields, { name: 'warehouse', type: 'string' }] };
    const incompatible = await cli(['schemas', 'check', s, '--type', 'AVRO', '--schema', JSON.stringify(breaking)]);
    expect(incompatible.code).toBe(4);
    expect(incompatible.stdout).toMatch(/^incompatible\n.*warehouse/s);
    const againstV1 = JSON.parse((await cli(['--json', 'schemas', 'check', s, '--type', 'AVRO', '--schema', JSON.stringify(breaking), '--version', '1'])).stdout);
    expect(againstV1.isCompatible).toBe(false);

    const diff = await cli(['schemas', 'diff', s, '1', '2']);
    ok(diff);
    expect(diff.stdout).toContain(`--- ${s} version 1`);
    expect(diff.stdout).toContain(`+++ ${s} version 2`);
    expect(diff.stdout).toMatch(/^\+\s+"name": "currency",?$/m);
    expect(diff.stdout).not.toMatch(/^[-+]\s+"name": "qty",?$/m);

    const inherited = JSON.parse((await cli(['--json', 'schemas', 'config', s])).stdout);
    expect(inherited).toMatchObject({ subject: s, source: 'global' });
    ok(await cli(['schemas', 'config', s, '--set', 'FULL_TRANSITIVE']));
    const own = await cli(['schemas', 'config', s]);
    expect(own.stdout).toMatch(/FULL_TRANSITIVE\s*│\s*subject/);
    expect((await cli(['schemas', 'config', s, '--set', 'SIDEWAYS'])).code).toBe(2);
    expect(JSON.parse((await cli(['--json', 'schemas', 'config'])).stdout)).toMatchObject({ source: 'global' });

    const softVersion = await cli(['schemas', 'delete', s, '2']);
    ok(softVersion);
    expect(softVersion.stderr).toContain(`Soft-deleted ${s} version 2`);
    const withDeleted = await cli(['schemas', 'versions', s, '--deleted']);
    expect(withDeleted.stdout).toMatch(/2\s*│\s*yes/);
    const gone = await cli(['--json', 'schemas', 'delete', s, '--permanent']);
    ok(gone);
    expect(JSON.parse(gone.stdout)).toEqual([1, 2]);
    expect(JSON.parse((await cli(['--json', 'schemas', 'list', '--deleted'])).stdout)).not.toContain(s);
    const missing = await cli(['schemas', 'versions', s]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/not found/);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
