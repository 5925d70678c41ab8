/**
 * The WebSocket API (WebSocket consume, beside the HTTP API): `$connect`, `$disconnect` and
 * `$default`, all to the catalog's websocket function, which serves every action a client sends
 * (the route selection expression finds no other route). API Gateway authorizes a connection once,
 * at `$connect`, as the HTTP API authorizes its requests: IAM (SigV4-signed upgrade request), a
 * Lambda REQUEST authorizer checking a JWT (the catalog's websocket-authorizer function), or
 * nobody with `authorization: 'none'`.
 */
import { ArnFormat, Duration, Stack, Validations } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { WebSocketIamAuthorizer, WebSocketLambdaAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { WebSocketLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { ILogGroup } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { ApiAuthorization } from './props.js';

/** The WebSocket API's stage (a WebSocket API has no `$default` stage; the REST API's name). */
export const WEBSOCKET_STAGE = 'prod';

/** The routes: API Gateway's three; every action comes in on `$default`. */
export const WEBSOCKET_ROUTES = ['$connect', '$disconnect', '$default'] as const;

export interface WebSocketApiOptions {
  /** The API's name (shown in the console). */
  readonly name: string;
  /** IAM or none at `$connect`, when there is no `jwtAuthorizer`. */
  readonly authorization: ApiAuthorization;
  /** With a JWT authorizer: the function that checks a connection's token at `$connect`. */
  readonly jwtAuthorizer?: IFunction;
  /** The websocket function: every route. */
  readonly handler: IFunction;
  readonly accessLogs: ILogGroup;
  /** Stage throttling (connections and messages), as the HTTP API's stage. */
  readonly throttle: { readonly rateLimit: number; readonly burstLimit: number };
}

export interface ClusterWebSocketApi {
  readonly api: apigwv2.WebSocketApi;
  readonly stage: apigwv2.WebSocketStage;
  /** `wss://{api}.execute-api.{region}.{suffix}/{stage}`: where clients connect. */
  readonly url: string;
  /** `https://{api}.execute-api.{region}.{suffix}/{stage}`: where the websocket function posts to connections. */
  readonly connectionsEndpoint: string;
  /** `arn:…:execute-api:{region}:{account}:{api}/{stage}/*\/@connections/*`: what `execute-api:ManageConnections` is granted on. */
  readonly connectionsArn: string;
  /** `arn:…:execute-api:{region}:{account}:{api}/{stage}/$connect`: what an IAM caller needs `execute-api:Invoke` on. */
  readonly connectArn: string;
}

/** Access log line (WebSocket API context variables): who connected, what it sent, the outcome and why it failed. */
const WEBSOCKET_ACCESS_LOG = apigw.AccessLogFormat.custom(JSON.stringify({
  requestId: '$context.requestId', time: '$context.requestTime', ip: '$context.identity.sourceIp', caller: '$context.identity.userArn',
  principal: '$context.authorizer.principal', eventType: '$context.eventType', routeKey: '$context.routeKey', connectionId: '$context.connectionId',
  status: '$context.status', integrationLatencyMs: '$context.integrationLatency', error: '$context.error.message',
  authorizerError: '$context.authorizer.error', integrationError: '$context.integration.error',
}));

const NO_ROUTE_AUTHORIZATION = 'API Gateway authorizes a WebSocket connection once, at $connect (IAM and Lambda authorizers attach to $connect only); $disconnect and $default run on a connection $connect admitted.';

export function buildWebSocketApi(scope: Construct, o: WebSocketApiOptions): ClusterWebSocketApi {
  // One integration for the three routes (each route gets its own invoke permission, scoped to it).
  const integration = new WebSocketLambdaIntegration('websocket-integration', o.handler, { timeout: Duration.seconds(29) });
  const authorizer = o.jwtAuthorizer
    ? new WebSocketLambdaAuthorizer('WebSocketJwtAuthorizer', o.jwtAuthorizer, { authorizerName: `${o.name}-ws-jwt` })
    : o.authorization === 'iam' ? new WebSocketIamAuthorizer() : undefined;
  const api = new apigwv2.WebSocketApi(scope, 'WebSocketApi', {
    apiName: `${o.name}-ws`,
    description: 'Tributary: WebSocket consume (records delivered as they become readable)',
    connectRouteOptions: { integration, ...(authorizer ? { authorizer } : {}) },
    disconnectRouteOptions: { integration },
    defaultRouteOptions: { integration },
  });
  if (o.jwtAuthorizer) {
    // No identity source: API Gateway then calls the authorizer on every connection whatever it
    // carries, so the token may be in the query string (browsers) or the Authorization header.
    // (An identity source would be required to be present; WebSocket authorizers cache nothing.)
    for (const child of api.node.findAll()) {
      if (child instanceof apigwv2.CfnAuthorizer) child.addPropertyDeletionOverride('IdentitySource');
    }
  }
  for (const child of api.node.findAll()) {
    if (child instanceof apigwv2.CfnRoute && child.routeKey !== '$connect') {
      Validations.of(child).acknowledge({ id: 'AwsSolutions-APIG4', reason: NO_ROUTE_AUTHORIZATION });
    }
  }
  if (!authorizer) {
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-APIG4', reason: "authorization: 'none' was chosen by the deployer: the WebSocket API is open to anyone who knows its URL, as the HTTP API is.",
    });
  }
  const stage = new apigwv2.WebSocketStage(scope, 'WebSocketStage', {
    webSocketApi: api,
    stageName: WEBSOCKET_STAGE,
    autoDeploy: true,
    throttle: o.throttle,
    accessLogSettings: { destination: new apigwv2.LogGroupLogDestination(o.accessLogs), format: WEBSOCKET_ACCESS_LOG },
  });
  const arn = (resourceName: string) => Stack.of(scope).formatArn({ service: 'execute-api', resource: api.apiId, arnFormat: ArnFormat.SLASH_RESOURCE_NAME, resourceName });
  return {
    api,
    stage,
    url: stage.url,
    connectionsEndpoint: stage.callbackUrl,
    connectionsArn: arn(`${WEBSOCKET_STAGE}/*/@connections/*`),
    connectArn: arn(`${WEBSOCKET_STAGE}/$connect`),
  };
}
