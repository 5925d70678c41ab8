/**
 * Every HTTP route, and which function serves it — the one list the CDK's API and the local
 * gateway are both built from. Paths use API Gateway's syntax; `$default` catches the rest.
 */

export type FunctionName = 'admin' | 'produce' | 'fetch' | 'groups';
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteSpec {
  readonly method: Method;
  readonly path: string;
  readonly fn: FunctionName;
}

const r = (method: Method, path: string, fn: FunctionName): RouteSpec => ({ method, path, fn });
const C = '/v3/clusters/{cluster_id}';
const T = `${C}/topics/{topic_name}`;
const P = `${T}/partitions/{partition_id}`;
const G = `${C}/consumer-groups/{group_id}`;
const I = '/consumers/{group_name}/instances/{instance}';

export const ROUTES: readonly RouteSpec[] = [
  r('GET', '/v3/clusters', 'admin'),
  r('GET', C, 'admin'),
  r('GET', `${C}/controller`, 'admin'),
  r('GET', `${C}/brokers`, 'admin'),
  r('GET', `${C}/metadata`, 'admin'),
  r('GET', `${C}/brokers/{broker_id}`, 'admin'),
  r('GET', `${C}/brokers/-/configs`, 'admin'),
  r('GET', `${C}/brokers/{broker_id}/configs`, 'admin'),
  r('GET', `${C}/brokers/{broker_id}/configs/{name}`, 'admin'),
  r('GET', `${C}/brokers/{broker_id}/partition-replicas`, 'admin'),
  r('GET', `${C}/broker-configs`, 'admin'),
  r('POST', `${C}/broker-configs:alter`, 'admin'),
  r('GET', `${C}/broker-configs/{name}`, 'admin'),
  r('PUT', `${C}/broker-configs/{name}`, 'admin'),
  r('DELETE', `${C}/broker-configs/{name}`, 'admin'),
  r('GET', `${C}/topics`, 'admin'),
  r('POST', `${C}/topics`, 'admin'),
  r('GET', T, 'admin'),
  r('DELETE', T, 'admin'),
  r('PATCH', T, 'admin'),
  r('GET', `${T}/partitions`, 'admin'),
  r('GET', P, 'admin'),
  r('GET', `${P}/replicas`, 'admin'),
  r('GET', `${P}/replicas/{broker_id}`, 'admin'),
  r('POST', `${P}/records:delete`, 'admin'),
  r('GET', `${C}/topics/-/configs`, 'admin'),
  r('GET', `${T}/configs`, 'admin'),
  r('POST', `${T}/configs:alter`, 'admin'),
  r('GET', `${T}/configs/{name}`, 'admin'),
  r('PUT', `${T}/configs/{name}`, 'admin'),
  r('DELETE', `${T}/configs/{name}`, 'admin'),
  r('GET', `${C}/client-quotas`, 'admin'),
  r('GET', `${C}/client-quotas/{principal}`, 'admin'),
  r('PUT', `${C}/client-quotas/{principal}`, 'admin'),
  r('DELETE', `${C}/client-quotas/{principal}`, 'admin'),
  r('POST', `${C}/brokers`, 'admin'),
  r('DELETE', `${C}/brokers/{broker_id}`, 'admin'),
  r('GET', `${C}/balancer`, 'admin'),
  r('GET', `${C}/topics/-/partitions/-/reassignment`, 'admin'),
  r('GET', `${T}/partitions/-/reassignment`, 'admin'),
  r('GET', `${P}/reassignment`, 'admin'),
  r('PATCH', `${P}/reassignment`, 'admin'),
  r('DELETE', `${P}/reassignment`, 'admin'),
  r('POST', P, 'admin'),
  r('POST', `${T}/records`, 'produce'),
  r('POST', `${T}/records:batch`, 'produce'),
  r('POST', `${C}/producers`, 'produce'),
  r('GET', `${P}/records`, 'fetch'),
  r('GET', `${P}/offsets`, 'fetch'),
  r('GET', `${P}/offset`, 'fetch'),
  r('GET', `${C}/consumer-groups`, 'groups'),
  r('GET', `${G}`, 'groups'),
  r('DELETE', `${G}`, 'groups'),
  r('GET', `${G}/consumers`, 'groups'),
  r('GET', `${G}/consumers/{consumer_id}`, 'groups'),
  r('GET', `${G}/consumers/{consumer_id}/assignments`, 'groups'),
  r('GET', `${G}/consumers/{consumer_id}/assignments/{topic_name}/partitions/{partition_id}`, 'groups'),
  r('GET', `${G}/lags`, 'groups'),
  r('GET', `${G}/lags/{topic_name}/partitions/{partition_id}`, 'groups'),
  r('GET', `${G}/lag-summary`, 'groups'),
  r('POST', `${G}/heartbeat`, 'groups'),
  r('POST', `${G}/offsets:commit`, 'groups'),
  r('GET', `${G}/offsets`, 'groups'),
  r('POST', `${G}/offsets:reset`, 'groups'),
  r('POST', '/consumers/{group_name}', 'groups'),
  r('DELETE', `${I}`, 'groups'),
  r('POST', `${I}/subscription`, 'groups'),
  r('GET', `${I}/subscription`, 'groups'),
  r('DELETE', `${I}/subscription`, 'groups'),
  r('POST', `${I}/assignments`, 'groups'),
  r('GET', `${I}/assignments`, 'groups'),
  r('GET', `${I}/records`, 'groups'),
  r('POST', `${I}/offsets`, 'groups'),
  r('GET', `${I}/offsets`, 'groups'),
  r('POST', `${I}/positions`, 'groups'),
  r('POST', `${I}/positions/beginning`, 'groups'),
  r('POST', `${I}/positions/end`, 'groups'),
  r('GET', '/topics', 'admin'),
  r('GET', '/topics/{topic_name}', 'admin'),
  r('GET', '/topics/{topic_name}/partitions', 'admin'),
  r('GET', '/topics/{topic_name}/partitions/{partition_id}', 'admin'),
  r('GET', '/brokers', 'admin'),
  r('POST', '/topics/{topic_name}', 'produce'),
  r('POST', '/topics/{topic_name}/partitions/{partition_id}', 'produce'),
  r('GET', '/topics/{topic_name}/partitions/{partition_id}/records', 'fetch'),
  r('GET', '/topics/{topic_name}/partitions/{partition_id}/offsets', 'fetch'),
];

