/**
 * The API, built from the route table (lib/http/routes.ts): one route per ROUTES entry plus the
 * catch-all, each to the function the table names. An HTTP API (payload 2.0, what the handlers
 * speak), or a REST API with the same paths for LocalStack's free plan (its payload 1.0 events are
 * rewritten by runtime/rest-event.ts, which the bundler wraps around every HTTP function).
 * The console's static routes (lib/http/static-routes.ts) join them with no authorizer.
 */
import { Duration, Validations } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer, HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { Metric } from 'aws-cdk-lib/aws-cloudwatch';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { ILogGroup } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { StaticRouteSpec } from '../lib/http/static-routes.js';
import type { RouteSpec } from '../lib/http/routes.js';
import type { ApiAuthorization, ApiType, JwtAuthorizerProps } from './props.js';

export interface ApiOptions {
  /** The API's name (shown in the console). */
  readonly name: string;
  readonly type: ApiType;
  readonly authorization: ApiAuthorization;
  /** Replaces IAM with a JWT authorizer on every route (HTTP API only). */
  readonly jwt?: JwtAuthorizerProps;
  readonly routes: readonly RouteSpec[];
  /** The catch-all (`$default`) route. */
  readonly defaultRoute: RouteSpec;
  /** Routes open to anyone whatever `authorization` and `jwt` say: the console's static files. */
  readonly staticRoutes: readonly StaticRouteSpec[];
  readonly functions: Readonly<Record<string, IFunction>>;
  readonly accessLogs: ILogGroup;
  /** Stage throttling of the whole API. */
  readonly throttle: { readonly rateLimit: number; readonly burstLimit: number };
}

export interface ClusterApi {
  readonly api: apigwv2.HttpApi | apigw.RestApi;
  readonly url: string;
  readonly metrics: { readonly count: Metric; readonly clientErrors: Metric; readonly serverErrors: Metric; readonly latency: Metric };
}

/** The REST API's stage; the HTTP API uses `$default`, which has no path segment. */
export const REST_STAGE = 'prod';

/** Every route's function, checked before anything is built. */
function functionsOf(o: ApiOptions): (name: string) => IFunction {
  for (const route of [...o.routes, o.defaultRoute, ...o.staticRoutes]) {
    if (!o.functions[route.fn]) throw new Error(`route ${route.method} ${route.path} names function '${route.fn}', which is not in the function catalog`);
  }
  return (name) => o.functions[name] as IFunction;
}

const memo = <T>(make: (name: string) => T): ((name: string) => T) => {
  const made = new Map<string, T>();
  return (name) => {
    let v = made.get(name);
    if (v === undefined) made.set(name, (v = make(name)));
    return v;
  };
};

/** Access log line (HTTP API context variables): who called what, the outcome, and why it failed. */
const HTTP_ACCESS_LOG = apigw.AccessLogFormat.custom(JSON.stringify({
  requestId: '$context.requestId', time: '$context.requestTime', ip: '$context.identity.sourceIp',
  caller: '$context.identity.userArn', routeKey: '$context.routeKey', path: '$context.path', status: '$context.status',
  protocol: '$context.protocol', responseLength: '$context.responseLength', latencyMs: '$context.responseLatency',
  integrationLatencyMs: '$context.integrationLatency', error: '$context.error.message', integrationError: '$context.integrationErrorMessage',
}));

/** Why the console's routes have no authorizer (cdk-nag asks). */
const STATIC_REASON = "The console's static files (and its config.json, which names the auth mode and the OIDC client, both public) hold no data and need no credentials; the app's API calls go to the other routes with the API's authorization.";

export function buildApi(scope: Construct, o: ApiOptions): ClusterApi {
  return o.type === 'http' ? buildHttpApi(scope, o) : buildRestApi(scope, o);
}

function buildHttpApi(scope: Construct, o: ApiOptions): ClusterApi {
  const fn = functionsOf(o);
  // One integration (and one invoke permission, scoped to this API) per function rather than per route.
  const integration = memo((name) => new HttpLambdaIntegration(`${name}-integration`, fn(name), {
    scopePermissionToRoute: false, timeout: Duration.seconds(29),
  }));
  const api = new apigwv2.HttpApi(scope, 'HttpApi', {
    apiName: o.name,
    description: 'Tributary: Kafka REST Proxy v3/v2 API',
    createDefaultStage: false,
    // The catch-all gets its own integration: its permission (`<api>/*/$default`) is not covered
    // by the API-scoped one (`<api>/*/*/*`).
    defaultIntegration: new HttpLambdaIntegration('default-integration', fn(o.defaultRoute.fn), { timeout: Duration.seconds(29) }),
    defaultAuthorizer: o.jwt
      ? new HttpJwtAuthorizer('JwtAuthorizer', o.jwt.issuer, { jwtAudience: [...o.jwt.audience], authorizerName: `${o.name}-jwt` })
      : o.authorization === 'iam' ? new HttpIamAuthorizer() : new apigwv2.HttpNoneAuthorizer(),
  });
  for (const route of o.routes) {
    api.addRoutes({ path: route.path, methods: [apigwv2.HttpMethod[route.method]], integration: integration(route.fn) });
  }
  for (const route of o.staticRoutes) {
    const [added] = api.addRoutes({
      path: route.path, methods: [apigwv2.HttpMethod[route.method]], integration: integration(route.fn), authorizer: new apigwv2.HttpNoneAuthorizer(),
    });
    if (added) Validations.of(added).acknowledge({ id: 'AwsSolutions-APIG4', reason: STATIC_REASON });
  }
  const stage = new apigwv2.HttpStage(scope, 'HttpStage', {
    httpApi: api,
    stageName: '$default',
    autoDeploy: true,
    throttle: o.throttle,
    accessLogSettings: { destination: new apigwv2.LogGroupLogDestination(o.accessLogs), format: HTTP_ACCESS_LOG },
  });
  if (o.authorization === 'none') {
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-APIG4', reason: "authorization: 'none' was chosen by the deployer: the API is open to anyone who knows its URL.",
    });
  }
  return {
    api,
    url: stage.url,
    metrics: { count: api.metricCount(), clientErrors: api.metricClientError(), serverErrors: api.metricServerError(), latency: api.metricLatency() },
  };
}

