/**
 * ACL storage and the authorizer against the real coordination table (the shared stack's
 * DynamoDB Local): idempotent create, delete races, the metadata version bump, and the bound
 * within which a revoked ACL takes effect on an instance that did not make the change.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { config } from '../../../lib/config.js';
import { createAcls, deleteAcls, describeAcls } from '../../../lib/security/acl-admin.js';
import { bindingKey, validateFilter, type AclBinding } from '../../../lib/security/acls.js';
import { authorize, requireAccess } from '../../../lib/security/authorizer.js';
import * as store from '../../../lib/storage/coordination/acls.js';
import { readMetadataVersion } from '../../../lib/storage/coordination/cluster.js';
import { isKafkaError } from '../../../lib/errors.js';
import { KAFKA_ERRORS } from '../../../lib/protocol/errors.js';
import { uniqueTopic } from '../../support/api.js';

const savedEnv = { ...process.env };
afterEach(() => {
  for (const k of ['TRIBUTARY_AUTH', 'TRIBUTARY_SUPER_USERS', 'TRIBUTARY_ALLOW_EVERYONE_IF_NO_ACL_FOUND']) {
    if (savedEnv[k] === undefined) delete process.env[k];
    else process.env[k] = savedEnv[k];
  }
});

const binding = (topic: string, over: Partial<AclBinding> = {}): AclBinding => ({
  resourceType: 'TOPIC', resourceName: topic, patternType: 'LITERAL', principal: `User:${topic}`, host: '*', operation: 'WRITE', permission: 'ALLOW', ...over,
});
const mine = async (topic: string) => (await store.listAcls()).filter((r) => r.resourceName === topic || r.principal === `User:${topic}`);

describe('Storage: ACLs in the coordination table', () => {
  it('keys an item by the same canonical string the model uses', () => {
    const b = binding('k|"x');
    expect(store.aclSortKey(b)).toBe(bindingKey(b));
  });

  it('creates idempotently: the same binding twice (and twice in one call) is one item, and each write bumps the metadata version', async () => {
    const t = uniqueTopic('acl-idem');
    const v0 = (await readMetadataVersion()) ?? 0;
    await store.createAcls([binding(t), binding(t)]);
    const v1 = (await readMetadataVersion()) ?? 0;
    await store.createAcls([binding(t)]);
    expect(await mine(t)).toEqual([binding(t)]);
    expect(v1).toBeGreaterThan(v0);
    expect((await readMetadataVersion()) ?? 0).toBeGreaterThan(v1);
  });

  it('where a binding was deleted by someone else first (lost the race), a delete reports only the ones it deleted, and deletes the rest', async () => {
    const t = uniqueTopic('acl-race');
    const a = binding(t);
    const b = binding(t, { operation: 'READ' });
    const c = binding(t, { operation: 'DESCRIBE', permission: 'DENY' });
    await store.createAcls([a, b, c]);
    expect(await store.deleteAcls([b])).toEqual([b]);
    // b is gone: its condition fails, the transaction is cancelled and retried without it
    expect(await store.deleteAcls([a, b, c])).toEqual([a, c]);
    expect(await mine(t)).toEqual([]);
    expect(await store.deleteAcls([a])).toEqual([]);
  });

  it('where two deletes race for the same bindings, together they report each binding exactly once', async () => {
    const t = uniqueTopic('acl-race2');
    const all = Array.from({ length: 12 }, (_, i) => binding(`${t}-${i}`, { principal: `User:${t}` }));
    await store.createAcls(all);
    const [x, y] = await Promise.all([store.deleteAcls(all), store.deleteAcls([...all].reverse())]);
    const keys = [...x, ...y].map(store.aclSortKey).sort();
    expect(keys).toEqual(all.map(store.aclSortKey).sort());
    expect(await mine(t)).toEqual([]);
  });

  it('stores more than one transaction holds (150 bindings) and deletes them by one filter', async () => {
    const t = uniqueTopic('acl-many');
    const inputs = Array.from({ length: 150 }, (_, i) => binding(t, { principal: `User:${t}-${i}` }));
    await createAcls(inputs);
    const found = await describeAcls(validateFilter({ resourceType: 'TOPIC', resourceName: t, patternType: 'LITERAL' }));
    expect(found).toHaveLength(150);
    const [deleted] = await deleteAcls([validateFilter({ resourceType: 'TOPIC', resourceName: t, patternType: 'MATCH' })]);
    expect(deleted).toHaveLength(150);
    expect(await mine(t)).toEqual([]);
  });

  it('where one binding of a batch is invalid, stores none of them', async () => {
    const t = uniqueTopic('acl-bad');
    await expect(createAcls([binding(t), { ...binding(t), host: 'not-an-ip' }])).rejects.toSatisfy((e) => isKafkaError(e, 'INVALID_REQUEST'));
    expect(await mine(t)).toEqual([]);
  });
});

describe('Function: authorize', () => {
  it('allows everything and reads no ACL when authentication is off', async () => {
    delete process.env.TRIBUTARY_AUTH;
    expect(await authorize({ principal: 'User:nobody', host: '10.0.0.1', operation: 'DELETE', resourceType: 'CLUSTER', resourceName: 'kafka-cluster' })).toBe(true);
    process.env.TRIBUTARY_AUTH = 'none';
    expect(await authorize({ principal: 'User:nobody', host: '10.0.0.1', operation: 'DELETE', resourceType: 'CLUSTER', resourceName: 'kafka-cluster' })).toBe(true);
  });

  it('applies super.users, allow.everyone.if.no.acl.found, and answers a denial with the resource type\'s 403 error', async () => {
    process.env.TRIBUTARY_AUTH = 'local';
    const t = uniqueTopic('acl-authz');
    const r = { principal: `User:${t}`, host: '10.0.0.1', operation: 'WRITE', resourceType: 'TOPIC', resourceName: t } as const;
    expect(await authorize(r)).toBe(false); // no ACL, default false
    process.env.TRIBUTARY_ALLOW_EVERYONE_IF_NO_ACL_FOUND = 'true';
    expect(await authorize(r)).toBe(true);
    process.env.TRIBUTARY_SUPER_USERS = `User:admin; User:${t}-root`;
    expect(await authorize({ ...r, principal: `User:${t}-root`, resourceType: 'CLUSTER', resourceName: 'kafka-cluster', operation: 'ALTER' })).toBe(true);
    await createAcls([binding(t, { principal: 'User:someone-else' })]);
    expect(await authorize(r)).toBe(false); // an ACL exists on the resource now: no longer "no ACL found"
    const err = await requireAccess(r).catch((e: unknown) => e);
    expect(isKafkaError(err, 'TOPIC_AUTHORIZATION_FAILED')).toBe(true);
    expect(KAFKA_ERRORS.TOPIC_AUTHORIZATION_FAILED).toMatchObject({ code: 29, status: 403, restCode: 40301 });
    delete process.env.TRIBUTARY_ALLOW_EVERYONE_IF_NO_ACL_FOUND;
    const gerr = await requireAccess({ ...r, resourceType: 'GROUP', operation: 'READ' }).catch((e: unknown) => e);
    expect(isKafkaError(gerr, 'GROUP_AUTHORIZATION_FAILED')).toBe(true);
    const cerr = await requireAccess({ ...r, resourceType: 'CLUSTER', resourceName: 'kafka-cluster', operation: 'ALTER' }).catch((e: unknown) => e);
    expect(isKafkaError(cerr, 'CLUSTER_AUTHORIZATION_FAILED')).toBe(true);
    await deleteAcls([validateFilter({ resourceType: 'TOPIC', resourceName: t, patternType: 'LITERAL' })]);
  });

  it(`takes a revoke made by another instance into account within TRIBUTARY_METADATA_MAX_AGE_MS (bound stated in lib/security/authorizer.ts)`, async () => {
    process.env.TRIBUTARY_AUTH = 'local';
    const t = uniqueTopic('acl-revoke');
    const r = { principal: `User:${t}`, host: '10.0.0.1', operation: 'WRITE', resourceType: 'TOPIC', resourceName: t } as const;
    await createAcls([binding(t)]);
    expect(await authorize(r)).toBe(true);
    // Another instance revokes: straight to storage, so this instance's cache is not told.
    const revokedAt = Date.now();
    expect(await store.deleteAcls([binding(t)])).toHaveLength(1);
    const bound = config().metadataMaxAgeMs;
    let deniedAfter = -1;
    while (Date.now() - revokedAt < bound + 2000) {
      if (!(await authorize(r))) {
        deniedAfter = Date.now() - revokedAt;
        break;
      }
      await new Promise((res) => setTimeout(res, 20));
    }
    console.log(`revoked ACL took effect after ${deniedAfter} ms (bound ${bound} ms)`);
    expect(deniedAfter).toBeGreaterThanOrEqual(0);
    // a request started more than the bound after the revoke is denied (plus one store read's time)
    expect(deniedAfter).toBeLessThanOrEqual(bound + 250);
    // and once denied, it stays denied
    expect(await authorize(r)).toBe(false);
  });
});
