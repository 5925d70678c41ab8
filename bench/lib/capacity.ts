/**
 * What the stores were asked to do, as lib/storage/metering.ts counts it (ReturnConsumedCapacity,
 * billed write units, S3 requests by command): counting one piece of work, adding counts up, and
 * the S3 requests of one billing tier.
 */
import './env.js';
import { takeCapacity, trackCapacity, type CapacityTotals } from '../../lib/storage/metering.js';

export const zeroTotals = (): CapacityTotals => ({ readUnits: 0, writeUnits: 0, billedWriteUnits: 0, requests: {}, s3Requests: {}, s3PutBytes: 0, stagePutBytes: 0 });

/** Adds `t` into `into`. */
export function addTotals(into: CapacityTotals, t: CapacityTotals): void {
  into.readUnits += t.readUnits;
  into.writeUnits += t.writeUnits;
  into.billedWriteUnits += t.billedWriteUnits;
  into.s3PutBytes += t.s3PutBytes;
  into.stagePutBytes += t.stagePutBytes;
  for (const [k, v] of Object.entries(t.requests)) into.requests[k] = (into.requests[k] ?? 0) + v;
  for (const [k, v] of Object.entries(t.s3Requests)) into.s3Requests[k] = (into.s3Requests[k] ?? 0) + v;
}

/** The S3 requests of `t` whose command is in `tier` (bench/lib/prices.ts S3_PUT_TIER, S3_GET_TIER). */
export const s3Tier = (t: CapacityTotals, tier: ReadonlySet<string>): number => Object.entries(t.s3Requests).reduce((n, [k, v]) => n + (tier.has(k) ? v : 0), 0);

/** What `fn` made the stores do: counting is on while it runs, and only then. */
export async function counted(fn: () => Promise<unknown>): Promise<CapacityTotals> {
  trackCapacity(true);
  takeCapacity();
  await fn();
  const totals = takeCapacity();
  trackCapacity(false);
  return totals;
}
