/**
 * Client quota enforcement (lib/security/quotas.ts) against the shared stack's DynamoDB Local:
 * allowance holders ("instances", each its own in-memory state) drawing from the same per-second
 * counters. A fake clock pins each test to a second of its own far in the future, so its counters
 * are fresh and no other test's traffic shares them.
 */
import { describe, expect, it } from 'vitest';
import { resetConfig } from '../../../lib/config.js';
import { HttpError } from '../../../lib/errors.js';
import { chargeQuota, createQuotaEnforcer, DEFAULT_QUOTA_PRINCIPAL, quotaRate, type QuotaEnforcer } from '../../../lib/security/quotas.js';
import { traceCalls } from '../../../lib/storage/metering.js';
import type { ClientQuotaValues } from '../../../lib/storage/coordination/quotas.js';

let seconds = 0;
/** A clock at the start of a second no other test uses (its counters start at zero). */
function freshClock() {
  const second = 4_000_000_000 + (process.pid % 10_000) * 1000 + Math.floor(Math.random() * 900) + (seconds++) * 7;
  const clock = { t: second * 1000, now: () => clock.t, second };
  return clock;
}

const quotasOf = (entries: Record<string, ClientQuotaValues>) => {
  const m = new Map(Object.entries(entries));
  return async () => m;
};

/** Charges and reports whether it passed; anything but a 429 is a failure of the test. */
async function tryCharge(e: QuotaEnforcer, principal: string, kind: 'produce' | 'fetch' | 'request', amount: number): Promise<HttpError | undefined> {
  try {
    await e.charge(principal, kind, amount);
    return undefined;
  } catch (err) {
    if (err instanceof HttpError && err.status === 429) return err;
    throw err;
  }
}

describe('Function: quotaRate', () => {
  it('takes the principal\'s own rate of a kind, else the <default> entity\'s, per kind as Kafka resolves', () => {
    const q = new Map<string, ClientQuotaValues>([
      ['User:alice', { producer_byte_rate: 100 }],
      [DEFAULT_QUOTA_PRINCIPAL, { producer_byte_rate: 5, request_rate: 7 }],
    ]);
    expect(quotaRate(q, 'User:alice', 'produce')).toBe(100);
    expect(quotaRate(q, 'User:alice', 'request')).toBe(7);
    expect(quotaRate(q, 'User:bob', 'produce')).toBe(5);
    expect(quotaRate(q, 'User:bob', 'fetch')).toBeUndefined();
    expect(quotaRate(new Map(), 'User:bob', 'produce')).toBeUndefined();
  });
});

describe('Function: chargeQuota', () => {
  it('makes no store call when no quota applies to the principal (once the metadata cache holds the quotas)', async () => {
    // The quota list is cached with the rest of the metadata; its once-a-second version check is
    // the data path's own (every produce and fetch makes it anyway). Pin the cache so that check
    // does not fall inside the measured loop.
    const before = process.env.TRIBUTARY_METADATA_MAX_AGE_MS;
    process.env.TRIBUTARY_METADATA_MAX_AGE_MS = '600000';
    resetConfig();
    try {
      const principal = `User:unlimited-${process.pid}`;
      const warm = await traceCalls(() => chargeQuota(principal, 'request', 1));
      // Loading: the metadata version and one Query of the quota list.
      expect(warm.calls.map((c) => c.op).sort()).toEqual(['GetItem', 'Query']);
      const { calls } = await traceCalls(async () => {
        for (let i = 0; i < 300; i++) {
          await chargeQuota(principal, 'request', 1);
          await chargeQuota(principal, 'produce', 1000);
          await chargeQuota(principal, 'fetch', 0);
        }
      });
      expect(calls).toEqual([]);
    } finally {
      if (before === undefined) delete process.env.TRIBUTARY_METADATA_MAX_AGE_MS;
      else process.env.TRIBUTARY_METADATA_MAX_AGE_MS = before;
      resetConfig();
    }
  });
});

