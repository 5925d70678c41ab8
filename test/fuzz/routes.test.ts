/**
 * Input that cannot hurt: property-based fuzzing of every route in lib/http/routes.ts —
 * path parameters, query strings, headers and bodies (mostly near-valid: a route's valid request
 * with fields mutated). Every answer is JSON (or empty for 204) with a 2xx/4xx status and, for an
 * error, exactly `{error_code, message}`; no handler throws or passes its deadline; a refused
 * write leaves the topics, configs, group offsets (and, for broker routes, the brokers and cluster
 * configs) as they were.
 *
 * `npm test` runs FUZZ_RUNS (default 4) cases per route; `npm run fuzz` 10,000. FUZZ_SEED fixes the
 * seed (printed with the table, and with any failure), FUZZ_ROUTE keeps the routes named (exact
 * keys, comma-separated) or else those whose key contains it, FUZZ_REPORT names a file the table is written to after each route, FUZZ_SHRINK=1
 * shrinks a failing case (slow: every try runs against the stack). docs/security.md.
 */
import fs from 'node:fs';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it, inject } from 'vitest';
import { ROUTES, type RouteSpec } from '../../lib/http/routes.js';
import { BROKER_CONFIGS, catalog, FUZZ_SCHEMA, type FuzzContext, type RouteFuzz } from './catalog.js';
import { bodyArb, headersArb, paramArb, queryArb, type Encoding } from './generators.js';
import { invoke, Stats, violation, type Invocation, type Outcome } from './harness.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 4);
const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const ONLY = process.env.FUZZ_ROUTE;

const tag = `${process.pid}-${Date.now().toString(36)}`;
const ctx: FuzzContext = {
  clusterId: inject('clusterId'),
  topic: `fuzz-${tag}`,
  victim: `fuzz-${tag}-victim`,
  newTopic: `fuzz-${tag}-new`,
  group: `fuzz-${tag}-group`,
  memberId: '',
  v2Group: `fuzz-${tag}-v2`,
  instance: 'fuzz-instance',
  brokers: [],
  subject: `fuzz-${tag}-value`,
  schemaId: 0,
};
const v3 = (path: string) => `/v3/clusters/${ctx.clusterId}${path}`;
const stats = new Stats();

