/**
 * ACLs in kafkajs's shapes: its numeric enums (Kafka's wire numbers) and conversions to and from
 * the REST Proxy v3 names. Every SDK call accepts either a kafkajs number or Kafka's name as a
 * string (`'TOPIC'`, `'PREFIXED'`, `'READ'`, `'ALLOW'`); answers carry kafkajs's numbers, as kafkajs's do.
 */
import { TributaryError } from './errors.js';

export const AclResourceTypes = { UNKNOWN: 0, ANY: 1, TOPIC: 2, GROUP: 3, CLUSTER: 4, TRANSACTIONAL_ID: 5, DELEGATION_TOKEN: 6 } as const;
export const ResourcePatternTypes = { UNKNOWN: 0, ANY: 1, MATCH: 2, LITERAL: 3, PREFIXED: 4 } as const;
export const AclOperationTypes = {
  UNKNOWN: 0, ANY: 1, ALL: 2, READ: 3, WRITE: 4, CREATE: 5, DELETE: 6, ALTER: 7, DESCRIBE: 8, CLUSTER_ACTION: 9,
  DESCRIBE_CONFIGS: 10, ALTER_CONFIGS: 11, IDEMPOTENT_WRITE: 12,
} as const;
export const AclPermissionTypes = { UNKNOWN: 0, ANY: 1, DENY: 2, ALLOW: 3 } as const;

/** A kafkajs enum number or Kafka's name. */
export type AclEnum = number | string;

/** kafkajs's AclEntry (createAcls), with `resourcePatternType` defaulting to LITERAL and `host` to `*`. */
export interface AclEntry {
  readonly resourceType: AclEnum;
  readonly resourceName: string;
  readonly resourcePatternType?: AclEnum;
  readonly principal: string;
  readonly host?: string;
  readonly operation: AclEnum;
  readonly permissionType: AclEnum;
}

/** kafkajs's ACL filter (describeAcls, deleteAcls): absent enums are ANY, absent strings match all. */
export interface AclFilter {
  readonly resourceType?: AclEnum;
  readonly resourceName?: string | null;
  readonly resourcePatternType?: AclEnum;
  readonly principal?: string | null;
  readonly host?: string | null;
  readonly operation?: AclEnum;
  readonly permissionType?: AclEnum;
}

/** An ACL as kafkajs answers it (numbers). */
export interface AclDescription {
  readonly resourceType: number;
  readonly resourceName: string;
  readonly resourcePatternType: number;
  readonly principal: string;
  readonly host: string;
  readonly operation: number;
  readonly permissionType: number;
}

type Table = Readonly<Record<string, number>>;

/** Kafka's name for a kafkajs number or a name (any case); a TributaryError for an unknown value. */
export function aclName(table: Table, what: string, v: AclEnum): string {
  if (typeof v === 'number') {
    const name = Object.keys(table).find((k) => table[k] === v);
    if (name === undefined) throw new TributaryError(`Unknown ${what} ${v}.`);
    return name;
  }
  // Unknown names are passed on: the server answers INVALID_REQUEST naming the allowed ones.
  return v.toUpperCase();
}

const num = (table: Table, v: unknown): number => table[String(v)] ?? 0;

/** REST Proxy v3's CreateAclRequestData for one entry. */
export function entryJson(a: AclEntry): Record<string, string> {
  return {
    resource_type: aclName(AclResourceTypes, 'resource type', a.resourceType), resource_name: a.resourceName,
    pattern_type: aclName(ResourcePatternTypes, 'pattern type', a.resourcePatternType ?? 'LITERAL'),
    principal: a.principal, host: a.host ?? '*',
    operation: aclName(AclOperationTypes, 'operation', a.operation), permission: aclName(AclPermissionTypes, 'permission', a.permissionType),
  };
}

/** A filter as REST Proxy v3's query parameters (every enum given, ANY when absent, as DELETE requires). */
export function filterQuery(f: AclFilter): Record<string, string | undefined> {
  return {
    resource_type: aclName(AclResourceTypes, 'resource type', f.resourceType ?? 'ANY'),
    pattern_type: aclName(ResourcePatternTypes, 'pattern type', f.resourcePatternType ?? 'ANY'),
    operation: aclName(AclOperationTypes, 'operation', f.operation ?? 'ANY'),
    permission: aclName(AclPermissionTypes, 'permission', f.permissionType ?? 'ANY'),
    resource_name: f.resourceName ?? undefined, principal: f.principal ?? undefined, host: f.host ?? undefined,
  };
}

/** A REST Proxy AclData as kafkajs's numbers. */
export function aclDescription(d: Readonly<Record<string, unknown>>): AclDescription {
  return {
    resourceType: num(AclResourceTypes, d.resource_type), resourceName: String(d.resource_name),
    resourcePatternType: num(ResourcePatternTypes, d.pattern_type), principal: String(d.principal), host: String(d.host),
    operation: num(AclOperationTypes, d.operation), permissionType: num(AclPermissionTypes, d.permission),
  };
}

/** kafkajs's describeAcls answer: ACLs grouped by resource pattern. */
export function groupByResource(acls: readonly AclDescription[]) {
  const by = new Map<string, { resourceType: number; resourceName: string; resourcePatternType: number; acls: { principal: string; host: string; operation: number; permissionType: number }[] }>();
  for (const a of acls) {
    const key = JSON.stringify([a.resourceType, a.resourceName, a.resourcePatternType]);
    const r = by.get(key) ?? { resourceType: a.resourceType, resourceName: a.resourceName, resourcePatternType: a.resourcePatternType, acls: [] };
    r.acls.push({ principal: a.principal, host: a.host, operation: a.operation, permissionType: a.permissionType });
    by.set(key, r);
  }
  return [...by.values()];
}
