/**
 * `tributary acls list|create|delete`: Kafka ACLs as `kafka-acls` manages them — a principal,
 * operations, a resource (`--topic`, `--group`, `--cluster`, `--transactional-id`; `--prefixed`
 * for a PREFIXED pattern), ALLOW unless `--deny` — shown as tables (or `--json`).
 */
import type { Command } from 'commander';
import {
  AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes,
  type AclDescription, type AclFilter, type Tributary,
} from '../client/index.js';
import { printJson, printTable, UsageError } from './output.js';

type Ctx = () => { t: Tributary; json: boolean };
const collect = (v: string, prev: string[] = []) => [...prev, v];

interface AclOptions {
  topic?: string; group?: string; cluster?: boolean; transactionalId?: string;
  resourceType?: string; resourceName?: string; patternType?: string; prefixed?: boolean;
  principal?: string; host?: string; operation?: string[]; permission?: string; deny?: boolean; allow?: boolean;
}

const nameOf = (table: Readonly<Record<string, number>>, n: number): string => Object.keys(table).find((k) => table[k] === n) ?? 'UNKNOWN';

/** An ACL with Kafka's names, as REST Proxy shows it. */
function named(a: AclDescription) {
  return {
    resource_type: nameOf(AclResourceTypes, a.resourceType), resource_name: a.resourceName, pattern_type: nameOf(ResourcePatternTypes, a.resourcePatternType),
    principal: a.principal, host: a.host, operation: nameOf(AclOperationTypes, a.operation), permission: nameOf(AclPermissionTypes, a.permissionType),
  };
}

function print(json: boolean, acls: AclDescription[], verb?: string): void {
  const rows = acls.map(named);
  if (json) return printJson(rows);
  if (verb) process.stderr.write(`${verb} ${rows.length} ACL${rows.length === 1 ? '' : 's'}\n`);
  if (rows.length > 0) printTable(['resource type', 'resource name', 'pattern', 'principal', 'host', 'operation', 'permission'], rows.map((r) => Object.values(r)));
}

/** The resource the options name: one of --topic, --group, --cluster, --transactional-id, or --resource-type/--resource-name. */
function resourceOf(o: AclOptions): { type?: string; name?: string } {
  const given = [
    o.topic !== undefined && { type: 'TOPIC', name: o.topic }, o.group !== undefined && { type: 'GROUP', name: o.group },
    o.cluster && { type: 'CLUSTER', name: 'kafka-cluster' }, o.transactionalId !== undefined && { type: 'TRANSACTIONAL_ID', name: o.transactionalId },
  ].filter((x): x is { type: string; name: string } => Boolean(x));
  if (given.length > 1) throw new UsageError('Name one resource: --topic, --group, --cluster or --transactional-id.');
  if (given[0] && (o.resourceType !== undefined || o.resourceName !== undefined)) throw new UsageError('Use --topic/--group/--cluster/--transactional-id or --resource-type/--resource-name, not both.');
  return given[0] ?? { ...(o.resourceType !== undefined ? { type: o.resourceType } : {}), ...(o.resourceName !== undefined ? { name: o.resourceName } : {}) };
}

function permissionOf(o: AclOptions): string | undefined {
  if (o.deny && o.allow) throw new UsageError('--allow or --deny, not both.');
  return o.deny ? 'DENY' : o.allow ? 'ALLOW' : o.permission;
}

/** A filter from the options (what is not given matches all). */
function filterOf(o: AclOptions, literalWhenNamed: boolean): AclFilter[] {
  const r = resourceOf(o);
  const pattern = o.prefixed ? 'PREFIXED' : o.patternType ?? (literalWhenNamed && r.name !== undefined ? 'LITERAL' : undefined);
  const permission = permissionOf(o);
  const base: AclFilter = {
    ...(r.type !== undefined ? { resourceType: r.type } : {}), ...(r.name !== undefined ? { resourceName: r.name } : {}),
    ...(pattern !== undefined ? { resourcePatternType: pattern } : {}), ...(o.principal !== undefined ? { principal: o.principal } : {}),
    ...(o.host !== undefined ? { host: o.host } : {}), ...(permission !== undefined ? { permissionType: permission } : {}),
  };
  return o.operation && o.operation.length > 0 ? o.operation.map((operation) => ({ ...base, operation })) : [base];
}

