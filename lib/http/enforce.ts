/**
 * Applies the access rules of lib/http/access.ts: `httpFunction` calls {@link enforce} with the
 * route's rule before the handler runs; handlers call {@link requireAll} for what a body names and
 * {@link visible} to filter lists. With authorization off (TRIBUTARY_AUTH unset or `none`) each
 * returns at once, without a store call.
 */
import { cachedPartitionCounts } from '../cluster/metadata.js';
import { authorizationEnabled, authorize, requireAccess } from '../security/authorizer.js';
import type { AccessCheck, AccessRule, Operation, ResourceType } from './access.js';

type Params = Readonly<Record<string, string>>;

/** Who asks, as the authorizer needs it. */
export interface Caller {
  readonly principal: string;
  readonly host: string;
}

/** Throws the authorizer's 403 unless `rule` holds for `caller` on a route with `params`. */
export async function enforce(rule: AccessRule, params: Params, caller: Caller): Promise<void> {
  if (!authorizationEnabled()) return;
  switch (rule.kind) {
    case 'open':
    case 'filtered':
      return;
    case 'inBody':
      return enforce(rule.rule, params, caller);
    case 'checks':
      return requireAll(caller, rule.checks(params));
    case 'anyOf': {
      for (const r of rule.rules) if (await holds(r, params, caller)) return;
      // Denied: the last alternative's error (for CreateTopics, TOPIC_AUTHORIZATION_FAILED as Kafka answers).
      const last = rule.rules[rule.rules.length - 1];
      if (last) await enforce(last, params, caller);
      return;
    }
    case 'anyTopic': {
      if (await holds(rule, params, caller)) return;
      await requireAccess({ ...caller, operation: rule.operation, resourceType: 'TOPIC', resourceName: '*' });
      return;
    }
  }
}

async function holds(rule: AccessRule, params: Params, caller: Caller): Promise<boolean> {
  switch (rule.kind) {
    case 'open':
    case 'filtered':
      return true;
    case 'inBody':
      return holds(rule.rule, params, caller);
    case 'checks': {
      for (const c of rule.checks(params)) if (!(await authorize({ ...caller, ...c }))) return false;
      return true;
    }
    case 'anyOf': {
      for (const r of rule.rules) if (await holds(r, params, caller)) return true;
      return false;
    }
    case 'anyTopic': {
      // Kafka ≥ 3 asks whether any ACL could allow the operation on some topic; without a way to
      // ask that of the authorizer, every existing topic is tried (InitProducerId is rare).
      const topics = Object.keys(await cachedPartitionCounts());
      for (const t of topics) if (await authorize({ ...caller, operation: rule.operation, resourceType: 'TOPIC', resourceName: t })) return true;
      return false;
    }
  }
}

/** Every check, each the authorizer's 403 when denied: the body-dependent checks of `inBody` routes. */
export async function requireAll(caller: Caller, checks: readonly AccessCheck[]): Promise<void> {
  if (!authorizationEnabled()) return;
  const seen = new Set<string>();
  for (const c of checks) {
    const key = `${c.resourceType}\u0000${c.operation}\u0000${c.resourceName}`;
    if (seen.has(key)) continue;
    seen.add(key);
    await requireAccess({ ...caller, ...c });
  }
}

/** The TOPIC checks for `operation` on every topic a body names. */
export const topicsIn = (operation: Operation, topics: Iterable<string>): AccessCheck[] =>
  [...new Set(topics)].map((resourceName) => ({ operation, resourceType: 'TOPIC', resourceName }));

/** The items of a list the caller may see (DESCRIBE on each, unless another operation is named). */
export async function visible<T>(caller: Caller, items: readonly T[], resource: (item: T) => { resourceType: ResourceType; resourceName: string }, operation: Operation = 'DESCRIBE'): Promise<T[]> {
  if (!authorizationEnabled()) return [...items];
  const allowed = await Promise.all(items.map((item) => authorize({ ...caller, operation, ...resource(item) })));
  return items.filter((_, i) => allowed[i]);
}
