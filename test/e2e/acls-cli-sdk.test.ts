/**
 * ACLs from the SDK (kafkajs's createAcls, describeAcls, deleteAcls; numeric enums or Kafka's
 * names) and from `tributary acls`, run as a user runs it (a child process), against the shared stack.
 */
import { describe, expect, it } from 'vitest';
import { useCli } from '../support/cli.js';
import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes, Tributary } from '../../client/index.js';
import { baseUrl, uniqueTopic } from '../support/api.js';

const cli = useCli();

describe('SDK: admin ACLs in kafkajs shapes', () => {
  it('creates with kafkajs numbers or Kafka names, describes grouped by resource, deletes per filter', async () => {
    const t = uniqueTopic('acl-sdk');
    const principal = `User:${t}`;
    const admin = new Tributary({ url: baseUrl() }).admin();
    expect(await admin.createAcls({
      acl: [
        { resourceType: AclResourceTypes.TOPIC, resourceName: t, resourcePatternType: ResourcePatternTypes.LITERAL, principal, host: '*', operation: AclOperationTypes.READ, permissionType: AclPermissionTypes.ALLOW },
        { resourceType: 'TOPIC', resourceName: t, principal, operation: 'write', permissionType: 'DENY' },
        { resourceType: 'GROUP', resourceName: `${t}-`, resourcePatternType: 'PREFIXED', principal, operation: 'READ', permissionType: 'ALLOW' },
      ],
    })).toBe(true);
    const d = await admin.describeAcls({ principal });
    expect(d.errorCode).toBe(0);
    expect(d.resources).toEqual([
      { resourceType: AclResourceTypes.GROUP, resourceName: `${t}-`, resourcePatternType: ResourcePatternTypes.PREFIXED, acls: [{ principal, host: '*', operation: AclOperationTypes.READ, permissionType: AclPermissionTypes.ALLOW }] },
      {
        resourceType: AclResourceTypes.TOPIC, resourceName: t, resourcePatternType: ResourcePatternTypes.LITERAL, acls: [
          { principal, host: '*', operation: AclOperationTypes.READ, permissionType: AclPermissionTypes.ALLOW },
          { principal, host: '*', operation: AclOperationTypes.WRITE, permissionType: AclPermissionTypes.DENY },
        ],
      },
    ]);
    const del = await admin.deleteAcls({ filters: [{ resourceType: AclResourceTypes.TOPIC, resourceName: t, principal, permissionType: AclPermissionTypes.DENY }, { principal, resourceType: 'GROUP' }] });
    expect(del.filterResponses.map((f) => f.matchingAcls.map((a) => a.operation))).toEqual([[AclOperationTypes.WRITE], [AclOperationTypes.READ]]);
    expect((await admin.describeAcls({ principal })).resources.flatMap((r) => r.acls)).toHaveLength(1);
    await expect(admin.createAcls({ acl: [{ resourceType: 'TOPIC', resourceName: t, principal: 'nobody', operation: 'READ', permissionType: 'ALLOW' }] }))
      .rejects.toMatchObject({ type: 'INVALID_REQUEST', status: 400 });
    await admin.deleteAcls({ filters: [{ principal }] });
  });
});

describe('CLI: tributary acls', () => {
  it('creates, lists (table and --json), and deletes ACLs; refuses a delete of everything and a bad principal', async () => {
    const t = uniqueTopic('acl-cli');
    const principal = `User:${t}`;
    const created = await cli(['acls', 'create', '--principal', principal, '--operation', 'READ', '--operation', 'DESCRIBE', '--topic', `${t}-`, '--prefixed']);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toMatch(/Created 2 ACLs/);
    const denied = await cli(['--json', 'acls', 'create', '--principal', principal, '--operation', 'WRITE', '--group', t, '--deny', '--host', '10.0.0.9']);
    expect(denied.code, denied.stderr).toBe(0);
    expect(JSON.parse(denied.stdout)).toEqual([{ resource_type: 'GROUP', resource_name: t, pattern_type: 'LITERAL', principal, host: '10.0.0.9', operation: 'WRITE', permission: 'DENY' }]);

    const table = await cli(['acls', 'list', '--principal', principal]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/resource type/);
    expect(table.stdout.match(new RegExp(principal, 'g'))).toHaveLength(3);
    const matching = await cli(['--json', 'acls', 'list', '--topic', `${t}-orders`, '--pattern-type', 'MATCH', '--principal', principal]);
    expect(JSON.parse(matching.stdout).map((a: any) => a.operation).sort()).toEqual(['DESCRIBE', 'READ']);

    const everything = await cli(['acls', 'delete']);
    expect(everything.code).toBe(2);
    const bad = await cli(['acls', 'create', '--principal', 'alice', '--operation', 'READ', '--topic', t]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^tributary: INVALID_REQUEST: .*principal/);

    const deleted = await cli(['--json', 'acls', 'delete', '--topic', `${t}-`, '--prefixed', '--principal', principal]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(JSON.parse(deleted.stdout)).toHaveLength(2);
    const rest = await cli(['--json', 'acls', 'delete', '--group', t, '--principal', principal, '--deny']);
    expect(JSON.parse(rest.stdout)).toHaveLength(1);
    expect(JSON.parse((await cli(['--json', 'acls', 'list', '--principal', principal])).stdout)).toEqual([]);
  });
});
