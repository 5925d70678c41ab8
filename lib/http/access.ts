/**
 * What each route needs from the authorizer: the vocabulary of the access column of
 * lib/http/routes.ts.
 *
 * A route declares one rule, built from:
 * - `topic(op)`, `group(op)`, `cluster(op)`, `subject(op)`: one check on the resource its path names;
 * - `all(...)`: every check must pass; `anyOf(...)`: one suffices (Kafka's CreateTopics: CLUSTER
 *   CREATE or TOPIC CREATE);
 * - `anyTopic(op)`: the operation on at least one topic (Kafka ≥ 3's InitProducerId rule);
 * - `open(why)`: no check (what Kafka answers to any authenticated client, e.g. the cluster id);
 * - `filtered(what)`: no check at the route; the handler shows only the items the principal may
 *   DESCRIBE (lists, with {@link visible});
 * - `inBody(what, rule)`: the rule at the route, and more checks where the handler parses the body
 *   (with {@link requireAll}), listed in routes.ts so they are not forgotten.
 *
 * lib/http/enforce.ts applies them. Denial is the authorizer's 403 (40301 and
 * TOPIC_/GROUP_/CLUSTER_AUTHORIZATION_FAILED), thrown before the handler runs, so nothing is written.
 */
// Types only: routes.ts (and so the CDK app) loads this file without the authorizer or a store client.
import type { AuthzRequest } from '../security/authorizer.js';

export type Operation = AuthzRequest['operation'];
export type ResourceType = AuthzRequest['resourceType'];

/** One check, before the principal and host of the request are added. */
export interface AccessCheck {
  readonly operation: Operation;
  readonly resourceType: ResourceType;
  readonly resourceName: string;
}

type Params = Readonly<Record<string, string>>;

export type AccessRule =
  | { readonly kind: 'checks'; readonly checks: (params: Params) => readonly AccessCheck[]; readonly describe: string }
  | { readonly kind: 'anyOf'; readonly rules: readonly AccessRule[]; readonly describe: string }
  | { readonly kind: 'anyTopic'; readonly operation: Operation; readonly describe: string }
  | { readonly kind: 'open'; readonly describe: string }
  | { readonly kind: 'filtered'; readonly describe: string }
  | { readonly kind: 'inBody'; readonly rule: AccessRule; readonly describe: string };

/** Kafka's cluster resource is named `kafka-cluster`. */
export const CLUSTER_RESOURCE = 'kafka-cluster';

const one = (resourceType: ResourceType, operation: Operation, name: (p: Params) => string): AccessRule => ({
  kind: 'checks', checks: (p) => [{ operation, resourceType, resourceName: name(p) }], describe: `${resourceType} ${operation}`,
});

export const topic = (op: Operation): AccessRule => one('TOPIC', op, (p) => p.topic_name ?? '');
/** The group of a v3 route (`group_id`) or of a v2 consumer instance (`group_name`). */
export const group = (op: Operation): AccessRule => one('GROUP', op, (p) => p.group_id ?? p.group_name ?? '');
export const cluster = (op: Operation): AccessRule => one('CLUSTER', op, () => CLUSTER_RESOURCE);
/** The schema registry subject of a route (`subject`). */
export const subject = (op: Operation): AccessRule => one('SUBJECT', op, (p) => p.subject ?? '');
/** The transactional id of a transaction route (`transactional_id`). */
export const transactionalId = (op: Operation): AccessRule => one('TRANSACTIONAL_ID', op, (p) => p.transactional_id ?? '');
export const all = (...rules: AccessRule[]): AccessRule => ({
  kind: 'checks',
  checks: (p) => rules.flatMap((r) => (r.kind === 'checks' ? r.checks(p) : [])),
  describe: rules.map((r) => r.describe).join(' and '),
});
export const anyOf = (...rules: AccessRule[]): AccessRule => ({ kind: 'anyOf', rules, describe: rules.map((r) => r.describe).join(' or ') });
export const anyTopic = (operation: Operation): AccessRule => ({ kind: 'anyTopic', operation, describe: `${operation} on any TOPIC` });
export const open = (why: string): AccessRule => ({ kind: 'open', describe: `open: ${why}` });
export const filtered = (what: string): AccessRule => ({ kind: 'filtered', describe: `filtered: ${what}` });
export const inBody = (what: string, rule: AccessRule): AccessRule => ({ kind: 'inBody', rule, describe: `${rule.describe}; in the body: ${what}` });
