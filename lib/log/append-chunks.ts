/**
 * How a lane's batches are cut into transactions (docs/architecture.md, "Request path"): each
 * append transaction holds the head, its batches and one state item per idempotent producer among
 * them, and must stay within DynamoDB's limits of 100 items and 4 MB — for every legal request,
 * whatever `max.message.bytes`, `inline.max.bytes` and the number of producers sharing the lane.
 */

/** DynamoDB: items in one TransactWriteItems. */
export const TRANSACTION_MAX_ITEMS = 100;
/** DynamoDB: the payload of one TransactWriteItems (DynamoDB Local enforces it too). */
export const TRANSACTION_MAX_BYTES = 4 * 1024 * 1024;
/** The head's share: any item may be up to 400 KB, so the head is counted at that. */
const HEAD_BYTES = 400 * 1024;
/** Keys, attribute names and numbers of a batch item besides its bytes (measured ≈ 250; doubled). */
export const BATCH_ITEM_OVERHEAD = 512;
/** A producer state item: keys, epoch, version and five runs of four numbers (measured ≈ 400; doubled). */
export const PRODUCER_ITEM_BYTES = 1024;
/** What the batches and producer states of one transaction may add up to, with a margin. */
export const CHUNK_MAX_BYTES = TRANSACTION_MAX_BYTES - HEAD_BYTES - 64 * 1024;

/** What one batch costs a transaction. */
export interface ChunkCost {
  /** The batch bytes stored inline (0 when the bytes are in S3 and the item holds a pointer). */
  readonly inlineBytes: number;
  /** The idempotent producer whose state the transaction must write with it. */
  readonly producerId?: number;
}

interface Load {
  items: number;
  bytes: number;
  readonly producers: Set<number>;
}

const empty = (): Load => ({ items: 1, bytes: 0, producers: new Set() });

/** True when `b` can join `load` (and adds it). */
function tryAdd(load: Load, b: ChunkCost): boolean {
  const newProducer = b.producerId !== undefined && !load.producers.has(b.producerId);
  const items = load.items + 1 + (newProducer ? 1 : 0);
  const bytes = load.bytes + b.inlineBytes + BATCH_ITEM_OVERHEAD + (newProducer ? PRODUCER_ITEM_BYTES : 0);
  if (items > TRANSACTION_MAX_ITEMS || bytes > CHUNK_MAX_BYTES) return false;
  load.items = items;
  load.bytes = bytes;
  if (newProducer) load.producers.add(b.producerId as number);
  return true;
}

/**
 * Cuts units (one caller's batches each, in order) into transactions, in order. A unit that fits
 * one transaction is never split — an idempotent request's batches then land contiguously and
 * form one run of its producer's dedup window, however many batches it has. A larger unit is
 * split batch by batch. Every chunk holds at least one batch.
 */
export function packChunks<T>(units: readonly (readonly T[])[], cost: (t: T) => ChunkCost): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  let load = empty();
  const close = () => {
    if (current.length > 0) out.push(current);
    current = [];
    load = empty();
  };
  for (const unit of units) {
    const alone = empty();
    const fitsAlone = unit.every((b) => tryAdd(alone, cost(b)));
    if (fitsAlone) {
      const trial: Load = { items: load.items, bytes: load.bytes, producers: new Set(load.producers) };
      if (!unit.every((b) => tryAdd(trial, cost(b)))) close();
    }
    for (const b of unit) {
      if (!tryAdd(load, cost(b))) {
        close();
        tryAdd(load, cost(b));
      }
      current.push(b);
    }
  }
  close();
  return out;
}
