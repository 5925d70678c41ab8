/**
 * The authorizer every enforcement point calls: Kafka's AclAuthorizer over the stored ACLs, with
 * Kafka's static broker configs as environment variables.
 *
 * | variable | Kafka config | default |
 * |---|---|---|
 * | `TRIBUTARY_AUTH` | (authentication on: anything but unset, `''` or `none`) | off: everything is allowed, no ACL is read |
 * | `TRIBUTARY_SUPER_USERS` | `super.users` (`User:a;User:b`) | none |
 * | `TRIBUTARY_ALLOW_EVERYONE_IF_NO_ACL_FOUND` | `allow.everyone.if.no.acl.found` | `false` |
 *
 * The ACLs come from the per-instance metadata cache (lib/cluster/metadata.ts `cachedAcls`): every
 * ACL write bumps the metadata version, which each instance checks at most every
 * `TRIBUTARY_METADATA_MAX_AGE_MS` (1 s). So a revoked ACL takes effect on every instance for every
 * request that starts more than `TRIBUTARY_METADATA_MAX_AGE_MS` plus one version read's duration
 * after the revoke was acknowledged (the check is stamped when its read returns); at once on the
 * instance that made it. Checking costs no store request per call in between.
 */
import { cachedAcls } from '../cluster/metadata.js';
import { KafkaError } from '../protocol/errors.js';
import { logger } from '../logger.js';
import type { KafkaErrorName } from '../protocol/errors.js';
import { decide, type AclBinding, type AclOperation, type ResourceType } from './acls.js';

export interface AuthzRequest {
  readonly principal: string;
  readonly host: string;
  readonly operation: Exclude<AclOperation, 'ALL'>;
  readonly resourceType: ResourceType;
  readonly resourceName: string;
}

/** TRIBUTARY_AUTH is set and not 'none'. */
export function authorizationEnabled(): boolean {
  const v = process.env.TRIBUTARY_AUTH;
  return v !== undefined && v !== '' && v !== 'none';
}

let superUsersRaw: string | undefined;
let superUsersSet = new Set<string>();
/** Kafka's `super.users`: principals separated by `;` (re-read when the variable changes). */
export function superUsers(): ReadonlySet<string> {
  const raw = process.env.TRIBUTARY_SUPER_USERS ?? '';
  if (raw !== superUsersRaw) {
    superUsersRaw = raw;
    superUsersSet = new Set(raw.split(';').map((s) => s.trim()).filter((s) => s !== ''));
  }
  return superUsersSet;
}

const allowEveryoneIfNoAclFound = (): boolean => process.env.TRIBUTARY_ALLOW_EVERYONE_IF_NO_ACL_FOUND === 'true';

/** Whether the request may go ahead. Without authentication on (TRIBUTARY_AUTH unset or 'none') everything is allowed and no ACL is read. */
export async function authorize(req: AuthzRequest): Promise<boolean> {
  if (!authorizationEnabled()) return true;
  if (superUsers().has(req.principal)) return true;
  // Stored bindings were validated on the way in (lib/security/acls.ts validateBinding).
  const decision = decide((await cachedAcls()) as readonly AclBinding[], req);
  const ok = decision === 'ALLOWED' || (decision === 'NO_MATCH' && allowEveryoneIfNoAclFound());
  // Kafka's authorizer logs denials at INFO (kafka.authorizer.logger); principals are names, not secrets.
  if (!ok) logger.info({ event: 'authorization-denied', ...req, noAclFound: decision === 'NO_MATCH' }, 'authorization denied');
  return ok;
}

const DENIAL: Record<ResourceType, { name: KafkaErrorName; noun: string }> = {
  TOPIC: { name: 'TOPIC_AUTHORIZATION_FAILED', noun: 'topic' },
  GROUP: { name: 'GROUP_AUTHORIZATION_FAILED', noun: 'group' },
  CLUSTER: { name: 'CLUSTER_AUTHORIZATION_FAILED', noun: 'cluster' },
  TRANSACTIONAL_ID: { name: 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED', noun: 'transactional id' },
  // Kafka has no code for a subject; Confluent's registry answers 403/40301, as this one does.
  SUBJECT: { name: 'CLUSTER_AUTHORIZATION_FAILED', noun: 'subject' },
};

/** Throws the 403 KafkaError (TOPIC_/GROUP_/CLUSTER_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED, REST code 40301) unless authorize says yes. */
export async function requireAccess(req: AuthzRequest): Promise<void> {
  if (await authorize(req)) return;
  const d = DENIAL[req.resourceType];
  throw new KafkaError(d.name, `${req.principal} is not authorized to ${req.operation} ${d.noun} ${req.resourceName}.`, {
    principal: req.principal, operation: req.operation, resourceType: req.resourceType, resourceName: req.resourceName,
  });
}
