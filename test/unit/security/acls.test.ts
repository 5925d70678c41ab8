/**
 * The ACL model and matcher against the cases Kafka's AclAuthorizerTest documents (deny
 * precedence, wildcards, PREFIXED, implied operations, no ACL found, filters), re-stated here in
 * our own words, plus fast-check properties of the decision's monotonicity.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isKafkaError } from '../../../lib/errors.js';
import {
  ACL_OPERATIONS, decide, matchesFilter, validateBinding, validateFilter,
  type AclBinding, type AclOperation, type AclRequest, type ResourceType,
} from '../../../lib/security/acls.js';

const ALICE = 'User:alice';
const H1 = '192.168.1.1';
const H2 = '192.168.1.2';
const TOPIC = 'foo-7c1e';

const acl = (over: Partial<AclBinding>): AclBinding => ({
  resourceType: 'TOPIC', resourceName: TOPIC, patternType: 'LITERAL', principal: ALICE, host: '*', operation: 'READ', permission: 'ALLOW', ...over,
});
const req = (over: Partial<AclRequest>): AclRequest => ({ principal: ALICE, host: H1, operation: 'READ', resourceType: 'TOPIC', resourceName: TOPIC, ...over });
const allowed = (acls: AclBinding[], r: Partial<AclRequest>): boolean => decide(acls, req(r)) === 'ALLOWED';
const OPS = ACL_OPERATIONS.filter((o): o is Exclude<AclOperation, 'ALL'> => o !== 'ALL');

describe('Function: decide (Kafka AclAuthorizer semantics)', () => {
  it('allows and denies per principal and host, a DENY from one host beating an ALLOW from another (testTopicAcl)', () => {
    const acls = [
      acl({ host: H1 }), acl({ host: H2 }), acl({ host: H1, permission: 'DENY' }),
      acl({ host: H1, operation: 'WRITE' }), acl({ operation: 'DESCRIBE' }),
      acl({ principal: 'User:rob' }), acl({ principal: 'User:batman', operation: 'WRITE' }),
    ];
    expect(allowed(acls, { host: H2 })).toBe(true);
    expect(allowed(acls, { host: H1 })).toBe(false);
    expect(allowed(acls, { host: H1, operation: 'WRITE' })).toBe(true);
    expect(allowed(acls, { host: H2, operation: 'WRITE' })).toBe(false);
    expect(allowed(acls, { host: H1, operation: 'DESCRIBE' })).toBe(true);
    expect(allowed(acls, { host: H1, operation: 'ALTER' })).toBe(false);
    // READ and WRITE imply DESCRIBE
    expect(allowed(acls, { principal: 'User:rob', operation: 'DESCRIBE' })).toBe(true);
    expect(allowed(acls, { principal: 'User:batman', operation: 'DESCRIBE' })).toBe(true);
    expect(allowed(acls, { principal: 'User:batman', operation: 'READ' })).toBe(false);
  });

  it('compares principals by their name, not by identity (testAllowAccessWithCustomPrincipal)', () => {
    const acls = [acl({ host: H1, permission: 'DENY' }), acl({ host: H2 })];
    expect(allowed(acls, { principal: `User:${'alice'}`, host: H2 })).toBe(true);
    expect(allowed(acls, { principal: 'User:alice', host: H1 })).toBe(false);
  });

  it('lets a DENY of ALL for one principal win over an ALLOW of ALL for everyone (testDenyTakesPrecedence)', () => {
    const acls = [acl({ principal: 'User:*', operation: 'ALL' }), acl({ host: '192.168.2.1', operation: 'ALL', permission: 'DENY' })];
    expect(allowed(acls, { host: '192.168.2.1' })).toBe(false);
    expect(allowed(acls, { host: '192.168.2.2' })).toBe(true);
  });

  it('allows anyone from anywhere with a wildcard ALLOW ALL (testAllowAllAccess)', () => {
    expect(allowed([acl({ principal: 'User:*', operation: 'ALL' })], { principal: 'User:random', host: '192.0.4.4' })).toBe(true);
  });

  it('applies LITERAL "*" to every resource of its type, and a DENY there beats an ALLOW on the name (testWildCardAcls)', () => {
    expect(decide([], req({}))).toBe('NO_MATCH');
    const wildcardRead = acl({ resourceName: '*', host: H1 });
    expect(allowed([wildcardRead], {})).toBe(true);
    const acls = [wildcardRead, acl({ host: H1, operation: 'WRITE' }), acl({ resourceName: '*', host: H1, operation: 'WRITE', permission: 'DENY' })];
    expect(allowed(acls, { operation: 'WRITE' })).toBe(false);
    // a wildcard on topics says nothing about groups
    expect(decide([wildcardRead], req({ resourceType: 'GROUP' }))).toBe('NO_MATCH');
  });

  it('answers NO_MATCH only when no ACL at all applies to the resource, whoever it names (testNoAclFound)', () => {
    expect(decide([acl({ resourceName: 'other' })], req({}))).toBe('NO_MATCH');
    // an ACL for someone else on the resource: DENIED, not NO_MATCH (allow.everyone.if.no.acl.found does not apply)
    expect(decide([acl({ principal: 'User:bob' })], req({}))).toBe('DENIED');
  });

  it('applies a PREFIXED ACL to names it prefixes, among many that do not (testAuthorizeWithPrefixedResource, testSingleCharacterResourceAcls)', () => {
    const denyRead = (resourceName: string, patternType: 'LITERAL' | 'PREFIXED') => acl({ principal: 'User:*', resourceName, patternType, permission: 'DENY' });
    const acls = [
      denyRead('a_other', 'LITERAL'), denyRead('a_other', 'PREFIXED'), denyRead('foo-1234', 'PREFIXED'), denyRead('fooo-', 'PREFIXED'),
      denyRead('fo-', 'PREFIXED'), denyRead('fon-', 'PREFIXED'), denyRead('z_other', 'PREFIXED'), denyRead('z_other', 'LITERAL'),
      acl({ principal: 'User:*', resourceName: 'foo', patternType: 'PREFIXED' }),
    ];
    expect(allowed(acls, { resourceName: 'foo-7c1e' })).toBe(true);
    expect(allowed(acls, { resourceName: 'foo-1234-x' })).toBe(false);
    const single = [acl({ principal: 'User:*', resourceName: 'f' }), acl({ principal: 'User:*', resourceName: '_', patternType: 'PREFIXED' })];
    expect(allowed(single, { resourceName: 'f' })).toBe(true);
    expect(allowed(single, { resourceName: 'foo' })).toBe(false);
    expect(allowed(single, { resourceName: '_foo' })).toBe(true);
    expect(allowed(single, { resourceName: '_' })).toBe(true);
    expect(allowed(single, { resourceName: 'foo_' })).toBe(false);
  });

  it('authorizes an empty resource name through a wildcard ACL only (testAuthorizeWithEmptyResourceName)', () => {
    expect(decide([], req({ resourceType: 'GROUP', resourceName: '' }))).toBe('NO_MATCH');
    expect(allowed([acl({ resourceType: 'GROUP', resourceName: '*', principal: 'User:*' })], { resourceType: 'GROUP', resourceName: '' })).toBe(true);
  });

  it('implies DESCRIBE from READ, WRITE, DELETE, ALTER and DESCRIBE_CONFIGS from ALTER_CONFIGS; ALL grants and denies all; a DENY implies nothing (testAclInheritance)', () => {
    const implied: Record<string, string[]> = {
      ALL: OPS, READ: ['DESCRIBE'], WRITE: ['DESCRIBE'], DELETE: ['DESCRIBE'], ALTER: ['DESCRIBE'], ALTER_CONFIGS: ['DESCRIBE_CONFIGS'],
    };
    const cluster = { resourceType: 'CLUSTER' as ResourceType, resourceName: 'kafka-cluster' };
    for (const parent of ACL_OPERATIONS) {
      const grants = [parent, ...(implied[parent] ?? [])];
      for (const op of OPS) {
        expect(allowed([acl({ ...cluster, operation: parent })], { ...cluster, operation: op }), `ALLOW ${parent} → ${op}`).toBe(grants.includes(op));
      }
    }
    for (const parent of ['ALL', 'DESCRIBE', 'DESCRIBE_CONFIGS'] as const) {
      const denies = parent === 'ALL' ? OPS : [parent];
      const acls = [acl({ ...cluster, operation: parent, permission: 'DENY' }), acl({ ...cluster, operation: 'ALL' })];
      for (const op of OPS) expect(allowed(acls, { ...cluster, operation: op }), `DENY ${parent} → ${op}`).toBe(!denies.includes(op));
    }
    // DENY READ does not deny DESCRIBE, which WRITE still implies
    expect(allowed([acl({ permission: 'DENY' }), acl({ operation: 'WRITE' })], { operation: 'DESCRIBE' })).toBe(true);
  });
});

const arbBinding: fc.Arbitrary<AclBinding> = fc.record({
  resourceType: fc.constantFrom('TOPIC', 'GROUP'),
  resourceName: fc.constantFrom('*', 'a', 'ab', 'abc', 'b'),
  patternType: fc.constantFrom('LITERAL', 'PREFIXED'),
  principal: fc.constantFrom('User:*', 'User:alice', 'User:bob'),
  host: fc.constantFrom('*', H1, H2),
  operation: fc.constantFrom(...ACL_OPERATIONS),
  permission: fc.constantFrom('ALLOW', 'DENY'),
}) as fc.Arbitrary<AclBinding>;
const arbRequest: fc.Arbitrary<AclRequest> = fc.record({
  principal: fc.constantFrom('User:alice', 'User:bob'),
  host: fc.constantFrom(H1, H2),
  operation: fc.constantFrom(...OPS),
  resourceType: fc.constantFrom('TOPIC', 'GROUP'),
  resourceName: fc.constantFrom('a', 'ab', 'abc', 'b', 'c'),
}) as fc.Arbitrary<AclRequest>;

describe('Properties: decide', () => {
  it('adding a DENY never turns DENIED into ALLOWED, and never turns anything into ALLOWED', () => {
    fc.assert(fc.property(fc.array(arbBinding, { maxLength: 8 }), arbBinding, arbRequest, (acls, extra, r) => {
      const deny = { ...extra, permission: 'DENY' as const };
      const before = decide(acls, r);
      const after = decide([...acls, deny], r);
      if (before === 'DENIED') expect(after).toBe('DENIED');
      if (after === 'ALLOWED') expect(before).toBe('ALLOWED');
    }), { numRuns: 2000 });
  });

  it('adding an ALLOW never turns ALLOWED into DENIED', () => {
    fc.assert(fc.property(fc.array(arbBinding, { maxLength: 8 }), arbBinding, arbRequest, (acls, extra, r) => {
      const allow = { ...extra, permission: 'ALLOW' as const };
      if (decide(acls, r) === 'ALLOWED') expect(decide([...acls, allow], r)).toBe('ALLOWED');
    }), { numRuns: 2000 });
  });

  it('a binding that a MATCH filter for the resource finds is exactly one that can bear on the decision', () => {
    fc.assert(fc.property(arbBinding, arbRequest, (b, r) => {
      const found = matchesFilter(b, validateFilter({ resourceType: r.resourceType, resourceName: r.resourceName, patternType: 'MATCH' }));
      expect(found).toBe(decide([b], r) !== 'NO_MATCH');
    }), { numRuns: 2000 });
  });
});

describe('Function: matchesFilter (Kafka AclBindingFilter)', () => {
  const r1 = acl({ resourceName: 'foo-1', principal: 'User:p' });
  const r1w = acl({ resourceName: 'foo-1', principal: 'User:p', host: '192.168.0.1', operation: 'WRITE' });
  const r2 = acl({ resourceName: 'bar-2', principal: 'User:p', operation: 'DESCRIBE' });
  const pre = acl({ resourceName: 'bar-', patternType: 'PREFIXED', principal: 'User:*' });
  const all = [r1, r1w, r2, pre];
  const find = (f: Record<string, string>) => all.filter((b) => matchesFilter(b, validateFilter(f)));

  it('ANY matches everything; a resource filter finds that pattern only; MATCH finds every pattern that applies (testAclsFilter)', () => {
    expect(find({})).toEqual(all);
    expect(find({ resourceType: 'TOPIC', resourceName: 'foo-1', patternType: 'LITERAL' })).toEqual([r1, r1w]);
    expect(find({ resourceType: 'TOPIC', resourceName: 'bar-', patternType: 'PREFIXED' })).toEqual([pre]);
    expect(find({ resourceName: 'bar-2', patternType: 'MATCH' })).toEqual([r2, pre]);
    // ANY with a name: that exact name, whatever the pattern type
    expect(find({ resourceName: 'bar-', patternType: 'ANY' })).toEqual([pre]);
    expect(find({ resourceType: 'TOPIC', resourceName: 'baz', patternType: 'ANY' })).toEqual([]);
    expect(find({ resourceType: 'GROUP' })).toEqual([]);
  });

  it('matches principal and host exactly: a wildcard filter finds wildcard ACLs only (testGetAclsPrincipal)', () => {
    expect(find({ principal: 'User:*' })).toEqual([pre]);
    expect(find({ principal: 'User:p' })).toEqual([r1, r1w, r2]);
    expect(find({ host: '192.168.0.1' })).toEqual([r1w]);
    expect(find({ operation: 'write', permission: 'allow' })).toEqual([r1w]);
  });

  it('finds a LITERAL "*" binding with MATCH for any name of its type', () => {
    const star = acl({ resourceName: '*' });
    expect(matchesFilter(star, validateFilter({ resourceType: 'TOPIC', resourceName: 'anything', patternType: 'MATCH' }))).toBe(true);
    expect(matchesFilter(star, validateFilter({ resourceType: 'TOPIC', resourceName: 'anything', patternType: 'LITERAL' }))).toBe(false);
  });
});

describe('Function: validateBinding', () => {
  const good = { resourceType: 'TOPIC', resourceName: 't', patternType: 'LITERAL', principal: 'User:alice', host: '*', operation: 'READ', permission: 'ALLOW' };
  const rejects = (over: Record<string, unknown>, message: RegExp) => {
    let err: unknown;
    try {
      validateBinding({ ...good, ...over });
    } catch (e) {
      err = e;
    }
    expect(isKafkaError(err, 'INVALID_REQUEST'), `with ${Object.keys(over).join(', ')} changed`).toBe(true);
    expect((err as Error).message).toMatch(message);
  };

  it('accepts Kafka bindings, with enum names in any case', () => {
    expect(validateBinding({ ...good, operation: 'all', host: '10.0.0.1' })).toMatchObject({ operation: 'ALL', host: '10.0.0.1' });
    expect(validateBinding({ ...good, resourceType: 'CLUSTER', resourceName: 'kafka-cluster', host: '::1' }).resourceType).toBe('CLUSTER');
    expect(validateBinding({ ...good, principal: 'User:arn:aws:iam::123456789012:role/app', patternType: 'PREFIXED' }).principal).toMatch(/role\/app$/);
  });

  it('refuses filter-only and unknown values, a misnamed CLUSTER, bad principals and hosts, an empty name', () => {
    rejects({ resourceType: 'ANY' }, /resource_type/);
    rejects({ resourceType: 'DELEGATION_TOKEN' }, /resource_type/);
    rejects({ patternType: 'MATCH' }, /pattern_type/);
    rejects({ patternType: 'ANY' }, /pattern_type/);
    rejects({ operation: 'ANY' }, /operation/);
    rejects({ operation: 'UNKNOWN' }, /operation/);
    rejects({ permission: 'ANY' }, /permission/);
    rejects({ resourceType: 'CLUSTER', resourceName: 'my-cluster' }, /kafka-cluster/);
    rejects({ principal: 'alice' }, /principal/);
    rejects({ principal: 'User:' }, /principal/);
    rejects({ principal: 'Group:ops' }, /principal/);
    rejects({ host: 'example.com' }, /host/);
    rejects({ host: '' }, /host/);
    rejects({ resourceName: '' }, /resource_name/);
    rejects({ resourceName: 7 }, /resource_name/);
    rejects({ resourceName: 'x'.repeat(1100) }, /too long/);
    // Found by the fuzzer: a value nested too deep to print was a 500 (its message ran out of stack).
    let deep: unknown = 'READ';
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    rejects({ operation: deep }, /operation must be one of .*, not an object\./);
    rejects({ principal: [deep] }, /not an array/);
    rejects({ host: deep }, /not an object/);
  });

  it('refuses unknown filter values', () => {
    expect(() => validateFilter({ resourceType: 'NOPE' })).toThrow(/resource_type/);
    expect(() => validateFilter({ patternType: 'REGEX' })).toThrow(/pattern_type/);
    expect(validateFilter({ patternType: 'match' }).patternType).toBe('MATCH');
  });
});
