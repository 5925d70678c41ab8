/**
 * Enforces Kafka's client quotas (`producer_byte_rate`, `consumer_byte_rate`, `request_rate`)
 * across Lambda instances without a store call on the common path.
 *
 * Each instance keeps, per principal and kind, an allowance for the current second, drawn in
 * chunks from a shared per-second counter (lib/storage/coordination/quotas.ts `drawQuotaUsage`, an atomic ADD)
 * and spent in memory. When the allowance runs low (under half a chunk) the next draw starts in
 * the background; it runs while the request does its own work and is awaited before the handler
 * returns (`settleQuotaDraws`: Lambda freezes the instance after the response). Only a request
 * that finds its allowance short waits for a draw.
 *
 * A draw is granted when the counter stood below the rate before it, so exactly one draw per
 * second can cross the rate: the principal's use in one second is at most the rate plus one chunk
 * (chunk = max(rate / 10, the largest single charge seen)), whatever the number of instances. A
 * second that starts with nothing drawn is a fresh window (fixed windows: a burst at the end of one
 * second and the start of the next can reach twice the rate within a sliding second).
 *
 * A draw that crosses the rate by `excess` throttles the principal on this instance until the end
 * of the second plus excess / rate seconds (Kafka's throttle time for a large request).
 */
import { HttpError } from '../errors.js';
import { cachedClientQuotas } from '../cluster/metadata.js';
import { drawQuotaUsage, type ClientQuotaValues } from '../storage/coordination/quotas.js';

export type QuotaKind = 'produce' | 'fetch' | 'request';

/** Kafka's default entity: its quotas apply to every principal that has none of that kind. */
export const DEFAULT_QUOTA_PRINCIPAL = '<default>';

const FIELD = { produce: 'producer_byte_rate', fetch: 'consumer_byte_rate', request: 'request_rate' } as const;
const UNIT = { produce: 'bytes/s (producer_byte_rate)', fetch: 'bytes/s (consumer_byte_rate)', request: 'requests/s (request_rate)' } as const;

/** The rate that applies to `principal` for `kind`: its own, else the `<default>` entity's (per kind, as Kafka resolves). */
export function quotaRate(quotas: ReadonlyMap<string, ClientQuotaValues>, principal: string, kind: QuotaKind): number | undefined {
  return quotas.get(principal)?.[FIELD[kind]] ?? quotas.get(DEFAULT_QUOTA_PRINCIPAL)?.[FIELD[kind]];
}

/** The bytes records count against a byte rate: keys, values, header keys and values (Kafka counts the request's bytes; these are most of them). */
export function recordsSize(records: readonly { key: Buffer | null; value: Buffer | null; headers: readonly { key: string; value: Buffer | null }[] }[]): number {
  let n = 0;
  for (const r of records) {
    n += (r.key?.length ?? 0) + (r.value?.length ?? 0);
    for (const h of r.headers) n += Buffer.byteLength(h.key) + (h.value?.length ?? 0);
  }
  return n;
}

interface Allowance {
  /** The epoch second this allowance was drawn for; it is worth nothing in another. */
  second: number;
  /** What is left to spend (negative after a fetch spent more than it had: a debt). */
  left: number;
  /** A draw for this second was refused: the principal is over its rate until the second ends. */
  denied: boolean;
  /** No request passes before this time (ms), on this instance. */
  throttledUntil: number;
  /** The largest single charge seen: a chunk is never smaller. */
  largest: number;
  drawing?: Promise<void>;
}

export interface QuotaEnforcerOptions {
  /** @default Date.now */
  readonly now?: () => number;
  /** Where the configured quotas come from. @default the metadata cache (lib/cluster/metadata.ts) */
  readonly quotas?: () => Promise<ReadonlyMap<string, ClientQuotaValues>>;
}

export interface QuotaEnforcer {
  /** Charges before the work: throws HttpError 429 with Retry-After when over quota (nothing is charged then). */
  charge(principal: string, kind: QuotaKind, amount: number): Promise<void>;
  /** Charges after the work (a fetch's bytes): never throws; over quota, the principal's next request gets the 429. */
  chargeAfter(principal: string, kind: QuotaKind, amount: number): Promise<void>;
  /** Waits for every background draw started so far. */
  settle(): Promise<void>;
}

const tooMany = (principal: string, kind: QuotaKind, rate: number, waitMs: number): HttpError => {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new HttpError(429, 429,
    `Too many requests: ${principal} is over its quota of ${rate} ${UNIT[kind]}; retry in ${seconds} s.`,
    { 'retry-after': String(seconds) });
};

