/**
 * Kafka's ACL model and its matcher, pure: bindings and filters with Kafka's names, their
 * validation, and the decision Kafka's `AclAuthorizer` makes for one request. No I/O here:
 * lib/storage/coordination/acls.ts keeps the bindings, lib/security/authorizer.ts reads them and calls `decide`.
 */
import { isIP } from 'node:net';
import { KafkaError } from '../protocol/errors.js';

/** Kafka's resource types, and the schema registry's subjects (SUBJECT, as Confluent's registry names them). */
export const RESOURCE_TYPES = ['TOPIC', 'GROUP', 'CLUSTER', 'TRANSACTIONAL_ID', 'SUBJECT'] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];
/** Pattern types a binding is stored with. */
export const PATTERN_TYPES = ['LITERAL', 'PREFIXED'] as const;
/** LITERAL and PREFIXED are stored; MATCH and ANY exist only in filters. */
export type PatternType = (typeof PATTERN_TYPES)[number] | 'MATCH' | 'ANY';
export type StoredPatternType = (typeof PATTERN_TYPES)[number];
export const ACL_OPERATIONS = [
  'ALL', 'READ', 'WRITE', 'CREATE', 'DELETE', 'ALTER', 'DESCRIBE', 'CLUSTER_ACTION', 'DESCRIBE_CONFIGS', 'ALTER_CONFIGS', 'IDEMPOTENT_WRITE',
] as const;
export type AclOperation = (typeof ACL_OPERATIONS)[number];
export const ACL_PERMISSIONS = ['ALLOW', 'DENY'] as const;
export type AclPermission = (typeof ACL_PERMISSIONS)[number];

/** Kafka's one name for the CLUSTER resource. */
export const CLUSTER_NAME = 'kafka-cluster';
/** A LITERAL resource named this matches every resource of its type; the same for principals and hosts. */
export const WILDCARD = '*';
export const WILDCARD_PRINCIPAL = 'User:*';

/** One ACL: Kafka's AclBinding (a resource pattern and an access control entry). */
export interface AclBinding {
  readonly resourceType: ResourceType;
  readonly resourceName: string;
  readonly patternType: StoredPatternType;
  /** `User:<name>` or `User:*`. */
  readonly principal: string;
  /** An IP address or `*`. */
  readonly host: string;
  readonly operation: AclOperation;
  readonly permission: AclPermission;
}

/**
 * Kafka's AclBindingFilter: ANY matches every value; an absent name, principal or host matches
 * all. A name with MATCH matches the bindings that would apply to that resource (LITERAL of
 * that name, LITERAL `*`, PREFIXED prefixes of it); with ANY or a concrete pattern type, the name
 * must be equal.
 */
export interface AclFilter {
  readonly resourceType: ResourceType | 'ANY';
  readonly resourceName?: string;
  readonly patternType: PatternType;
  readonly principal?: string;
  readonly host?: string;
  readonly operation: AclOperation | 'ANY';
  readonly permission: AclPermission | 'ANY';
}

/** One request to authorize: a principal from a host doing one operation on one named resource. */
export interface AclRequest {
  readonly principal: string;
  readonly host: string;
  readonly operation: Exclude<AclOperation, 'ALL'>;
  readonly resourceType: ResourceType;
  readonly resourceName: string;
}

/** A binding as it arrives (from JSON, a CLI, an SDK call): every field still to be checked. */
export type AclInput = { readonly [K in keyof AclBinding]?: unknown };

/** DynamoDB's limit on a sort key, which holds a binding's canonical form. */
const MAX_KEY_BYTES = 1024;

const invalid = (message: string): KafkaError => new KafkaError('INVALID_REQUEST', message);

/** A bad value as an error message shows it: a string (cut at 100 characters) or a scalar as JSON, an object or array by its kind (it may nest too deep to print). */
function shown(raw: unknown): string {
  if (raw === undefined) return 'nothing';
  if (typeof raw === 'string') return JSON.stringify(raw.length > 100 ? `${raw.slice(0, 100)}…` : raw);
  if (raw === null || typeof raw !== 'object') return String(raw);
  return Array.isArray(raw) ? 'an array' : 'an object';
}

