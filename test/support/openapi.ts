/**
 * Validates HTTP responses against an OpenAPI 3.0 document (Confluent's REST Proxy v3 spec, kept
 * under test/conformance/): finds the operation whose path template matches a concrete path and
 * checks the body against that operation's response schema with ajv.
 *
 * OpenAPI 3.0 is not quite JSON Schema: `nullable: true` is ajv's own OpenAPI keyword, the
 * `#/components/...` references point into the document (registered here as one schema with an
 * $id), `discriminator` and the `x-` extensions are annotations (ajv `strict: false`), and
 * `int32`/`int64` are formats this file defines.
 */
import { readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { parse } from 'yaml';

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv) => Ajv;

export const V3_SPEC_PATH = new URL('../conformance/kafka-rest-v3-openapi.yaml', import.meta.url);

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
const SPEC_ID = 'https://tributary.invalid/kafka-rest-v3';

type Json = Record<string, unknown>;

export interface SpecOperation {
  readonly method: string;
  /** The spec's path template, with the server's `/v3` in front. */
  readonly path: string;
  readonly operationId: string | undefined;
  readonly responses: Readonly<Record<string, Json>>;
}

export interface ValidationResult {
  /** The spec operation the request matched, or undefined when the spec has none. */
  readonly operation: SpecOperation | undefined;
  /** Which response of the operation the body was checked against ('200', '5XX', 'Error', 'none'). */
  readonly checkedAgainst: string;
  /** ajv's messages, empty when the body conforms. */
  readonly errors: readonly string[];
}

/** Rewrites local `#/components/...` references to the registered document and fixes known slips. */
function prepare(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(prepare);
  if (node === null || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) {
    if (k === '$ref' && typeof v === 'string' && v.startsWith('#/')) out[k] = `${SPEC_ID}${v}`;
    // PartitionWithOffsetsData says `type: int64`; read it as an int64 integer.
    else if (k === 'type' && v === 'int64') {
      out.type = 'integer';
      out.format = 'int64';
    } else out[k] = prepare(v);
  }
  return out;
}

const segments = (path: string) => path.split('/').filter((s) => s !== '');

export class OpenApiValidator {
  readonly operations: readonly SpecOperation[];
  private readonly ajv: Ajv;
  private readonly compiled = new Map<string, ValidateFunction>();
  private readonly doc: Json;

  constructor(text: string, private readonly prefix = '/v3') {
    this.doc = prepare(parse(text)) as Json;
    this.ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(this.ajv);
    this.ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 });
    this.ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
    this.ajv.addSchema({ $id: SPEC_ID, components: this.doc.components }, SPEC_ID);
    const ops: SpecOperation[] = [];
    for (const [path, item] of Object.entries(this.doc.paths as Record<string, Json>)) {
      for (const m of METHODS) {
        const op = item[m] as Json | undefined;
        if (!op) continue;
        ops.push({ method: m.toUpperCase(), path: `${prefix}${path}`, operationId: op.operationId as string | undefined, responses: op.responses as Record<string, Json> });
      }
    }
    this.operations = ops;
  }

  static fromFile(path: URL | string = V3_SPEC_PATH): OpenApiValidator {
    return new OpenApiValidator(readFileSync(path, 'utf8'));
  }

  /** The operation for a concrete path: literal segments beat variables (`topics/-/configs` over `topics/{topic_name}/configs`). */
  find(method: string, concretePath: string): SpecOperation | undefined {
    const parts = segments(concretePath.split('?')[0] as string);
    let best: { op: SpecOperation; score: string } | undefined;
    for (const op of this.operations) {
      if (op.method !== method.toUpperCase()) continue;
      const pattern = segments(op.path);
      if (pattern.length !== parts.length) continue;
      let score = '';
      const ok = pattern.every((seg, i) => {
        if (/^\{\w+\}$/.test(seg)) {
          score += '0';
          return true;
        }
        score += '1';
        return seg === parts[i];
      });
      if (ok && (!best || score > best.score)) best = { op, score };
    }
    return best?.op;
  }

  /** Operations whose path template matches the concrete path with any method (to tell 404 from 405). */
  pathKnown(concretePath: string): boolean {
    return METHODS.some((m) => this.find(m, concretePath) !== undefined);
  }

  private resolve(ref: Json): Json {
    let node = ref;
    while (typeof node.$ref === 'string') {
      const pointer = (node.$ref as string).slice(SPEC_ID.length + 2).split('/');
      node = pointer.reduce<Json>((n, key) => n[key] as Json, this.doc);
    }
    return node;
  }

  private validator(key: string, schema: Json): ValidateFunction {
    let v = this.compiled.get(key);
    if (!v) {
      v = this.ajv.compile(schema);
      this.compiled.set(key, v);
    }
    return v;
  }

  /**
   * Checks one response. A status the operation does not list is an error response of the REST
   * Proxy's generic `Error` shape when it is 4xx/5xx (the spec lists only the common ones).
   */
  validate(method: string, concretePath: string, status: number, body: unknown): ValidationResult {
    const operation = this.find(method, concretePath);
    const responses = operation?.responses ?? {};
    const key = String(status) in responses ? String(status) : `${String(status)[0]}XX` in responses ? `${String(status)[0]}XX` : undefined;
    let schema: Json | undefined;
    let against: string;
    if (key !== undefined) {
      const response = this.resolve(responses[key] as Json);
      const content = response.content as Record<string, { schema?: Json }> | undefined;
      if (!content) {
        return { operation, checkedAgainst: key, errors: body === undefined || body === '' ? [] : [`response ${key} has no body in the spec, got one`] };
      }
      if (!content['application/json']) return { operation, checkedAgainst: `${key} (${Object.keys(content).join(', ')}: not JSON, not checked)`, errors: [] };
      schema = content['application/json'].schema;
      against = key;
    } else if (status >= 400) {
      schema = { $ref: `${SPEC_ID}#/components/schemas/Error` };
      against = 'Error';
    } else {
      return { operation, checkedAgainst: 'none', errors: [`status ${status} is not a response of ${method} ${operation?.path ?? concretePath}`] };
    }
    if (!schema) return { operation, checkedAgainst: against, errors: [] };
    const v = this.validator(`${operation?.path ?? '-'} ${method} ${against}`, schema);
    const errors = v(body) ? [] : (v.errors ?? []).map((e) => `${e.instancePath || '(body)'} ${e.message ?? 'invalid'}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`);
    return { operation, checkedAgainst: against, errors };
  }
}