async function must(method: string, url: string, body?: unknown, contentType = 'application/json'): Promise<Outcome> {
  const o = await invoke({ method, url, headers: body === undefined ? {} : { 'content-type': contentType }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  if (o.status >= 300) throw new Error(`${method} ${url}: ${o.status} ${o.body}`);
  return o;
}
const json = (o: Outcome): any => JSON.parse(o.body ?? 'null');

const createVictim = () => must('POST', v3('/topics'), { topic_name: ctx.victim, partitions_count: 1, replication_factor: 1 });
const SR_TYPE = 'application/vnd.schemaregistry.v1+json';
const registerSubject = async () => json(await must('POST', `/subjects/${encodeURIComponent(ctx.subject)}/versions`, { schema: FUZZ_SCHEMA }, SR_TYPE)).id as number;
const createInstance = () => must('POST', `/consumers/${ctx.v2Group}`, { name: ctx.instance, format: 'binary', 'auto.offset.reset': 'earliest', 'consumer.request.timeout.ms': 10 }, 'application/vnd.kafka.v2+json');

beforeAll(async () => {
  await must('POST', v3('/topics'), { topic_name: ctx.topic, partitions_count: 3, replication_factor: 3 });
  await createVictim();
  for (let p = 0; p < 3; p++) await must('POST', v3(`/topics/${ctx.topic}/records`), { partition_id: p, value: { type: 'STRING', data: `seed-${p}` } });
  const hb = json(await must('POST', v3(`/consumer-groups/${ctx.group}/heartbeat`), { member_epoch: 0, subscribed_topic_names: [ctx.topic], session_timeout_ms: 1_800_000 }));
  Object.assign(ctx, { memberId: hb.member_id, brokers: json(await must('GET', v3('/brokers'))).data.map((b: any) => b.broker_id) });
  await must('POST', v3(`/consumer-groups/${ctx.group}/offsets:commit`), { offsets: [{ topic: ctx.topic, partition: 0, offset: 1 }] });
  await createInstance();
  Object.assign(ctx, { schemaId: await registerSubject() });
}, 120_000);

// A long run's table so far, route by route (FUZZ_REPORT=file).
afterEach(() => {
  if (process.env.FUZZ_REPORT) fs.writeFileSync(process.env.FUZZ_REPORT, `seed ${SEED}, ${RUNS} cases per route\n${stats.table()}\n`);
});

afterAll(() => {
  console.log(`fuzz: seed ${SEED}, ${RUNS} cases per route (FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS} to repeat)\n${stats.table()}`);
});

/**
 * What a refused write must leave as it was (the reads in parallel). Cluster-wide state only for
 * the broker routes: other files change it meanwhile.
 */
async function snapshot(clusterWide: boolean, registry = false): Promise<string> {
  const get = async (url: string) => {
    const o = await invoke({ method: 'GET', url, headers: {} });
    return o.status === 200 ? json(o) : o.status;
  };
  const partitions = (t: string) => get(v3(`/topics/${t}/partitions`)).then((parts) => (typeof parts === 'number' ? parts
    : parts.data.map((p: any) => [p.partition_id, p.leader_id, p.leader_epoch, p.log_start_offset, p.log_end_offset, p.replica_states.map((r: any) => r.broker_id)])));
  const nonDefault = (url: string) => get(url).then((b) => (typeof b === 'number' ? b : b.data.filter((c: any) => !c.is_default).map((c: any) => `${c.name}=${c.value}`).sort()));
  const state = await Promise.all([
    partitions(ctx.topic), nonDefault(v3(`/topics/${ctx.topic}/configs`)), partitions(ctx.victim), nonDefault(v3(`/topics/${ctx.victim}/configs`)),
    // (the names alone: REST Proxy v2's list is one Query, where v3's reads every topic of the shared stack)
    get('/topics').then((b) => (typeof b === 'number' ? b : b.filter((n: string) => n.startsWith(`fuzz-${tag}`)).sort())),
    get(v3(`/consumer-groups/${ctx.group}/offsets`)), get(v3(`/consumer-groups/${ctx.v2Group}/offsets`)),
    // The registry's: the fuzzer's subject (every version, deleted ones too), its level, the global level and the mode.
    ...(registry ? [get(`/subjects/${encodeURIComponent(ctx.subject)}/versions?deleted=true`), get(`/config/${encodeURIComponent(ctx.subject)}`), get('/config'), get('/mode')] : []),
    ...(clusterWide ? [
      // (the metadata's broker list: GET .../brokers also sums every broker's table, which costs more than the case)
      get(v3('/metadata')).then((m) => (typeof m === 'number' ? m : m.brokers.map((x: any) => `${x.broker_id}:${x.state}`))),
      nonDefault(v3('/broker-configs')),
    ] : []),
  ]);
  return JSON.stringify(state);
}

interface Case {
  readonly params: Record<string, { raw: boolean; value: string }>;
  readonly query: [string, string][];
  readonly headers: Record<string, string>;
  readonly encoding: Encoding;
  readonly body: string | undefined;
}

function caseArb(rf: RouteFuzz): fc.Arbitrary<Case> {
  const params = fc.record(Object.fromEntries(Object.entries(rf.params).map(([k, valid]) => [k, paramArb(valid)])));
  const validQuery = fc.constantFrom(...rf.queries).map((q) => q.map(([k, v]) => [k, v] as [string, string]));
  const query = fc.oneof(
    { weight: 5, arbitrary: validQuery },
    { weight: 3, arbitrary: queryArb },
    { weight: 2, arbitrary: fc.tuple(validQuery, queryArb).map(([a, b]) => [...a, ...b]) },
  );
  const body = rf.hasBody ? bodyArb(rf.bodies) : fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 2, arbitrary: bodyArb([{}]) });
  const headers = fc.constantFrom(...rf.contentTypes).chain(headersArb);
  return fc.record({ params, query, headers, body }).map((c) => ({ params: c.params, query: c.query, headers: c.headers.headers, encoding: c.headers.encoding, body: c.body }));
}

function invocationOf(rf: RouteFuzz, c: Case): Invocation {
  let params = Object.fromEntries(Object.entries(c.params).map(([k, p]) => [k, p.value]));
  let body = c.body;
  if (rf.guard) ({ params, body } = rf.guard(params, body));
  const path = rf.route.path.replace(/\{(\w+)\}/g, (_, k: string) => (c.params[k]?.raw && params[k] === c.params[k]?.value ? params[k] as string : encodeURIComponent(params[k] ?? '')));
  const qs = new URLSearchParams(rf.guardQuery ? rf.guardQuery(c.query) : c.query).toString();
  return { method: rf.route.method, url: qs ? `${path}?${qs}` : path, headers: c.headers, ...(body !== undefined ? { body } : {}), encoding: c.encoding };
}

const describeInvocation = (inv: Invocation): string => {
  const body = inv.body === undefined ? '(none)' : inv.body.length > 500 ? `${JSON.stringify(inv.body.slice(0, 500))}… (${inv.body.length} chars)` : JSON.stringify(inv.body);
  const headers = Object.fromEntries(Object.entries(inv.headers).map(([k, v]) => [k, v.length > 100 ? `${v.slice(0, 100)}… (${v.length})` : v]));
  return `${inv.method} ${inv.url.length > 300 ? `${inv.url.slice(0, 300)}…` : inv.url}\n  headers ${JSON.stringify(headers)} encoding ${inv.encoding}\n  body ${body}`;
};

/**
 * The state after the last case of the route being fuzzed: only this file's cases touch what a
 * snapshot holds (but for the cluster-wide part, taken right before each case), so it is the
 * state before the next case.
 */
let last: string | undefined;