/** The catch-all route (API Gateway's `$default`): a Kafka-style 404. */
export const DEFAULT_ROUTE: RouteSpec = { method: 'GET', path: '$default', fn: 'admin' };

export const routeKey = (route: RouteSpec): string => (route.path === '$default' ? '$default' : `${route.method} ${route.path}`);

export interface RouteMatch {
  readonly route: RouteSpec;
  readonly pathParameters: Record<string, string>;
}

const segmentsOf = (path: string): string[] => path.split('/').filter((s) => s !== '');

/**
 * Matches a request to a route as API Gateway does: literal segments beat variables, then the
 * route with more literal segments wins. Path parameters come back URL-decoded.
 */
export function matchRoute(method: string, path: string, routes: readonly RouteSpec[] = ROUTES): RouteMatch | undefined {
  const parts = segmentsOf(path);
  let best: { match: RouteMatch; score: number[] } | undefined;
  for (const route of routes) {
    if (route.method !== method) continue;
    const pattern = segmentsOf(route.path);
    if (pattern.length !== parts.length) continue;
    const params: Record<string, string> = {};
    const score: number[] = [];
    let ok = true;
    for (let i = 0; i < pattern.length && ok; i++) {
      const seg = pattern[i] as string;
      const part = parts[i] as string;
      const variable = /^\{(\w+)\}$/.exec(seg);
      if (variable) {
        try {
          params[variable[1] as string] = decodeURIComponent(part);
        } catch {
          ok = false;
        }
        score.push(0);
      } else {
        ok = seg === part;
        score.push(1);
      }
    }
    if (!ok) continue;
    const better = !best || score.join('') > best.score.join('');
    if (better) best = { match: { route, pathParameters: params }, score };
  }
  return best?.match;
}
