/**
 * Protobuf schemas, parsed by protobufjs: a schema must parse and every type it names must
 * resolve, against its references (each parsed into the same root under its import name) and
 * Google's well-known types. Canonical form: the text with line endings, trailing spaces and
 * surrounding blank lines normalized.
 *
 * Compatibility follows Confluent's rules for Protobuf: the changes a reader accepts are messages
 * added or moved, enums and enum values added, changed or removed, fields added, removed or
 * renamed, a string/bytes field made repeated or not, oneofs added or removed, a field added to a
 * oneof. Anything else is incompatible: a changed package, a removed message, a field whose kind
 * (scalar, message, map), scalar group (int32/int64/uint32/uint64/bool/enum; sint32/sint64;
 * string/bytes; fixed32/sfixed32; fixed64/sfixed64; float; double) or message type changes, a
 * numeric or message field made repeated or not, a proto2 required field added or removed, a field
 * moved into an existing oneof, several fields moved into a new one.
 */
import protobuf from 'protobufjs';
import { invalidSchema } from './errors.js';
import { InvalidData, type ParsedSchema, type ResolvedReference } from './model.js';
import { descriptorToProto, isSerializedDescriptor } from './protobuf-descriptor.js';
import { protoRoots } from './protobuf-root.js';

interface FieldShape {
  readonly name: string;
  readonly kind: 'scalar' | 'message' | 'map';
  /** The scalar group, the message's name inside its package, or the map's key and value. */
  readonly type: string;
  readonly repeated: boolean;
  readonly required: boolean;
  readonly stringOrBytes: boolean;
  readonly oneof?: string;
}

interface MessageShape {
  readonly fields: ReadonlyMap<number, FieldShape>;
  readonly oneofs: ReadonlySet<string>;
}

const SCALAR_GROUPS: Record<string, string> = {
  int32: 'number', int64: 'number', uint32: 'number', uint64: 'number', bool: 'number',
  sint32: 'signed', sint64: 'signed', string: 'text', bytes: 'text',
  fixed32: 'fixed32', sfixed32: 'fixed32', fixed64: 'fixed64', sfixed64: 'fixed64', float: 'float', double: 'double',
};

/** How protobufjs writes a message as JSON for a reader: the form `encode` takes, with every field shown. */
const TO_JSON: protobuf.IConversionOptions = { longs: String, enums: String, bytes: String, defaults: true, arrays: true, objects: true, oneofs: false };

/**
 * Reads Confluent's message indexes (the path to the message among the file's messages and
 * their nested ones: a zigzag varint count, then the indexes; `[0]` as a single 0 byte). A
 * payload without them starts with the message's first tag, never below 8 (field numbers start
 * at 1): a first byte of 8 or more means no indexes, the file's first message (as some clients
 * write it).
 */
function messageIndexes(payload: Buffer): { path: number[]; rest: Buffer } {
  const first = payload[0];
  if (first === undefined || first >= 8) return { path: [0], rest: payload };
  let at = 0;
  const varint = (): number => {
    let n = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const b = payload[at++];
      if (b === undefined) throw new InvalidData('the message indexes are cut short');
      n |= (b & 0x7f) << shift;
      if (b < 0x80) return (n >>> 1) ^ -(n & 1);
    }
    throw new InvalidData('a message index is not a varint');
  };
  const count = varint();
  if (count < 0 || count > 64) throw new InvalidData(`${count} message indexes`);
  const path = count === 0 ? [0] : Array.from({ length: count }, varint);
  return { path, rest: payload.subarray(at) };
}

class ProtobufSchema implements ParsedSchema {
  readonly schemaType = 'PROTOBUF' as const;
  /** The file's messages not nested in another, in file order (the first is Confluent's default message). */
  constructor(readonly canonical: string, readonly pkg: string, readonly messages: ReadonlyMap<string, MessageShape>, private readonly topLevel: readonly protobuf.Type[]) {}

