/**
 * Template assertions for authentication: IAM by default with TRIBUTARY_AUTH=iam on the
 * functions that serve callers (HTTP and WebSocket), or a JWT authorizer on every route with
 * TRIBUTARY_AUTH=jwt and the principal claim, and `superUsers` as Kafka's super.users. The
 * WebSocket API's `$connect`: test/cdk/websocket.test.ts.
 */
import { App, Stack } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { TributaryCluster, deployedFunctions } from '../../cdk/cluster.js';
import type { TributaryClusterProps } from '../../cdk/props.js';
import { ENVIRONMENT } from '../../lib/config.js';
import { FUNCTIONS } from '../../lib/functions/catalog.js';
import { STATIC_ROUTES, staticRouteKey } from '../../lib/http/static-routes.js';
import { DEFAULT_ROUTE, ROUTES } from '../../lib/http/routes.js';
import { logicalId, resourcesOf, synth, type Synthesized } from './synth.js';

const HTTP = FUNCTIONS.filter((f) => f.trigger === 'http').map((f) => f.name);
const envOf = (s: Synthesized, name: string): Record<string, string> => {
  const id = logicalId(s, (s.stack.cluster.functions as Record<string, any>)[name]);
  return (s.json.Resources[id]?.Properties?.Environment?.Variables ?? {}) as Record<string, string>;
};
/** The API's routes but the console's static files, which have no authorizer (test/cdk/console.test.ts). */
const FILES = new Set(STATIC_ROUTES.map(staticRouteKey));
/** Resources of the HTTP API (not the WebSocket API's). */
const ofHttpApi = (s: Synthesized, type: string) => resourcesOf(s, type).filter(([, r]) => r.ApiId?.Ref === logicalId(s, s.stack.cluster.api));
const routes = (s: Synthesized) => ofHttpApi(s, 'AWS::ApiGatewayV2::Route').map(([, r]) => r).filter((r) => !FILES.has(r.RouteKey));

describe('TributaryCluster: authentication', () => {
  it('uses IAM on every route by default and tells the HTTP functions so (TRIBUTARY_AUTH=iam), with no super user', () => {
    const s = synth({});
    expect(routes(s)).toHaveLength(ROUTES.length + 1);
    for (const r of routes(s)) expect(r.AuthorizationType, r.RouteKey).toBe('AWS_IAM');
    expect(ofHttpApi(s, 'AWS::ApiGatewayV2::Authorizer')).toHaveLength(0);
    for (const name of HTTP) {
      expect(envOf(s, name)[ENVIRONMENT.auth], name).toBe('iam');
      expect(envOf(s, name)[ENVIRONMENT.superUsers]).toBeUndefined();
      expect(envOf(s, name)[ENVIRONMENT.principalClaim]).toBeUndefined();
    }
    expect(envOf(s, 'websocket')[ENVIRONMENT.auth]).toBe('iam');
    for (const f of deployedFunctions(s.stack.cluster.settings).filter((x) => x.trigger !== 'http' && x.trigger !== 'websocket')) {
      expect(envOf(s, f.name)[ENVIRONMENT.auth], f.name).toBeUndefined();
    }
  });

  it("tells the functions 'none' when the deployer opened the API", () => {
    const s = synth({ authorization: 'none' });
    for (const r of routes(s)) expect(r.AuthorizationType).toBe('NONE');
    for (const name of HTTP) expect(envOf(s, name)[ENVIRONMENT.auth]).toBe('none');
  });

  it('replaces IAM with one JWT authorizer on every route, the catch-all included, and passes the principal claim and super users', () => {
    const issuer = 'https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc';
    const s = synth({ jwtAuthorizer: { issuer, audience: ['client-1', 'client-2'], principalClaim: 'email' }, superUsers: ['User:ops@example.com', 'User:admin'] });
    const authorizers = ofHttpApi(s, 'AWS::ApiGatewayV2::Authorizer');
    expect(authorizers).toHaveLength(1);
    const [authorizerId, a] = authorizers[0] as [string, any];
    expect(a.AuthorizerType).toBe('JWT');
    expect(a.JwtConfiguration).toEqual({ Issuer: issuer, Audience: ['client-1', 'client-2'] });
    expect(a.IdentitySource).toEqual(['$request.header.Authorization']);
    const keys = routes(s).map((r) => r.RouteKey);
    expect(keys).toContain(DEFAULT_ROUTE.path);
    for (const r of routes(s)) {
      expect(r.AuthorizationType, r.RouteKey).toBe('JWT');
      expect(r.AuthorizerId).toEqual({ Ref: authorizerId });
    }
    for (const name of HTTP) {
      expect(envOf(s, name)[ENVIRONMENT.auth]).toBe('jwt');
      expect(envOf(s, name)[ENVIRONMENT.principalClaim]).toBe('email');
      expect(envOf(s, name)[ENVIRONMENT.superUsers]).toBe('User:ops@example.com;User:admin');
    }
  });

  it("defaults the principal claim to 'sub'", () => {
    const s = synth({ jwtAuthorizer: { issuer: 'https://issuer.example.com', audience: ['a'] } });
    for (const name of HTTP) expect(envOf(s, name)[ENVIRONMENT.principalClaim]).toBe('sub');
  });

  it.each([
    [{ jwtAuthorizer: { issuer: 'https://i.example.com', audience: ['a'] }, apiType: 'rest' }, "jwtAuthorizer needs apiType 'http': a REST API has no JWT authorizer"],
    [{ jwtAuthorizer: { issuer: 'https://i.example.com', audience: ['a'] }, authorization: 'none' }, "jwtAuthorizer and authorization 'none' contradict each other: leave authorization unset"],
    [{ jwtAuthorizer: { issuer: 'http://i.example.com', audience: ['a'] } }, 'jwtAuthorizer.issuer must be an https URL, got "http://i.example.com"'],
    [{ jwtAuthorizer: { issuer: 'https://i.example.com', audience: [] } }, 'jwtAuthorizer.audience must list at least one non-empty audience'],
    [{ jwtAuthorizer: { issuer: 'https://i.example.com', audience: ['a b'] } }, 'jwtAuthorizer.audience values are client ids or URIs, with no whitespace, got "a b"'],
    [{ jwtAuthorizer: { issuer: 'https://i.example.com', audience: ['a'], principalClaim: 'a b' } }, 'jwtAuthorizer.principalClaim must be a claim name, got "a b"'],
    [{ superUsers: ['admin'] }, 'superUsers[0] must be a Kafka principal such as "User:alice" (no \';\'), got "admin"'],
    [{ superUsers: ['User:a;User:b'] }, 'superUsers[0] must be a Kafka principal such as "User:alice" (no \';\'), got "User:a;User:b"'],
  ] as [TributaryClusterProps, string][])('rejects %o', (props, message) => {
    expect(() => new TributaryCluster(new Stack(new App(), 'S'), 'Events', props)).toThrow(message);
  });
});
