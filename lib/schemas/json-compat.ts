/**
 * JSON Schema compatibility, the rules Confluent documents, written here because no library has
 * them: a reader reads what a writer wrote when every document valid under the writer is valid
 * under the reader. Checked keyword by keyword:
 * - `type`: the writer's types must be among the reader's (`integer` is read as `number`);
 * - `enum`/`const`: the writer's values must be among the reader's;
 * - bounds (`minimum`, `maxLength`, `minItems`, ...), `pattern`, `format`, `multipleOf`: the
 *   reader may only loosen them;
 * - objects, by content model (`additionalProperties`: absent or `true` is open, `false` closed,
 *   a schema partially open): a property the reader drops must still be accepted by the reader's
 *   content model; a property the reader adds must accept whatever the writer's content model let
 *   through (nothing, when it is closed); a property the reader requires must be required by the
 *   writer; an open writer needs an open reader;
 * - arrays: `items` recursively;
 * - anything else (`oneOf`, `anyOf`, `allOf`, `not`, `if`, `patternProperties`, ...) must be equal.
 * Local `$ref`s (`#/definitions/...`, `#/$defs/...`) are followed; others compare by equality.
 */
import { sortedJson } from './model.js';

type Schema = boolean | Record<string, unknown>;

/** Keywords that constrain nothing. */
const ANNOTATIONS = new Set(['title', 'description', '$comment', 'default', 'examples', '$id', 'id', '$schema', 'definitions', '$defs', 'readOnly', 'writeOnly', 'deprecated']);
const LOWER_BOUNDS = ['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties'];
const UPPER_BOUNDS = ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties'];
const HANDLED = new Set([...ANNOTATIONS, ...LOWER_BOUNDS, ...UPPER_BOUNDS, 'type', 'enum', 'const', 'pattern', 'format', 'multipleOf',
  'properties', 'required', 'additionalProperties', 'items', '$ref']);

