/**
 * Where push deliveries go: an HTTP endpoint (a signed POST) or a Lambda function (a synchronous
 * invoke), and the guard that keeps a subscription from aiming the cluster's functions at the
 * network they run in (SSRF): unless `TRIBUTARY_PUSH_ALLOW_PRIVATE` is `true` (the local stack
 * sets it), an HTTP endpoint must be `https` and every address its host resolves to must be
 * public — no loopback, link-local (the instance metadata service), private, shared or reserved
 * range. The check runs at creation and again on the address each delivery connects to, so a
 * name that later resolves elsewhere (DNS rebinding) is refused too. A Lambda endpoint must be one
 * the deployment's allow-list names (push-targets.ts), checked at creation and at each delivery.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOneOptions } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP } from 'node:net';
import { ENVIRONMENT } from '../config.js';
import { invokeSync } from '../storage/lambda-invoke.js';
import type { PushEndpoint } from '../storage/coordination/push-subscriptions.js';
import { lambdaTargetAllowed, parseLambdaTargets } from './push-targets.js';

/** How long one delivery attempt may take. */
export const ATTEMPT_TIMEOUT_MS = 10_000;

const BLOCKED = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) BLOCKED.addSubnet(net, bits, 'ipv4');
// (unique local addresses: 'fd00::' with 7 bits is the whole range, the fc block included; the
// IPv4-compatible, SIIT, NAT64, 6to4 and Teredo ranges embed IPv4 addresses; site-local, discard)
for (const [net, bits] of [
  ['::', 96], ['::ffff:0:0:0', 96], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 32], ['2001:db8::', 32], ['2002::', 16],
  ['fd00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) BLOCKED.addSubnet(net, bits, 'ipv6');

const guarded = (): boolean => process.env[ENVIRONMENT.pushAllowPrivate] !== 'true';

/** Whether an address is one a delivery may not connect to (IPv4-mapped IPv6 addresses are judged as IPv4). */
export function isBlockedAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return BLOCKED.check(mapped[1]!, 'ipv4');
  const family = isIP(address);
  if (family === 0) return true;
  return BLOCKED.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** The reason a URL cannot be an endpoint, or undefined when it may be (its addresses are checked at each delivery). */
export function urlProblem(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be http or https';
  if (url.username || url.password) return 'must not carry credentials (use headers)';
  if (!guarded()) return undefined;
  if (url.protocol !== 'https:') return 'must be https';
  const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
  if (isIP(host) !== 0 && isBlockedAddress(host)) return 'names a loopback, link-local, private or reserved address';
  if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.internal')) return 'names a local host';
  return undefined;
}

/**
 * An endpoint's URL as reads answer it: its query string and fragment replaced by `REDACTED` and
 * any userinfo dropped, since those may carry credentials (a query parameter's name may be one
 * too, so the whole query goes). A URL with none of them is answered as it was given.
 */
export function redactedUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'REDACTED';
  }
  if (!url.search && !url.hash && !url.username && !url.password && !raw.includes('?') && !raw.includes('#')) return raw;
  url.username = '';
  url.password = '';
  url.search = raw.includes('?') ? '?REDACTED' : '';
  url.hash = raw.includes('#') ? '#REDACTED' : '';
  return url.toString();
}

/** The reason a function cannot be a Lambda endpoint (not in the deployment's allow-list), or undefined when it may be. */
export function lambdaTargetProblem(functionArn: string): string | undefined {
  if (lambdaTargetAllowed(functionArn, parseLambdaTargets(process.env[ENVIRONMENT.pushLambdaTargets]))) return undefined;
  return `is not one the deployment lets push subscriptions invoke (the construct's pushLambdaTargets or grantPushTarget; ${ENVIRONMENT.pushLambdaTargets})`;
}

/** dns.lookup that refuses blocked addresses (when guarded), so the connection goes only where the check passed. */
function guardedLookup(hostname: string, options: LookupOneOptions, callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '');
    const allowed = guarded() ? addresses.filter((a) => !isBlockedAddress(a.address)) : addresses;
    if (allowed.length === 0) return callback(Object.assign(new Error(`${hostname} resolves only to addresses a push delivery may not reach`), { code: 'EADDRNOTAVAIL' }), '');
    if ((options as { all?: boolean }).all) return callback(null, allowed);
    return callback(null, allowed[0]!.address, allowed[0]!.family);
  });
}

/** What one attempt came to: delivered (a 2xx), or why not. */
export type AttemptResult = { readonly ok: true } | { readonly ok: false; readonly error: string };

/** A POST answered within `timeoutMs` in all (not per packet): a 2xx settles it at once, its body unread. */
function postHttp(url: string, headers: Readonly<Record<string, string>>, body: string, timeoutMs: number): Promise<AttemptResult> {
  return new Promise((resolve) => {
    const u = new URL(url);
    const host = u.hostname.replace(/^\[|\]$/g, '');
    if (guarded() && isIP(host) !== 0 && isBlockedAddress(host)) {
      resolve({ ok: false, error: `${host} is an address a push delivery may not reach` });
      return;
    }
    const send = u.protocol === 'https:' ? httpsRequest : httpRequest;
    let req: ReturnType<typeof httpRequest>;
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const settle = (r: AttemptResult) => {
      clearTimeout(timer);
      resolve(r);
    };
    try {
      req = send(u, {
        method: 'POST', lookup: guardedLookup as never,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'user-agent': 'tributary-push' },
      }, (res: IncomingMessage) => {
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) {
          settle({ ok: true });
          res.destroy();
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          if (size < 1024) chunks.push(c);
          size += c.length;
        });
        res.on('end', () => settle({ ok: false, error: `HTTP ${status}: ${Buffer.concat(chunks).toString('utf8').slice(0, 200)}` }));
        res.on('error', () => settle({ ok: false, error: `HTTP ${status}` }));
      });
    } catch (err) {
      // (a header Node refuses to send: a failed attempt like any other)
      clearTimeout(timer);
      resolve({ ok: false, error: (err as Error).message });
      return;
    }
    req.on('error', (err) => settle({ ok: false, error: err.message }));
    req.end(body);
  });
}

/**
 * Sends one delivery within `timeoutMs` (ATTEMPT_TIMEOUT_MS at most); `signature` are the webhook
 * headers (HTTP endpoints only: a Lambda is invoked with IAM).
 */
export async function sendToEndpoint(endpoint: PushEndpoint, body: string, signature: Readonly<Record<string, string>>, timeoutMs = ATTEMPT_TIMEOUT_MS): Promise<AttemptResult> {
  const limit = Math.max(1, Math.min(ATTEMPT_TIMEOUT_MS, timeoutMs));
  if (endpoint.type === 'http') return postHttp(endpoint.url, { ...endpoint.headers, ...signature }, body, limit);
  // (the allow-list may have shrunk since the subscription was created)
  const problem = lambdaTargetProblem(endpoint.functionArn);
  if (problem) return { ok: false, error: `POLICY_VIOLATION: function ${endpoint.functionArn} ${problem}` };
  try {
    const out = await invokeSync(endpoint.functionArn, body, AbortSignal.timeout(limit));
    return out.functionError ? { ok: false, error: `${out.functionError}: ${out.payload.slice(0, 200)}` } : { ok: true };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}
