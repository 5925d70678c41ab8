/**
 * Template assertions for the console: its routes reach the console function with no
 * authorizer whatever the API's authorization (IAM, JWT; HTTP or REST API), its role touches no
 * table, stream, bucket or key, and with a JWT authorizer its environment names the OIDC provider
 * and client the app signs in with.
 */
import { App, Stack } from 'aws-cdk-lib';
import * as kms from 'aws-cdk-lib/aws-kms';
import { describe, expect, it } from 'vitest';
import { TributaryStack } from '../../cdk/stack.js';
import { TributaryCluster } from '../../cdk/cluster.js';
import type { TributaryClusterProps } from '../../cdk/props.js';
import { ENVIRONMENT } from '../../lib/config.js';
import { functionSpec } from '../../lib/functions/catalog.js';
import { STATIC_ROUTES, staticRouteKey } from '../../lib/http/static-routes.js';
import { permissionsOf } from './iam.js';
import { logicalId, resourcesOf, synth, testApp, type Synthesized } from './synth.js';

const ISSUER = 'https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc';
const consoleId = (s: Synthesized) => logicalId(s, s.stack.cluster.functions.console as never);
const envOf = (s: Synthesized): Record<string, string> => s.json.Resources[consoleId(s)]?.Properties.Environment.Variables;
const staticKeys = STATIC_ROUTES.map(staticRouteKey).sort();

/** The HTTP API's routes by key (not the WebSocket API's): authorization type and the function logical id their integration invokes. */
function httpRoutes(s: Synthesized): Map<string, { auth: string; fn: string }> {
  const integrations = new Map(resourcesOf(s, 'AWS::ApiGatewayV2::Integration'));
  const httpApi = logicalId(s, s.stack.cluster.api);
  return new Map(resourcesOf(s, 'AWS::ApiGatewayV2::Route').filter(([, r]) => r.ApiId?.Ref === httpApi).map(([, r]) => {
    const integration = integrations.get(r.Target['Fn::Join'][1][1].Ref);
    return [r.RouteKey as string, { auth: r.AuthorizationType as string, fn: integration.IntegrationUri['Fn::GetAtt'][0] as string }];
  }));
}

