/**
 * Protobuf schemas in Confluent's "serialized" form: a `FileDescriptorProto`, base64-encoded, as
 * Confluent's JavaScript serializers register them and ask for them (`?format=serialized`). The
 * registry keeps every Protobuf schema as `.proto` text: a serialized one is printed as text when
 * registered, and text is turned back into a descriptor when asked for in that form.
 */
import protobuf from 'protobufjs';
import descriptor from 'protobufjs/ext/descriptor/index.js';
import { invalidSchema } from './errors.js';
import type { ResolvedReference } from './model.js';
import { protoRoots } from './protobuf-root.js';

/** Whether a schema's text is a base64 descriptor rather than `.proto` text (which always holds `;`, `{` or spaces). */
export const isSerializedDescriptor = (text: string): boolean => /^[A-Za-z0-9+/]+={0,2}$/.test(text.trim());

// ---- descriptor → .proto text ----

const SCALARS: Record<string, string> = {
  TYPE_DOUBLE: 'double', TYPE_FLOAT: 'float', TYPE_INT64: 'int64', TYPE_UINT64: 'uint64', TYPE_INT32: 'int32',
  TYPE_FIXED64: 'fixed64', TYPE_FIXED32: 'fixed32', TYPE_BOOL: 'bool', TYPE_STRING: 'string', TYPE_BYTES: 'bytes',
  TYPE_UINT32: 'uint32', TYPE_SFIXED32: 'sfixed32', TYPE_SFIXED64: 'sfixed64', TYPE_SINT32: 'sint32', TYPE_SINT64: 'sint64',
};

interface FieldDesc {
  name: string; number: number; label?: string; type?: string; typeName?: string; oneofIndex?: number; proto3Optional?: boolean;
  options?: { packed?: boolean };
}
interface MessageDesc {
  name: string; field?: FieldDesc[]; nestedType?: MessageDesc[]; enumType?: EnumDesc[]; oneofDecl?: { name: string }[];
  options?: { mapEntry?: boolean }; reservedName?: string[];
}
interface EnumDesc { name: string; value?: { name: string; number: number }[] }
interface FileDesc { name?: string; package?: string; dependency?: string[]; messageType?: MessageDesc[]; enumType?: EnumDesc[]; syntax?: string }

const fieldType = (f: FieldDesc): string => {
  if (f.type === 'TYPE_MESSAGE' || f.type === 'TYPE_ENUM') {
    if (!f.typeName) throw invalidSchema(`field ${f.name} names no type`);
    return f.typeName;
  }
  const scalar = f.type === undefined ? undefined : SCALARS[f.type];
  if (!scalar) throw invalidSchema(`field ${f.name} is of type ${String(f.type)}, which a schema cannot hold (groups are not supported)`);
  return scalar;
};

function printEnum(e: EnumDesc, indent: string): string[] {
  return [`${indent}enum ${e.name} {`, ...(e.value ?? []).map((v) => `${indent}  ${v.name} = ${v.number};`), `${indent}}`];
}

function printMessage(m: MessageDesc, proto3: boolean, indent: string): string[] {
  const entries = new Map((m.nestedType ?? []).filter((n) => n.options?.mapEntry).map((n) => [n.name, n]));
  const fieldLine = (f: FieldDesc, inOneof: boolean): string => {
    const entryName = f.typeName?.slice(f.typeName.lastIndexOf('.') + 1);
    const entry = f.label === 'LABEL_REPEATED' && f.type === 'TYPE_MESSAGE' && entryName ? entries.get(entryName) : undefined;
    if (entry) {
      const [k, v] = [entry.field?.find((x) => x.number === 1), entry.field?.find((x) => x.number === 2)];
      if (!k || !v) throw invalidSchema(`map field ${f.name} has no key or value`);
      return `map<${fieldType(k)}, ${fieldType(v)}> ${f.name} = ${f.number};`;
    }
    const label = f.label === 'LABEL_REPEATED' ? 'repeated '
      : inOneof ? ''
        : f.label === 'LABEL_REQUIRED' ? 'required '
          : proto3 ? (f.proto3Optional ? 'optional ' : '') : 'optional ';
    const packed = f.options?.packed === true && !proto3 ? ' [packed = true]' : f.options?.packed === false && proto3 && f.label === 'LABEL_REPEATED' && SCALARS[f.type ?? ''] ? ' [packed = false]' : '';
    return `${label}${fieldType(f)} ${f.name} = ${f.number}${packed};`;
  };
  const out = [`${indent}message ${m.name} {`];
  const inner = `${indent}  `;
  const fields = m.field ?? [];
  const printedOneofs = new Set<number>();
  for (const f of fields) {
    const oneof = f.oneofIndex !== undefined && !f.proto3Optional ? f.oneofIndex : undefined;
    if (oneof === undefined) {
      out.push(inner + fieldLine(f, false));
    } else if (!printedOneofs.has(oneof)) {
      printedOneofs.add(oneof);
      out.push(`${inner}oneof ${m.oneofDecl?.[oneof]?.name ?? `oneof_${oneof}`} {`);
      for (const g of fields.filter((x) => x.oneofIndex === oneof && !x.proto3Optional)) out.push(`${inner}  ${fieldLine(g, true)}`);
      out.push(`${inner}}`);
    }
  }
  for (const n of m.nestedType ?? []) if (!n.options?.mapEntry) out.push(...printMessage(n, proto3, inner));
  for (const e of m.enumType ?? []) out.push(...printEnum(e, inner));
  out.push(`${indent}}`);
  return out;
}