async function runCase(rf: RouteFuzz, c: Case): Promise<void> {
  const inv = invocationOf(rf, c);
  const writes = rf.route.method !== 'GET';
  const clusterWide = /broker/.test(rf.key);
  const registry = /^\w+ \/(subjects|config|mode|compatibility|schemas)/.test(rf.key);
  const before = writes ? (clusterWide || last === undefined ? await snapshot(clusterWide, registry) : last) : undefined;
  let o: Outcome;
  try {
    o = await invoke(inv);
  } catch (err) {
    throw new Error(`the handler threw: ${(err as Error).stack}\n${describeInvocation(inv)}`, { cause: err });
  }
  stats.add(rf.key, o);
  const bad = violation(o);
  if (bad) throw new Error(`${bad}\n${describeInvocation(inv)}\n  answer ${o.status} ${o.body?.slice(0, 500)}`);
  // Put back what a successful delete removed, for the cases after it.
  if (o.status < 300 && o.routeKey === 'DELETE /v3/clusters/{cluster_id}/topics/{topic_name}' && inv.url.includes(ctx.victim)) await createVictim();
  if (o.status < 300 && o.routeKey === 'DELETE /consumers/{group_name}/instances/{instance}') await createInstance().catch(() => undefined);
  // A deleted version or subject: the subject gets a live version again.
  if (o.status < 300 && o.routeKey.startsWith('DELETE /subjects/')) await registerSubject().catch(() => undefined);
  if (!writes) return;
  const after = await snapshot(clusterWide, registry);
  last = clusterWide ? undefined : after;
  if (o.status >= 400 && after !== before) {
    throw new Error(`a refused write (${o.status} ${o.body?.slice(0, 300)}) changed state:\n  before ${before}\n  after  ${after}\n${describeInvocation(inv)}`);
  }
}

// FUZZ_ROUTE: the routes named exactly (comma-separated keys, in that order), else those whose key contains it.
const wanted = ONLY?.split(',').map((k) => k.trim());
// (in the order named, so a long run can do the routes that matter most first)
const exact = (wanted ?? []).map((k) => ROUTES.find((r) => `${r.method} ${r.path}` === k)).filter((r): r is RouteSpec => r !== undefined);
const routes: RouteSpec[] = exact.length > 0 ? exact : ROUTES.filter((r) => !ONLY || `${r.method} ${r.path}`.includes(ONLY));

describe('Fuzz: every route answers 2xx/4xx JSON, never crashes, and a refused write changes nothing', () => {
  it.each(routes.map((r, i) => [`${r.method} ${r.path}`, i] as const))('%s', async (_key, i) => {
    const rf = catalog([routes[i] as RouteSpec], ctx)[0] as RouteFuzz;
    last = undefined;
    // (the seed of a route is FUZZ_SEED plus its place in ROUTES, whichever routes FUZZ_ROUTE keeps)
    await fc.assert(fc.asyncProperty(caseArb(rf), (c) => runCase(rf, c)), { seed: SEED + ROUTES.indexOf(routes[i] as RouteSpec), numRuns: RUNS, endOnFailure: process.env.FUZZ_SHRINK !== '1' });
  }, Math.max(60_000, RUNS * 2_000));

  it('keeps the cluster-wide state other files read: brokers and cluster configs', async () => {
    const brokers = json(await must('GET', v3('/brokers'))).data.map((b: any) => b.broker_id);
    expect(brokers).toEqual(ctx.brokers);
    const configs = json(await must('GET', v3('/broker-configs'))).data.filter((c: any) => BROKER_CONFIGS.includes(c.name));
    expect(configs.length).toBe(BROKER_CONFIGS.length);
  });
});

describe('Fuzz: the checks catch what they must', () => {
  const o = (status: number, body?: string, contentType = 'application/json'): Outcome => ({ routeKey: 'x', status, body, contentType, ms: 1 });
  it('flags a 5xx, a 3xx, a non-JSON body, an error body of another shape, a 204 with a body, an empty 200 and a late answer', () => {
    expect(violation(o(500, '{"error_code":500,"message":"Internal server error"}'))).toMatch(/status 500/);
    expect(violation(o(302, '{}'))).toMatch(/status 302/);
    expect(violation(o(200, '<html>'))).toMatch(/not JSON/);
    expect(violation(o(400, '{"error_code":400}'))).toMatch(/error_code, message/);
    expect(violation(o(404, '{"error_code":404,"message":"x","stack":"at ..."}'))).toMatch(/error_code, message/);
    expect(violation(o(204, '{}'))).toMatch(/204 with a body/);
    expect(violation(o(200))).toMatch(/empty body/);
    expect(violation(o(200, '{}', 'text/plain'))).toMatch(/content-type/);
    expect(violation({ ...o(200, '{}'), ms: 30_000 })).toMatch(/deadline/);
  });
  it('passes a 2xx JSON answer, a stream of JSON lines, an empty 204 and a REST Proxy error', () => {
    expect(violation(o(200, '{"a":1}'))).toBeUndefined();
    expect(violation(o(200, '{"a":1}\n{"a":2}\n'))).toBeUndefined();
    expect(violation(o(204))).toBeUndefined();
    expect(violation(o(422, '{"error_code":42206,"message":"Invalid record"}'))).toBeUndefined();
  });
});
