/**
 * Signed push deliveries, as the Standard Webhooks specification signs them, so a receiver can
 * refuse forgeries and replays:
 *
 *   webhook-id:        the delivery's id (the same on every retry of one batch)
 *   webhook-timestamp: seconds since the epoch, when this attempt was sent
 *   webhook-signature: v1,<base64 of HMAC-SHA256(key, `${id}.${timestamp}.${body}`)>
 *
 * The secret is `whsec_` + base64 of the key's bytes. A receiver verifies the signature over the
 * raw body and refuses a timestamp further than its tolerance from its clock (replays).
 * Web Crypto only: the SDK uses the same functions in browsers and edge runtimes.
 */

export const SECRET_PREFIX = 'whsec_';
/** How far a timestamp may be from the receiver's clock (the specification's suggestion). */
export const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

export type WebhookHeaders = {
  readonly 'webhook-id': string;
  readonly 'webhook-timestamp': string;
  readonly 'webhook-signature': string;
};

const toBase64 = (bytes: Uint8Array): string => {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
};

function keyBytes(secret: string): Uint8Array<ArrayBuffer> {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  let raw: string;
  try {
    raw = atob(encoded);
  } catch {
    throw new Error('A webhook secret is whsec_ followed by base64.');
  }
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

/** A new secret: 24 random bytes. */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + toBase64(crypto.getRandomValues(new Uint8Array(24)));
}

async function hmac(secret: string, content: string): Promise<string> {
  const key = await crypto.subtle.importKey('raw', keyBytes(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return toBase64(new Uint8Array(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(content))));
}

/** The headers that sign `body` as delivery `id` sent at `timestampSeconds`. */
export async function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): Promise<WebhookHeaders> {
  const ts = String(Math.floor(timestampSeconds));
  return { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': `v1,${await hmac(secret, `${id}.${ts}.${body}`)}` };
}

/** Compares without an early exit, so the time taken says nothing about where two strings differ. */
function sameString(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a.charCodeAt(i) || 0) ^ (b.charCodeAt(i) || 0);
  return diff === 0;
}

/**
 * True when `headers` sign `body` with `secret` and the timestamp is within `toleranceSeconds` of
 * `nowSeconds`. Header names are matched in any case; a signature header may carry several
 * space-separated signatures (a secret being rotated): one valid `v1` is enough.
 */
export async function verifyWebhook(
  secret: string, headers: Readonly<Record<string, string | readonly string[] | undefined>>, body: string,
  o: { readonly toleranceSeconds?: number; readonly nowSeconds?: number } = {},
): Promise<boolean> {
  const header = (name: string): string | undefined => {
    for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === name) return Array.isArray(v) ? v[0] : (v as string | undefined);
    return undefined;
  };
  const id = header('webhook-id');
  const ts = header('webhook-timestamp');
  const signatures = header('webhook-signature');
  if (!id || !ts || !signatures || !/^\d+$/.test(ts)) return false;
  const now = o.nowSeconds ?? Date.now() / 1000;
  if (Math.abs(now - Number(ts)) > (o.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return false;
  const expected = await hmac(secret, `${id}.${ts}.${body}`);
  return signatures.split(' ').some((s) => s.startsWith('v1,') && sameString(s.slice(3), expected));
}
