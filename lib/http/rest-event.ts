/**
 * Runs inside the deployed HTTP functions (the bundler wraps each of them with it): an API
 * Gateway REST API sends payload format 1.0, the handlers speak the HTTP API's 2.0, so a 1.0 event
 * is rewritten into the 2.0 event an HTTP API would have sent for the same request. A 2.0 event
 * passes through untouched, so one bundle serves both `apiType`s. The responses need no change:
 * `{statusCode, headers, body}` is valid in both formats.
 */
import type { APIGatewayProxyEvent, APIGatewayProxyEventV2 } from 'aws-lambda';
import { STATIC_ROUTES, staticRouteKey } from './static-routes.js';
import { ROUTES, routeKey } from './routes.js';

const KNOWN_ROUTES = new Set([...ROUTES.map(routeKey), ...STATIC_ROUTES.map(staticRouteKey)]);

export function isRestEvent(event: unknown): event is APIGatewayProxyEvent {
  return typeof event === 'object' && event !== null && 'httpMethod' in event && 'resource' in event && !('routeKey' in event);
}

/** Multi-valued headers and query parameters are joined with commas, as HTTP APIs do. */
function joined(single: Record<string, string | undefined> | null, multi: Record<string, string[] | undefined> | null): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(single ?? {})) if (v !== undefined) out[k] = v;
  for (const [k, v] of Object.entries(multi ?? {})) if (v && v.length > 0) out[k] = v.join(',');
  return out;
}

function rawQueryString(multi: Record<string, string[] | undefined> | null, single: Record<string, string | undefined> | null): string {
  const pairs: string[] = [];
  const source = multi ?? Object.fromEntries(Object.entries(single ?? {}).map(([k, v]) => [k, v === undefined ? [] : [v]]));
  for (const [k, values] of Object.entries(source)) {
    for (const v of values ?? []) pairs.push(`${encodeURIComponent(k)}=${encodeURIComponent(v)}`);
  }
  return pairs.join('&');
}

/**
 * The 2.0 event for a 1.0 one. The route key is `<METHOD> <resource>` when that is one of the
 * routes (the REST API's resources are built from the same paths), else `$default`, which is what
 * an HTTP API reports for a request no route matches (the REST API sends those through `ANY`
 * methods and `/{proxy+}`).
 */
export function toHttpApiEvent(event: APIGatewayProxyEvent | APIGatewayProxyEventV2): APIGatewayProxyEventV2 {
  if (!isRestEvent(event)) return event;
  const ctx = event.requestContext;
  const key = `${event.httpMethod} ${event.resource}`;
  const route = KNOWN_ROUTES.has(key) ? key : '$default';
  const headers = joined(event.headers, event.multiValueHeaders);
  const query = joined(event.queryStringParameters, event.multiValueQueryStringParameters);
  const pathParameters = Object.fromEntries(Object.entries(event.pathParameters ?? {}).filter((e): e is [string, string] => e[1] !== undefined));
  return {
    version: '2.0',
    routeKey: route,
    rawPath: event.path,
    rawQueryString: rawQueryString(event.multiValueQueryStringParameters, event.queryStringParameters),
    headers,
    ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
    ...(route !== '$default' && Object.keys(pathParameters).length > 0 ? { pathParameters } : {}),
    ...(event.body !== null && event.body !== undefined ? { body: event.body } : {}),
    isBase64Encoded: event.isBase64Encoded ?? false,
    ...(event.stageVariables ? { stageVariables: event.stageVariables as Record<string, string> } : {}),
    requestContext: {
      accountId: ctx.accountId,
      apiId: ctx.apiId,
      domainName: ctx.domainName ?? headers.host ?? '',
      domainPrefix: ctx.domainPrefix ?? '',
      http: {
        method: event.httpMethod,
        path: event.path,
        protocol: ctx.protocol ?? 'HTTP/1.1',
        sourceIp: ctx.identity?.sourceIp ?? '',
        userAgent: ctx.identity?.userAgent ?? headers['user-agent'] ?? '',
      },
      requestId: ctx.requestId,
      routeKey: route,
      stage: ctx.stage,
      time: ctx.requestTime ?? new Date(ctx.requestTimeEpoch).toISOString(),
      timeEpoch: ctx.requestTimeEpoch,
    },
  };
}

/** Wraps a payload-2.0 handler so that it also takes payload-1.0 events. */
export function acceptRestEvents<C, R>(
  handler: (event: APIGatewayProxyEventV2, context: C) => Promise<R>,
): (event: APIGatewayProxyEvent | APIGatewayProxyEventV2, context: C) => Promise<R> {
  return (event, context) => handler(toHttpApiEvent(event), context);
}
