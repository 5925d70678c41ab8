/**
 * The WebSocket API beside the HTTP API: its three routes to the websocket function, `$connect`
 * authorized as the HTTP API is (IAM, a JWT checked by the websocket-authorizer function, or
 * nobody), its stage's logs and throttling, its URL, and the IAM it grants: the functions that
 * wake deliveries may invoke the websocket function and nothing else, and only the websocket
 * function may manage this stage's connections.
 */
import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { deployedFunctions } from '../../cdk/cluster.js';
import { WEBSOCKET_ROUTES, WEBSOCKET_STAGE } from '../../cdk/websocket.js';
import { ENVIRONMENT } from '../../lib/config.js';
import { FUNCTIONS, functionSpec, type FunctionName } from '../../lib/functions/catalog.js';
import { permissionsOf } from './iam.js';
import { logicalId, resourcesOf, synth, type Synthesized } from './synth.js';

const ISSUER = 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc';
const JWT = { jwtAuthorizer: { issuer: ISSUER, audience: ['client-1', 'client-2'], principalClaim: 'email' } };

const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
const fnId = (s: Synthesized, name: FunctionName): string => {
  const fn = s.stack.cluster.functions[name];
  if (!fn) throw new Error(`${name} is not deployed`);
  return logicalId(s, fn);
};
const envOf = (s: Synthesized, name: FunctionName): Record<string, unknown> => s.json.Resources[fnId(s, name)]?.Properties.Environment.Variables ?? {};
const wsApiId = (s: Synthesized): string => {
  const ws = resourcesOf(s, 'AWS::ApiGatewayV2::Api').filter(([, a]) => a.ProtocolType === 'WEBSOCKET');
  expect(ws).toHaveLength(1);
  return (ws[0] as [string, unknown])[0];
};
const ofWsApi = (s: Synthesized, type: string) => resourcesOf(s, type).filter(([, r]) => r.ApiId?.Ref === wsApiId(s));
const routeOf = (s: Synthesized, key: string) => ofWsApi(s, 'AWS::ApiGatewayV2::Route').find(([, r]) => r.RouteKey === key)?.[1];
/** `Fn::Join` of an execute-api URL or ARN, as the template writes it. */
const joined = (...parts: unknown[]) => ({ 'Fn::Join': ['', parts] });
const connectionsArn = (s: Synthesized) => joined('arn:', { Ref: 'AWS::Partition' }, ':execute-api:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':', { Ref: wsApiId(s) }, `/${WEBSOCKET_STAGE}/*/@connections/*`);
/** Every Allow statement of a function's role that names one of `actions`. */
const statementsWith = (s: Synthesized, name: FunctionName, prefix: string) =>
  permissionsOf(s, fnId(s, name)).statements.filter((st) => st.Effect === 'Allow' && list<string>(st.Action).some((a) => a.startsWith(prefix)));

describe('TributaryCluster: the WebSocket API (IAM)', () => {
  let s: Synthesized;
  beforeAll(() => {
    s = synth({ brokers: 1 });
  });

  it('deploys a WebSocket API whose three routes all go to the websocket function through one integration', () => {
    const routes = ofWsApi(s, 'AWS::ApiGatewayV2::Route').map(([, r]) => r);
    expect(routes.map((r) => r.RouteKey).sort()).toEqual([...WEBSOCKET_ROUTES].sort());
    const integrations = ofWsApi(s, 'AWS::ApiGatewayV2::Integration');
    expect(integrations).toHaveLength(1);
    const [integrationId, integration] = integrations[0] as [string, any];
    expect(integration).toMatchObject({ IntegrationType: 'AWS_PROXY', TimeoutInMillis: 29_000 });
    expect(JSON.stringify(integration.IntegrationUri)).toContain(JSON.stringify({ 'Fn::GetAtt': [fnId(s, 'websocket'), 'Arn'] }));
    for (const r of routes) expect(r.Target, r.RouteKey).toEqual(joined('integrations/', { Ref: integrationId }));
    expect(s.json.Resources[wsApiId(s)]?.Properties).toMatchObject({ ProtocolType: 'WEBSOCKET', RouteSelectionExpression: '$request.body.action' });
  });

  it('authorizes $connect with IAM, and nothing else (API Gateway authorizes a connection once)', () => {
    expect(routeOf(s, '$connect')?.AuthorizationType).toBe('AWS_IAM');
    expect(routeOf(s, '$disconnect')?.AuthorizationType).toBe('NONE');
    expect(routeOf(s, '$default')?.AuthorizationType).toBe('NONE');
    expect(ofWsApi(s, 'AWS::ApiGatewayV2::Authorizer')).toHaveLength(0);
    expect(s.stack.cluster.functions['websocket-authorizer']).toBeUndefined();
  });

  it('deploys the stage with access logs and the HTTP API stage\'s throttling, auto-deployed', () => {
    const [stage] = ofWsApi(s, 'AWS::ApiGatewayV2::Stage').map(([, st]) => st);
    const [httpStage] = resourcesOf(s, 'AWS::ApiGatewayV2::Stage').map(([, st]) => st).filter((st) => st.StageName === '$default');
    expect(stage).toMatchObject({ StageName: WEBSOCKET_STAGE, AutoDeploy: true, DefaultRouteSettings: httpStage.DefaultRouteSettings });
    expect(stage.AccessLogSettings.DestinationArn['Fn::GetAtt'][1]).toBe('Arn');
    expect(s.json.Resources[stage.AccessLogSettings.DestinationArn['Fn::GetAtt'][0]]?.Type).toBe('AWS::Logs::LogGroup');
    expect(Object.keys(JSON.parse(stage.AccessLogSettings.Format))).toEqual(expect.arrayContaining(['connectionId', 'eventType', 'routeKey', 'status', 'principal', 'caller']));
  });

  it('outputs the stage\'s wss:// URL', () => {
    expect(s.json.Outputs?.WebSocketUrl?.Value).toEqual(joined('wss://', { Ref: wsApiId(s) }, '.execute-api.', { Ref: 'AWS::Region' }, '.', { Ref: 'AWS::URLSuffix' }, `/${WEBSOCKET_STAGE}`));
  });

  it('lets each function whose catalog entry invokes the websocket function invoke exactly it, and tells it the name', () => {
    const invokers = FUNCTIONS.filter((f) => (f.invokes ?? []).length > 0).map((f) => f.name);
    expect(invokers.sort()).toEqual(['controller', 'groups', 'produce', 'replicator']);
    for (const spec of deployedFunctions(s.stack.cluster.settings)) {
      const grants = statementsWith(s, spec.name, 'lambda:');
      if (!(spec.invokes ?? []).includes('websocket')) {
        expect(grants, spec.name).toEqual([]);
        expect(envOf(s, spec.name)[ENVIRONMENT.websocketFunction], spec.name).toBeUndefined();
        continue;
      }
      expect(grants, spec.name).toEqual([{ Action: 'lambda:InvokeFunction', Effect: 'Allow', Resource: { 'Fn::GetAtt': [fnId(s, 'websocket'), 'Arn'] } }]);
      expect(envOf(s, spec.name)[ENVIRONMENT.websocketFunction], spec.name).toEqual({ Ref: fnId(s, 'websocket') });
    }
  });

  it('lets the websocket function invoke a push subscription\'s Lambda target only once granted', () => {
    const t = synth({}, { extend: (stack) => {
      const target = new lambda.Function(stack, 'Receiver', { runtime: lambda.Runtime.NODEJS_20_X, handler: 'index.handler', code: lambda.Code.fromInline('exports.handler = async () => {}') });
      stack.cluster.grantPushTarget(target);
    } });
    const receiver = Object.keys(t.json.Resources).find((id) => id.startsWith('Receiver') && t.json.Resources[id]?.Type === 'AWS::Lambda::Function');
    const grants = statementsWith(t, 'websocket', 'lambda:').filter((st) => JSON.stringify(st.Resource).includes(receiver!));
    expect(grants.map((g) => g.Action)).toEqual(['lambda:InvokeFunction']);
    for (const name of ['produce', 'fetch', 'admin', 'groups'] as const) {
      expect(statementsWith(t, name, 'lambda:').some((st) => JSON.stringify(st.Resource).includes(receiver!)), name).toBe(false);
    }
  });

  it('lets only the websocket function manage connections, on this API\'s stage only, and tells it the endpoint', () => {
    expect(functionSpec('websocket').managesConnections).toBe(true);
    for (const spec of deployedFunctions(s.stack.cluster.settings)) {
      const grants = statementsWith(s, spec.name, 'execute-api:');
      if (spec.name !== 'websocket') {
        expect(grants, spec.name).toEqual([]);
        expect(envOf(s, spec.name)[ENVIRONMENT.websocketEndpoint], spec.name).toBeUndefined();
        continue;
      }
      expect(grants).toEqual([{ Action: 'execute-api:ManageConnections', Effect: 'Allow', Resource: connectionsArn(s) }]);
      expect(envOf(s, 'websocket')[ENVIRONMENT.websocketEndpoint]).toEqual(
        joined('https://', { Ref: wsApiId(s) }, '.execute-api.', { Ref: 'AWS::Region' }, '.', { Ref: 'AWS::URLSuffix' }, `/${WEBSOCKET_STAGE}`));
    }
    expect(envOf(s, 'websocket')[ENVIRONMENT.lambdaEndpoint]).toBeUndefined();
  });

  it('tells the websocket function how callers authenticate, as the HTTP functions', () => {
    expect(envOf(s, 'websocket')[ENVIRONMENT.auth]).toBe('iam');
  });

  it('lets API Gateway invoke the websocket function from this API\'s routes only', () => {
    const permissions = resourcesOf(s, 'AWS::Lambda::Permission').filter(([, p]) => p.FunctionName?.['Fn::GetAtt']?.[0] === fnId(s, 'websocket'));
    expect(permissions.map(([, p]) => JSON.stringify(p.SourceArn)).sort()).toEqual(WEBSOCKET_ROUTES.map((key) => JSON.stringify(joined(
      'arn:', { Ref: 'AWS::Partition' }, ':execute-api:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':', { Ref: wsApiId(s) }, `/*${key}`,
    ))).sort());
  });

  it('grants a principal $connect on the stage with grantWebSocketConnect', () => {
    const role = new iam.Role(s.stack, 'Consumer', { assumedBy: new iam.AccountRootPrincipal() });
    s.stack.cluster.grantWebSocketConnect(role);
    const policy = Stack.of(role).resolve((role.node.tryFindChild('DefaultPolicy') as iam.Policy).document.toJSON());
    expect(policy.Statement).toEqual([{
      Action: 'execute-api:Invoke', Effect: 'Allow',
      Resource: joined('arn:', { Ref: 'AWS::Partition' }, ':execute-api:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':', { Ref: wsApiId(s) }, `/${WEBSOCKET_STAGE}/$connect`),
    }]);
  });

  it('gives the websocket function the per-function alarms', () => {
    expect(Object.keys(s.stack.cluster.alarms)).toEqual(expect.arrayContaining(['WebsocketErrors', 'WebsocketThrottles']));
  });
});

describe('TributaryCluster: the WebSocket API (JWT)', () => {
  let s: Synthesized;
  beforeAll(() => {
    s = synth({ brokers: 1, ...JWT, superUsers: ['User:ops@example.com'] });
  });

  it('authorizes $connect with a Lambda REQUEST authorizer backed by the websocket-authorizer function, with no identity source', () => {
    const authorizers = ofWsApi(s, 'AWS::ApiGatewayV2::Authorizer');
    expect(authorizers).toHaveLength(1);
    const [authorizerId, a] = authorizers[0] as [string, any];
    expect(a.AuthorizerType).toBe('REQUEST');
    expect(JSON.stringify(a.AuthorizerUri)).toContain(JSON.stringify({ 'Fn::GetAtt': [fnId(s, 'websocket-authorizer'), 'Arn'] }));
    // Absent, so API Gateway calls the authorizer whether the token is in ?token= or the header.
    expect(a).not.toHaveProperty('IdentitySource');
    expect(routeOf(s, '$connect')).toMatchObject({ AuthorizationType: 'CUSTOM', AuthorizerId: { Ref: authorizerId } });
    expect(routeOf(s, '$default')?.AuthorizationType).toBe('NONE');
    const permissions = resourcesOf(s, 'AWS::Lambda::Permission').filter(([, p]) => p.FunctionName?.['Fn::GetAtt']?.[0] === fnId(s, 'websocket-authorizer'));
    expect(permissions.map(([, p]) => p.SourceArn)).toEqual([joined(
      'arn:', { Ref: 'AWS::Partition' }, ':execute-api:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':', { Ref: wsApiId(s) }, '/authorizers/', { Ref: authorizerId },
    )]);
  });

  it('deploys the authorizer from its catalog entry, told the issuer, the audiences and the principal claim', () => {
    const spec = functionSpec('websocket-authorizer');
    expect(spec).toMatchObject({ trigger: 'authorizer', memoryMb: 256, timeoutSeconds: 10, coordination: 'none', replicas: 'none', bucketRead: [], bucketWrite: [] });
    expect(s.json.Resources[fnId(s, 'websocket-authorizer')]?.Properties).toMatchObject({ MemorySize: 256, Timeout: 10 });
    expect(envOf(s, 'websocket-authorizer')).toMatchObject({
      [ENVIRONMENT.jwtIssuer]: ISSUER, [ENVIRONMENT.jwtAudience]: 'client-1 client-2', [ENVIRONMENT.principalClaim]: 'email',
    });
    // It decides nothing but who the caller is: the websocket function enforces the ACLs.
    expect(envOf(s, 'websocket-authorizer')[ENVIRONMENT.auth]).toBeUndefined();
    expect(envOf(s, 'websocket')).toMatchObject({ [ENVIRONMENT.auth]: 'jwt', [ENVIRONMENT.superUsers]: 'User:ops@example.com' });
  });

  it('gives the authorizer no access to the cluster: its own logs only (no table, stream, bucket, key or function)', () => {
    const p = permissionsOf(s, fnId(s, 'websocket-authorizer'));
    expect(p.statements.length).toBeGreaterThan(0);
    for (const st of p.statements) {
      for (const action of list<string>(st.Action)) expect(action).toMatch(/^logs:/);
      expect(list(st.Resource)).toEqual([{ 'Fn::GetAtt': [expect.stringMatching(/^ClusterWebsocketAuthorizerLogs/), 'Arn'] }]);
    }
  });

  it('gives the authorizer the per-function alarms', () => {
    expect(Object.keys(s.stack.cluster.alarms)).toEqual(expect.arrayContaining(['WebsocketAuthorizerErrors', 'WebsocketAuthorizerThrottles']));
  });
});

describe('TributaryCluster: the WebSocket API, other flavours', () => {
  it("leaves $connect open with authorization 'none'", () => {
    const s = synth({ brokers: 1, authorization: 'none' });
    expect(routeOf(s, '$connect')?.AuthorizationType).toBe('NONE');
    expect(ofWsApi(s, 'AWS::ApiGatewayV2::Authorizer')).toHaveLength(0);
  });

  it('deploys no WebSocket API, websocket function or invoke grant with a REST API (LocalStack\'s free plan has none)', () => {
    const s = synth({ brokers: 1, apiType: 'rest' });
    expect(resourcesOf(s, 'AWS::ApiGatewayV2::Api')).toHaveLength(0);
    expect(s.stack.cluster.functions.websocket).toBeUndefined();
    expect(s.stack.cluster.webSocketUrl).toBeUndefined();
    expect(s.json.Outputs?.WebSocketUrl).toBeUndefined();
    for (const name of ['produce', 'replicator', 'controller'] as const) {
      expect(statementsWith(s, name, 'lambda:'), name).toEqual([]);
      expect(envOf(s, name)[ENVIRONMENT.websocketFunction], name).toBeUndefined();
    }
    expect(() => s.stack.cluster.grantWebSocketConnect(new iam.Role(s.stack, 'Consumer', { assumedBy: new iam.AccountRootPrincipal() })))
      .toThrow("grantWebSocketConnect: this cluster has no WebSocket API (it comes with apiType 'http')");
  });

  it('deploys exactly the catalog\'s functions each flavour needs', () => {
    const names = (p: Parameters<typeof deployedFunctions>[0]) => deployedFunctions(p).map((f) => f.name);
    const all = FUNCTIONS.map((f) => f.name);
    expect(names({ apiType: 'http', jwtAuthorizer: JWT.jwtAuthorizer })).toEqual(all);
    expect(names({ apiType: 'http', jwtAuthorizer: undefined })).toEqual(all.filter((n) => n !== 'websocket-authorizer'));
    expect(names({ apiType: 'rest', jwtAuthorizer: undefined })).toEqual(all.filter((n) => n !== 'websocket-authorizer' && n !== 'websocket'));
  });
});