const resourceOptions = (c: Command): Command => c
  .option('--topic <name>', 'a topic (or a prefix with --prefixed; * for every topic)')
  .option('--group <name>', 'a consumer group (or a prefix with --prefixed; * for every group)')
  .option('--cluster', 'the cluster (kafka-cluster)')
  .option('--transactional-id <id>', 'a transactional id')
  .option('--prefixed', 'the name is a prefix (pattern type PREFIXED)')
  .option('--principal <principal>', 'User:<name>, or User:* for everyone')
  .option('--host <ip>', 'the client address; * for any')
  .option('--operation <op>', 'READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS, CLUSTER_ACTION, IDEMPOTENT_WRITE or ALL; repeat for more', collect)
  .option('--deny', 'DENY (the default is ALLOW on create, either on list and delete)')
  .option('--allow', 'ALLOW only (list and delete)');

/** What list and delete match on besides the resource options: a filter's ANY values. */
const filterOptions = (c: Command, patternTypes: string): Command => c
  .option('--resource-type <type>', 'TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID or ANY')
  .option('--resource-name <name>', 'a resource name')
  .option('--pattern-type <type>', patternTypes)
  .option('--permission <perm>', 'ALLOW, DENY or ANY');

export function aclCommands(p: Command, ctx: Ctx): void {
  const acls = p.command('acls').description('list, create and delete Kafka ACLs');

  filterOptions(resourceOptions(acls.command('list').description('the ACLs matching the options (all without options)')),
    'LITERAL, PREFIXED, MATCH (every ACL that applies to the name) or ANY')
    .action(async (o: AclOptions) => {
      const { t, json } = ctx();
      const admin = t.admin();
      const found = new Map<string, AclDescription>();
      for (const f of filterOf(o, false)) {
        for (const r of (await admin.describeAcls(f)).resources) {
          for (const a of r.acls) {
            const d: AclDescription = { resourceType: r.resourceType, resourceName: r.resourceName, resourcePatternType: r.resourcePatternType, ...a };
            found.set(JSON.stringify(d), d);
          }
        }
      }
      print(json, [...found.values()]);
    });

  resourceOptions(acls.command('create').description('add ACLs: the principal may (or, with --deny, may not) do each --operation on the resource'))
    .action(async (o: AclOptions) => {
      const { t, json } = ctx();
      const r = resourceOf(o);
      if (r.type === undefined || r.name === undefined) throw new UsageError('Name the resource: --topic, --group, --cluster or --transactional-id.');
      if (!o.principal) throw new UsageError('Say whose ACL it is: --principal User:<name>.');
      if (!o.operation || o.operation.length === 0) throw new UsageError('Say what it allows: --operation, once per operation.');
      if (o.allow && o.deny) throw new UsageError('--allow or --deny, not both.');
      const entries = o.operation.map((operation) => ({
        resourceType: r.type as string, resourceName: r.name as string, resourcePatternType: o.prefixed ? 'PREFIXED' : 'LITERAL',
        principal: o.principal as string, host: o.host ?? '*', operation, permissionType: o.deny ? 'DENY' : 'ALLOW',
      }));
      await t.admin().createAcls({ acl: entries });
      const shown = entries.map((e) => ({
        resourceType: AclResourceTypes[e.resourceType.toUpperCase() as keyof typeof AclResourceTypes], resourceName: e.resourceName,
        resourcePatternType: ResourcePatternTypes[e.resourcePatternType as 'LITERAL' | 'PREFIXED'], principal: e.principal, host: e.host,
        operation: AclOperationTypes[e.operation.toUpperCase() as keyof typeof AclOperationTypes] ?? 0, permissionType: AclPermissionTypes[e.permissionType as 'ALLOW' | 'DENY'],
      }));
      print(json, shown, 'Created');
    });

  filterOptions(resourceOptions(acls.command('delete').description('remove the ACLs matching the options (a named resource means its LITERAL pattern unless --prefixed or --pattern-type)')),
    'LITERAL, PREFIXED, MATCH or ANY')
    .action(async (o: AclOptions) => {
      const { t, json } = ctx();
      const filters = filterOf(o, true);
      if (filters.every((f) => f.resourceType === undefined && f.resourceName === undefined && f.principal === undefined)) {
        throw new UsageError('Refusing to delete every ACL: name a resource, a --resource-type or a --principal.');
      }
      const out = await t.admin().deleteAcls({ filters });
      print(json, out.filterResponses.flatMap((f) => f.matchingAcls), 'Deleted');
    });
}
