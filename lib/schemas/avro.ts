/**
 * Avro schemas, parsed by avsc: a schema must parse (names resolved, defaults valid for their
 * types), its references are parsed first into the same registry of named types, and one
 * schema reads another's data when avsc can build a resolver from writer to reader — Avro's
 * schema resolution, the rule Confluent's BACKWARD and FORWARD levels apply.
 *
 * Canonical form: the schema's JSON with object keys sorted and no whitespace. Avro's Parsing
 * Canonical Form would drop defaults, docs and logical types, which readers and clients need.
 */
import avro from 'avsc';
import { invalidSchema } from './errors.js';
import { InvalidData, parseSchemaJson, sortedJson, type ParsedSchema, type ResolvedReference } from './model.js';

/** Exported for the SDK, which encodes and decodes avsc's own values (as kafkajs's serializers do) through `type`. */
export class AvroSchema implements ParsedSchema {
  readonly schemaType = 'AVRO' as const;
  constructor(readonly canonical: string, readonly type: avro.Type) {}

  canRead(writer: ParsedSchema): string[] {
    if (!(writer instanceof AvroSchema)) return ['Incompatible because of different schema type'];
    try {
      this.type.createResolver(writer.type);
      return [];
    } catch (err) {
      return [`the reader cannot read data written with the writer's schema: ${(err as Error).message}`];
    }
  }

  /** From Avro's JSON encoding, as REST Proxy takes it: unions wrapped (`{"string": "x"}`), bytes as ISO-8859-1 strings. */
  encode(value: unknown): Buffer {
    let v: unknown;
    try {
      v = this.type.fromString(JSON.stringify(value));
    } catch (err) {
      throw new InvalidData((err as Error).message);
    }
    return this.type.toBuffer(v);
  }

  /** To Avro's JSON encoding, the form `encode` takes. */
  decode(payload: Buffer): unknown {
    try {
      return JSON.parse(this.type.toString(this.type.fromBuffer(payload)));
    } catch (err) {
      throw new InvalidData((err as Error).message);
    }
  }
}

function json(text: string, what: string): unknown {
  // Avro allows a bare primitive name, e.g. `string`, where JSON wants `"string"`.
  if (/^[A-Za-z_][A-Za-z0-9_.]*$/.test(text.trim())) return text.trim();
  return parseSchemaJson(text, what);
}

export function parseAvro(text: string, references: readonly ResolvedReference[]): ParsedSchema {
  const registry: Record<string, avro.Type> = {};
  for (const ref of references) {
    if (ref.schemaType !== 'AVRO') throw invalidSchema(`reference ${ref.name} is ${ref.schemaType}, not AVRO`);
    try {
      avro.Type.forSchema(json(ref.schema, `reference ${ref.name}`) as avro.Schema, { registry });
    } catch (err) {
      if ((err as { status?: number }).status) throw err;
      throw invalidSchema(`reference ${ref.name}: ${(err as Error).message}`);
    }
  }
  const doc = json(text, 'the schema');
  try {
    const type = avro.Type.forSchema(doc as avro.Schema, { registry });
    return new AvroSchema(sortedJson(doc), type);
  } catch (err) {
    throw invalidSchema((err as Error).message);
  }
}
