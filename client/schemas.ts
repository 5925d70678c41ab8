/**
 * `tributary/schemas`: the schema registry's serializers and deserializers (client/schema-registry.ts),
 * an entry point of its own because it carries avsc, ajv and protobufjs, which the core SDK
 * (`tributary`) does not. They use Node's `Buffer`, as avsc does: in browsers, a bundler's
 * `buffer` polyfill.
 */
export {
  SchemaRegistry, SchemaType, SchemaValidationError, SCHEMA_CACHE_BOUNDS, isRegistryError,
  type RegistrySchema, type SchemaDescription, type SubjectVersion, type CompatibilityResult, type CompatibilityLevel, type SchemaReference,
} from './schema-registry.js';
export { LEVELS as COMPATIBILITY_LEVELS } from '../lib/schemas/compatibility.js';
