/**
 * The local stack's `--auth` and the route enforcement, end to end through HTTP: a gateway with
 * the token check (lib/local/credentials.ts, the `authenticate` hook `--auth` wires) in front of
 * the real handlers, on the shared stack's stores, with the functions' `TRIBUTARY_AUTH=token` and
 * `TRIBUTARY_SUPER_USERS=User:admin` set in this worker. In-process rather than a second stack: the
 * same gateway code and handlers without two more JVMs on a 2-core machine, and the shared stack
 * (no auth) stays the witness that a denied request wrote nothing.
 */
import fs from 'node:fs';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usersCommands } from '../../cli/users.js';
import { ROUTES, routeKey } from '../../lib/http/routes.js';
import { addUser, ensureCredentials, RELOAD_INTERVAL_MS } from '../../local/credentials.js';
import { call, clusterId, createTopic, uniqueTopic, v3 } from '../support/api.js';
import { startAuthGateway, type AuthGateway } from '../support/auth-gateway.js';

let g: AuthGateway;
let dir: string;
let file: string;
let adminToken: string;
const topic = uniqueTopic('authn');
const authed: AuthGateway['call'] = (...args) => g.call(...args);

const endOffset = async (p: number) => (await call('GET', v3(`/topics/${topic}/partitions/${p}/offsets`))).body.end_offset as number;

beforeAll(async () => {
  await createTopic(topic, 2, 3);
  g = await startAuthGateway();
  ({ dir, file, adminToken } = g);
});

afterAll(async () => {
  await g?.close();
});