interface Side {
  readonly root: Schema;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function resolve(s: unknown, side: Side, seen = 0): Schema {
  if (typeof s === 'boolean') return s;
  if (!isObject(s)) return true;
  const ref = s.$ref;
  if (typeof ref === 'string' && ref.startsWith('#/') && seen < 32 && isObject(side.root)) {
    let target: unknown = side.root;
    for (const part of ref.slice(2).split('/')) target = isObject(target) ? target[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
    if (target !== undefined) {
      const { $ref: _ref, ...rest } = s;
      const resolved = resolve(target, side, seen + 1);
      return Object.keys(rest).length === 0 || typeof resolved === 'boolean' ? resolved : { ...resolved, ...rest };
    }
  }
  return s;
}

const acceptsAll = (s: Schema): boolean => s === true || (isObject(s) && Object.keys(s).every((k) => ANNOTATIONS.has(k)));

function types(s: Record<string, unknown>): string[] | undefined {
  if (typeof s.type === 'string') return [s.type];
  if (Array.isArray(s.type)) return s.type.filter((t): t is string => typeof t === 'string');
  return undefined;
}

const valuesOf = (s: Record<string, unknown>): unknown[] | undefined => (Array.isArray(s.enum) ? s.enum : 'const' in s ? [s.const] : undefined);
const at = (path: string, key: string) => (path === '#' ? `#/${key}` : `${path}/${key}`);

/** Why `reader` cannot read what `writer` wrote; empty when it can. */
export function jsonCanRead(reader: Schema, writer: Schema): string[] {
  const messages: string[] = [];
  compare(reader, writer, { root: reader }, { root: writer }, '#', messages, 0);
  return messages;
}

function compare(rIn: unknown, wIn: unknown, rs: Side, ws: Side, path: string, out: string[], depth: number): void {
  const r = resolve(rIn, rs);
  const w = resolve(wIn, ws);
  if (acceptsAll(r) || w === false) return;
  if (depth > 64) {
    if (sortedJson(r) !== sortedJson(w)) out.push(`${path}: nested too deep to compare, and not equal`);
    return;
  }
  if (r === false) {
    out.push(`${path}: the reader accepts nothing`);
    return;
  }
  if (w === true) {
    out.push(`${path}: the reader constrains what the writer left open`);
    return;
  }
  const rObj = r as Record<string, unknown>;
  const wObj = w as Record<string, unknown>;

  const rt = types(rObj);
  const wt = types(wObj);
  if (rt) {
    if (!wt) out.push(`${path}: TYPE_NARROWED: the reader requires type ${rt.join('|')}, the writer any type`);
    else for (const t of wt) if (!rt.includes(t) && !(t === 'integer' && rt.includes('number'))) out.push(`${path}: TYPE_CHANGED: the writer's type ${t} is not among the reader's ${rt.join('|')}`);
  }

  const rv = valuesOf(rObj);
  const wv = valuesOf(wObj);
  if (rv) {
    const known = new Set(rv.map(sortedJson));
    if (!wv) out.push(`${path}: ENUM_ARRAY_NARROWED: the reader allows only ${JSON.stringify(rv)}`);
    else for (const v of wv) if (!known.has(sortedJson(v))) out.push(`${path}: ENUM_ARRAY_NARROWED: the writer's value ${JSON.stringify(v)} is not among the reader's`);
  }

  for (const k of LOWER_BOUNDS) {
    if (typeof rObj[k] !== 'number') continue;
    if (typeof wObj[k] !== 'number' || (wObj[k] as number) < (rObj[k] as number)) out.push(`${path}: ${k.toUpperCase()}_INCREASED: the reader's ${k} ${rObj[k]} is above the writer's ${wObj[k] ?? 'none'}`);
  }
  for (const k of UPPER_BOUNDS) {
    if (typeof rObj[k] !== 'number') continue;
    if (typeof wObj[k] !== 'number' || (wObj[k] as number) > (rObj[k] as number)) out.push(`${path}: ${k.toUpperCase()}_DECREASED: the reader's ${k} ${rObj[k]} is below the writer's ${wObj[k] ?? 'none'}`);
  }
  for (const k of ['pattern', 'format']) {
    if (rObj[k] !== undefined && rObj[k] !== wObj[k]) out.push(`${path}: ${k.toUpperCase()}_CHANGED: the reader's ${k} ${JSON.stringify(rObj[k])} differs from the writer's ${JSON.stringify(wObj[k] ?? null)}`);
  }
  if (typeof rObj.multipleOf === 'number') {
    const wm = wObj.multipleOf;
    if (typeof wm !== 'number' || !Number.isInteger(wm / rObj.multipleOf)) out.push(`${path}: MULTIPLE_OF_CHANGED: the writer's values need not be multiples of ${rObj.multipleOf}`);
  }

  if (objectLike(rObj) || objectLike(wObj)) compareObjects(rObj, wObj, rs, ws, path, out, depth);

  if (rObj.items !== undefined) {
    if (wObj.items === undefined) {
      if (!acceptsAll(resolve(rObj.items, rs))) out.push(`${path}: ITEMS_NARROWED: the reader constrains the items the writer left open`);
    } else if (Array.isArray(rObj.items) || Array.isArray(wObj.items)) {
      if (sortedJson(rObj.items) !== sortedJson(wObj.items)) out.push(`${path}/items: tuple items changed (compared by equality only)`);
    } else {
      compare(rObj.items, wObj.items, rs, ws, at(path, 'items'), out, depth + 1);
    }
  }

  for (const k of new Set([...Object.keys(rObj), ...Object.keys(wObj)])) {
    if (HANDLED.has(k)) continue;
    if (sortedJson(rObj[k] ?? null) !== sortedJson(wObj[k] ?? null)) out.push(`${path}: ${k} changed (compared by equality only)`);
  }
}

const objectLike = (s: Record<string, unknown>): boolean =>
  'properties' in s || 'additionalProperties' in s || 'required' in s || (types(s)?.includes('object') ?? false);

function compareObjects(r: Record<string, unknown>, w: Record<string, unknown>, rs: Side, ws: Side, path: string, out: string[], depth: number): void {
  const rProps = isObject(r.properties) ? r.properties : {};
  const wProps = isObject(w.properties) ? w.properties : {};
  const rAdd: Schema = r.additionalProperties === undefined ? true : (resolve(r.additionalProperties, rs));
  const wAdd: Schema = w.additionalProperties === undefined ? true : (resolve(w.additionalProperties, ws));
  const rReq = new Set(Array.isArray(r.required) ? r.required.filter((x): x is string => typeof x === 'string') : []);
  const wReq = new Set(Array.isArray(w.required) ? w.required.filter((x): x is string => typeof x === 'string') : []);
  const props = at(path, 'properties');

  for (const name of Object.keys(wProps)) {
    if (name in rProps) {
      compare(rProps[name], wProps[name], rs, ws, at(props, name), out, depth + 1);
    } else if (rAdd === false) {
      out.push(`${at(props, name)}: PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL: the reader does not allow the writer's property`);
    } else if (rAdd !== true) {
      const inner: string[] = [];
      compare(rAdd, wProps[name], rs, ws, at(props, name), inner, depth + 1);
      if (inner.length > 0) out.push(`${at(props, name)}: PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL`, ...inner);
    }
  }
  for (const name of Object.keys(rProps)) {
    if (name in wProps) continue;
    if (wAdd === false) continue;
    const inner: string[] = [];
    compare(rProps[name], wAdd, rs, ws, at(props, name), inner, depth + 1);
    if (inner.length > 0) {
      out.push(wAdd === true
        ? `${at(props, name)}: PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL: the writer may have written this property with any value`
        : `${at(props, name)}: PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL`, ...(wAdd === true ? [] : inner));
    }
  }
  for (const name of rReq) {
    const withDefault = isObject(rProps[name]) && 'default' in (rProps[name] as Record<string, unknown>);
    if (!wReq.has(name) && !withDefault) out.push(`${path}: REQUIRED_ATTRIBUTE_ADDED: the reader requires ${JSON.stringify(name)}, which the writer did not`);
  }
  if (wAdd !== false) {
    if (rAdd === false) out.push(`${path}: ADDITIONAL_PROPERTIES_REMOVED: the writer allows more properties, the reader none`);
    else if (rAdd !== true) {
      const inner: string[] = [];
      compare(rAdd, wAdd, rs, ws, at(path, 'additionalProperties'), inner, depth + 1);
      if (inner.length > 0) out.push(`${path}: ADDITIONAL_PROPERTIES_NARROWED`, ...inner);
    }
  }
}
