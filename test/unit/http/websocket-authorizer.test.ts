/**
 * The WebSocket API's JWT authorizer against a real (local) OIDC provider: a node:http server on
 * 127.0.0.1 serving a discovery document and the key set of a key pair made here.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWTPayload } from 'jose';
import type { APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ENVIRONMENT } from '../../../lib/config.js';
import { ANONYMOUS } from '../../../lib/http/principal.js';
import { connectAuthorizer, connectAuthorizerOptions, tokenOf } from '../../../lib/http/websocket-authorizer.js';

const METHOD_ARN = 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/$connect';
const AUDIENCE = 'tributary-client';
const KID = 'key-1';

let server: http.Server;
let issuer: string;
let privateKey: CryptoKey;
let otherKey: CryptoKey;
/** Requests the provider served, by path. */
const served: string[] = [];
/** The status the discovery document is served with (500: the provider is down). */
let discoveryStatus = 200;

beforeAll(async () => {
  const pair = await generateKeyPair('RS256');
  privateKey = pair.privateKey;
  otherKey = (await generateKeyPair('RS256')).privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: KID, alg: 'RS256', use: 'sig' };
  server = http.createServer((req, res) => {
    served.push(req.url ?? '');
    const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.url === '/.well-known/openid-configuration') {
      json(discoveryStatus, discoveryStatus === 200 ? { issuer, jwks_uri: `${issuer}/keys` } : { error: 'down' });
    } else if (req.url === '/keys') {
      json(200, { keys: [jwk] });
    } else {
      json(404, {});
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  served.length = 0;
  discoveryStatus = 200;
});

/** A token as the provider issues it, with `change` applied. */
async function token(change: { claims?: JWTPayload; issuer?: string; audience?: string | null; expiresIn?: string; key?: CryptoKey; alg?: string } = {}): Promise<string> {
  let jwt = new SignJWT({ sub: 'alice', email: 'alice@example.com', ...change.claims })
    .setProtectedHeader({ alg: change.alg ?? 'RS256', kid: KID })
    .setIssuer(change.issuer ?? issuer)
    .setIssuedAt()
    .setExpirationTime(change.expiresIn ?? '5m');
  if (change.audience !== null) jwt = jwt.setAudience(change.audience ?? AUDIENCE);
  return jwt.sign(change.key ?? privateKey);
}

/** A `$connect` authorizer event carrying `jwt` in the query string or the Authorization header. */
function connect(jwt: string | undefined, where: 'query' | 'header' = 'query'): APIGatewayRequestAuthorizerEvent {
  return {
    type: 'REQUEST',
    methodArn: METHOD_ARN,
    headers: { Host: 'abc123.execute-api.eu-west-1.amazonaws.com', ...(jwt && where === 'header' ? { Authorization: `Bearer ${jwt}` } : {}) },
    queryStringParameters: jwt && where === 'query' ? { token: jwt } : {},
    requestContext: { connectionId: 'conn-1', routeKey: '$connect', eventType: 'CONNECT' },
  } as unknown as APIGatewayRequestAuthorizerEvent;
}

const allowed = (principal: string) => ({
  principalId: principal,
  policyDocument: { Version: '2012-10-17', Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: METHOD_ARN }] },
  context: { principal },
});
const DENIED = {
  principalId: ANONYMOUS,
  policyDocument: { Version: '2012-10-17', Statement: [{ Action: 'execute-api:Invoke', Effect: 'Deny', Resource: METHOD_ARN }] },
};