/** An enum value, case-insensitively (REST Proxy accepts `any` as ANY); INVALID_REQUEST naming the allowed values. */
function enumValue<T extends string>(field: string, raw: unknown, allowed: readonly T[]): T {
  const up = typeof raw === 'string' ? raw.toUpperCase() : undefined;
  if (up === undefined || !(allowed as readonly string[]).includes(up)) {
    throw invalid(`${field} must be one of ${allowed.join(', ')}, not ${shown(raw)}.`);
  }
  return up as T;
}

/** `User:<name>` with a non-empty name, or `User:*`. */
export function validPrincipal(p: unknown): p is string {
  // eslint-disable-next-line no-control-regex -- control characters are what this refuses
  return typeof p === 'string' && /^User:.+$/s.test(p) && !/[\u0000-\u001f\u007f]/.test(p);
}

export function validHost(h: unknown): h is string {
  return typeof h === 'string' && (h === WILDCARD || isIP(h) !== 0);
}

/** The binding's canonical string: its storage key and its identity (two equal bindings share it). */
export function bindingKey(b: AclBinding): string {
  return JSON.stringify([b.resourceType, b.patternType, b.resourceName, b.principal, b.host, b.operation, b.permission]);
}

/**
 * Checks a binding as Kafka does before storing it; returns it normalized (enum names upper case).
 * Errors: INVALID_REQUEST for an unknown or filter-only value (ANY, MATCH), an empty resource name,
 * a CLUSTER resource not named `kafka-cluster`, a principal not `User:<name>`, a host neither an
 * IP address nor `*`.
 */
export function validateBinding(input: AclInput): AclBinding {
  const resourceType = enumValue('resource_type', input.resourceType, RESOURCE_TYPES);
  const patternType = enumValue('pattern_type', input.patternType, PATTERN_TYPES);
  const operation = enumValue('operation', input.operation, ACL_OPERATIONS);
  const permission = enumValue('permission', input.permission, ACL_PERMISSIONS);
  const { resourceName, principal, host } = input;
  if (typeof resourceName !== 'string' || resourceName === '') throw invalid('resource_name must be a non-empty string.');
  if (resourceType === 'CLUSTER' && resourceName !== CLUSTER_NAME) throw invalid(`The only valid name for the CLUSTER resource is ${CLUSTER_NAME}.`);
  if (!validPrincipal(principal)) throw invalid(`principal must be User:<name> or User:*, not ${shown(principal)}.`);
  if (!validHost(host)) throw invalid(`host must be an IP address or *, not ${shown(host)}.`);
  const binding: AclBinding = { resourceType, resourceName, patternType, principal, host, operation, permission };
  if (Buffer.byteLength(bindingKey(binding)) > MAX_KEY_BYTES) throw invalid(`The ACL is too long: its resource name, principal and host together must stay under ${MAX_KEY_BYTES - 100} bytes.`);
  return binding;
}

/**
 * Builds a filter from optional fields (absent enums are ANY). Errors: INVALID_REQUEST for an
 * unknown value. A principal or host given is matched exactly, so it is not validated beyond
 * being a string: a filter for a malformed principal simply matches nothing.
 */
export function validateFilter(input: AclInput): AclFilter {
  const opt = <T extends string>(field: string, raw: unknown, allowed: readonly T[]): T | 'ANY' =>
    raw === undefined || raw === '' ? 'ANY' : enumValue(field, raw, [...allowed, 'ANY' as const]);
  const str = (field: string, raw: unknown): string | undefined => {
    if (raw === undefined || raw === '') return undefined;
    if (typeof raw !== 'string') throw invalid(`${field} must be a string.`);
    return raw;
  };
  const resourceName = str('resource_name', input.resourceName);
  const principal = str('principal', input.principal);
  const host = str('host', input.host);
  return {
    resourceType: opt('resource_type', input.resourceType, RESOURCE_TYPES),
    patternType: opt('pattern_type', input.patternType, [...PATTERN_TYPES, 'MATCH' as const]),
    operation: opt('operation', input.operation, ACL_OPERATIONS),
    permission: opt('permission', input.permission, ACL_PERMISSIONS),
    ...(resourceName !== undefined ? { resourceName } : {}),
    ...(principal !== undefined ? { principal } : {}),
    ...(host !== undefined ? { host } : {}),
  };
}

