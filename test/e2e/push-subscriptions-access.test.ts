/**
 * Who may see and change a push subscription, end to end through HTTP with authorization on: a
 * gateway with `--auth`'s token check in front of the real handlers, in this worker, on the shared
 * stack's stores (test/support/auth-gateway.ts: TRIBUTARY_AUTH=token, User:admin a super user).
 * ACLs are written by the library, in this worker, so they hold at once for its handlers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENVIRONMENT } from '../../lib/config.js';
import { createAcls, deleteAcls } from '../../lib/security/acl-admin.js';
import { validateFilter } from '../../lib/security/acls.js';
import { createTopic, uniqueTopic, v3 } from '../support/api.js';
import { startAuthGateway, type AuthGateway } from '../support/auth-gateway.js';

let g: AuthGateway;
const topic = uniqueTopic('push-access');
const name = `${topic}-sub`;
const group = `${topic}-g`;
/** Principals of this file only, so their ACLs meet no other file's. */
const who = (role: string) => `User:${topic}-${role}`;
const tokens: Record<string, string> = {};

beforeAll(async () => {
  await createTopic(topic, 1, 1);
  g = await startAuthGateway();
  for (const role of ['prober', 'watcher', 'owner']) tokens[role] = await g.user(who(role));
  const allow = (principal: string, resourceType: 'TOPIC' | 'GROUP', resourceName: string, operation: 'READ' | 'DESCRIBE' | 'DELETE') =>
    ({ resourceType, resourceName, patternType: 'LITERAL', principal, host: '*', operation, permission: 'ALLOW' });
  await createAcls([
    // every caller passes the route's own check (READ on some topic) and differs only on the group
    ...['prober', 'watcher', 'owner'].map((r) => allow(who(r), 'TOPIC', topic, 'READ')),
    allow(who('watcher'), 'GROUP', '*', 'DESCRIBE'),
    allow(who('owner'), 'GROUP', group, 'DESCRIBE'),
    allow(who('owner'), 'GROUP', group, 'DELETE'),
  ] as never);
  const created = await g.call('POST', v3('/subscriptions'), g.adminToken, {
    subscription_name: name, topic_name: topic, group_id: group,
    endpoint: { type: 'http', url: `http://127.0.0.1:9/hook?token=${QUERY_SECRET}`, headers: { authorization: `Bearer ${HEADER_SECRET}` } },
  });
  expect(created.status, created.text).toBe(201);
  secret = created.body.secret;
});

const QUERY_SECRET = 'query-s3cr3t';
const HEADER_SECRET = 'header-s3cr3t';
let secret = '';

afterAll(async () => {
  await g?.call('DELETE', v3(`/subscriptions/${name}`), g.adminToken);
  await deleteAcls(['prober', 'watcher', 'owner'].map((r) => validateFilter({ resourceType: 'ANY', patternType: 'ANY', principal: who(r), operation: 'ANY', permission: 'ANY' })));
  await g?.close();
});

