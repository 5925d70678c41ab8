/**
 * JSON Schemas, checked by ajv: a schema must compile (draft-07 unless its `$schema` names
 * 2019-09 or 2020-12), with each reference added under its name first so `$ref`s to it resolve.
 * Compatibility: json-compat.ts. Canonical form: the JSON with object keys sorted, no whitespace.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import draft06 from 'ajv/dist/refs/json-schema-draft-06.json' with { type: 'json' };
import { invalidSchema } from './errors.js';
import { jsonCanRead } from './json-compat.js';
import { InvalidData, parseSchemaJson, sortedJson, type ParsedSchema, type ResolvedReference } from './model.js';

class JsonSchema implements ParsedSchema {
  readonly schemaType = 'JSON' as const;
  constructor(readonly canonical: string, readonly doc: boolean | Record<string, unknown>, private readonly validate: ValidateFunction) {}

  encode(value: unknown): Buffer {
    if (!this.validate(value)) {
      const e = this.validate.errors?.[0];
      throw new InvalidData(e ? `${e.instancePath || '(the value)'} ${e.message ?? 'is not valid'}` : 'not valid');
    }
    return Buffer.from(JSON.stringify(value), 'utf8');
  }

  decode(payload: Buffer): unknown {
    try {
      return JSON.parse(payload.toString('utf8'));
    } catch (err) {
      throw new InvalidData(`not JSON: ${(err as Error).message}`);
    }
  }

  canRead(writer: ParsedSchema): string[] {
    if (!(writer instanceof JsonSchema)) return ['Incompatible because of different schema type'];
    return jsonCanRead(this.doc, writer.doc);
  }
}

function validatorFor(doc: unknown): Ajv {
  const dialect = doc !== null && typeof doc === 'object' ? String((doc as Record<string, unknown>).$schema ?? '') : '';
  const opts = { strict: false, allErrors: false, validateFormats: false } as const;
  if (dialect.includes('2020-12')) return new Ajv2020(opts);
  if (dialect.includes('2019-09')) return new Ajv2019(opts);
  const ajv = new Ajv(opts);
  ajv.addMetaSchema(draft06);
  return ajv;
}

const json = parseSchemaJson;

export function parseJsonSchema(text: string, references: readonly ResolvedReference[]): ParsedSchema {
  const doc = json(text, 'the schema');
  if (typeof doc !== 'boolean' && (doc === null || typeof doc !== 'object' || Array.isArray(doc))) throw invalidSchema('a JSON Schema is an object or a boolean');
  const ajv = validatorFor(doc);
  // (draft-04's `$schema` is not one ajv knows: such schemas are checked as draft-07, which reads them the same but for exclusive bounds)
  const withoutDialect = (d: unknown) => {
    if (d === null || typeof d !== 'object' || Array.isArray(d)) return d;
    const { $schema, ...rest } = d as Record<string, unknown>;
    return typeof $schema === 'string' && $schema.includes('draft-04') ? rest : d;
  };
  let validate: ValidateFunction;
  try {
    for (const ref of references) {
      if (ref.schemaType !== 'JSON') throw invalidSchema(`reference ${ref.name} is ${ref.schemaType}, not JSON`);
      const refDoc = withoutDialect(json(ref.schema, `reference ${ref.name}`));
      // Added under its reference name; a schema whose `$id` is that name too is added once.
      const id = refDoc !== null && typeof refDoc === 'object' ? (refDoc as Record<string, unknown>).$id : undefined;
      if (id === ref.name) ajv.addSchema(refDoc as object);
      else ajv.addSchema(refDoc as object, ref.name);
    }
    validate = ajv.compile(withoutDialect(doc) as object);
  } catch (err) {
    if ((err as { status?: number }).status) throw err;
    throw invalidSchema((err as Error).message);
  }
  return new JsonSchema(sortedJson(doc), doc as boolean | Record<string, unknown>, validate);
}
