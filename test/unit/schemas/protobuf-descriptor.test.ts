/**
 * Protobuf schemas in Confluent's serialized form (lib/schemas/protobuf-descriptor.ts): .proto
 * text becomes a FileDescriptorProto that protobuf-es reads, and a descriptor prints back as text
 * that parses to the same descriptor and the same canonical schema.
 */
import { create, createFileRegistry, fromBinary, toBinary } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { describe, expect, it } from 'vitest';
import { parseProtobuf } from '../../../lib/schemas/protobuf.js';
import { descriptorToProto, isSerializedDescriptor, protoToDescriptor } from '../../../lib/schemas/protobuf-descriptor.js';

const ORDER = `syntax = "proto3";
package shop.v1;
message Order {
  string sku = 1;
  int32 qty = 2;
  map<string, int64> tags = 3;
  optional string note = 4;
  oneof pay { string card = 5; int64 cash = 6; }
  Item item = 7;
  repeated Kind kinds = 8;
  message Item { string id = 1; }
}
enum Kind { A = 0; B = 1; }
`;

describe('serialized Protobuf descriptors', () => {
  it('turns .proto text into a descriptor protobuf-es reads and writes with, and prints it back to text that gives the same descriptor', () => {
    const b64 = protoToDescriptor(ORDER, [], 'order.proto');
    expect(isSerializedDescriptor(b64)).toBe(true);
    expect(isSerializedDescriptor(ORDER)).toBe(false);
    const Order = createFileRegistry(fromBinary(FileDescriptorProtoSchema, Buffer.from(b64, 'base64')), () => undefined).getMessage('shop.v1.Order');
    if (!Order) throw new Error('no Order');
    const bytes = toBinary(Order, create(Order, { sku: 'A', qty: 2, tags: { x: 5n }, note: 'n', pay: { case: 'cash', value: 7n }, item: { id: 'i' }, kinds: [1] } as never));
    const printed = descriptorToProto(b64);
    expect(printed).toContain('map<string, int64> tags = 3;');
    expect(printed).toContain('optional string note = 4;');
    expect(printed).toMatch(/oneof pay \{\s*string card = 5;\s*int64 cash = 6;\s*\}/);
    expect(protoToDescriptor(printed, [], 'order.proto')).toBe(b64);
    // the printed text reads the bytes protobuf-es wrote
    expect(parseProtobuf(printed, []).decode(Buffer.concat([Buffer.from([0]), Buffer.from(bytes)]))).toMatchObject({ sku: 'A', qty: 2, tags: { x: '5' }, note: 'n', cash: '7', item: { id: 'i' }, kinds: ['B'] });
  });

  it('parses a descriptor as the text it prints (one canonical form, so one id), proto2 labels included', () => {
    const proto2 = 'syntax = "proto2";\nmessage P { required string a = 1; optional int32 b = 2; repeated int32 c = 3 [packed = true]; }\n';
    const b64 = protoToDescriptor(proto2, [], 'p.proto');
    const printed = descriptorToProto(b64);
    expect(printed).toMatch(/required string a = 1;\s*optional int32 b = 2;\s*repeated int32 c = 3 \[packed = true\];/);
    expect(parseProtobuf(b64, []).canonical).toBe(parseProtobuf(printed, []).canonical);
  });

  it('refuses, with 42201, base64 that is not a descriptor or declares nothing', () => {
    expect(() => parseProtobuf('AAAA', [])).toThrow(expect.objectContaining({ status: 422, errorCode: 42201 }));
    expect(() => descriptorToProto(Buffer.from([0x0a, 0x01, 0x61]).toString('base64'))).toThrow(/declares no message/);
  });
});