describe('TributaryCluster: the console', () => {
  it.each<[string, TributaryClusterProps, string]>([
    ['IAM', {}, 'AWS_IAM'],
    ['a JWT authorizer', { jwtAuthorizer: { issuer: ISSUER, audience: ['client-1'] } }, 'JWT'],
    ['an open API', { authorization: 'none' }, 'NONE'],
  ])('serves GET and HEAD /ui and /ui/{proxy+} from the console function with no authorizer, on an HTTP API with %s', (_name, props, apiAuth) => {
    const s = synth({ brokers: 1, ...props });
    const routes = httpRoutes(s);
    for (const key of staticKeys) expect(routes.get(key), key).toEqual({ auth: 'NONE', fn: consoleId(s) });
    for (const [key, r] of routes) if (!staticKeys.includes(key)) expect(r.auth, key).toBe(apiAuth);
    // No other route reaches the console function.
    expect([...routes].filter(([, r]) => r.fn === consoleId(s)).map(([k]) => k).sort()).toEqual(staticKeys);
  });

  it('serves them with authorization NONE on a REST API with IAM, every other method keeping AWS_IAM', () => {
    const s = synth({ brokers: 1, apiType: 'rest' });
    const resources = new Map(resourcesOf(s, 'AWS::ApiGateway::Resource'));
    const pathOf = (ref: any): string => {
      if (ref['Fn::GetAtt']?.[1] === 'RootResourceId') return '';
      const r = resources.get(ref.Ref);
      return `${pathOf(r.ParentId)}/${r.PathPart}`;
    };
    const methods = resourcesOf(s, 'AWS::ApiGateway::Method').map(([, m]) => ({
      key: `${m.HttpMethod} ${pathOf(m.ResourceId)}`, auth: m.AuthorizationType,
      fn: JSON.stringify(m.Integration.Uri).includes(`"${consoleId(s)}"`),
    }));
    const open = methods.filter((m) => m.auth === 'NONE');
    expect(open.map((m) => m.key).sort()).toEqual(staticKeys);
    for (const m of open) expect(m.fn, m.key).toBe(true);
    for (const m of methods.filter((x) => x.auth !== 'NONE')) expect(m.auth, m.key).toBe('AWS_IAM');
  });

  it('gives the console function 128 MB, 5 s, and a role with no table, stream, bucket or key access', () => {
    const app = testApp();
    const key = new kms.Key(new Stack(app, 'Keys'), 'ClusterKey');
    const stack = new TributaryStack(app, 'Encrypted', { cluster: { brokers: 2, encryptionKey: key } });
    const s = { ...synth({ brokers: 2 }) };
    for (const target of [s, { ...s, stack, json: app.synth().getStackByName('Encrypted').template }] as Synthesized[]) {
      const id = logicalId(target, target.stack.cluster.functions.console as never);
      expect(target.json.Resources[id]?.Properties).toMatchObject({ MemorySize: 128, Timeout: 5 });
      const p = permissionsOf(target, id);
      expect(Object.fromEntries(p.tables)).toEqual({});
      expect([...p.streams, ...p.objectsRead, ...p.objectsWritten, ...p.listed, ...p.starActions]).toEqual([]);
      const actions = p.statements.flatMap((st) => [st.Action].flat() as string[]);
      expect(actions.filter((a) => !a.startsWith('logs:')), 'only its own logs').toEqual([]);
    }
    expect(functionSpec('console')).toMatchObject({ trigger: 'http', coordination: 'none', replicas: 'none', bucketRead: [], bucketWrite: [], bundlesConsole: true });
  });

  it('tells the console the auth mode, and with a JWT authorizer the OIDC issuer, client (the first audience by default) and scopes', () => {
    const iam = envOf(synth({ brokers: 1 }));
    expect(iam[ENVIRONMENT.auth]).toBe('iam');
    for (const name of [ENVIRONMENT.consoleOidcIssuer, ENVIRONMENT.consoleOidcClientId, ENVIRONMENT.consoleOidcScopes]) expect(iam[name], name).toBeUndefined();

    const jwt = envOf(synth({ brokers: 1, jwtAuthorizer: { issuer: ISSUER, audience: ['client-1', 'client-2'] } }));
    expect(jwt).toMatchObject({
      [ENVIRONMENT.auth]: 'jwt', [ENVIRONMENT.consoleOidcIssuer]: ISSUER, [ENVIRONMENT.consoleOidcClientId]: 'client-1', [ENVIRONMENT.consoleOidcScopes]: 'openid',
    });
    const named = envOf(synth({ brokers: 1, jwtAuthorizer: { issuer: ISSUER, audience: ['api'], consoleClientId: 'console-app', consoleScopes: ['openid', 'email'] } }));
    expect(named).toMatchObject({ [ENVIRONMENT.consoleOidcClientId]: 'console-app', [ENVIRONMENT.consoleOidcScopes]: 'openid email' });
    expect(named[ENVIRONMENT.consoleConnectOrigins]).toBeUndefined();
    const google = envOf(synth({ brokers: 1, jwtAuthorizer: { issuer: 'https://accounts.google.com', audience: ['api'], consoleConnectOrigins: ['https://oauth2.googleapis.com'] } }));
    expect(google[ENVIRONMENT.consoleConnectOrigins]).toBe('https://oauth2.googleapis.com');
  });

  it('tells the console the WebSocket API\'s URL (its live follow), where the deployment has one', () => {
    const s = synth({ brokers: 1 });
    const wsApi = resourcesOf(s, 'AWS::ApiGatewayV2::Api').find(([, a]) => a.ProtocolType === 'WEBSOCKET')?.[0];
    expect(JSON.stringify(envOf(s)[ENVIRONMENT.consoleWebsocketUrl])).toContain(`"Ref":"${wsApi}"`);
    expect(JSON.stringify(envOf(s)[ENVIRONMENT.consoleWebsocketUrl])).toContain('wss://');
    expect(envOf(synth({ brokers: 1, apiType: 'rest' }))[ENVIRONMENT.consoleWebsocketUrl]).toBeUndefined();
  });

  it.each<[TributaryClusterProps, string]>([
    [{ jwtAuthorizer: { issuer: ISSUER, audience: ['a'], consoleClientId: '' } }, 'jwtAuthorizer.consoleClientId must be a non-empty client id, got ""'],
    [{ jwtAuthorizer: { issuer: ISSUER, audience: ['a'], consoleScopes: ['openid email'] } }, 'jwtAuthorizer.consoleScopes must be OAuth scope tokens (no spaces or quotes), got ["openid email"]'],
    [{ jwtAuthorizer: { issuer: ISSUER, audience: ['a'], consoleConnectOrigins: ['https://oauth2.googleapis.com/token'] } }, 'jwtAuthorizer.consoleConnectOrigins must be https origins (https://host[:port], no path), got ["https://oauth2.googleapis.com/token"]'],
    [{ jwtAuthorizer: { issuer: ISSUER, audience: ['a'], consoleConnectOrigins: ['http://idp.example.com'] } }, 'jwtAuthorizer.consoleConnectOrigins must be https origins (https://host[:port], no path), got ["http://idp.example.com"]'],
  ])('rejects %o', (props, message) => {
    expect(() => new TributaryCluster(new Stack(new App(), 'S'), 'Events', props)).toThrow(message);
  });

  it('outputs the console URL, <api url>ui/', () => {
    const s = synth({ brokers: 1 });
    expect(s.stack.cluster.consoleUrl).toBe(`${s.stack.cluster.apiUrl}ui/`);
    expect(s.json.Outputs?.ConsoleUrl).toBeDefined();
  });
});
