/**
 * The console's one way to the cluster: the project's SDK (client/), pointed at the origin the
 * console was served from, with the credentials config.json asks for (none, a bearer token, or an
 * OIDC login whose token the API's JWT authorizer accepts).
 */
import { Tributary, TributaryProtocolError, type Admin, type Producer } from '../../../client/index.js';

/** What /ui/config.json says about the API's authentication. */
export interface ConsoleConfig {
  readonly auth: 'none' | 'token' | 'iam' | 'jwt';
  /** The WebSocket API's URL where it is not this origin's `/ws` (a deployment's `WebSocketUrl`). */
  readonly websocket?: string;
  readonly oidc?: { readonly issuer: string; readonly clientId: string; readonly scopes?: readonly string[] };
}

const TOKEN_KEY = 'tributary.token';

/** The token the API calls carry (kept for this tab only). */
export const session = {
  get token(): string | null {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  set token(t: string | null) {
    if (t === null) sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, t);
  },
};

/** The API's base URL: the console is served under `<api>/ui/`. */
export const apiUrl = (): string => `${location.origin}${location.pathname.replace(/\/ui(\/.*)?$/, '')}`;

let websocketBase: string | undefined;

/** The WebSocket API's URL with the console's token (browsers cannot set headers on a WebSocket: it goes as `?token=`). */
export function websocketUrl(): string {
  const url = new URL(websocketBase ?? `${apiUrl().replace(/^http/, 'ws')}/ws`);
  if (session.token) url.searchParams.set('token', session.token);
  return url.toString();
}

export async function loadConfig(): Promise<ConsoleConfig> {
  try {
    const res = await fetch(new URL('config.json', location.href.replace(/#.*$/, '')), { cache: 'no-cache' });
    if (res.ok) {
      const config = (await res.json()) as ConsoleConfig;
      websocketBase = config.websocket;
      return config;
    }
  } catch {
    /* served without config.json (a plain static copy): assume an open API */
  }
  return { auth: 'none' };
}

/** Raised to the app when the API refuses the credentials (401): it shows the sign-in again. */
export const onUnauthorized = new EventTarget();

let cached: { tributary: Tributary; admin: Admin; producer: Producer } | undefined;

/** The SDK client, made once per credentials. */
export function cluster(): { tributary: Tributary; admin: Admin; producer: Producer } {
  if (cached) return cached;
  const fetchWith401 = async (input: string, init: RequestInit) => {
    const res = await globalThis.fetch(input, init);
    if (res.status === 401) onUnauthorized.dispatchEvent(new Event('401'));
    return res;
  };
  const tributary = new Tributary({
    url: apiUrl(),
    clientId: 'tributary-console',
    fetch: fetchWith401,
    retry: { retries: 1 },
    auth: { type: 'token', token: () => session.token ?? '' },
  });
  const unauthenticated = new Tributary({ url: apiUrl(), clientId: 'tributary-console', fetch: fetchWith401, retry: { retries: 1 } });
  const t = session.token ? tributary : unauthenticated;
  cached = { tributary: t, admin: t.admin(), producer: t.producer({ idempotent: false, lingerMs: 0, acks: -1 }) };
  return cached;
}

/** Forget the client (after signing in or out). */
export function resetCluster(): void {
  cached = undefined;
}

/** A short, readable message for an error from the SDK. */
export function describeError(e: unknown): string {
  if (e instanceof TributaryProtocolError) return e.type.startsWith('HTTP_') ? `${e.status}: ${e.message}` : `${e.type} (${e.status}): ${e.message}`;
  return e instanceof Error ? e.message : String(e);
}

/** Is this the API saying the thing does not exist (404)? */
export const isNotFound = (e: unknown): boolean => e instanceof TributaryProtocolError && e.status === 404;
