/**
 * The tiered log as a reader sees it, read here by the tests' own path: a segment object decoded
 * through its footer and index, and a replica's whole log — the live segments below its tail
 * start, its table from there on.
 */
import { batchBytes } from '../../lib/log/read.js';
import { FOOTER_BYTES, batchesOf, decodeFooter, decodeIndex, indexRange, readPlan } from '../../lib/log/segment-format.js';
import { decodeBatch } from '../../lib/protocol/record-batch.js';
import type { ReplicaHead } from '../../lib/storage/model.js';
import { readObject } from '../../lib/storage/objects.js';
import { listSegments } from '../../lib/storage/coordination/segments.js';
import { readHead, tailStartOf } from '../../lib/storage/replica/head.js';
import { queryBatches } from '../../lib/storage/replica/reads.js';
import type { ReplicaStoreRef } from '../../lib/storage/replica/store.js';

/** The records of a segment object, decoded through its footer and index (its external batches read from their own objects), CRCs checked. */
export async function segmentRecords(key: string) {
  const body = await readObject(key);
  const footer = decodeFooter(body.subarray(body.length - FOOTER_BYTES), body.length);
  const r = indexRange(footer);
  const index = decodeIndex(body.subarray(r.position, r.position + r.length), footer);
  const plan = readPlan(index, footer.baseOffset, Number.MAX_SAFE_INTEGER);
  const batches = await Promise.all(plan.ranges.map(async (range) => {
    const from = range.key === undefined ? body : await readObject(range.key);
    return batchesOf(index, range, from.subarray(range.position, range.position + range.length));
  }));
  return batches.flat().flatMap((b) => decodeBatch(b, { verifyCrc: true }).records);
}

/**
 * What a reader of `store` sees of partition 0 of `topicId`: the live segments below the replica's
 * tail start, its table from there on. Calls `take` with each record's offset and value, in the
 * order read, and returns the replica's head.
 */
export async function readTieredLog(topicId: string, tp: string, store: ReplicaStoreRef, take: (offset: number, value: Buffer | null) => void): Promise<ReplicaHead> {
  const head = (await readHead(store, tp))!;
  const tailStart = tailStartOf(head);
  for (const seg of await listSegments(topicId, 0, { states: ['live'] })) {
    for (const r of await segmentRecords(seg.key)) if (r.offset < tailStart) take(r.offset, r.value);
  }
  for (const b of await queryBatches(store, tp, { fromOffset: tailStart, toOffset: head.leo - 1, maxBytes: Number.MAX_SAFE_INTEGER })) {
    for (const r of decodeBatch(await batchBytes(b)).records) if (r.offset >= tailStart) take(r.offset, r.value);
  }
  return head;
}
