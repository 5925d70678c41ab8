/**
 * The console's routes: static files, served by the `console` function with no authorizer, even
 * when every API route needs IAM or a JWT (the files hold no data; the app's API calls carry the
 * credentials). They are not Kafka API routes — no ACL rule, no request quota, no store — so they
 * are not in ROUTES (lib/http/routes.ts); the CDK's API (cdk/api.ts), the REST adapter
 * (lib/http/rest-event.ts) and the local gateway (local/gateway.ts) read this list as they
 * read that one. Paths use API Gateway's syntax: `{proxy+}` is a greedy variable.
 */
import type { StaticFunctionName } from '../functions/catalog.js';

export interface StaticRouteSpec {
  readonly method: 'GET' | 'HEAD';
  readonly path: string;
  readonly fn: StaticFunctionName;
}

/** `GET /ui` redirects to `/ui/`; everything under `/ui/` is a file or the app's page. */
export const STATIC_ROUTES: readonly StaticRouteSpec[] = (['GET', 'HEAD'] as const).flatMap((method) => [
  { method, path: '/ui', fn: 'console' as const },
  { method, path: '/ui/{proxy+}', fn: 'console' as const },
]);

export const staticRouteKey = (r: StaticRouteSpec): string => `${r.method} ${r.path}`;

export interface StaticRouteMatch {
  readonly route: StaticRouteSpec;
  readonly pathParameters: Record<string, string>;
}

/**
 * The static route of a request, as API Gateway matches it. `/ui/` itself goes to the greedy
 * route with no `proxy` parameter (the console function serves by the request's path either way,
 * so either of API Gateway's choices for a trailing slash serves the page).
 */
export function matchStaticRoute(method: string, path: string): StaticRouteMatch | undefined {
  for (const route of STATIC_ROUTES) {
    if (route.method !== method) continue;
    const greedy = route.path.endsWith('/{proxy+}');
    if (!greedy) {
      if (path === route.path) return { route, pathParameters: {} };
      continue;
    }
    const prefix = route.path.slice(0, -'{proxy+}'.length);
    if (!path.startsWith(prefix)) continue;
    const rest = path.slice(prefix.length);
    if (rest === '') return { route, pathParameters: {} };
    try {
      return { route, pathParameters: { proxy: decodeURIComponent(rest) } };
    } catch {
      return { route, pathParameters: { proxy: rest } };
    }
  }
  return undefined;
}