describe('Function: connectAuthorizer', () => {
  it('allows a valid token from the query string, naming the principal by its sub', async () => {
    const authorize = connectAuthorizer({ issuer, audience: [AUDIENCE] });

    const result = await authorize(connect(await token()));

    expect(result).toEqual(allowed('User:alice'));
  });

  it('allows a valid token from an Authorization: Bearer header', async () => {
    const authorize = connectAuthorizer({ issuer, audience: [AUDIENCE] });

    expect(await authorize(connect(await token(), 'header'))).toEqual(allowed('User:alice'));
  });

  it('names the principal by the configured claim, and User:ANONYMOUS when the token lacks it', async () => {
    const byEmail = connectAuthorizer({ issuer, audience: [AUDIENCE], principalClaim: 'email' });
    const byGroup = connectAuthorizer({ issuer, audience: [AUDIENCE], principalClaim: 'group' });

    expect(await byEmail(connect(await token()))).toEqual(allowed('User:alice@example.com'));
    expect(await byGroup(connect(await token()))).toEqual(allowed(ANONYMOUS));
  });

  it('accepts any one of several audiences, and client_id when the token has no aud (Cognito access tokens)', async () => {
    const authorize = connectAuthorizer({ issuer, audience: ['other', AUDIENCE] });

    expect(await authorize(connect(await token()))).toEqual(allowed('User:alice'));
    expect(await authorize(connect(await token({ audience: null, claims: { client_id: AUDIENCE } })))).toEqual(allowed('User:alice'));
  });

  it('denies a token for another audience, and a client_id when the token has an aud', async () => {
    const authorize = connectAuthorizer({ issuer, audience: [AUDIENCE] });

    expect(await authorize(connect(await token({ audience: 'someone-else' })))).toEqual(DENIED);
    expect(await authorize(connect(await token({ audience: 'someone-else', claims: { client_id: AUDIENCE } })))).toEqual(DENIED);
    expect(await authorize(connect(await token({ audience: null })))).toEqual(DENIED);
  });

  it('denies a token from another issuer, even one signed with the issuer\'s key', async () => {
    const authorize = connectAuthorizer({ issuer, audience: [AUDIENCE] });

    expect(await authorize(connect(await token({ issuer: 'https://attacker.example.com' })))).toEqual(DENIED);
  });

  it('denies an expired token', async () => {
    const authorize = connectAuthorizer({ issuer, audience: [AUDIENCE] });

    expect(await authorize(connect(await token({ expiresIn: '-1m' })))).toEqual(DENIED);
  });

  it('denies a token signed by another key under the issuer\'s key id, and one with a shared-secret algorithm', async () => {
    const authorize = connectAuthorizer({ issuer, audience: [AUDIENCE] });
    const secret = new TextEncoder().encode('a-secret-anyone-could-have-guessed-0123');

    expect(await authorize(connect(await token({ key: otherKey })))).toEqual(DENIED);
    expect(await authorize(connect(await token({ key: secret as never, alg: 'HS256' })))).toEqual(DENIED);
  });

  it('denies a connection with no token, an empty one, a malformed one, or a non-Bearer header', async () => {
    const authorize = connectAuthorizer({ issuer, audience: [AUDIENCE] });
    const basic = { ...connect(undefined), headers: { Authorization: 'Basic YWxpY2U6cHc=' } };

    expect(await authorize(connect(undefined))).toEqual(DENIED);
    expect(await authorize({ ...connect(undefined), queryStringParameters: { token: '' } })).toEqual(DENIED);
    expect(await authorize(connect('not.a.jwt'))).toEqual(DENIED);
    expect(await authorize(basic)).toEqual(DENIED);
  });

  it('fetches the discovery document once per instance, and the key set once while its keys match', async () => {
    const authorize = connectAuthorizer({ issuer, audience: [AUDIENCE] });

    for (let i = 0; i < 3; i++) expect(await authorize(connect(await token()))).toEqual(allowed('User:alice'));

    expect(served).toEqual(['/.well-known/openid-configuration', '/keys']);
  });

  it('throws when the issuer cannot be reached, and discovers again on the next connection', async () => {
    const authorize = connectAuthorizer({ issuer, audience: [AUDIENCE] });
    discoveryStatus = 500;

    await expect(authorize(connect(await token()))).rejects.toThrow(/OIDC discovery .* answered 500/);
    discoveryStatus = 200;
    expect(await authorize(connect(await token()))).toEqual(allowed('User:alice'));
    expect(served.filter((p) => p === '/.well-known/openid-configuration')).toHaveLength(2);
  });
});

describe('Function: tokenOf', () => {
  it('prefers the query string, reads the Authorization header whatever its case', () => {
    expect(tokenOf({ queryStringParameters: { token: 'q' }, headers: { Authorization: 'Bearer h' } })).toBe('q');
    expect(tokenOf({ queryStringParameters: null, headers: { authorization: 'bearer h' } })).toBe('h');
    expect(tokenOf({ queryStringParameters: null, headers: null })).toBeUndefined();
  });
});

describe('Function: connectAuthorizerOptions', () => {
  it('reads the issuer, the audiences (separated by spaces) and the principal claim', () => {
    const env = { [ENVIRONMENT.jwtIssuer]: 'https://id.example.com', [ENVIRONMENT.jwtAudience]: 'a b', [ENVIRONMENT.principalClaim]: 'email' };

    expect(connectAuthorizerOptions(env)).toEqual({ issuer: 'https://id.example.com', audience: ['a', 'b'], principalClaim: 'email' });
    expect(connectAuthorizerOptions({ ...env, [ENVIRONMENT.principalClaim]: undefined }).principalClaim).toBe('sub');
  });

  it('fails at once, naming the variable, when the issuer or the audience is missing', () => {
    expect(() => connectAuthorizerOptions({ [ENVIRONMENT.jwtAudience]: 'a' })).toThrow(ENVIRONMENT.jwtIssuer);
    expect(() => connectAuthorizerOptions({ [ENVIRONMENT.jwtIssuer]: 'https://id.example.com', [ENVIRONMENT.jwtAudience]: ' ' })).toThrow(ENVIRONMENT.jwtAudience);
  });
});
