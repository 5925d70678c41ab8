/**
 * Batch items: how a log's batches map to a replica table's items. An item holds one batch, or
 * several consecutive small ones packed together (`parts`): DynamoDB bills a write by the item's
 * size rounded up to a kilobyte, plus a transaction's doubling, so a commit of sixteen 1 KiB
 * batches writes one 17 KiB item instead of sixteen 2 KiB ones. Every writer packs (`toItems`)
 * where the cluster's `tributary.log.format.version` is 2 (a version from before reads no packed
 * item), every reader unpacks (`batchesOf`): above this file the log is a sequence of batches, as
 * in Kafka, whatever the items that hold it.
 *
 * An item is keyed by the last offset it holds; its `baseOffset`, `lastOffset`, `maxTimestamp`,
 * `recordCount` and `sizeBytes` cover all its parts (what Queries page and filter on). A packed
 * item's `data` is its parts' bytes back to back — or its `s3` pointer the range of one object
 * that holds them back to back — and `parts` lists each part's header in order.
 * Replicas pack independently (a follower packs the page it copies), so the same offset may sit in
 * items with different keys on different replicas: readers find a batch by offset, never by key.
 *
 * Conditional writes: none (pure mapping).
 */
import type { BatchRecord, S3Pointer } from '../model.js';

/** A packed item's data stops growing past this many bytes (far below DynamoDB's 400 KB an item). */
export const PACK_MAX_BYTES = 64 * 1024;
/** ... or this many parts. */
export const PACK_MAX_PARTS = 256;

/**
 * One part's header: `[baseOffset, lastOffset, leaderEpoch, maxTimestamp, recordCount, sizeBytes,
 * flags, producerId, producerEpoch, baseSequence]` — numbers only, the last three present for an
 * idempotent producer's batch. Flags: 1 transactional, 2 a commit marker, 4 an abort marker.
 */
export type PartHeader = readonly number[];

const TRANSACTIONAL = 1;
const COMMIT = 2;
const ABORT = 4;

/** A replica table item holding batches (the key attributes aside). */
export type BatchItem = BatchRecord & { readonly parts?: readonly PartHeader[] };

const headerOf = (b: BatchRecord): PartHeader => [
  b.baseOffset, b.lastOffset, b.leaderEpoch, b.maxTimestamp, b.recordCount, b.sizeBytes,
  (b.transactional ? TRANSACTIONAL : 0) | (b.control === 'commit' ? COMMIT : 0) | (b.control === 'abort' ? ABORT : 0),
  ...(b.producerId !== undefined ? [b.producerId, b.producerEpoch as number, b.baseSequence as number] : []),
];

/**
 * How a batch may share an item: its bytes inline (exactly its size), or a range of an S3 object
 * that the next batch of the run continues; either way with an expiry. Undefined: alone.
 */
function packing(b: BatchRecord): 'inline' | 'pointer' | undefined {
  if (b.expiresAt === undefined) return undefined;
  if (b.data !== undefined && b.s3 === undefined && b.data.length === b.sizeBytes) return 'inline';
  if (b.s3 !== undefined && b.data === undefined && b.s3.length === b.sizeBytes) return 'pointer';
  return undefined;
}

/** Whether `b` continues `run` (non-empty, of `kind`) within an item's bounds. */
function continues(run: readonly BatchRecord[], bytes: number, b: BatchRecord, kind: 'inline' | 'pointer'): boolean {
  const last = run[run.length - 1] as BatchRecord;
  if (run.length >= PACK_MAX_PARTS) return false;
  if (kind === 'inline') return bytes + b.sizeBytes <= PACK_MAX_BYTES;
  // (one object, back to back: the item keeps one pointer and each part's place follows from the sizes)
  return b.s3?.key === last.s3?.key && b.s3?.position === (last.s3?.position as number) + (last.s3?.length as number);
}

