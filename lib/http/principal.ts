/**
 * Who is calling: the Kafka principal (`User:<name>`) of a request, from what API Gateway's
 * authorizer put in the request context. Only this folder knows about API Gateway events; the
 * rest of the code (lib/security) works with the principal string.
 *
 * - IAM authorizer: `User:<arn>` of the caller. An assumed-role session
 *   (`arn:aws:sts::<account>:assumed-role/<role>/<session>`) maps to its role
 *   (`arn:aws:iam::<account>:role/<role>`), so ACLs name roles, not sessions. (An STS ARN does not
 *   carry the role's path: a role with a path is named without it.)
 * - JWT authorizer: `User:<claim>`, the claim named by `TRIBUTARY_PRINCIPAL_CLAIM` (default `sub`).
 * - A Lambda authorizer's context (the local stack's `--auth` token check): its `principal`.
 * - None of these: `User:ANONYMOUS`, Kafka's name for an unauthenticated caller.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

export const ANONYMOUS = 'User:ANONYMOUS';

/** An IAM ARN as a Kafka principal name: assumed-role sessions become their role. */
export function normalizeArn(arn: string): string {
  const m = /^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role\/([^/]+)\/[^/]+$/.exec(arn);
  return m ? `arn:${m[1]}:iam::${m[2]}:role/${m[3]}` : arn;
}

interface AuthorizerContext {
  readonly iam?: { readonly userArn?: string };
  readonly jwt?: { readonly claims?: Readonly<Record<string, string | number | boolean | string[]>> };
  readonly lambda?: { readonly principal?: string };
}

/** The request's Kafka principal (see the file's comment). */
export function principalOf(event: Pick<APIGatewayProxyEventV2, 'requestContext'>, claim = process.env.TRIBUTARY_PRINCIPAL_CLAIM ?? 'sub'): string {
  const auth = (event.requestContext as { authorizer?: AuthorizerContext }).authorizer;
  if (auth?.lambda?.principal) return auth.lambda.principal;
  const arn = auth?.iam?.userArn;
  if (arn) return `User:${normalizeArn(arn)}`;
  const value = auth?.jwt?.claims?.[claim];
  if (typeof value === 'string' && value !== '') return `User:${value}`;
  return ANONYMOUS;
}

/**
 * The Kafka principal of a WebSocket API event (every route of the connection carries what its
 * `$connect` authorizer said): a Lambda REQUEST authorizer's context `principal` (the JWT
 * authorizer, the local stack's token check), or an IAM caller's ARN; else `User:ANONYMOUS`.
 */
export function principalOfWebSocket(event: { readonly requestContext: unknown }): string {
  const rc = event.requestContext as { authorizer?: { principal?: unknown }; identity?: { userArn?: unknown } };
  if (typeof rc.authorizer?.principal === 'string' && rc.authorizer.principal !== '') return rc.authorizer.principal;
  if (typeof rc.identity?.userArn === 'string' && rc.identity.userArn !== '') return `User:${normalizeArn(rc.identity.userArn)}`;
  return ANONYMOUS;
}