/** Checks what API Gateway would reject only at deploy time: two different variables under one parent. */
function checkRestPaths(routes: readonly { readonly method: string; readonly path: string }[]): void {
  const variableAt = new Map<string, string>();
  for (const route of routes) {
    const parts = route.path.split('/').filter((s) => s !== '');
    parts.forEach((part, i) => {
      if (!part.startsWith('{')) return;
      const parent = `/${parts.slice(0, i).join('/')}`;
      const seen = variableAt.get(parent);
      if (seen !== undefined && seen !== part) {
        throw new Error(`A REST API cannot serve both ${parent}/${seen} and ${parent}/${part}: sibling path variables must have one name (route ${route.method} ${route.path})`);
      }
      variableAt.set(parent, part);
    });
  }
}

function buildRestApi(scope: Construct, o: ApiOptions): ClusterApi {
  const fn = functionsOf(o);
  checkRestPaths([...o.routes, ...o.staticRoutes]);
  const authorizationType = o.authorization === 'iam' ? apigw.AuthorizationType.IAM : apigw.AuthorizationType.NONE;
  const api = new apigw.RestApi(scope, 'RestApi', {
    restApiName: o.name,
    description: 'Tributary: Kafka REST Proxy v3/v2 API',
    endpointTypes: [apigw.EndpointType.REGIONAL],
    // Compressed request bodies (Content-Encoding: gzip) come as application/octet-stream: without
    // a binary media type a REST API hands a Lambda proxy the body as UTF-8 text, mangling them.
    binaryMediaTypes: ['application/octet-stream'],
    // API Gateway writes REST access and execution logs only with the account's CloudWatch role set.
    cloudWatchRole: true,
    deployOptions: {
      stageName: REST_STAGE,
      accessLogDestination: new apigw.LogGroupLogDestination(o.accessLogs),
      accessLogFormat: apigw.AccessLogFormat.jsonWithStandardFields({
        caller: true, httpMethod: true, ip: true, protocol: true, requestTime: true, resourcePath: true, responseLength: true, status: true, user: true,
      }),
      loggingLevel: apigw.MethodLoggingLevel.ERROR,
      dataTraceEnabled: false,
      metricsEnabled: true,
      throttlingRateLimit: o.throttle.rateLimit,
      throttlingBurstLimit: o.throttle.burstLimit,
    },
    defaultMethodOptions: { authorizationType },
  });
  // One invoke permission per function, scoped to this API.
  const integration = memo((name) => new apigw.LambdaIntegration(fn(name), {
    proxy: true, scopePermissionToMethod: false, timeout: Duration.seconds(29),
  }));
  const resources = new Map<string, apigw.IResource>([['/', api.root]]);
  const resourceFor = (p: string): apigw.IResource => {
    let r = resources.get(p);
    if (!r) resources.set(p, (r = api.root.resourceForPath(p)));
    return r;
  };
  const parentsOf = (p: string) => {
    const parts = p.split('/').filter((s) => s !== '');
    for (let i = 1; i < parts.length; i++) resourceFor(`/${parts.slice(0, i).join('/')}`);
  };
  for (const route of o.routes) {
    parentsOf(route.path);
    resourceFor(route.path).addMethod(route.method, integration(route.fn));
  }
  for (const route of o.staticRoutes) {
    parentsOf(route.path);
    const method = resourceFor(route.path).addMethod(route.method, integration(route.fn), { authorizationType: apigw.AuthorizationType.NONE });
    Validations.of(method).acknowledge({ id: 'AwsSolutions-APIG4', reason: STATIC_REASON }, { id: 'AwsSolutions-COG4', reason: STATIC_REASON });
  }
  // The catch-all, as an HTTP API's `$default`: any other method on a known path, and any other path.
  const catchAll = integration(o.defaultRoute.fn);
  for (const resource of resources.values()) resource.addMethod('ANY', catchAll);
  api.root.addResource('{proxy+}').addMethod('ANY', catchAll);

  Validations.of(api).acknowledge(
    {
      id: 'AwsSolutions-APIG2',
      reason: 'Requests are validated by the handlers (zod schemas), which answer with Kafka REST Proxy error bodies; API Gateway request validation would answer in its own format.',
    },
    {
      id: 'AwsSolutions-APIG3',
      reason: 'No WAF web ACL by default: callers are IAM-authenticated. Associate one with the stage if the API is exposed beyond trusted principals.',
    },
    {
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
      reason: 'The role API Gateway needs to write REST API logs to CloudWatch (an account setting); AWS maintains this managed policy for exactly that purpose.',
    },
    {
      id: 'AwsSolutions-COG4',
      reason: 'Callers authenticate with IAM (SigV4), as the HTTP API does; there is no Cognito user pool.',
    },
  );
  if (o.authorization === 'none') {
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-APIG4', reason: "authorization: 'none' was chosen by the deployer: the API is open to anyone who knows its URL.",
    });
  }
  return {
    api,
    url: api.url,
    metrics: { count: api.metricCount(), clientErrors: api.metricClientError(), serverErrors: api.metricServerError(), latency: api.metricLatency() },
  };
}
