/**
 * What the registry's formats share: a parsed schema in canonical form that can tell whether it
 * reads what another schema of its type wrote.
 */
import { invalidSchema, invalidSubject } from './errors.js';

export const SCHEMA_TYPES = ['AVRO', 'JSON', 'PROTOBUF'] as const;
export type SchemaType = (typeof SCHEMA_TYPES)[number];

/** A reference as clients send it: the name the schema imports, and the subject and version that hold it. */
export interface SchemaReference {
  readonly name: string;
  readonly subject: string;
  readonly version: number;
}

/** A referenced schema's text, with its own references' already resolved in `dependencies`. */
export interface ResolvedReference {
  readonly name: string;
  readonly schemaType: SchemaType;
  readonly schema: string;
}

export interface ParsedSchema {
  readonly schemaType: SchemaType;
  /** The form stored and compared: the same schema written differently has one canonical form. */
  readonly canonical: string;
  /**
   * Why this schema, as a reader, cannot read data written with `writer` (of the same type):
   * one message per problem, none when it can.
   */
  canRead(writer: ParsedSchema): string[];
  /**
   * A value as this schema writes it (Avro binary, UTF-8 JSON, Protobuf binary of the file's first
   * message), without Confluent's prefix; throws {@link InvalidData} when the value does not
   * validate.
   */
  encode(value: unknown): Buffer;
  /**
   * What `encode` takes back from the bytes after Confluent's 5-byte header (for Protobuf, the
   * message indexes and the message); throws {@link InvalidData} when they are not this schema's.
   */
  decode(payload: Buffer): unknown;
}

/** A value that does not validate against its schema. */
export class InvalidData extends Error {
  override readonly name = 'InvalidData';
}

/** Object keys sorted at every depth, no whitespace: JSON documents that mean the same have one text. */
export function sortedJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value).sort()) out[k] = sortKeys((value as Record<string, unknown>)[k]);
  return out;
}

/** Subject names: DynamoDB's 1,024-byte sort key holds the longest, 249 characters of 4 bytes each, with its prefix and version. */
export const MAX_SUBJECT_CHARS = 249;

/** Checks a subject name (42208): 1 to 249 characters, no control characters. */
export function checkSubject(subject: string): void {
  if (subject.length === 0 || subject.length > MAX_SUBJECT_CHARS) throw invalidSubject(`a subject has 1 to ${MAX_SUBJECT_CHARS} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(subject)) throw invalidSubject('a subject has no control characters');
}


/** How deep a schema document may nest: every format's parser and comparison recurse through it. */
export const MAX_SCHEMA_DEPTH = 128;

/** Parses a schema document's JSON, refusing (42201) one that nests deeper than MAX_SCHEMA_DEPTH. */
export function parseSchemaJson(text: string, what: string): unknown {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw invalidSchema(`${what} is not JSON`);
  }
  // (iterative: the depth check itself must not overflow the stack)
  const stack: [unknown, number][] = [[doc, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (v === null || typeof v !== 'object') continue;
    if (depth > MAX_SCHEMA_DEPTH) throw invalidSchema(`${what} nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return doc;
}