  private get first(): protobuf.Type | undefined {
    return this.topLevel[0];
  }

  /** The message of the file at Confluent's index `path` (the top-level message, then nested ones). */
  private messageAt(path: readonly number[]): protobuf.Type {
    let types: readonly protobuf.Type[] = this.topLevel;
    let found: protobuf.Type | undefined;
    for (const i of path) {
      found = types[i];
      if (!found) throw new InvalidData(`the schema has no message at index path [${path.join(', ')}]`);
      types = found.nestedArray.filter((n): n is protobuf.Type => n instanceof protobuf.Type);
    }
    if (!found) throw new InvalidData('the schema defines no message');
    return found;
  }

  /** The message the indexes name (or the file's first), as JSON: the form `encode` takes, every field shown. */
  decode(payload: Buffer): unknown {
    const { path, rest } = messageIndexes(payload);
    const type = this.messageAt(path);
    try {
      return type.toObject(type.decode(rest), TO_JSON);
    } catch (err) {
      throw new InvalidData((err as Error).message);
    }
  }

  /** The file's first message, from its JSON form (protobufjs's: enum names or numbers, 64-bit integers as strings or numbers, bytes as base64). */
  encode(value: unknown): Buffer {
    if (!this.first) throw new InvalidData('the schema defines no message');
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new InvalidData(`a ${this.first.name} message is a JSON object`);
    const unknown = Object.keys(value).filter((k) => !this.first?.fields[k]);
    if (unknown.length > 0) throw new InvalidData(`${this.first.name} has no field ${unknown[0]}`);
    let message: protobuf.Message;
    try {
      message = this.first.fromObject(value as Record<string, unknown>);
    } catch (err) {
      throw new InvalidData((err as Error).message);
    }
    const problem = this.first.verify(message);
    if (problem) throw new InvalidData(problem);
    return Buffer.from(this.first.encode(message).finish());
  }

  canRead(writer: ParsedSchema): string[] {
    if (!(writer instanceof ProtobufSchema)) return ['Incompatible because of different schema type'];
    const out: string[] = [];
    if (writer.pkg !== this.pkg) out.push(`PACKAGE_CHANGED: from '${writer.pkg}' to '${this.pkg}'`);
    for (const [name, w] of writer.messages) {
      const r = this.messages.get(name);
      if (!r) {
        out.push(`#/${name}: MESSAGE_REMOVED`);
        continue;
      }
      compareMessages(name, r, w, out);
    }
    return out;
  }
}

function compareMessages(name: string, r: MessageShape, w: MessageShape, out: string[]): void {
  const movedToNew = new Map<string, number>();
  for (const [num, wf] of w.fields) {
    const rf = r.fields.get(num);
    if (!rf) {
      if (wf.required) out.push(`#/${name}/${num}: REQUIRED_FIELD_REMOVED`);
      continue;
    }
    const where = `#/${name}/${num}`;
    if (rf.kind !== wf.kind) out.push(`${where}: FIELD_KIND_CHANGED: from ${wf.kind} to ${rf.kind}`);
    else if (rf.type !== wf.type) out.push(`${where}: ${rf.kind === 'scalar' ? 'FIELD_SCALAR_KIND_CHANGED' : 'FIELD_NAMED_TYPE_CHANGED'}: from ${wf.type} to ${rf.type}`);
    if (rf.repeated !== wf.repeated && !(rf.stringOrBytes && wf.stringOrBytes)) out.push(`${where}: FIELD_NUMERIC_LABEL_CHANGED: repeated ${wf.repeated} to ${rf.repeated}`);
    if (rf.required !== wf.required) out.push(`${where}: ${rf.required ? 'REQUIRED_FIELD_ADDED' : 'REQUIRED_FIELD_REMOVED'}`);
    if (rf.oneof !== undefined && wf.oneof === undefined) {
      if (w.oneofs.has(rf.oneof)) out.push(`${where}: FIELD_MOVED_TO_EXISTING_ONEOF: ${rf.oneof}`);
      else movedToNew.set(rf.oneof, (movedToNew.get(rf.oneof) ?? 0) + 1);
    }
  }
  for (const [num, rf] of r.fields) {
    if (!w.fields.has(num) && rf.required) out.push(`#/${name}/${num}: REQUIRED_FIELD_ADDED`);
  }
  for (const [oneof, n] of movedToNew) if (n > 1) out.push(`#/${name}: MULTIPLE_FIELDS_MOVED_TO_ONEOF: ${oneof}`);
}

