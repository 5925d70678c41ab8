/**
 * Builds a Lambda handler for one function from its routes: middy around a dispatcher on
 * API Gateway's `routeKey`, with one error middleware that turns every failure into a REST Proxy
 * error body. Before a handler runs, the caller must pass its route's access rule (routes.ts,
 * access.ts): a denial is a 403 and the handler never runs. lambdas/*.ts are one call to this.
 */
import middy from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { answerByFor, withAnswerBy } from '../deadline.js';
import { HttpError } from '../errors.js';
import { logger } from '../logger.js';
import { chargeQuota, settleQuotaDraws } from '../security/quotas.js';
import type { AccessRule } from './access.js';
import { enforce } from './enforce.js';
import { errorResponse, toRequest, toResult, type RouteHandler } from './api.js';
import type { ApiFunctionName } from '../functions/catalog.js';
import { DEFAULT_ROUTE, ROUTES, routeKey } from './routes.js';
import { armWebSocketWake, flushWakes } from '../orchestration/websocket-wake.js';

export type HttpHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

/** Middleware: any error leaving the handler becomes a Kafka-style error response. */
const kafkaErrors = (): middy.MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2> => ({
  onError: async (request) => {
    request.response = toResult(errorResponse(request.error));
  },
});

/** Middleware: one structured log line per request, answered or refused. */
const accessLog = (fn: ApiFunctionName): middy.MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2> => {
  const started = new WeakMap<object, number>();
  // Names only: never the headers, query or body (docs/security.md, "Logs").
  const log = (event: APIGatewayProxyEventV2, response: APIGatewayProxyStructuredResultV2 | null | undefined) => {
    logger.debug({ event: 'request', fn, route: event.routeKey, status: response?.statusCode, ms: Date.now() - (started.get(event) ?? Date.now()) });
  };
  return {
    before: async (request) => {
      started.set(request.event, Date.now());
    },
    after: async (request) => log(request.event, request.response),
    // Refused requests too (kafkaErrors' onError, which runs first, has set the response).
    onError: async (request) => log(request.event, request.response),
  };
};

/**
 * Runs `fn`, then waits for the quota draws and the WebSocket delivery wakes it started (Lambda
 * freezes the instance once it answers), even when it failed.
 */
async function settledAfter<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } finally {
    await Promise.all([settleQuotaDraws(), flushWakes()]);
  }
}

const DEFAULT_KEY = routeKey(DEFAULT_ROUTE);

export function httpFunction(fn: ApiFunctionName, routes: Record<string, RouteHandler>): HttpHandler {
  const mine = ROUTES.filter((r) => r.fn === fn).map(routeKey);
  const missing = mine.filter((k) => !routes[k]);
  if (missing.length > 0) throw new Error(`function ${fn} has no handler for ${missing.join(', ')}`);
  const access = new Map<string, AccessRule>([...ROUTES, DEFAULT_ROUTE].map((r) => [routeKey(r), r.access]));
  armWebSocketWake();
  const dispatch = async (event: APIGatewayProxyEventV2, context: Context): Promise<APIGatewayProxyStructuredResultV2> => {
    const route = routes[event.routeKey];
    const rule = access.get(event.routeKey);
    if (!route || !rule) throw new HttpError(404, 404, `HTTP 404 Not Found: ${fn} does not serve ${event.routeKey}`);
    // Long polls and retries stop in time to answer (lib/deadline.ts).
    return withAnswerBy(answerByFor(context.getRemainingTimeInMillis()), () => settledAfter(async () => {
      const req = toRequest(event);
      // The request quota first (in memory, and a flood of denied requests counts too), then the
      // ACLs. The catch-all answers 404 and touches nothing: it is not charged (API Gateway's stage
      // throttling bounds it), so it needs no store either.
      if (event.routeKey !== DEFAULT_KEY) await chargeQuota(req.principal, 'request', 1);
      await enforce(rule, req.params, req);
      return toResult(await route(req));
    }));
  };
  return middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2>()
    .use(accessLog(fn))
    .use(kafkaErrors())
    .handler(dispatch) as unknown as HttpHandler;
}