describe('Local stack: --auth', () => {
  it('writes credentials.json with User:admin and a 32-byte token, readable by its owner only, and keeps it', () => {
    const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect(doc.users).toHaveLength(1);
    expect(doc.users[0].principal).toBe('User:admin');
    expect(Buffer.from(adminToken, 'base64url')).toHaveLength(32);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(ensureCredentials(dir)).toEqual({ file, created: false });
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual(doc);
  });

  it('answers 401 with 40101 without a token, with an unknown one, or with another scheme, before any function runs', async () => {
    for (const r of [
      await authed('GET', v3('/topics'), undefined),
      await authed('GET', v3('/topics'), 'not-a-token-of-this-cluster'),
      await authed('POST', v3(`/topics/${topic}/records`), undefined, { value: { type: 'STRING', data: 'x' } }),
    ]) {
      expect(r.status, r.text).toBe(401);
      expect(r.body).toEqual({ error_code: 40101, message: expect.stringMatching(/^Unauthorized/) });
      expect(r.headers.get('www-authenticate')).toBe('Bearer realm="tributary"');
    }
    const basic = await fetch(`${g.gateway.url}${v3('/topics')}`, { headers: { authorization: `Basic ${adminToken}` } });
    expect(basic.status).toBe(401);
    // Nothing was produced by the refused request.
    expect(await endOffset(0) + await endOffset(1)).toBe(0);
  });

  it('lets /local/* through without a token', async () => {
    const r = await authed('GET', '/local/processes', undefined);
    expect(r.status).toBe(200);
  });

  it('serves User:admin (a super user) on every kind of route', async () => {
    const list = await authed('GET', v3('/topics'), adminToken);
    expect(list.status, list.text).toBe(200);
    expect(list.body.data.map((t: any) => t.topic_name)).toContain(topic);
    const produced = await authed('POST', v3(`/topics/${topic}/records`), adminToken, { partition_id: 0, value: { type: 'STRING', data: 'by admin' } });
    expect(produced.status, produced.text).toBe(200);
    expect(await endOffset(0)).toBe(1);
  });

  it('accepts a user added to the file within 2 s, and `tributary users add` prints only the new token', async () => {
    const token = addUser(file, 'User:alice');
    const t0 = Date.now();
    let status = 401;
    while (status === 401 && Date.now() - t0 < 5000) {
      status = (await authed('GET', '/v3/clusters', token)).status;
      if (status === 401) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
    expect(Date.now() - t0).toBeLessThan(2000 + RELOAD_INTERVAL_MS);

    const out: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((s: string) => out.push(String(s)) > 0) as typeof process.stdout.write;
    try {
      const p = new Command().exitOverride();
      usersCommands(p, () => false);
      await p.parseAsync(['node', 'tributary', 'users', 'add', 'User:bob', '--data-dir', dir]);
    } finally {
      process.stdout.write = write;
    }
    const printed = out.join('').trim();
    expect(printed).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const users = JSON.parse(fs.readFileSync(file, 'utf8')).users;
    expect(users.map((u: any) => u.principal)).toEqual(['User:admin', 'User:alice', 'User:bob']);
    expect(users[2].token).toBe(printed);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(() => addUser(file, 'User:bob')).toThrow(/already has a token/);
    expect(() => addUser(file, 'bob')).toThrow(/not a Kafka principal/);
  });
});

describe('Enforcement: a principal without ACLs', () => {
  let token: string;
  beforeAll(() => {
    token = addUser(file, 'User:mallory');
  });
  const waitForToken = async () => {
    for (let i = 0; i < 50 && (await authed('GET', '/v3/clusters', token)).status === 401; i++) await new Promise((r) => setTimeout(r, 100));
  };

  it('cannot produce: 403 with 40301 and TOPIC_AUTHORIZATION_FAILED, and nothing is written (v3, batch, v2)', async () => {
    await waitForToken();
    const before = [await endOffset(0), await endOffset(1)];
    const denied = [
      await authed('POST', v3(`/topics/${topic}/records`), token, { partition_id: 1, value: { type: 'STRING', data: 'nope' } }),
      await authed('POST', v3(`/topics/${topic}/records:batch`), token, { entries: [{ id: '1', value: { type: 'STRING', data: 'nope' } }] }),
      await authed('POST', `/topics/${topic}`, token, { records: [{ value: 'bm9wZQ==' }] }),
    ];
    for (const r of denied) {
      expect(r.status, r.text).toBe(403);
      expect(r.body).toEqual({ error_code: 40301, message: expect.stringMatching(/TOPIC_AUTHORIZATION_FAILED/) });
    }
    expect([await endOffset(0), await endOffset(1)]).toEqual(before);
  });

  it('sees no topic and no group in lists it may not DESCRIBE', async () => {
    await waitForToken();
    const v3List = await authed('GET', v3('/topics'), token);
    expect(v3List.status).toBe(200);
    expect(v3List.body.data.map((t: any) => t.topic_name)).not.toContain(topic);
    const v2List = await authed('GET', '/topics', token);
    expect(v2List.status).toBe(200);
    expect(v2List.body).not.toContain(topic);
    const meta = await authed('GET', v3('/metadata'), token);
    expect(meta.status).toBe(200);
    expect(meta.body.topics.map((t: any) => t.topic_name)).not.toContain(topic);
    const groups = await authed('GET', v3('/consumer-groups'), token);
    expect(groups.status).toBe(200);
    expect(groups.body.data).toEqual([]);
  });

  it('is refused with 403 on every route that declares a check, before the handler runs', async () => {
    await waitForToken();
    const params: Record<string, string> = {
      cluster_id: clusterId(), topic_name: topic, partition_id: '0', group_id: 'authn-group', group_name: 'authn-group',
      broker_id: '1', name: 'retention.ms', consumer_id: 'm', instance: 'i',
    };
    const deniedTopic = uniqueTopic('authn-denied');
    const bodies: Record<string, unknown> = { 'POST /v3/clusters/{cluster_id}/topics': { topic_name: deniedTopic, partitions_count: 1 } };
    const checked = ROUTES.filter((r) => r.access.kind !== 'open' && r.access.kind !== 'filtered');
    expect(checked.length).toBeGreaterThan(70);
    const wrong: string[] = [];
    for (const r of checked) {
      const p = r.path.replace(/\{(\w+)\}/g, (_, k: string) => encodeURIComponent(params[k] ?? k));
      const res = await authed(r.method, p, token, bodies[routeKey(r)] ?? (r.method === 'GET' || r.method === 'DELETE' ? undefined : {}));
      if (res.status !== 403 || res.body?.error_code !== 40301 || !/_AUTHORIZATION_FAILED/.test(res.body?.message ?? '')) wrong.push(`${routeKey(r)} → ${res.status} ${res.text.slice(0, 120)}`);
    }
    expect(wrong).toEqual([]);
    // The denied CreateTopics created nothing; the denied delete and config changes changed nothing.
    expect((await call('GET', v3(`/topics/${deniedTopic}`))).status).toBe(404);
    expect((await call('GET', v3(`/topics/${topic}`))).status).toBe(200);
  });
});
