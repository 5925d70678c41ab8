/**
 * The WebSocket API's `$connect` authorizer with a JWT authorizer (a Lambda REQUEST authorizer):
 * the checks the HTTP API's JWT authorizer makes, for a connection. A browser cannot set headers
 * on a WebSocket, so the token comes in the query string (`?token=<JWT>`); other clients may send
 * `Authorization: Bearer <JWT>` instead.
 *
 * - The issuer's keys come from its OIDC discovery document (`<issuer>/.well-known/openid-configuration`
 *   → `jwks_uri`), fetched once per instance; jose refetches the key set when a token names a key
 *   it does not hold.
 * - A token must be signed by one of those keys with an asymmetric algorithm, carry `iss` equal
 *   to the issuer, be within `exp` and `nbf`, and name an accepted audience: `aud`, or Cognito's
 *   `client_id` when there is no `aud` (as API Gateway's JWT authorizer).
 * - Allowed: an IAM policy allowing `execute-api:Invoke` on the connection's route, and the Kafka
 *   principal in the context (`User:<claim>`, the claim `TRIBUTARY_PRINCIPAL_CLAIM` names, default
 *   `sub`; `User:ANONYMOUS` without it, as principalOf says of the HTTP API's tokens). The
 *   websocket function reads it back (principalOfWebSocket).
 * - A missing or invalid token is denied (API Gateway answers 403), not thrown: a thrown error is a
 *   function error, and the function's Errors alarm is for the provider being unreachable, which
 *   is thrown (500).
 */
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { ENVIRONMENT } from '../config.js';
import { logger } from '../logger.js';
import { ANONYMOUS } from './principal.js';

export interface JwtVerifierOptions {
  /** The issuer URL (`TRIBUTARY_JWT_ISSUER`); tokens must carry it as `iss`. */
  readonly issuer: string;
  /** Accepted `aud` (or `client_id`) values (`TRIBUTARY_JWT_AUDIENCE`); at least one. */
  readonly audience: readonly string[];
  /**
   * The claim whose value names the principal (`TRIBUTARY_PRINCIPAL_CLAIM`).
   * @default 'sub'
   */
  readonly principalClaim?: string;
  /**
   * How long a fetch of the discovery document or the key set may take.
   * @default 5000
   */
  readonly fetchTimeoutMs?: number;
}

/** Why a connection was refused (logged; the client sees 403). */
export type DenyReason = 'missing-token' | 'invalid-token' | 'wrong-audience';

/** What API Gateway gets back: the policy, and with Allow the principal the websocket function reads. */
export type ConnectAuthorizerResult = Omit<APIGatewayAuthorizerResult, 'context'> & { readonly context?: { readonly principal: string } };

/** Signature algorithms a provider's public keys use; never `none` or a shared secret. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

/** The token of a `$connect` request: `?token=`, else an `Authorization: Bearer` header. */
export function tokenOf(event: Pick<APIGatewayRequestAuthorizerEvent, 'headers' | 'queryStringParameters'>): string | undefined {
  const query = event.queryStringParameters?.token;
  if (query) return query;
  const header = Object.entries(event.headers ?? {}).find(([name]) => name.toLowerCase() === 'authorization')?.[1];
  const m = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return m?.[1];
}

/** API Gateway's audience rule: `aud` when the token has one, else `client_id`. */
function audienceAccepted(payload: JWTPayload, audience: readonly string[]): boolean {
  if (payload.aud !== undefined) return (Array.isArray(payload.aud) ? payload.aud : [payload.aud]).some((a) => audience.includes(a));
  return typeof payload.client_id === 'string' && audience.includes(payload.client_id);
}

const policy = (principalId: string, effect: 'Allow' | 'Deny', resource: string): ConnectAuthorizerResult => ({
  principalId,
  policyDocument: { Version: '2012-10-17', Statement: [{ Action: 'execute-api:Invoke', Effect: effect, Resource: resource }] },
});

/**
 * The issuer's key set from its discovery document. Discovery is fetched once; a failed fetch is
 * forgotten, so the next connection tries again.
 */
