/**
 * The fuzzer's inputs (fast-check arbitraries): path parameter values, query strings, headers and
 * bodies. Bodies are mostly near-valid — a route's valid example with a few fields mutated — so
 * the cases get past the first parse error and into each route's own checks.
 */
import fc from 'fast-check';

/** JSON written as its raw text: numbers JSON.stringify cannot produce (1e309, -0, 2^63...), nesting too deep to build as objects. */
export class RawNumber {
  constructor(readonly text: string) {}
}

/** JSON text of a value that may hold {@link RawNumber}s. */
export function toJsonText(v: unknown): string {
  if (v instanceof RawNumber) return v.text;
  if (Array.isArray(v)) return `[${v.map(toJsonText).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${toJsonText(x)}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

const RAW_NUMBERS = ['1e309', '-1e309', '-0', '9223372036854775807', '9223372036854775808', '-9223372036854775809', '18446744073709551616',
  '2147483648', '4294967296', '9007199254740993', '1e-400', '0.5', '-1', '1.0', '1e2', '123456789012345678901234567890'];

const huge = (n: number) => fc.constantFrom('a', 'é', '🙂', '\u0000', '"', '\\').map((c) => c.repeat(n));

/** Values that replace a field: every JSON type, edge numbers, odd strings, deep nesting. */
export const weirdValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(null, true, false, 0, -1, 1, 2 ** 31, 2 ** 53, -(2 ** 53), 1.5, '', ' ', '0', '-1', 'null', 'true', '[]', '{}', [], {}, [null], { '': null }) },
  { weight: 3, arbitrary: fc.constantFrom(...RAW_NUMBERS).map((t) => new RawNumber(t)) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 2, arbitrary: fc.constantFrom('\ud800', '\udfff', '\ufeff', '\u2028', '../..', '%2F', '..', '.', 'a'.repeat(250), 'STRING', 'JSON', 'BINARY', 'AVRO', 'PROTOBUF', 'earliest', 'latest', 'DELETE', 'SET', 'PREFERRED', 'UNCLEAN') },
  // Huge strings, up to 1 MB.
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 6 }).chain((k) => huge(10 ** k)) },
  // Deep nesting, as raw text (up to 100,000 levels: a recursive parser or validator would overflow its stack).
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 5 }).map((k) => new RawNumber('['.repeat(10 ** k) + ']'.repeat(10 ** k))) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 5 }).map((k) => new RawNumber('{"a":'.repeat(10 ** k) + '1' + '}'.repeat(10 ** k))) },
  { weight: 2, arbitrary: fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

type Path = (string | number)[];

function paths(v: unknown, prefix: Path = [], out: Path[] = [], depth = 0): Path[] {
  out.push(prefix);
  if (depth > 6) return out;
  if (Array.isArray(v)) v.forEach((x, i) => paths(x, [...prefix, i], out, depth + 1));
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) paths(x, [...prefix, k], out, depth + 1);
  return out;
}

function setAt(v: unknown, path: Path, f: (x: unknown) => unknown | typeof REMOVE): unknown {
  if (path.length === 0) {
    const r = f(v);
    return r === REMOVE ? undefined : r;
  }
  const [head, ...rest] = path;
  if (Array.isArray(v)) {
    const copy = [...v];
    const r = rest.length === 0 ? f(copy[head as number]) : setAt(copy[head as number], rest, f);
    if (r === REMOVE) copy.splice(head as number, 1);
    else copy[head as number] = r;
    return copy;
  }
  const copy = { ...(v as Record<string, unknown>) };
  const r = rest.length === 0 ? f(copy[head as string]) : setAt(copy[head as string], rest, f);
  if (r === REMOVE) delete copy[head as string];
  else copy[head as string] = r;
  return copy;
}

const REMOVE = Symbol('remove');

type Mutation = { kind: 'replace'; at: number; value: unknown } | { kind: 'remove'; at: number } | { kind: 'extra'; at: number; key: string; value: unknown }
  | { kind: 'duplicate'; at: number } | { kind: 'wrap'; at: number };

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), value: weirdValue }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('remove' as const), at: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('extra' as const), at: fc.nat(), key: fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('__proto__', 'constructor', 'partition_id', 'validate_only', 'id', 'value')), value: weirdValue }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('duplicate' as const), at: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('wrap' as const), at: fc.nat() }) },
);

function mutate(v: unknown, m: Mutation): unknown {
  const all = paths(v);
  const path = all[m.at % all.length] as Path;
  switch (m.kind) {
    case 'replace': return setAt(v, path, () => m.value);
    case 'remove': return path.length === 0 ? v : setAt(v, path, () => REMOVE);
    case 'wrap': return setAt(v, path, (x) => [x]);
    case 'duplicate': return setAt(v, path, (x) => (Array.isArray(x) ? [...x, ...x] : x));
    case 'extra': return setAt(v, path, (x) => {
      if (x !== null && typeof x === 'object' && !Array.isArray(x)) {
        // (defineProperty: a "__proto__" key must become an own property, as JSON.parse makes it)
        const copy = { ...(x as Record<string, unknown>) };
        Object.defineProperty(copy, m.key, { value: m.value, enumerable: true, writable: true, configurable: true });
        return copy;
      }
      return Array.isArray(x) ? [...x, m.value] : x;
    });
  }
}

/** A body's text: a valid example as it is, mutated, or bytes that are not a request at all. */
export function bodyArb(examples: readonly unknown[]): fc.Arbitrary<string | undefined> {
  const example = examples.length > 0 ? fc.constantFrom(...examples) : fc.constant({});
  const mutated = fc.tuple(example, fc.array(mutationArb, { minLength: 1, maxLength: 3 })).map(([e, ms]) => ms.reduce(mutate, e));
  return fc.oneof(
    { weight: 3, arbitrary: example.map(toJsonText) },
    { weight: 6, arbitrary: mutated.map(toJsonText) },
    { weight: 1, arbitrary: fc.tuple(example, fc.nat()).map(([e, n]) => { const t = toJsonText(e); return t.slice(0, n % Math.max(1, t.length)); }) },
    { weight: 1, arbitrary: fc.tuple(fc.array(example, { minLength: 2, maxLength: 3 }), fc.constantFrom('', '\n', ' ')).map(([es, sep]) => es.map(toJsonText).join(sep)) },
    {
      weight: 2, arbitrary: fc.oneof(
        fc.constant(undefined), fc.constant(''), fc.constant('   '), fc.constant('null'), fc.constant('[]'), fc.constant('"x"'), fc.constant('{'), fc.constant('}{'),
        fc.string({ unit: 'binary', maxLength: 200 }), fc.jsonValue().map((v) => JSON.stringify(v)),
        fc.integer({ min: 1000, max: 200_000 }).map((d) => '['.repeat(d) + ']'.repeat(d)),
        fc.integer({ min: 1000, max: 200_000 }).map((d) => '{"a":'.repeat(d) + '1' + '}'.repeat(d)),
      ),
    },
  );
}

/** A path parameter: the valid value, or one of the values names and ids must survive. */
export function paramArb(valid: readonly string[]): fc.Arbitrary<{ raw: boolean; value: string }> {
  const plain = (a: fc.Arbitrary<string>) => a.map((value) => ({ raw: false, value }));
  return fc.oneof(
    { weight: 6, arbitrary: plain(fc.constantFrom(...valid)) },
    {
      weight: 4, arbitrary: fc.oneof(
        plain(fc.constantFrom('', '.', '..', '-', '0', '-1', '00', '1e3', '0x1', ' 1', '1 ', '+1', '2147483648', '9999999999', '99999999999999999999', 'NaN', 'null', 'undefined', '__proto__', 'constructor', 'a/b', '../x', '%', 'ä', '🙂', '\u0000', 'a'.repeat(249), 'a'.repeat(250), 'x'.repeat(5000))),
        plain(fc.string({ maxLength: 30 })),
        plain(fc.string({ unit: 'grapheme', maxLength: 10 })),
        plain(fc.constantFrom(...valid).map((v) => `${v}x`)),
        plain(fc.constantFrom(...valid).map((v) => v.toUpperCase())),
        // Sent as is, not percent-encoded: bad escapes, encoded slashes, dot segments.
        fc.constantFrom('%', '%zz', '%2F', '%2e%2e', '..', '%00', '%C0%AF', '%ED%A0%80', 'a%2Fb').map((value) => ({ raw: true, value })),
      ),
    },
  );
}

const KNOWN_QUERY = ['offset', 'max_bytes', 'timeout', 'format', 'timestamp', 'offset_type', 'acks', 'producer_id', 'producer_epoch', 'topic', 'partition', 'validate_only', 'wipe'];
// Integers that would make a long poll wait long are left out: a case must finish in ms, not 25 s.
const QUERY_VALUES = fc.oneof(
  fc.constantFrom('0', '1', '2', '10', '-1', '-0', '', ' ', 'abc', '1e309', '1.5', '0x10', '9007199254740993', '99999999999999999999', '2147483648', 'true', 'null',
    'binary', 'json', 'string', 'BINARY', 'earliest', 'latest', 'earliest_and_latest', 'max_timestamp', 'all', '1', '0', '-2', '2026-01-01T00:00:00Z', '%', 'é', '🙂', 'x'.repeat(3000)),
  fc.string({ maxLength: 10 }),
);

/** Query parameters: known ones with wrong types, unknown ones, repeated ones (the gateway joins repeats with a comma). */
export const queryArb: fc.Arbitrary<[string, string][]> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<[string, string][]>([]) },
  {
    weight: 5, arbitrary: fc.array(fc.tuple(fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...KNOWN_QUERY) }, { weight: 1, arbitrary: fc.string({ maxLength: 8 }) }), QUERY_VALUES), { maxLength: 4 }),
  },
);

const CONTENT_TYPES = ['application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/vnd.kafka.json.v2+json', 'application/vnd.kafka.binary.v2+json',
  'application/vnd.kafka.avro.v2+json', 'application/vnd.kafka.v2+json', 'application/vnd.kafka.jsonschema.v2+json', 'application/octet-stream', 'text/plain', 'multipart/form-data; boundary=x',
  'application/x-www-form-urlencoded', '', ';;;', 'application/json; charset=latin1', 'x'.repeat(4000)];

export type Encoding = 'none' | 'gzip' | 'deflate' | 'gzip-truncated' | 'garbage' | 'gzip-twice' | 'identity';

export interface HeaderCase {
  readonly headers: Record<string, string>;
  /** How the body is encoded, which sets its Content-Encoding header (lib/fuzz/harness.ts). */
  readonly encoding: Encoding;
}

/** Headers: the Content-Type the route expects or a variant, a Content-Encoding and how the body is really encoded, Accept, odd and huge ones. */
export function headersArb(contentType: string): fc.Arbitrary<HeaderCase> {
  return fc.record({
    ct: fc.oneof({ weight: 6, arbitrary: fc.constant(contentType) }, { weight: 4, arbitrary: fc.constantFrom<string | undefined>(undefined, ...CONTENT_TYPES) }),
    encoding: fc.oneof({ weight: 8, arbitrary: fc.constant<Encoding>('none') }, { weight: 3, arbitrary: fc.constantFrom<Encoding>('gzip', 'deflate', 'gzip-truncated', 'garbage', 'gzip-twice', 'identity') }),
    accept: fc.constantFrom<string | undefined>(undefined, undefined, 'application/json', 'application/vnd.kafka.json.v2+json', 'application/vnd.kafka.binary.v2+json', 'application/vnd.kafka.avro.v2+json', 'application/vnd.kafka.jsonschema.v2+json', 'application/vnd.kafka.protobuf.v2+json', 'text/html', '*/*', ''),
    extra: fc.array(fc.tuple(fc.constantFrom('authorization', 'x-forwarded-proto', 'host', 'x-amz-date', 'cookie', 'content-length', 'x-fuzz'), fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('Bearer x', 'http', 'evil.example', '', 'y'.repeat(8000)))), { maxLength: 2 }),
  }).map(({ ct, encoding, accept, extra }) => {
    const headers: Record<string, string> = {};
    if (ct !== undefined) headers['content-type'] = ct;
    if (accept !== undefined) headers.accept = accept;
    for (const [k, v] of extra) headers[k] = v;
    return { headers, encoding };
  });
}