/** The `.proto` text of a base64 `FileDescriptorProto` (42201 when it is not one). */
export function descriptorToProto(base64: string): string {
  let file: FileDesc;
  try {
    const T = (descriptor as unknown as { FileDescriptorProto: protobuf.Type }).FileDescriptorProto;
    file = T.toObject(T.decode(Buffer.from(base64.trim(), 'base64')), { enums: String, longs: Number }) as FileDesc;
  } catch (err) {
    throw invalidSchema(`the schema is neither .proto text nor a serialized FileDescriptorProto: ${(err as Error).message}`);
  }
  const proto3 = file.syntax === 'proto3';
  if (file.syntax !== undefined && file.syntax !== '' && file.syntax !== 'proto2' && !proto3) throw invalidSchema(`syntax ${file.syntax} is not supported`);
  const lines = [`syntax = "${proto3 ? 'proto3' : 'proto2'}";`];
  if (file.package) lines.push(`package ${file.package};`);
  for (const d of file.dependency ?? []) lines.push(`import "${d}";`);
  for (const m of file.messageType ?? []) lines.push('', ...printMessage(m, proto3, ''));
  for (const e of file.enumType ?? []) lines.push('', ...printEnum(e, ''));
  if ((file.messageType ?? []).length + (file.enumType ?? []).length === 0) throw invalidSchema('the serialized FileDescriptorProto declares no message or enum');
  return `${lines.join('\n')}\n`;
}

// ---- .proto text → descriptor ----

const SCALAR_TYPES = Object.fromEntries(Object.entries(SCALARS).map(([k, v]) => [v, k]));

function messageObject(t: protobuf.Type): MessageDesc {
  const nestedType: MessageDesc[] = [];
  const oneofs = t.oneofsArray;
  const field = t.fieldsArray.map((f): FieldDesc => {
    const base = { name: f.name, number: f.id };
    const oneofIndex = f.partOf ? oneofs.indexOf(f.partOf) : -1;
    const inOneof = oneofIndex >= 0 ? { oneofIndex, ...(f.partOf && f.partOf.name.startsWith('_') && f.partOf.oneof.length === 1 ? { proto3Optional: true } : {}) } : {};
    if (f instanceof protobuf.MapField) {
      const entry = `${f.name.charAt(0).toUpperCase()}${f.name.slice(1).replace(/_(\w)/g, (_m, c: string) => c.toUpperCase())}Entry`;
      const value = f.resolvedType ? { type: f.resolvedType instanceof protobuf.Enum ? 'TYPE_ENUM' : 'TYPE_MESSAGE', typeName: f.resolvedType.fullName } : { type: SCALAR_TYPES[f.type] };
      nestedType.push({ name: entry, options: { mapEntry: true }, field: [
        { name: 'key', number: 1, label: 'LABEL_OPTIONAL', type: SCALAR_TYPES[f.keyType] },
        { name: 'value', number: 2, label: 'LABEL_OPTIONAL', ...value },
      ] });
      return { ...base, label: 'LABEL_REPEATED', type: 'TYPE_MESSAGE', typeName: `${t.fullName}.${entry}` };
    }
    const label = f.repeated ? 'LABEL_REPEATED' : f.required ? 'LABEL_REQUIRED' : 'LABEL_OPTIONAL';
    const type = f.resolvedType ? { type: f.resolvedType instanceof protobuf.Enum ? 'TYPE_ENUM' : 'TYPE_MESSAGE', typeName: f.resolvedType.fullName } : { type: SCALAR_TYPES[f.type] };
    const packed = f.repeated && typeof f.options?.packed === 'boolean' ? { options: { packed: f.options.packed as boolean } } : {};
    return { ...base, label, ...type, ...inOneof, ...packed };
  });
  for (const n of t.nestedArray) if (n instanceof protobuf.Type) nestedType.push(messageObject(n));
  return {
    name: t.name, field, nestedType,
    enumType: t.nestedArray.filter((n): n is protobuf.Enum => n instanceof protobuf.Enum).map(enumObject),
    oneofDecl: oneofs.map((o) => ({ name: o.name })),
  };
}

const enumObject = (e: protobuf.Enum): EnumDesc => ({ name: e.name, value: Object.entries(e.values).map(([name, number]) => ({ name, number })) });

/**
 * A `.proto` schema (with its references) as a base64 `FileDescriptorProto` of its own
 * declarations, types named in full, its imports as dependencies: the form Confluent's
 * JavaScript deserializers read. `name` is the file's name in it.
 */
export function protoToDescriptor(text: string, references: readonly ResolvedReference[], name: string): string {
  const { own, root, pkg, imports } = protoRoots(text, references);
  const ns = pkg ? own.lookup(pkg) : own;
  const declared = ns instanceof protobuf.Namespace ? ns.nestedArray : [];
  const inRoot = (n: protobuf.ReflectionObject) => root.lookup(n.fullName);
  const file = {
    name, ...(pkg ? { package: pkg } : {}), dependency: imports,
    messageType: declared.filter((n) => n instanceof protobuf.Type).map((n) => messageObject(inRoot(n) as protobuf.Type)),
    enumType: declared.filter((n) => n instanceof protobuf.Enum).map((n) => enumObject(inRoot(n) as protobuf.Enum)),
    syntax: /^\s*syntax\s*=\s*["']proto3["']/m.test(text) ? 'proto3' : 'proto2',
  };
  const T = (descriptor as unknown as { FileDescriptorProto: protobuf.Type }).FileDescriptorProto;
  return Buffer.from(T.encode(T.fromObject(file)).finish()).toString('base64');
}