/** Whether a stored binding's resource pattern applies to the named resource (LITERAL equal or `*`, PREFIXED a prefix). */
function patternApplies(b: AclBinding, resourceType: ResourceType, name: string): boolean {
  if (b.resourceType !== resourceType) return false;
  return b.patternType === 'LITERAL' ? b.resourceName === name || b.resourceName === WILDCARD : name.startsWith(b.resourceName);
}

/** Kafka's AclBindingFilter.matches (ResourcePatternFilter, then AccessControlEntryFilter). */
export function matchesFilter(b: AclBinding, f: AclFilter): boolean {
  if (f.resourceType !== 'ANY' && f.resourceType !== b.resourceType) return false;
  if (f.patternType !== 'ANY' && f.patternType !== 'MATCH' && f.patternType !== b.patternType) return false;
  if (f.resourceName !== undefined) {
    if (f.patternType === 'MATCH') {
      if (!patternApplies(b, b.resourceType, f.resourceName)) return false;
    } else if (f.resourceName !== b.resourceName) {
      return false;
    }
  }
  if (f.principal !== undefined && f.principal !== b.principal) return false;
  if (f.host !== undefined && f.host !== b.host) return false;
  if (f.operation !== 'ANY' && f.operation !== b.operation) return false;
  return f.permission === 'ANY' || f.permission === b.permission;
}

/**
 * The operations whose ALLOW grants `op` (Kafka's AclOperation docs): DESCRIBE is implied by READ,
 * WRITE, DELETE and ALTER; DESCRIBE_CONFIGS by ALTER_CONFIGS. ALL grants everything. A DENY
 * implies nothing beyond itself (and ALL).
 */
export function impliedBy(op: Exclude<AclOperation, 'ALL'>): readonly AclOperation[] {
  if (op === 'DESCRIBE') return ['DESCRIBE', 'READ', 'WRITE', 'DELETE', 'ALTER'];
  if (op === 'DESCRIBE_CONFIGS') return ['DESCRIBE_CONFIGS', 'ALTER_CONFIGS'];
  return [op];
}

export type Decision = 'ALLOWED' | 'DENIED' | 'NO_MATCH';

/**
 * Kafka's AclAuthorizer for one request (super users aside, which the caller checks first):
 * - the ACLs that apply are those of the resource: LITERAL of its name, LITERAL `*`, and PREFIXED
 *   patterns that prefix its name — whatever their principal. None at all is NO_MATCH (the caller
 *   applies `allow.everyone.if.no.acl.found`);
 * - of those, an entry concerns the request when its principal is the caller's or `User:*` and its
 *   host the caller's or `*`;
 * - a DENY of the operation (or ALL) wins; else an ALLOW of the operation, of one implying it, or of
 *   ALL allows; else DENIED.
 */
export function decide(acls: readonly AclBinding[], req: AclRequest): Decision {
  const onResource = acls.filter((b) => patternApplies(b, req.resourceType, req.resourceName));
  if (onResource.length === 0) return 'NO_MATCH';
  const mine = onResource.filter((b) =>
    (b.principal === req.principal || b.principal === WILDCARD_PRINCIPAL) && (b.host === req.host || b.host === WILDCARD));
  if (mine.some((b) => b.permission === 'DENY' && (b.operation === req.operation || b.operation === 'ALL'))) return 'DENIED';
  const granting = impliedBy(req.operation);
  return mine.some((b) => b.permission === 'ALLOW' && (b.operation === 'ALL' || granting.includes(b.operation))) ? 'ALLOWED' : 'DENIED';
}

/** REST Proxy's sort of an ACL list: resource type, name, pattern type, principal, host, operation, permission. */
export function compareBindings(a: AclBinding, b: AclBinding): number {
  const fields = ['resourceType', 'resourceName', 'patternType', 'principal', 'host', 'operation', 'permission'] as const;
  for (const f of fields) {
    if (a[f] < b[f]) return -1;
    if (a[f] > b[f]) return 1;
  }
  return 0;
}