function remoteKeys(issuer: string, timeoutMs: number): () => Promise<JWTVerifyGetKey> {
  let keys: Promise<JWTVerifyGetKey> | undefined;
  const discover = async (): Promise<JWTVerifyGetKey> => {
    const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
    if (!res.ok) throw new Error(`OIDC discovery at ${url} answered ${res.status}`);
    const doc = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown };
    if (doc.issuer !== issuer) throw new Error(`OIDC discovery at ${url} names issuer ${JSON.stringify(doc.issuer)}, not ${issuer}`);
    if (typeof doc.jwks_uri !== 'string') throw new Error(`OIDC discovery at ${url} has no jwks_uri`);
    return createRemoteJWKSet(new URL(doc.jwks_uri), { timeoutDuration: timeoutMs });
  };
  return () => {
    keys ??= discover().catch((err: unknown) => {
      keys = undefined;
      throw err;
    });
    return keys;
  };
}

/**
 * The errors that say the token is bad (deny). Any other (the key set timed out, answered other
 * than 200, or is not a key set; the network failed) says the issuer could not be reached (throw).
 */
const TOKEN_ERRORS: ReadonlySet<string> = new Set([
  errors.JWTExpired.code, errors.JWTClaimValidationFailed.code, errors.JWTInvalid.code, errors.JWSInvalid.code,
  errors.JWSSignatureVerificationFailed.code, errors.JOSEAlgNotAllowed.code, errors.JOSENotSupported.code,
  errors.JWKSNoMatchingKey.code, errors.JWKSMultipleMatchingKeys.code,
]);
const isTokenError = (err: unknown): err is errors.JOSEError => err instanceof errors.JOSEError && TOKEN_ERRORS.has(err.code);

/**
 * The authorizer: Allow with the principal for a valid token, Deny otherwise; throws only when
 * the issuer's discovery document or keys cannot be fetched.
 */
export function connectAuthorizer(o: JwtVerifierOptions): (event: APIGatewayRequestAuthorizerEvent) => Promise<ConnectAuthorizerResult> {
  if (o.audience.length === 0) throw new Error('the WebSocket JWT authorizer needs at least one audience');
  const claim = o.principalClaim ?? 'sub';
  const keys = remoteKeys(o.issuer, o.fetchTimeoutMs ?? 5000);
  const deny = (event: APIGatewayRequestAuthorizerEvent, reason: DenyReason, detail?: string): ConnectAuthorizerResult => {
    logger.info({ event: 'websocket-connect-denied', reason, detail, connectionId: event.requestContext?.connectionId }, 'WebSocket connection refused');
    return policy(ANONYMOUS, 'Deny', event.methodArn);
  };
  return async (event) => {
    const token = tokenOf(event);
    if (!token) return deny(event, 'missing-token');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, await keys(), { issuer: o.issuer, algorithms: ALGORITHMS }));
    } catch (err) {
      if (isTokenError(err)) return deny(event, 'invalid-token', err.code);
      throw err;
    }
    if (!audienceAccepted(payload, o.audience)) return deny(event, 'wrong-audience');
    const value = payload[claim];
    const principal = typeof value === 'string' && value !== '' ? `User:${value}` : ANONYMOUS;
    return { ...policy(principal, 'Allow', event.methodArn), context: { principal } };
  };
}

/** The options from the environment the CDK construct sets (ENVIRONMENT in lib/config.ts). */
export function connectAuthorizerOptions(env: NodeJS.ProcessEnv = process.env): JwtVerifierOptions {
  const issuer = env[ENVIRONMENT.jwtIssuer];
  if (!issuer) throw new Error(`${ENVIRONMENT.jwtIssuer} is not set: the WebSocket JWT authorizer needs the issuer (the CDK construct sets it with jwtAuthorizer)`);
  const audience = (env[ENVIRONMENT.jwtAudience] ?? '').split(/\s+/).filter((a) => a !== '');
  if (audience.length === 0) throw new Error(`${ENVIRONMENT.jwtAudience} is not set: the WebSocket JWT authorizer needs at least one audience`);
  return { issuer, audience, principalClaim: env[ENVIRONMENT.principalClaim] || 'sub' };
}

/** The Lambda handler: options read from the environment on the first connection, not at import. */
export function connectAuthorizerHandler(): (event: APIGatewayRequestAuthorizerEvent) => Promise<ConnectAuthorizerResult> {
  let authorize: ((event: APIGatewayRequestAuthorizerEvent) => Promise<ConnectAuthorizerResult>) | undefined;
  return (event) => {
    authorize ??= connectAuthorizer(connectAuthorizerOptions());
    return authorize(event);
  };
}