/** One item holding `batches` (consecutive; when more than one, all inline or all one object's ranges back to back). */
function itemOf(batches: readonly BatchRecord[]): BatchItem {
  const [first] = batches;
  const last = batches[batches.length - 1];
  if (!first || !last) throw new Error('an item holds at least one batch');
  if (batches.length === 1) return first;
  const sizeBytes = batches.reduce((n, b) => n + b.sizeBytes, 0);
  return {
    baseOffset: first.baseOffset,
    lastOffset: last.lastOffset,
    leaderEpoch: last.leaderEpoch,
    maxTimestamp: Math.max(...batches.map((b) => b.maxTimestamp)),
    recordCount: batches.reduce((n, b) => n + b.recordCount, 0),
    sizeBytes,
    ...(first.s3
      ? { s3: { key: first.s3.key, position: first.s3.position, length: sizeBytes } }
      : { data: Buffer.concat(batches.map((b) => b.data as Uint8Array)) }),
    expiresAt: Math.max(...batches.map((b) => b.expiresAt as number)),
    parts: batches.map(headerOf),
  };
}

/**
 * The items that hold `batches` (consecutive, in offset order): with `pack` (the cluster's log
 * format allows it), runs of small inline batches packed together up to `PACK_MAX_BYTES`, runs of
 * batches whose bytes follow each other in one S3 object packed behind one pointer, every other
 * batch alone; without, each batch alone. A single batch is stored exactly as it always was.
 */
export function toItems(batches: readonly BatchRecord[], pack: boolean): BatchItem[] {
  if (!pack) return [...batches];
  const items: BatchItem[] = [];
  let run: BatchRecord[] = [];
  let kind: 'inline' | 'pointer' | undefined;
  let bytes = 0;
  const flush = () => {
    if (run.length > 0) items.push(itemOf(run));
    run = [];
    bytes = 0;
  };
  for (const b of batches) {
    const k = packing(b);
    if (!k) {
      flush();
      items.push(b);
      continue;
    }
    if (run.length > 0 && (k !== kind || !continues(run, bytes, b, k))) flush();
    kind = k;
    run.push(b);
    bytes += b.sizeBytes;
  }
  flush();
  return items;
}

/** The batches an item (as read, key attributes included or not) holds, in offset order. */
export function batchesOf(item: Record<string, unknown>): BatchRecord[] {
  const { tp: _tp, off: _off, parts, ...rest } = item as Record<string, unknown> & { parts?: PartHeader[] };
  if (!parts) return [rest as unknown as BatchRecord];
  const data = rest.data as Uint8Array | undefined;
  const s3 = rest.s3 as S3Pointer | undefined;
  const expiresAt = rest.expiresAt as number | undefined;
  let at = 0;
  return parts.map((h) => {
    const [baseOffset, lastOffset, leaderEpoch, maxTimestamp, recordCount, sizeBytes, flags, producerId, producerEpoch, baseSequence] = h.map(Number) as number[];
    const size = sizeBytes as number;
    const bytes = s3 ? { s3: { key: s3.key, position: s3.position + at, length: size } } : { data: (data as Uint8Array).subarray(at, at + size) };
    at += size;
    return {
      baseOffset, lastOffset, leaderEpoch, maxTimestamp, recordCount, sizeBytes, ...bytes,
      ...(producerId !== undefined ? { producerId, producerEpoch, baseSequence } : {}),
      ...((flags as number) & TRANSACTIONAL ? { transactional: true } : {}),
      ...((flags as number) & COMMIT ? { control: 'commit' as const } : {}),
      ...((flags as number) & ABORT ? { control: 'abort' as const } : {}),
      ...(expiresAt !== undefined ? { expiresAt } : {}),
    } as BatchRecord;
  });
}

/** The base offset of the batch holding `offset` in an item (projected with `baseOffset` and `parts`), if it holds it. */
export function batchBaseIn(item: { readonly baseOffset?: unknown; readonly parts?: unknown }, offset: number): number | undefined {
  const parts = item.parts as PartHeader[] | undefined;
  if (!parts) return item.baseOffset as number | undefined;
  for (const h of parts) if (Number(h[0]) <= offset && offset <= Number(h[1])) return Number(h[0]);
  return undefined;
}
