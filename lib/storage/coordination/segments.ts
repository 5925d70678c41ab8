/**
 * The segment registry (docs/architecture.md, "Tiers"): which S3 segment objects make up each
 * partition's rolled log. Segments belong to the partition, not to a replica: S3 already keeps
 * every object in several zones, so every replica refers to the same objects. The only module that
 * reads or writes `seg#` items of the coordination table.
 *
 * Keys: `pk = seg#<topicId>#<partition>`, `sk = <20-digit base offset>` (one Query returns a
 * partition's segments in offset order). An item's `state`:
 * - `pending`: a roller claimed [baseOffset, endOffset) and may be writing the object. Not part of
 *   the log. Another roller may take it over once it is older than a grace period; the object's
 *   bytes are deterministic for the range, so a takeover writes the same bytes.
 * - `live`: part of the log; readers use only these.
 * - `deleted`: tombstoned (retention, DeleteRecords, a compaction's replaced input). The garbage
 *   pass deletes the object once `deletedAt` is older than its grace period, then the item, so a
 *   fetch or a snapshot install that read the list just before can still read the object.
 * No write here bumps the metadata version.
 *
 * Conditional writes:
 * - `registerPending(s)`: one PutItem.
 *   Condition: no item at the base offset (`attribute_not_exists(pk)`).
 *   Effect: a `pending` item, generation 0.
 *   Fails: returns false (another roller's item is there).
 * - `commitSegment(s, details)`: one UpdateItem.
 *   Condition: the item is `pending` or already `live`, with this range's end and object key
 *   (`(#state = :pending OR #state = :live) AND endOffset = :end AND #key = :key`).
 *   Effect: `state` = live, and the details.
 *   Fails: returns false.
 * - `tombstoneSegments(segments, at)`: one UpdateItem per segment.
 *   Condition: still `live` under the generation read (`#state = :live AND generation = :gen`).
 *   Effect: `state` = deleted, `deletedAt`.
 *   Fails: that segment is skipped; returns how many were tombstoned.
 * - `replaceSegments(old, replacement, at)`: one transaction [Put of the replacement over the first
 *   old item, Put of that item's tombstone at `<sk>.g<generation>`, Updates of the other old items].
 *   Condition: every old item still `live` under the generation read
 *   (`#state = :live AND generation = :gen`); no item at the tombstone's key
 *   (`attribute_not_exists(pk)`).
 *   Effect: the replacement `live`; the rest, and the first one's tombstone, `deleted` at `at`.
 *   Fails: returns false (nothing changed); `Error` for a replacement that does not cover the
 *   range exactly, or too many segments.
 * - `removeSegmentItem(s)`: one DeleteItem.
 *   Condition: the item is still in the state read (`#state = :state`).
 *   Effect: the item deleted.
 *   Fails: returns false.
 * - `abandonPending(s, at)`: one UpdateItem.
 *   Condition: still `pending` with the `createdAt` read (`#state = :pending AND createdAt = :created`).
 *   Effect: `state` = deleted, `deletedAt`.
 *   Fails: returns false.
 * - `claimOrphan(o, at, fence?)`: one PutItem.
 *   Condition: no item at the base offset's key (with `fence`, at `<sk>.g<fence>`):
 *   `attribute_not_exists(pk)`.
 *   Effect: a `deleted` item naming the object.
 *   Fails: returns undefined.
 */
import { DeleteCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { config } from '../../config.js';
import { dynamo } from '../clients.js';
import { segmentSk, segmentsPk } from '../tables.js';
import { transactWrite, ConditionFailed, MAX_TRANSACTION_ITEMS } from '../transact.js';

export type SegmentState = 'pending' | 'live' | 'deleted';

export interface SegmentRecord {
  readonly topicId: string;
  readonly partition: number;
  /** First offset of the segment's first batch. */
  readonly baseOffset: number;
  /** Exclusive: the last batch's last offset + 1. */
  readonly endOffset: number;
  /** The S3 object. */
  readonly key: string;
  /** 0 for a roll's object; a compaction's rewrite of the range has a higher one. */
  readonly generation: number;
  readonly state: SegmentState;
  /** When the item was first written (pending) — ms since epoch. */
  readonly createdAt: number;
  /** When it was tombstoned. */
  readonly deletedAt?: number;
  /** Filled when it goes live. */
  readonly sizeBytes?: number;
  readonly recordCount?: number;
  readonly batchCount?: number;
  readonly minTimestamp?: number;
  readonly maxTimestamp?: number;
  /**
   * The leader epoch of the segment's last batch (set when it goes live). A replica whose epoch
   * cache gives another epoch at `endOffset - 1` holds a different log there (only after an
   * unclean election): it is never trimmed against this segment.
   */
  readonly lastLeaderEpoch?: number;
  /** `data/` objects the segment's index points into (adopted large batches), for the garbage pass. */
  readonly externalKeys?: readonly string[];
  /** Compacted topics: the offset up to which the range has been cleaned (`undefined`: never). */
  readonly cleanedTo?: number;
  /** The item's sort key, as `listSegments` read it (a replaced object's tombstone has its own). */
  readonly itemSk?: string;
}

const table = (): string => config().coordinationTable;
const db = () => dynamo();

const keyOf = (s: Pick<SegmentRecord, 'topicId' | 'partition' | 'baseOffset'>) => ({ pk: segmentsPk(s.topicId, s.partition), sk: segmentSk(s.baseOffset) });

/** The object key of a segment: a roll's (generation 0) or a compaction's rewrite. */
export function segmentObjectKey(topicId: string, partition: number, baseOffset: number, generation = 0): string {
  return `segments/${topicId}/${partition}/${segmentSk(baseOffset)}${generation > 0 ? `.g${generation}` : ''}.seg`;
}

function toSegment(item: Record<string, unknown>): SegmentRecord {
  const { pk: _pk, sk, ...rest } = item;
  return { ...rest, itemSk: sk } as unknown as SegmentRecord;
}

/** The stored attributes of a segment (without the read-only `itemSk`). */
function attributes(s: SegmentRecord): Record<string, unknown> {
  const { itemSk: _sk, ...rest } = s;
  return rest;
}

const isConditionFailure = (err: unknown) => (err as Error).name === 'ConditionalCheckFailedException';

/**
 * A partition's segments in offset order (strongly consistent, paged), `live` only unless asked.
 * `fromOffset`: only items whose base offset is at or above it (a roller's view of the top).
 */
export async function listSegments(topicId: string, partition: number, o: { states?: readonly SegmentState[]; fromOffset?: number } = {}): Promise<SegmentRecord[]> {
  const states = o.states ?? ['live'];
  const out: SegmentRecord[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const res = await db().send(new QueryCommand({
      TableName: table(),
      KeyConditionExpression: o.fromOffset === undefined ? 'pk = :pk' : 'pk = :pk AND sk >= :from',
      ExpressionAttributeValues: { ':pk': segmentsPk(topicId, partition), ...(o.fromOffset === undefined ? {} : { ':from': segmentSk(o.fromOffset) }) },
      ConsistentRead: true,
      ExclusiveStartKey: start,
    }));
    out.push(...(res.Items ?? []).map(toSegment).filter((s) => states.includes(s.state)));
    start = res.LastEvaluatedKey;
  } while (start);
  return out;
}

/**
 * The live segment that holds `offset` with a base below it (a compaction merged it with the
 * segment that started at `offset`), if there is one: the items below `offset`, newest first, up
 * to the first live one (strongly consistent).
 */
export async function liveSegmentAround(topicId: string, partition: number, offset: number): Promise<SegmentRecord | undefined> {
  let start: Record<string, unknown> | undefined;
  do {
    const res = await db().send(new QueryCommand({
      TableName: table(),
      KeyConditionExpression: 'pk = :pk AND sk < :at',
      ExpressionAttributeValues: { ':pk': segmentsPk(topicId, partition), ':at': segmentSk(offset) },
      ScanIndexForward: false,
      ConsistentRead: true,
      Limit: 8,
      ExclusiveStartKey: start,
    }));
    const live = (res.Items ?? []).map(toSegment).find((s) => s.state === 'live');
    if (live) return live.endOffset > offset ? live : undefined;
    start = res.LastEvaluatedKey;
  } while (start);
  return undefined;
}

/**
 * Claims [baseOffset, endOffset) for a roll.
 * Condition: no item at `baseOffset`. Effects: a `pending` item.
 * Returns false when another roller's item is there (read it with `listSegments`).
 */
export async function registerPending(s: Pick<SegmentRecord, 'topicId' | 'partition' | 'baseOffset' | 'endOffset' | 'key' | 'createdAt'>): Promise<boolean> {
  try {
    await db().send(new PutCommand({
      TableName: table(),
      Item: { ...keyOf(s), ...s, generation: 0, state: 'pending' },
      ConditionExpression: 'attribute_not_exists(pk)',
    }));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

export type SegmentDetails = Required<Pick<SegmentRecord, 'sizeBytes' | 'recordCount' | 'batchCount' | 'minTimestamp' | 'maxTimestamp'>> & Pick<SegmentRecord, 'externalKeys' | 'lastLeaderEpoch'>;

/**
 * Makes a pending segment part of the log, once its object is written.
 * Condition: the item is `pending` (or already `live`: a second committer of the same range is a
 * no-op) with this range and key. Effects: `state = live` and the details.
 * Returns false when the item is not that range (it was replaced, which never happens to a claimed
 * range, or removed).
 */
export async function commitSegment(s: Pick<SegmentRecord, 'topicId' | 'partition' | 'baseOffset' | 'endOffset' | 'key'>, details: SegmentDetails): Promise<boolean> {
  try {
    await db().send(new UpdateCommand({
      TableName: table(),
      Key: keyOf(s),
      UpdateExpression: 'SET #state = :live, sizeBytes = :size, recordCount = :records, batchCount = :batches, minTimestamp = :minTs, maxTimestamp = :maxTs'
        + (details.externalKeys && details.externalKeys.length > 0 ? ', externalKeys = :ext' : '')
        + (details.lastLeaderEpoch !== undefined ? ', lastLeaderEpoch = :lastEpoch' : ''),
      ConditionExpression: '(#state = :pending OR #state = :live) AND endOffset = :end AND #key = :key',
      ExpressionAttributeNames: { '#state': 'state', '#key': 'key' },
      ExpressionAttributeValues: {
        ':live': 'live', ':pending': 'pending', ':end': s.endOffset, ':key': s.key,
        ':size': details.sizeBytes, ':records': details.recordCount, ':batches': details.batchCount,
        ':minTs': details.minTimestamp, ':maxTs': details.maxTimestamp,
        ...(details.externalKeys && details.externalKeys.length > 0 ? { ':ext': [...details.externalKeys] } : {}),
        ...(details.lastLeaderEpoch !== undefined ? { ':lastEpoch': details.lastLeaderEpoch } : {}),
      },
    }));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/**
 * Tombstones live segments (retention, DeleteRecords): they stop being part of the log; the
 * garbage pass deletes their objects after its grace period.
 * Condition (each): still `live` under the generation read. Effects: `state = deleted`, `deletedAt`.
 * Returns how many it tombstoned (one already gone or replaced is skipped, not an error).
 */
export async function tombstoneSegments(segments: readonly SegmentRecord[], at = Date.now()): Promise<number> {
  let n = 0;
  for (const s of segments) {
    try {
      await db().send(new UpdateCommand({
        TableName: table(),
        Key: keyOf(s),
        UpdateExpression: 'SET #state = :deleted, deletedAt = :at',
        ConditionExpression: '#state = :live AND generation = :gen',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':deleted': 'deleted', ':live': 'live', ':gen': s.generation, ':at': at },
      }));
      n++;
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
  }
  return n;
}

/**
 * Replaces live segments with a compaction's rewrite of the same range, in one transaction: the
 * log changes from the old objects to the new one at once, for every reader.
 * `replacement` covers exactly [first old base, last old end) and is keyed by the first old base
 * (it overwrites that item with a higher generation); the others are tombstoned.
 * Condition: every old item still `live` under the generation read (no retention or concurrent
 * compaction moved it). Effects: the replacement `live`; the rest `deleted` at `at`; the replaced
 * first item's object becomes garbage (a tombstone of it is written under its own generation key).
 * Returns false when the condition failed (nothing changed).
 */
export async function replaceSegments(old: readonly SegmentRecord[], replacement: SegmentRecord, at = Date.now()): Promise<boolean> {
  const first = old[0];
  if (!first || replacement.baseOffset !== first.baseOffset || replacement.endOffset !== (old[old.length - 1] as SegmentRecord).endOffset) {
    throw new Error('a replacement must cover exactly the segments it replaces');
  }
  if (old.length + 1 > MAX_TRANSACTION_ITEMS) throw new Error(`at most ${MAX_TRANSACTION_ITEMS - 1} segments are replaced at once`);
  const liveUnder = (s: SegmentRecord) => ({
    ConditionExpression: '#state = :live AND generation = :gen',
    ExpressionAttributeNames: { '#state': 'state' },
    ExpressionAttributeValues: { ':live': 'live', ':gen': s.generation },
  });
  try {
    await transactWrite(db(), [
      { Put: { TableName: table(), Item: { ...keyOf(replacement), ...attributes(replacement), state: 'live' }, ...liveUnder(first) } },
      // The replaced first object stays findable for the garbage pass under a key of its own.
      { Put: { TableName: table(), Item: { pk: segmentsPk(first.topicId, first.partition), sk: `${segmentSk(first.baseOffset)}.g${first.generation}`, ...attributes(first), state: 'deleted', deletedAt: at }, ConditionExpression: 'attribute_not_exists(pk)' } },
      ...old.slice(1).map((s) => ({
        Update: {
          TableName: table(), Key: keyOf(s), UpdateExpression: 'SET #state = :deleted, deletedAt = :at',
          ...liveUnder(s), ExpressionAttributeValues: { ':live': 'live', ':gen': s.generation, ':deleted': 'deleted', ':at': at },
        },
      })),
    ]);
    return true;
  } catch (err) {
    if (err instanceof ConditionFailed) return false;
    throw err;
  }
}

/**
 * Removes a segment item for good (the garbage pass, after deleting its object; or an abandoned
 * pending claim). Condition: the item is in `state` (and, for `deleted`, was tombstoned at
 * `deletedAt`). Returns false when it changed meanwhile.
 */
export async function removeSegmentItem(s: SegmentRecord): Promise<boolean> {
  try {
    await db().send(new DeleteCommand({
      TableName: table(),
      Key: { pk: segmentsPk(s.topicId, s.partition), sk: s.itemSk ?? segmentSk(s.baseOffset) },
      ConditionExpression: '#state = :state',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ':state': s.state },
    }));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** The segment holding `offset` among live segments in offset order, if any. */
export function segmentFor(segments: readonly SegmentRecord[], offset: number): SegmentRecord | undefined {
  let lo = 0;
  let hi = segments.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const s = segments[mid] as SegmentRecord;
    if (offset < s.baseOffset) hi = mid - 1;
    else if (offset >= s.endOffset) lo = mid + 1;
    else return s;
  }
  return undefined;
}

/**
 * The garbage pass gives up a stale `pending` claim (its roller died before committing): the item
 * becomes `deleted` at `at`, so a late commit of that roller fails (it deletes no table batch) and
 * no roller registers the range again until the object is gone (the garbage pass deletes it after
 * its grace, then the item).
 * Condition: still `pending` with the `createdAt` read (a takeover that re-claimed it is left alone).
 * Returns false when the condition failed.
 */
export async function abandonPending(s: SegmentRecord, at = Date.now()): Promise<boolean> {
  try {
    await db().send(new UpdateCommand({
      TableName: table(),
      Key: { pk: segmentsPk(s.topicId, s.partition), sk: s.itemSk ?? segmentSk(s.baseOffset) },
      UpdateExpression: 'SET #state = :deleted, deletedAt = :at',
      ConditionExpression: '#state = :pending AND createdAt = :created',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ':deleted': 'deleted', ':pending': 'pending', ':created': s.createdAt, ':at': at },
    }));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/**
 * The garbage pass registers an object that no item names (a write whose registration was lost)
 * as `deleted` before deleting it, so that nothing can make the key part of the log meanwhile:
 * - without `fence`, at the object's base offset: while the item exists no roller can register
 *   that base and write the same key again, and no compaction can swap in a rewrite there;
 * - with `fence` (the generation of the live item at that base), at the sort key where a
 *   compaction replacing that item writes its tombstone: the swap of a rewrite still in flight
 *   fails instead of making a deleted object live.
 * Condition: no item at that sort key. Effects: a `deleted` item naming `key`.
 * Returns the item, or undefined when one is there (a roller or a compaction got there first).
 */
export async function claimOrphan(o: Pick<SegmentRecord, 'topicId' | 'partition' | 'baseOffset' | 'key' | 'generation'>, at = Date.now(), fence?: number): Promise<SegmentRecord | undefined> {
  const sk = fence === undefined ? segmentSk(o.baseOffset) : `${segmentSk(o.baseOffset)}.g${fence}`;
  const item: SegmentRecord = { ...o, endOffset: o.baseOffset, state: 'deleted', createdAt: at, deletedAt: at, itemSk: sk };
  try {
    await db().send(new PutCommand({
      TableName: table(),
      Item: { pk: segmentsPk(o.topicId, o.partition), sk, ...attributes(item) },
      ConditionExpression: 'attribute_not_exists(pk)',
    }));
    return item;
  } catch (err) {
    if (isConditionFailure(err)) return undefined;
    throw err;
  }
}