describe('Function: createQuotaEnforcer', () => {
  it.each([[2, 10_000, 100], [4, 10_000, 100], [3, 10_050, 300], [3, 10_000, 1500]])('%i instances sharing the counters (rate %i B/s, charges of %i B) admit at most the rate plus one chunk in a second, nearly all of it from memory', async (n, rate, amount) => {
    const clock = freshClock();
    const principal = `User:instances-${n}-${rate}-${process.pid}`;
    const quotas = quotasOf({ [principal]: { producer_byte_rate: rate } });
    const instances = Array.from({ length: n }, () => createQuotaEnforcer({ now: clock.now, quotas }));
    let admitted = 0;
    let refused = 0;
    let charges = 0;
    const { calls } = await traceCalls(async () => {
      for (let i = 0; i < 200 / n; i++) {
        const out = await Promise.all(instances.map((e) => tryCharge(e, principal, 'produce', amount)));
        charges += n;
        for (const o of out) if (o) refused++; else admitted += amount;
        clock.t += 4; // every round stays inside the second
      }
      await Promise.all(instances.map((e) => e.settle()));
    });
    const chunk = Math.max(rate / 10, amount);
    console.log(`${n} instances, rate ${rate} B/s, chunk ${chunk}: admitted ${admitted} B in one second (${refused} refused) with ${calls.length} store calls for ${charges} charges`);
    expect(clock.t).toBeLessThan((clock.second + 1) * 1000);
    expect(admitted).toBeLessThanOrEqual(rate + chunk);
    // Each instance may end the second holding up to one unspent chunk.
    expect(admitted).toBeGreaterThanOrEqual(rate - n * chunk);
    expect(refused).toBeGreaterThan(0);
    // Draws are chunks, not per charge: about rate / chunk granted ones plus the refusals that ended each instance's second.
    expect(calls.length).toBeLessThan(charges / 5);
    expect(calls.every((c) => c.op === 'UpdateItem')).toBe(true);

    // The next second is a fresh window — once the instance whose draw crossed the rate has waited
    // its excess (under one chunk) out, which is instance 0 in some interleavings of the draws.
    clock.t = (clock.second + 1) * 1000 + Math.ceil((chunk / rate) * 1000);
    expect(await tryCharge(instances[0] as QuotaEnforcer, principal, 'produce', 100)).toBeUndefined();
    await instances[0]?.settle();
  });

  it('answers over quota with a 429 carrying Retry-After, and charges nothing for it', async () => {
    const clock = freshClock();
    const principal = `User:limited-${process.pid}`;
    const e = createQuotaEnforcer({ now: clock.now, quotas: quotasOf({ [principal]: { request_rate: 3 } }) });
    const results: (HttpError | undefined)[] = [];
    for (let i = 0; i < 6; i++) results.push(await tryCharge(e, principal, 'request', 1));
    await e.settle();
    // chunk = max(0.3, 1) = 1: three draws pass, the fourth crosses nothing and is refused.
    expect(results.filter((r) => r === undefined)).toHaveLength(3);
    const refused = results.find((r) => r !== undefined) as HttpError;
    expect(refused.status).toBe(429);
    expect(refused.errorCode).toBe(429);
    expect(refused.headers?.['retry-after']).toBe('1');
    expect(refused.message).toMatch(/over its quota of 3 requests\/s/);
  });

  it('throttles a request far larger than the rate for its excess (Kafka\'s throttle time), on the instance that served it', async () => {
    const clock = freshClock();
    const principal = `User:big-${process.pid}`;
    const e = createQuotaEnforcer({ now: clock.now, quotas: quotasOf({ [principal]: { producer_byte_rate: 1000 } }) });
    expect(await tryCharge(e, principal, 'produce', 5000)).toBeUndefined();
    await e.settle();
    clock.t = (clock.second + 1) * 1000 + 10;
    const refused = await tryCharge(e, principal, 'produce', 10);
    // 4000 bytes over a rate of 1000/s: throttled until four seconds after its second ends (3.99 s from now).
    expect(Number(refused?.headers?.['retry-after'])).toBe(4);
    clock.t = (clock.second + 5) * 1000 + 1;
    expect(await tryCharge(e, principal, 'produce', 10)).toBeUndefined();
    await e.settle();
  });

  it('charges a fetch after the fact: the over-quota read is served, the next one gets the 429', async () => {
    const clock = freshClock();
    const principal = `User:reader-${process.pid}`;
    const e = createQuotaEnforcer({ now: clock.now, quotas: quotasOf({ [principal]: { consumer_byte_rate: 1000 } }) });
    expect(await tryCharge(e, principal, 'fetch', 0)).toBeUndefined();
    await e.chargeAfter(principal, 'fetch', 900);
    await e.settle();
    expect(await tryCharge(e, principal, 'fetch', 0)).toBeUndefined();
    await e.chargeAfter(principal, 'fetch', 900); // over: never throws
    await e.settle();
    const refused = await tryCharge(e, principal, 'fetch', 0);
    expect(refused?.status).toBe(429);
    expect(refused?.headers?.['retry-after']).toBeDefined();
  });

  it('lets a principal without a quota through while another is throttled, on the same instance', async () => {
    const clock = freshClock();
    const limited = `User:throttled-${process.pid}`;
    const free = `User:free-${process.pid}`;
    const e = createQuotaEnforcer({ now: clock.now, quotas: quotasOf({ [limited]: { request_rate: 2 } }) });
    let limitedRefused = 0;
    for (let i = 0; i < 20; i++) {
      if (await tryCharge(e, limited, 'request', 1)) limitedRefused++;
      expect(await tryCharge(e, free, 'request', 1)).toBeUndefined();
    }
    await e.settle();
    expect(limitedRefused).toBe(18);
  });
});
