/** The REST API's payload 1.0 events reach the handlers as the HTTP API's 2.0 events would. */
import type { APIGatewayProxyEvent, APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { acceptRestEvents, isRestEvent, toHttpApiEvent } from '../../lib/http/rest-event.js';

const restEvent = (o: Partial<APIGatewayProxyEvent> = {}): APIGatewayProxyEvent => ({
  resource: '/v3/clusters/{cluster_id}/topics/{topic_name}/records',
  path: '/v3/clusters/abc/topics/orders/records',
  httpMethod: 'POST',
  headers: { Host: 'x.execute-api.eu-west-1.amazonaws.com', 'Content-Type': 'application/json' },
  multiValueHeaders: { Host: ['x.execute-api.eu-west-1.amazonaws.com'], 'Content-Type': ['application/json'] },
  queryStringParameters: { acks: 'all' },
  multiValueQueryStringParameters: { acks: ['all'] },
  pathParameters: { cluster_id: 'abc', topic_name: 'orders' },
  stageVariables: null,
  body: '{"value":{"type":"STRING","data":"x"}}',
  isBase64Encoded: false,
  requestContext: {
    accountId: '123456789012', apiId: 'x', domainName: 'x.execute-api.eu-west-1.amazonaws.com', domainPrefix: 'x', httpMethod: 'POST',
    path: '/prod/v3/clusters/abc/topics/orders/records', protocol: 'HTTP/1.1', requestId: 'req-1', requestTime: '29/Nov/2026:17:02:38 +0000',
    requestTimeEpoch: 1_796_000_000_000, resourceId: 'r', resourcePath: '/v3/clusters/{cluster_id}/topics/{topic_name}/records', stage: 'prod',
    identity: { sourceIp: '192.0.2.1', userAgent: 'curl/8', userArn: 'arn:aws:iam::123456789012:user/ops' } as never,
    authorizer: undefined as never,
  },
  ...o,
});

describe('REST events: toHttpApiEvent', () => {
  it('keeps the route key of a known route, its path parameters, query, headers and body', () => {
    const e = toHttpApiEvent(restEvent());
    expect(e).toMatchObject({
      version: '2.0', routeKey: 'POST /v3/clusters/{cluster_id}/topics/{topic_name}/records', rawPath: '/v3/clusters/abc/topics/orders/records',
      rawQueryString: 'acks=all', queryStringParameters: { acks: 'all' }, pathParameters: { cluster_id: 'abc', topic_name: 'orders' },
      body: '{"value":{"type":"STRING","data":"x"}}', isBase64Encoded: false,
      requestContext: { stage: 'prod', requestId: 'req-1', http: { method: 'POST', path: '/v3/clusters/abc/topics/orders/records', sourceIp: '192.0.2.1' } },
    });
    expect(e.headers['Content-Type']).toBe('application/json');
  });

  it('reports $default for the greedy proxy and for a method no route serves, as an HTTP API does', () => {
    expect(toHttpApiEvent(restEvent({ resource: '/{proxy+}', path: '/nope', pathParameters: { proxy: 'nope' } }))).toMatchObject({ routeKey: '$default' });
    const wrongMethod = toHttpApiEvent(restEvent({ httpMethod: 'PATCH', resource: '/v3/clusters' }));
    expect(wrongMethod.routeKey).toBe('$default');
    expect(wrongMethod.pathParameters).toBeUndefined();
  });

  it('joins repeated query parameters and headers with commas', () => {
    const e = toHttpApiEvent(restEvent({ multiValueQueryStringParameters: { a: ['1', '2'], 'b c': ['x&y'] }, queryStringParameters: { a: '2', 'b c': 'x&y' } }));
    expect(e.queryStringParameters).toEqual({ a: '1,2', 'b c': 'x&y' });
    expect(e.rawQueryString).toBe('a=1&a=2&b%20c=x%26y');
  });

  it('passes payload 2.0 events through untouched', () => {
    const v2 = { version: '2.0', routeKey: '$default', rawPath: '/', headers: {}, requestContext: {} } as unknown as APIGatewayProxyEventV2;
    expect(isRestEvent(v2)).toBe(false);
    expect(toHttpApiEvent(v2)).toBe(v2);
  });

  it('wraps a handler so that it sees 2.0 events only', async () => {
    const seen: string[] = [];
    const handler = acceptRestEvents(async (event: APIGatewayProxyEventV2, _context: unknown) => {
      seen.push(event.routeKey);
      return { statusCode: 204 };
    });
    await handler(restEvent({ body: null }), {});
    expect(seen).toEqual(['POST /v3/clusters/{cluster_id}/topics/{topic_name}/records']);
  });
});
