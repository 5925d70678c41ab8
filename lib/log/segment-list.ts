/**
 * A partition's tiered log as an operator sees it (the segments route, docs/tiered-log.md): the
 * registry's segments, a page at a time, and where the tiers meet according to the leader's head.
 * For display only: a fetch uses segment-reader.ts's cached list of live segments, never this.
 */
import { topicPartitionKey } from '../storage/model.js';
import { readHead, tailStartOf } from '../storage/replica/head.js';
import { type ReplicaStoreRef } from '../storage/replica/store.js';
import { listSegments, type SegmentRecord, type SegmentState } from '../storage/coordination/segments.js';

/** Which registry items to list: one state, or every state (`all`). */
export type SegmentStateFilter = SegmentState | 'all';

const ALL_STATES: readonly SegmentState[] = ['live', 'pending', 'deleted'];

/** One registry item as the route shows it: lib/storage/coordination/segments.ts's `SegmentRecord` without its partition and replica-only fields (times in ms since the epoch). */
export type SegmentInfo = Pick<SegmentRecord, 'baseOffset' | 'endOffset' | 'key' | 'generation' | 'state' | 'createdAt' | 'deletedAt' | 'sizeBytes' | 'recordCount' | 'batchCount' | 'minTimestamp' | 'maxTimestamp'>;

/** A page of a partition's segments and the leader's view of the tiers. */
export interface TieredLogView {
  /** In base offset order. */
  readonly segments: SegmentInfo[];
  /**
   * The leader's log start offset, local log start offset (Kafka's name in tiered storage,
   * KIP-405; Tributary's `tailStart`: the first offset the replica tables hold, everything below
   * it down to the log start is in live segments), high watermark and log end offset; null when
   * the partition has no leader or the leader's store did not answer.
   */
  readonly logStartOffset: number | null;
  readonly localLogStartOffset: number | null;
  readonly highWatermark: number | null;
  readonly logEndOffset: number | null;
  /** The base offset the next page starts at; undefined when this page ends the list. */
  readonly nextBaseOffset?: number;
}

export interface TieredLogQuery {
  /** @default 'live' */
  readonly state?: SegmentStateFilter;
  /** Only segments whose base offset is at or above this (a later page). @default 0 */
  readonly fromOffset?: number;
  /** Segments per page; a page never splits the items of one base offset (a compaction's tombstone sits beside its replacement). @default 1000 */
  readonly limit?: number;
}

/** Segments per page by default: about 400 KB of JSON, well inside a function's 6 MB answer. */
export const SEGMENT_PAGE = 1000;

/**
 * A page of the segments of one partition, and the tiers' bounds from its leader's head.
 * Reads: one strongly consistent Query of the partition's registry items from `fromOffset` (more
 * pages only past DynamoDB's 1 MB, a few thousand segments) and one GetItem of the leader's head,
 * together. A leader whose store fails gives null bounds rather than an error, as the partition
 * routes show an unavailable replica.
 */
export async function describeTieredLog(topicId: string, partition: number, leader: ReplicaStoreRef | undefined, q: TieredLogQuery = {}): Promise<TieredLogView> {
  const state = q.state ?? 'live';
  const limit = Math.max(1, q.limit ?? SEGMENT_PAGE);
  const [records, head] = await Promise.all([
    listSegments(topicId, partition, { states: state === 'all' ? ALL_STATES : [state], ...(q.fromOffset ? { fromOffset: q.fromOffset } : {}) }),
    leader ? readHead(leader, topicPartitionKey(topicId, partition)).catch(() => undefined) : Promise.resolve(undefined),
  ]);
  let end = Math.min(limit, records.length);
  while (end < records.length && records[end]?.baseOffset === records[end - 1]?.baseOffset) end++;
  const next = records[end];
  return {
    segments: records.slice(0, end).map((s): SegmentInfo => ({
      baseOffset: s.baseOffset, endOffset: s.endOffset, key: s.key, generation: s.generation ?? 0, state: s.state, createdAt: s.createdAt,
      ...(s.deletedAt !== undefined ? { deletedAt: s.deletedAt } : {}),
      ...(s.sizeBytes !== undefined ? { sizeBytes: s.sizeBytes } : {}),
      ...(s.recordCount !== undefined ? { recordCount: s.recordCount } : {}),
      ...(s.batchCount !== undefined ? { batchCount: s.batchCount } : {}),
      ...(s.minTimestamp !== undefined ? { minTimestamp: s.minTimestamp } : {}),
      ...(s.maxTimestamp !== undefined ? { maxTimestamp: s.maxTimestamp } : {}),
    })),
    logStartOffset: head?.logStartOffset ?? null,
    localLogStartOffset: head ? tailStartOf(head) : null,
    highWatermark: head?.hw ?? null,
    logEndOffset: head?.leo ?? null,
    ...(next ? { nextBaseOffset: next.baseOffset } : {}),
  };
}
