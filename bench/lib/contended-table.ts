/**
 * The cost bench's table of the group commit: 1 KiB requests from concurrent writers through the
 * rounds (bench/cost.ts counts them), per record and per GB, next to the same requests one at a time.
 */
import type { CapacityTotals } from '../../lib/storage/metering.js';
import { s3Tier } from './capacity.js';
import { PRICE, S3_GET_TIER, S3_PUT_TIER, STAGE_GET_TIER, STAGE_PUT_TIER } from './prices.js';
import { fmt, usd } from './report.js';

/** Dollars of one phase, by component (bench/cost.ts). */
interface Dollars { readonly ddbWrite: number; readonly ddbRead: number; readonly s3: number }

export interface ContendedInput {
  readonly writers: number;
  /** The contended run: what the stores did, its records, and its dollars per GB. */
  readonly contended: { readonly phase: { readonly store: CapacityTotals }; readonly records: number; readonly perGb: Dollars };
  /** The 1 KiB HTTP run: its produce's stores, records, produce dollars per GB, and its total per GB (produce, fetch, roll). */
  readonly single: { readonly produce: CapacityTotals; readonly records: number; readonly perGbProduce: Dollars; readonly perGbTotal: number };
}

const perRecord = (n: number, records: number) => n / Math.max(1, records);
const storage = (d: Dollars) => d.ddbWrite + d.ddbRead + d.s3;

export function contendedTableOf({ writers, contended, single }: ContendedInput) {
  const c = contended.phase.store;
  const tiers = (t: CapacityTotals, put: ReadonlySet<string>, get: ReadonlySet<string>, records: number) =>
    `${fmt(perRecord(s3Tier(t, put), records), 2)}, ${fmt(perRecord(s3Tier(t, get), records), 2)}`;
  // All in: the 1 KiB HTTP run's per-GB total with its produce's storage calls swapped for the group commit's.
  const allIn = single.perGbTotal - storage(single.perGbProduce) + storage(contended.perGb);
  return {
    title: `1 KiB requests from ${writers} concurrent writers through the group commit (acks=all, RF 3): per record and per GB produced`,
    columns: ['writers', 'write units / record', 'read units / record', 'stage requests / record (PUT tier, GET)', 'S3 requests / record (PUT tier, GET)', 'DynamoDB writes $/GB', 'DynamoDB reads $/GB', 'S3 and S3 Express $/GB', 'all in $/GB (produced and read once)'],
    rows: [
      ['1 (HTTP, one at a time)', fmt(perRecord(single.produce.billedWriteUnits, single.records), 1), fmt(perRecord(single.produce.readUnits, single.records), 1), '—',
        tiers(single.produce, S3_PUT_TIER, S3_GET_TIER, single.records),
        usd(single.perGbProduce.ddbWrite), usd(single.perGbProduce.ddbRead), usd(single.perGbProduce.s3), usd(single.perGbTotal)],
      [String(writers), fmt(perRecord(c.billedWriteUnits, contended.records), 1), fmt(perRecord(c.readUnits, contended.records), 1),
        tiers(c, STAGE_PUT_TIER, STAGE_GET_TIER, contended.records), tiers(c, S3_PUT_TIER, S3_GET_TIER, contended.records),
        usd(contended.perGb.ddbWrite), usd(contended.perGb.ddbRead), usd(contended.perGb.s3), usd(allIn)],
    ],
    notes: [
      'Through the group commit a record\'s batch is an object in the stage (one S3 Express PUT, read once by the round that commits it, deleted for free); a round writes the bytes of every batch it appends as one S3 object and, in one transaction, the head, one item of pointers into that object and the round item that names each object\'s outcome; the fast commit copies the pointers\' item to each follower. DynamoDB is written per round, not per record; what a record still costs there is its share of those items and the writers\' reads of the round items.',
      `S3 Express One Zone bills ${usd(PRICE.s3Express.put.value * 1000)} per 1,000 PUT-tier and ${usd(PRICE.s3Express.get.value * 1000)} per 1,000 GET requests, ${usd(PRICE.s3Express.uploadGb.value)}/GB uploaded and ${usd(PRICE.s3Express.retrievalGb.value)}/GB read (${PRICE.s3Express.put.source}); the round objects and their reads are S3 Standard's. All in: the 1 KiB HTTP run's total per GB (HTTP API and Lambda per request, the fetch and the roll) with its produce's DynamoDB and S3 replaced by the group commit's.`,
    ],
  };
}