/** A separate allowance holder (its own in-memory state, sharing the store's counters): one per Lambda instance. */
export function createQuotaEnforcer(o: QuotaEnforcerOptions = {}): QuotaEnforcer {
  const now = o.now ?? Date.now;
  const quotas = o.quotas ?? cachedClientQuotas;
  const state = new Map<string, Allowance>();
  const inflight = new Set<Promise<void>>();

  function current(key: string, t: number): Allowance {
    const second = Math.floor(t / 1000);
    let s = state.get(key);
    if (!s || s.second !== second) {
      s = { second, left: Math.min(0, s?.left ?? 0), denied: false, throttledUntil: s?.throttledUntil ?? 0, largest: s?.largest ?? 0 };
      state.set(key, s);
    }
    return s;
  }

  const chunkOf = (rate: number, s: Allowance): number => Math.max(rate / 10, s.largest);

  /** One draw from the shared counter into `s` (dropped if the second moved on meanwhile). */
  async function draw(key: string, principal: string, kind: QuotaKind, rate: number, s: Allowance, amount: number): Promise<void> {
    const used = await drawQuotaUsage(principal, kind, s.second, amount);
    if (state.get(key) !== s) return;
    const before = used - amount;
    if (before >= rate) {
      s.denied = true;
      s.throttledUntil = Math.max(s.throttledUntil, (s.second + 1) * 1000);
      return;
    }
    s.left += amount;
    // The draw that crossed the rate: a request much larger than the rate waits its excess out.
    if (used > rate) s.throttledUntil = Math.max(s.throttledUntil, (s.second + 1) * 1000 + ((used - rate) / rate) * 1000);
  }

  function startDraw(key: string, principal: string, kind: QuotaKind, rate: number, s: Allowance, amount: number): Promise<void> {
    const p = draw(key, principal, kind, rate, s, amount).finally(() => {
      if (s.drawing === p) delete s.drawing;
      inflight.delete(p);
    });
    s.drawing = p;
    inflight.add(p);
    return p;
  }

  /** Starts the next chunk's draw in the background when the allowance runs low. */
  function topUp(key: string, principal: string, kind: QuotaKind, rate: number, s: Allowance): void {
    const chunk = chunkOf(rate, s);
    if (s.left < chunk / 2 && !s.denied && !s.drawing) {
      // A failed background draw only means the next request draws itself.
      startDraw(key, principal, kind, rate, s, Math.max(chunk, -s.left)).catch(() => undefined);
    }
  }

  async function charge(principal: string, kind: QuotaKind, amount: number, after: boolean): Promise<void> {
    const rate = quotaRate(await quotas(), principal, kind);
    if (rate === undefined) return;
    const key = `${kind}|${principal}`;
    let s = current(key, now());
    s.largest = Math.max(s.largest, amount);
    if (!after) {
      if (now() < s.throttledUntil) throw tooMany(principal, kind, rate, s.throttledUntil - now());
      if (s.left < amount && s.drawing) await s.drawing.catch(() => undefined);
      s = current(key, now());
      if (s.left < amount && !s.denied) await startDraw(key, principal, kind, rate, s, Math.max(chunkOf(rate, s), amount - s.left));
      s = current(key, now());
      if (s.left < amount) {
        const until = Math.max(s.throttledUntil, (s.second + 1) * 1000);
        throw tooMany(principal, kind, rate, until - now());
      }
    }
    s.left -= amount;
    topUp(key, principal, kind, rate, s);
  }

  return {
    charge: (principal, kind, amount) => charge(principal, kind, amount, false),
    chargeAfter: (principal, kind, amount) => charge(principal, kind, amount, true),
    async settle() {
      while (inflight.size > 0) await Promise.allSettled([...inflight]);
    },
  };
}

const instance = createQuotaEnforcer();

/** Charges `amount` (bytes for produce/fetch, 1 for request) to the principal's quota of `kind`; throws HttpError 429 with Retry-After when over. No-op (no I/O) when no quota applies to the principal. */
export async function chargeQuota(principal: string, kind: 'produce' | 'fetch' | 'request', amount: number): Promise<void> {
  return instance.charge(principal, kind, amount);
}

/**
 * Charges what a request used after it was served (consumer bytes, as Kafka throttles fetches
 * after the fact): never throws for a quota; a principal over its quota gets the 429 on its next
 * request of that kind (call `chargeQuota(principal, kind, 0)` before serving one).
 */
export async function chargeQuotaAfter(principal: string, kind: 'produce' | 'fetch' | 'request', amount: number): Promise<void> {
  return instance.chargeAfter(principal, kind, amount);
}

/** Waits for the background draws this instance started (before a handler returns: Lambda freezes after). */
export function settleQuotaDraws(): Promise<void> {
  return instance.settle();
}
