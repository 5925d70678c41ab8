/**
 * STUB of helper A's authorizer (issue 17), with exactly its interface, so the enforcement table
 * can be built in parallel; the lead drops this commit at merge. Until then: everything is allowed
 * when TRIBUTARY_AUTH is unset or 'none'; with authentication on, only TRIBUTARY_SUPER_USERS are
 * allowed — what the real one answers when no ACL exists (allow.everyone.if.no.acl.found=false).
 */
import { HttpError } from '../errors.js';

export interface AuthzRequest {
  readonly principal: string;
  readonly host: string;
  readonly operation: 'READ' | 'WRITE' | 'CREATE' | 'DELETE' | 'ALTER' | 'DESCRIBE' | 'CLUSTER_ACTION' | 'DESCRIBE_CONFIGS' | 'ALTER_CONFIGS' | 'IDEMPOTENT_WRITE';
  readonly resourceType: 'TOPIC' | 'GROUP' | 'CLUSTER' | 'TRANSACTIONAL_ID';
  readonly resourceName: string;
}

export function authorizationEnabled(): boolean {
  const mode = process.env.TRIBUTARY_AUTH ?? 'none';
  return mode !== '' && mode !== 'none';
}

const superUsers = (): string[] => (process.env.TRIBUTARY_SUPER_USERS ?? '').split(';').flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean);

export async function authorize(req: AuthzRequest): Promise<boolean> {
  if (!authorizationEnabled()) return true;
  return superUsers().includes(req.principal);
}

export async function requireAccess(req: AuthzRequest): Promise<void> {
  if (await authorize(req)) return;
  const name = req.resourceType === 'TOPIC' ? 'TOPIC_AUTHORIZATION_FAILED'
    : req.resourceType === 'GROUP' ? 'GROUP_AUTHORIZATION_FAILED'
      : req.resourceType === 'CLUSTER' ? 'CLUSTER_AUTHORIZATION_FAILED' : 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED';
  throw new HttpError(403, 40301, `${name}: ${req.principal} is not authorized to ${req.operation} ${req.resourceType} ${req.resourceName}.`);
}
