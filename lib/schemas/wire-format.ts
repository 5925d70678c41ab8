/**
 * Confluent's wire format, the frame around every value written with a registered schema:
 *
 *     byte 0      magic byte, 0
 *     bytes 1-4   the schema id, big-endian
 *     (PROTOBUF)  the message indexes: the file's first message, [0], written as one 0 byte
 *     the rest    the value: Avro binary, UTF-8 JSON, or Protobuf binary
 *
 * Pure bytes, no registry: the cluster's produce and reads (serialize.ts, deserialize.ts) and the
 * SDK's serializers (client/schema-registry.ts) share it. Reading the message indexes back is the
 * Protobuf parser's job (protobuf.ts), as they name one of its messages.
 */
import type { SchemaType } from './model.js';

export const MAGIC_BYTE = 0;
/** The magic byte and the schema id. */
export const WIRE_HEADER_BYTES = 5;

/** The schema id a value's bytes start with, or undefined when they are not in the wire format. */
export function wireSchemaId(bytes: Uint8Array): number | undefined {
  if (bytes.length < WIRE_HEADER_BYTES || bytes[0] !== MAGIC_BYTE) return undefined;
  const id = new DataView(bytes.buffer, bytes.byteOffset, WIRE_HEADER_BYTES).getInt32(1);
  return id > 0 ? id : undefined;
}

/** A value already serialized by its schema, framed: the header, for PROTOBUF the indexes `[0]`, then the value. */
export function wireFrame(id: number, schemaType: SchemaType, payload: Uint8Array): Buffer {
  const header = Buffer.alloc(WIRE_HEADER_BYTES);
  header.writeInt32BE(id, 1);
  return Buffer.concat(schemaType === 'PROTOBUF' ? [header, Buffer.from([0]), payload] : [header, payload]);
}
