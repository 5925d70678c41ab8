/**
 * Confluent's compatibility levels over any format's `canRead`: BACKWARD — the new schema reads
 * data written with the latest one; FORWARD — the latest reads the new one's data; FULL — both;
 * the _TRANSITIVE levels the same against every live version, not only the latest; NONE — no check.
 */
import { invalidSchema } from './errors.js';
import type { ParsedSchema, ResolvedReference, SchemaType } from './model.js';

export const LEVELS = ['NONE', 'BACKWARD', 'BACKWARD_TRANSITIVE', 'FORWARD', 'FORWARD_TRANSITIVE', 'FULL', 'FULL_TRANSITIVE'] as const;
export type CompatibilityLevel = (typeof LEVELS)[number];
export const DEFAULT_LEVEL: CompatibilityLevel = 'BACKWARD';

export const isLevel = (v: unknown): v is CompatibilityLevel => typeof v === 'string' && (LEVELS as readonly string[]).includes(v);

/**
 * Parses a schema of any type (42201 when it does not parse). Each format's library (avsc, ajv,
 * protobufjs) is initialised the first time a schema of that format is parsed, so a function that
 * never meets a schema does not initialise them on its cold start.
 */
export async function parseSchema(schemaType: SchemaType, text: string, references: readonly ResolvedReference[]): Promise<ParsedSchema> {
  switch (schemaType) {
    case 'AVRO': return (await import('./avro.js')).parseAvro(text, references);
    case 'JSON': return (await import('./json-schema.js')).parseJsonSchema(text, references);
    case 'PROTOBUF': return (await import('./protobuf.js')).parseProtobuf(text, references);
    default: throw invalidSchema(`unknown schema type ${String(schemaType)}`);
  }
}

/**
 * Why `candidate` may not follow `previous` (live versions, oldest first) under `level`: empty
 * when it may.
 */
export function incompatibilities(level: CompatibilityLevel, candidate: ParsedSchema, previous: readonly ParsedSchema[]): string[] {
  if (level === 'NONE' || previous.length === 0) return [];
  const against = level.endsWith('_TRANSITIVE') ? [...previous].reverse() : previous.slice(-1);
  const backward = level.startsWith('BACKWARD') || level.startsWith('FULL');
  const forward = level.startsWith('FORWARD') || level.startsWith('FULL');
  const out: string[] = [];
  for (const old of against) {
    if (old.schemaType !== candidate.schemaType) {
      out.push(`Incompatible because of different schema type: ${old.schemaType} and ${candidate.schemaType}`);
      continue;
    }
    if (backward) out.push(...candidate.canRead(old).map((m) => `BACKWARD: ${m}`));
    if (forward) out.push(...old.canRead(candidate).map((m) => `FORWARD: ${m}`));
  }
  return out;
}
