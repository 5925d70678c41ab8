/**
 * One HTTP call to the cluster: URL and query, JSON body, auth, a timeout, and the answer or a
 * Kafka-named error (errors.ts). Nothing here retries; callers decide what a retry means.
 */
import { authenticator, type AuthConfig, type Authenticator } from './auth.js';
import { gzipText } from './bytes.js';
import { errorFromResponse, TributaryConnectionError } from './errors.js';

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface TransportOptions {
  readonly url: string;
  readonly auth?: AuthConfig;
  readonly fetch?: FetchLike;
  /** @default 30000 (a fetch's long poll adds its own wait to this) */
  readonly requestTimeout?: number;
}

export interface CallOptions {
  readonly query?: Record<string, string | number | boolean | undefined>;
  readonly body?: unknown;
  readonly signal?: AbortSignal;
  /** Extra time this call may take beyond the request timeout (a long poll's wait). */
  readonly extraTimeMs?: number;
  /**
   * Sends the body gzipped (`Content-Encoding: gzip`). Its Content-Type is then
   * application/octet-stream: API Gateway passes text types to Lambda as UTF-8 text, which would
   * mangle the compressed bytes, and base64-encodes the rest (docs/compression.md).
   */
  readonly gzip?: boolean;
  /** The body's Content-Type when it is not gzipped (the schema registry's is its own). @default 'application/json' */
  readonly contentType?: string;
  /** @default 'application/json' */
  readonly accept?: string;
}

/** The Content-Type of a gzipped body: a binary type, so API Gateway hands its bytes over unchanged. */
export const COMPRESSED_BODY_TYPE = 'application/octet-stream';

export class Transport {
  readonly baseUrl: string;
  private readonly fetchImpl: FetchLike;
  private readonly auth: Authenticator;
  private readonly timeoutMs: number;
  /** Requests sent (answered or not): the benches count them. */
  requests = 0;

  constructor(o: TransportOptions) {
    this.baseUrl = o.url.replace(/\/+$/, '');
    // Bound to globalThis: browsers throw "Illegal invocation" for a detached fetch.
    this.fetchImpl = o.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.auth = authenticator(o.auth);
    this.timeoutMs = o.requestTimeout ?? 30_000;
  }

  /** The headers that authenticate a GET of `url` (a WebSocket handshake's: a signed IAM request, a bearer token). */
  signedHeaders(url: URL): Promise<Record<string, string>> {
    return this.auth({ method: 'GET', url, headers: {} });
  }

  /** Sends one request; resolves with the parsed JSON answer (or the text when it is not JSON). */
  async call<T = unknown>(method: string, path: string, o: CallOptions = {}): Promise<{ status: number; body: T }> {
    const url = new URL(path.startsWith('http') ? path : `${this.baseUrl}${path}`);
    for (const [k, v] of Object.entries(o.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const json = o.body === undefined ? undefined : typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
    const gzip = o.gzip === true && json !== undefined;
    // What is sent is what is signed (SigV4 hashes the compressed bytes).
    const body = gzip ? await gzipText(json) : json;
    const bodyHeaders: Record<string, string> = json === undefined ? {}
      : gzip ? { 'content-type': COMPRESSED_BODY_TYPE, 'content-encoding': 'gzip' } : { 'content-type': o.contentType ?? 'application/json' };
    const headers = await this.auth({ method, url, ...(body !== undefined ? { body } : {}), headers: { accept: o.accept ?? 'application/json', ...bodyHeaders } });
    // One controller per call, its listener on the caller's signal removed afterwards: callers
    // reuse a signal across many calls (AbortSignal.any would pile listeners up on it).
    const ctrl = new AbortController();
    const timer = setTimeout(() => ctrl.abort(new DOMException('The request timed out.', 'TimeoutError')), this.timeoutMs + (o.extraTimeMs ?? 0));
    const onAbort = () => ctrl.abort(o.signal?.reason);
    if (o.signal?.aborted) onAbort();
    o.signal?.addEventListener('abort', onAbort, { once: true });
    this.requests++;
    let res: Response;
    let text: string;
    try {
      res = await this.fetchImpl(url.toString(), { method, headers, ...(body !== undefined ? { body } : {}), signal: ctrl.signal });
      text = await res.text();
    } catch (e) {
      if (o.signal?.aborted) throw e;
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (e as Error).message;
      throw new TributaryConnectionError(`${method} ${url.pathname} got no answer from ${this.baseUrl}: ${why}.`, e);
    } finally {
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
    }
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON (streaming produce answers are several documents) */
    }
    if (res.status >= 400) {
      const err = errorFromResponse(res.status, parsed, text.slice(0, 200));
      // A quota's 429 says when to come back (seconds); retries wait at least that long.
      const retryAfter = res.headers.get('retry-after');
      if (retryAfter && /^\d{1,6}$/.test(retryAfter)) err.retryAfterMs = Number(retryAfter) * 1000;
      throw err;
    }
    return { status: res.status, body: parsed as T };
  }
}