describe('Push subscriptions: access', () => {
  it('answers a caller without DESCRIBE or DELETE on the group GROUP_AUTHORIZATION_FAILED whether the subscription exists or not, the same answer naming neither its group', async () => {
    const missing = `${topic}-absent`;
    for (const method of ['GET', 'DELETE']) {
      const existing = await g.call(method, v3(`/subscriptions/${name}`), tokens.prober);
      const absent = await g.call(method, v3(`/subscriptions/${missing}`), tokens.prober);
      for (const r of [existing, absent]) {
        expect(r.status, `${method} ${r.text}`).toBe(403);
        expect(r.body.error_code).toBe(40301);
        expect(r.body.message).toMatch(/GROUP_AUTHORIZATION_FAILED/);
        expect(r.body.message).not.toContain(group);
      }
      expect(absent.body.message.replace(missing, name)).toBe(existing.body.message);
    }
    // the refused delete deleted nothing
    expect((await g.call('GET', v3(`/subscriptions/${name}`), g.adminToken)).status).toBe(200);
  });

  it('tells a caller that may DESCRIBE every group (it lists every subscription) that a name does not exist, and answers the owner of the group', async () => {
    const absent = await g.call('GET', v3(`/subscriptions/${topic}-absent`), tokens.watcher);
    expect(absent.status, absent.text).toBe(404);
    expect((await g.call('GET', v3(`/subscriptions/${name}`), tokens.watcher)).status).toBe(200);
    // DESCRIBE on every group is not DELETE on this one
    expect((await g.call('DELETE', v3(`/subscriptions/${name}`), tokens.watcher)).status).toBe(403);
    const owned = await g.call('GET', v3(`/subscriptions/${name}`), tokens.owner);
    expect(owned.status, owned.text).toBe(200);
    expect(owned.body.group_id).toBe(group);
    // the list shows the prober nothing of it
    const listed = await g.call('GET', v3('/subscriptions'), tokens.prober);
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((s: { subscription_name: string }) => s.subscription_name)).not.toContain(name);
  });

  it('answers the signing secret only to the create, and header values and the URL\'s query string to no read, whatever the caller may do', async () => {
    expect(secret).toMatch(/^whsec_/);
    for (const token of [g.adminToken, tokens.owner as string, tokens.watcher as string]) {
      for (const path of ['/subscriptions', `/subscriptions/${name}`]) {
        const r = await g.call('GET', v3(path), token);
        expect(r.status, r.text).toBe(200);
        for (const hidden of [secret, QUERY_SECRET, HEADER_SECRET]) expect(r.text, path).not.toContain(hidden);
      }
    }
    const described = await g.call('GET', v3(`/subscriptions/${name}`), g.adminToken);
    expect(described.body.endpoint).toEqual({ type: 'http', url: 'http://127.0.0.1:9/hook?REDACTED', header_names: ['authorization'] });
    expect(described.body.secret).toBeUndefined();
    // a create again under the name is refused, and answers no secret either
    const again = await g.call('POST', v3('/subscriptions'), g.adminToken, { subscription_name: name, topic_name: topic, group_id: group, endpoint: { type: 'http', url: 'http://127.0.0.1:9/hook' } });
    expect(again.status).toBe(400);
    expect(again.text).not.toContain('whsec_');
  });

  it('creates a subscription to a Lambda function only where the deployment\'s allow-list names it (an ARN exactly, or a prefix), and refuses any other with POLICY_VIOLATION, storing nothing', async () => {
    const arn = (fn: string) => `arn:aws:lambda:us-east-1:123456789012:function:${fn}`;
    const saved = process.env[ENVIRONMENT.pushLambdaTargets];
    const create = (fn: string, suffix: string) => g.call('POST', v3('/subscriptions'), g.adminToken, {
      subscription_name: `${name}-${suffix}`, topic_name: topic, group_id: `${group}-${suffix}`, endpoint: { type: 'lambda', function_arn: arn(fn) },
    });
    try {
      delete process.env[ENVIRONMENT.pushLambdaTargets];
      const none = await create('billing-hook', 'none');
      expect(none.status, none.text).toBe(400);
      expect(none.body).toMatchObject({ error_code: 40002, message: expect.stringMatching(/^POLICY_VIOLATION: function .*billing-hook is not one the deployment lets push subscriptions invoke/) });
      process.env[ENVIRONMENT.pushLambdaTargets] = `${arn('billing-*')}, ${arn('audit')}`;
      // the deliverer's own cluster functions, a function the prefix does not cover, an alias the exact entry does not name
      for (const [fn, suffix] of [['tributary-controller', 'ctl'], ['billing', 'bare'], ['audit:live', 'alias'], ['auditor', 'longer']] as const) {
        const r = await create(fn, suffix);
        expect(r.status, `${fn}: ${r.text}`).toBe(400);
        expect(r.body.message, fn).toMatch(/^POLICY_VIOLATION/);
      }
      for (const [fn, suffix] of [['billing-hook', 'prefix'], ['audit', 'exact']] as const) {
        const r = await create(fn, suffix);
        expect(r.status, `${fn}: ${r.text}`).toBe(201);
        expect(r.body.endpoint).toEqual({ type: 'lambda', function_arn: arn(fn) });
        expect((await g.call('DELETE', v3(`/subscriptions/${name}-${suffix}`), g.adminToken)).status).toBe(204);
      }
      const listed = await g.call('GET', v3('/subscriptions'), g.adminToken);
      expect(listed.body.data.filter((s: { subscription_name: string }) => s.subscription_name.startsWith(`${name}-`))).toEqual([]);
    } finally {
      if (saved === undefined) delete process.env[ENVIRONMENT.pushLambdaTargets];
      else process.env[ENVIRONMENT.pushLambdaTargets] = saved;
    }
  });
});
