/**
 * The cost benchmark's per-partition ceiling in AWS, analytic (DynamoDB Local does not enforce
 * DynamoDB's 1,000 write units per second per item): from the head and batch item sizes a run
 * measured, the appends and records a second one partition takes, with and without group commit,
 * in one process and through the stage that combines requests from different instances.
 */
import { numericConfig } from '../../lib/cluster/topic-configs.js';
import { DDB_PARTITION_WCU_PER_SECOND } from './prices.js';
import { fmt } from './report.js';

const KiB = 1024;
const WCU = DDB_PARTITION_WCU_PER_SECOND.value;
const GROUP = [1, 10, 100];
/** Requests this small keep their batch inline (the topic default of inline.max.bytes), and inline batches appended together share items (lib/storage/replica/items.ts). */
const INLINE_PACKED_MAX = numericConfig({}, 'inline.max.bytes');
/** What one batch adds to a round's pointer item (its part: offsets, epoch, timestamp, count, place in the object) and to its round item (a stage id and its outcome), as stored. */
const POINTER_PART_BYTES = 40;
const OUTCOME_BYTES = 60;

/** What the ceiling needs of a size run: its request size and the item sizes it measured. */
export interface CeilingRun {
  readonly size: { readonly label: string; readonly records: number };
  readonly headBytes: number;
  readonly batchItemBytes: number;
  readonly batchesPerRequest: number;
}

export function partitionCeilingTable(runs: readonly CeilingRun[]) {
  const ceilingRows = runs.map((r) => {
    const h = Math.ceil(r.headBytes / KiB);
    const b = Math.ceil(r.batchItemBytes / KiB) * r.batchesPerRequest;
    // The leader's head item per acks=all request: the append transaction (2 × h) and the high-watermark update (h).
    const headUnits = 3 * h;
    const bytes = r.size.records * KiB;
    const headBound = WCU / headUnits;
    return { r, h, b, headUnits, bytes, headBound };
  });
  return {
    title: 'Per-partition ceiling in AWS (analytic: DynamoDB Local does not enforce it)',
    columns: ['request', 'requests per append (group commit)', 'head item (measured)', 'batch item WCU per request', 'head WCU per append', 'head-item bound: records/s', 'MB/s', 'whole key, one process: records/s', 'MB/s', 'whole key, through the stage: records/s', 'MB/s'],
    rows: ceilingRows.flatMap((c) => GROUP.map((g) => {
      // g concurrent requests share one append: the head is written once for all of them, and their
      // small batches share items (packed: the bytes' kilobytes rounded up once per item, not per batch).
      const headBound = g * c.headBound;
      const packedUnits = c.bytes <= INLINE_PACKED_MAX ? 2 * Math.ceil((g * c.r.batchItemBytes * c.r.batchesPerRequest) / KiB) : 2 * c.b * g;
      const keyBound = (g * WCU) / (c.headUnits + packedUnits);
      // Across instances the bytes are staged in S3 Express and a round writes, besides the head,
      // one item of g pointers into its object and the round item naming g outcomes (both inside
      // its transaction: 2 × their kilobytes): g > 1 only.
      const roundUnits = 2 * Math.ceil((g * POINTER_PART_BYTES) / KiB) + 2 * Math.ceil((g * OUTCOME_BYTES) / KiB);
      const stagedBound = (g * WCU) / (c.headUnits + roundUnits);
      return [c.r.size.label, g, `${fmt(c.r.headBytes)} B (${c.h} WCU)`, fmt(packedUnits / g, 1), c.headUnits,
        fmt(headBound * c.r.size.records), fmt((headBound * c.bytes) / 1e6, 2), fmt(keyBound * c.r.size.records), fmt((keyBound * c.bytes) / 1e6, 2),
        g > 1 ? fmt(stagedBound * c.r.size.records) : '—', g > 1 ? fmt((stagedBound * c.bytes) / 1e6, 2) : '—'];
    })),
    notes: [
      `DynamoDB serves at most ${WCU} write units per second on one item and on one partition (${DDB_PARTITION_WCU_PER_SECOND.source}). Every acks=all append rewrites the leader's head item twice — inside the append transaction (billed 2 × its size in KB) and in the high-watermark update — so one partition takes at most ${WCU} / (3 × head WCU) appends a second, whatever their size (head-item bound).`,
      'The batch items share the head\'s partition key: inside the transaction each costs 2 WCU per started KB; small batches appended together share items up to 64 KiB (the log format 2), so their kilobytes are rounded up once per item; batches over inline.max.bytes go to S3 and leave a small pointer item. "Whole key" bounds the head and the batch items together on one DynamoDB partition; DynamoDB may split a hot key\'s items by sort key ("split for heat"), which lifts that bound towards the head-item bound but can never split the head item itself.',
      'One process: concurrent requests to one function instance combine in its lane with nothing staged. Through the stage: requests from different instances (Lambda\'s shape) put their batches in S3 Express One Zone, and a round of g of them writes the head, one item of pointers into its S3 object and a round item on the key (decision 0012): the bytes never touch the key, so the bound grows with the round. The read side: each waiting writer reads the head and the round items since (a strongly consistent Query, 1-2 read units) about twice a wait, against 3,000 read units a second on the partition.',
      'Group commit (g concurrent requests combined into one append) divides the head writes per request by g. Spreading the head (S heads, each owning an offset sub-sequence) multiplies the head-item bound by S, but Kafka\'s single offset order then needs a merge on read — a design change, not a setting. For scale: a Kinesis shard takes 1,000 records/s or 1 MB/s.',
      'Follower tables take the same writes on their own partitions (each broker has its own table), so replication does not lower the bound; the read side has 3,000 RCU/s per partition: about 11 MiB/s of strongly consistent Query per partition.',
    ],
  };
}