/** A type's name inside its package (so moving a whole schema's package is reported once, as PACKAGE_CHANGED). */
const local = (fullName: string, pkg: string): string => {
  const n = fullName.replace(/^\./, '');
  return pkg && n.startsWith(`${pkg}.`) ? n.slice(pkg.length + 1) : n;
};

function fieldType(f: protobuf.Field, pkg: string): Pick<FieldShape, 'kind' | 'type'> {
  if (f.resolvedType instanceof protobuf.Enum) return { kind: 'scalar', type: 'number' };
  if (f.resolvedType) return { kind: 'message', type: local(f.resolvedType.fullName, pkg) };
  return { kind: 'scalar', type: SCALAR_GROUPS[f.type] ?? f.type };
}

function shapeOf(t: protobuf.Type, pkg: string): MessageShape {
  const fields = new Map<number, FieldShape>();
  for (const f of t.fieldsArray) {
    const stringOrBytes = f.type === 'string' || f.type === 'bytes';
    const base = { name: f.name, repeated: f.repeated, required: f.required, stringOrBytes, ...(f.partOf ? { oneof: f.partOf.name } : {}) };
    if (f.map) {
      const value = fieldType(f, pkg);
      fields.set(f.id, { ...base, kind: 'map', type: `${(f as unknown as protobuf.MapField).keyType}→${value.type}` });
    } else {
      fields.set(f.id, { ...base, ...fieldType(f, pkg) });
    }
  }
  return { fields, oneofs: new Set(t.oneofsArray.map((o) => o.name)) };
}

/** The full names of the messages a file defines (nested ones too), in its own root. */
function messagesOf(ns: protobuf.NamespaceBase, out: string[] = []): string[] {
  for (const n of ns.nestedArray) {
    if (n instanceof protobuf.Type) out.push(n.fullName);
    if (n instanceof protobuf.Namespace || n instanceof protobuf.Type) messagesOf(n, out);
  }
  return out;
}

/** The messages of a file not nested in another message, in file order. */
function topLevelMessages(ns: protobuf.NamespaceBase): string[] {
  const out: string[] = [];
  for (const n of ns.nestedArray) {
    if (n instanceof protobuf.Type) out.push(n.fullName);
    else if (n instanceof protobuf.Namespace) out.push(...topLevelMessages(n));
  }
  return out;
}

export function normalizeProto(text: string): string {
  return text.replace(/\r\n?/g, '\n').split('\n').map((l) => l.replace(/[ \t]+$/, '')).join('\n').trim();
}

/** A schema given as .proto text or as a serialized descriptor (kept as the text it prints). */
export function parseProtobuf(text: string, references: readonly ResolvedReference[]): ParsedSchema {
  const canonical = normalizeProto(isSerializedDescriptor(text) ? descriptorToProto(text) : text);
  try {
    const { own, root, pkg } = protoRoots(canonical, references);
    const messages = new Map<string, MessageShape>();
    const names = messagesOf(own);
    for (const full of names) messages.set(local(full, pkg), shapeOf(root.lookupType(full), pkg));
    return new ProtobufSchema(canonical, pkg, messages, topLevelMessages(own).map((n) => root.lookupType(n)));
  } catch (err) {
    if ((err as { status?: number }).status) throw err;
    throw invalidSchema((err as Error).message);
  }
}
