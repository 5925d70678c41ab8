/**
 * Keys and values read back from Confluent's wire format (wire-format.ts; serialize.ts writes it):
 * the magic byte 0, the writer's schema id (4 bytes, big-endian), the payload — decoded with the writer's
 * schema into the JSON form produce takes (Avro's JSON encoding; the JSON document; the Protobuf
 * message the indexes name, protobufjs's JSON form). A reader names the type it expects: a value
 * that is not in the wire format, whose schema is gone or of another type, or that its schema
 * cannot read is refused with the reason (406/40601, as a value that is not JSON is for the json
 * format).
 */
import { HttpError } from '../errors.js';
import { InvalidData, type ParsedSchema, type SchemaType } from './model.js';
import { parsedSchema, schemaById } from './registry.js';
import { WIRE_HEADER_BYTES, wireSchemaId } from './wire-format.js';

/** A decoded key or value: its writer's schema id and its JSON form. */
export interface SchemaValue {
  readonly schemaId: number;
  readonly value: unknown;
}

/** Decodes the values of one read, each schema looked up once (cache.ts holds them across reads). */
export class WireDecoder {
  private readonly schemas = new Map<number, ParsedSchema | undefined>();

  constructor(readonly schemaType: SchemaType, private readonly hint: string) {}

  /** Loads the schemas `values` were written with (unknown ids are remembered as missing). */
  async prepare(values: readonly (Buffer | null)[]): Promise<void> {
    const ids = new Set(values.flatMap((b) => {
      const id = b ? wireSchemaId(b) : undefined;
      return id !== undefined && !this.schemas.has(id) ? [id] : [];
    }));
    await Promise.all([...ids].map(async (id) => {
      this.schemas.set(id, (await schemaById(id)) ? await parsedSchema(id) : undefined); // (both cached per instance)
    }));
  }

  /** One value (`prepare` saw it). */
  decode(bytes: Buffer, where: string): SchemaValue {
    const refuse = (why: string) => new HttpError(406, 40601, `${where} ${why}; ${this.hint}`);
    const id = wireSchemaId(bytes);
    if (id === undefined) throw refuse('is not in the schema registry\'s wire format (magic byte 0 and a schema id)');
    const schema = this.schemas.get(id);
    if (!schema) throw refuse(`names schema ${id}, which the registry does not have`);
    if (schema.schemaType !== this.schemaType) throw refuse(`was written with schema ${id}, a ${schema.schemaType} schema, not ${this.schemaType}`);
    try {
      return { schemaId: id, value: schema.decode(bytes.subarray(WIRE_HEADER_BYTES)) };
    } catch (err) {
      if (err instanceof InvalidData) throw refuse(`cannot be read with its schema ${id}: ${err.message}`);
      throw err;
    }
  }
}
