/**
 * Rolling: the table tail of a partition below its high watermark becomes an immutable S3
 * segment that every replica shares (docs/architecture.md, "Tiers").
 *
 *   (a) register [base, end) `pending` in the segment registry (conditional put: one roller wins)
 *   (b) PUT the segment object (deterministic bytes for the range: batches below the high
 *       watermark never change, so a roller that takes a stale claim over writes the same bytes)
 *   (c) commit the registration `pending → live`: from here the range is in the log twice, but
 *       readers choose by each replica's `tailStart`, so every record is read once
 *   (d) on every replica that holds [base, end): raise `tailStart` to `end`, delete the batches
 *
 * A crash after any step leaves the old state (nothing live) or the new one (live, tables not yet
 * trimmed); the next roll of the partition finishes what it finds before rolling more.
 */
import { numericConfig } from '../cluster/topic-configs.js';
import { replicaStore, requireTopic } from '../cluster/metadata.js';
import { logger } from '../logger.js';
import { emitMetric } from '../metrics.js';
import type { BatchRecord, ReplicaHead } from '../storage/model.js';
import { topicPartitionKey } from '../storage/model.js';
import { putObject } from '../storage/objects.js';
import { isRoundObject } from '../storage/stage.js';
import { advanceTailStart, correctTailBytes } from '../storage/replica/tail.js';
import { queryBatches } from '../storage/replica/reads.js';
import { readHead, tailStartOf } from '../storage/replica/head.js';
import { type ReplicaStoreRef } from '../storage/replica/store.js';
import { commitSegment, listSegments, liveSegmentAround, registerPending, segmentObjectKey, tombstoneSegments, type SegmentRecord } from '../storage/coordination/segments.js';
import { encodeSegment, type SegmentBatchInput } from './segment-format.js';
import { batchesBytes } from './read.js';

/** A pending claim older than this is taken over (its roller died between (a) and (c)). */
export const PENDING_STALE_MS = 60_000;

/** Steps a test may interrupt (a hook that throws is a crash at that point). */
export type RollStep = 'registered' | 'written' | 'committed' | 'trimmed-one';

export interface RollOptions {
  /** Roll even when neither `segment.bytes` nor `segment.ms` says so (tests, DeleteRecords). */
  readonly force?: boolean;
  /** Stop starting new segments after this time (ms since epoch). */
  readonly deadline?: number;
  /** At most this many segments per call. */
  readonly maxSegments?: number;
  readonly now?: () => number;
  readonly hook?: (step: RollStep, segment: Pick<SegmentRecord, 'baseOffset' | 'endOffset'>) => Promise<void> | void;
}

export interface RollResult {
  /** Segments this call made live. */
  readonly rolled: number;
  /** Segments whose table trim this call finished (its own and earlier rollers'). */
  readonly trimmed: number;
}

interface Partition {
  readonly topicId: string;
  readonly partition: number;
  readonly tp: string;
  readonly leader: ReplicaStoreRef;
  readonly replicas: readonly ReplicaStoreRef[];
  readonly segmentBytes: number;
  readonly segmentMs: number;
}

async function partitionOf(topic: string, partition: number): Promise<Partition | undefined> {
  const view = await requireTopic(topic);
  const state = view.partitions[partition];
  if (!state || state.leader < 0) return undefined;
  return {
    topicId: view.topic.topicId,
    partition,
    tp: topicPartitionKey(view.topic.topicId, partition),
    leader: await replicaStore(state.leader),
    replicas: await Promise.all(state.replicas.map((b) => replicaStore(b))),
    segmentBytes: numericConfig(view.topic.configs, 'segment.bytes'),
    segmentMs: numericConfig(view.topic.configs, 'segment.ms'),
  };
}

/**
 * How long a batch item lives in a replica table before DynamoDB's TTL may delete it (its
 * `expiresAt`, set at the append). A trim deletes nothing: what it moves the tail start past is in
 * a segment and read from there, and expires by itself — no write unit per batch per replica.
 */
export const BATCH_TTL_MS = 3 * 24 * 3_600_000;
/**
 * The oldest a table tail gets before it is due to roll whatever `segment.ms` says: a day, so a
 * roll that is late still has two days before any batch of the tail could expire.
 */
export const MAX_TAIL_AGE_MS = 24 * 3_600_000;
/** Past its due time by this much, a tail is reported overdue (`tailOverdue`, the TailOverdue alarm). */
export const TAIL_OVERDUE_MS = 3_600_000;

/** The `expiresAt` (epoch seconds) of a batch item appended at `now`. */
export const batchExpiresAt = (now: number): number => Math.ceil((now + BATCH_TTL_MS) / 1000);

/** How old a table tail may get under `segment.ms` before it is due to roll. */
const tailAgeLimit = (segmentMs: number): number => Math.min(segmentMs, MAX_TAIL_AGE_MS);

/** Whether a leader head's table tail is due to roll by `segment.bytes`, or by its age (`segment.ms`, at most a day). */
export function rollDue(head: Pick<ReplicaHead, 'tailBytes' | 'tailSince' | 'hw' | 'tailStart' | 'logStartOffset'>, segmentBytes: number, segmentMs: number, now: number): boolean {
  if (head.hw <= tailStartOf(head)) return false;
  return (head.tailBytes ?? 0) >= segmentBytes || (head.tailSince !== undefined && now - head.tailSince >= tailAgeLimit(segmentMs));
}

/**
 * Whether a leader head's table tail holds records past its roll's due time by more than
 * `TAIL_OVERDUE_MS`: rolls are failing, and its batches come closer to their expiry.
 */
export function tailOverdue(head: Pick<ReplicaHead, 'tailSince' | 'leo' | 'tailStart' | 'logStartOffset'>, segmentMs: number, now: number): boolean {
  return head.leo > tailStartOf(head) && head.tailSince !== undefined && now - head.tailSince > tailAgeLimit(segmentMs) + TAIL_OVERDUE_MS;
}

/** The segment-format input of a stored batch (`bytes`: its bytes read from a round object). */
const segmentInput = (b: BatchRecord, bytes?: Uint8Array): SegmentBatchInput => ({
  baseOffset: b.baseOffset, lastOffset: b.lastOffset, leaderEpoch: b.leaderEpoch, maxTimestamp: b.maxTimestamp,
  recordCount: b.recordCount, sizeBytes: b.sizeBytes,
  ...(b.data ? { bytes: b.data } : bytes ? { bytes } : {}),
  ...(b.s3 && !bytes ? { external: b.s3 } : {}),
});

/**
 * The segment inputs of stored batches: a group-commit round's batches are copied in (one ranged
 * GET per run of them), so a segment read never needs one GET per small batch; a large batch's
 * own object stays external.
 */
async function segmentInputs(batches: readonly BatchRecord[]): Promise<SegmentBatchInput[]> {
  const inRounds = batches.filter((b) => b.s3 && isRoundObject(b.s3.key));
  const read = await Promise.all(batchesBytes(inRounds));
  const bytesOf = new Map(inRounds.map((b, i) => [b, read[i]]));
  return batches.map((b) => segmentInput(b, bytesOf.get(b)));
}

/** The leader's batches covering exactly [base, end), or undefined when its table no longer holds them. */
async function batchesOf(p: Partition, base: number, end: number): Promise<BatchRecord[] | undefined> {
  const batches = await queryBatches(p.leader, p.tp, { fromOffset: base, toOffset: end - 1, maxBytes: Number.MAX_SAFE_INTEGER });
  const first = batches[0];
  const last = batches[batches.length - 1];
  if (!first || !last || first.baseOffset !== base || last.lastOffset + 1 !== end) return undefined;
  for (let i = 1; i < batches.length; i++) {
    if ((batches[i] as BatchRecord).baseOffset !== (batches[i - 1] as BatchRecord).lastOffset + 1) return undefined;
  }
  return batches;
}

/** (b) and (c): writes the object of a claimed range and makes it live. False when the leader no longer holds the range. */
async function writeAndCommit(p: Partition, claim: Pick<SegmentRecord, 'baseOffset' | 'endOffset' | 'key'>, o: RollOptions, read?: readonly BatchRecord[]): Promise<boolean> {
  const batches = read ?? await batchesOf(p, claim.baseOffset, claim.endOffset);
  if (!batches) return false;
  const encoded = encodeSegment(await segmentInputs(batches));
  await putObject(claim.key, encoded.body);
  await o.hook?.('written', claim);
  const external = [...new Set(batches.flatMap((b) => (b.s3 && !isRoundObject(b.s3.key) ? [b.s3.key] : [])))];
  const ok = await commitSegment({ topicId: p.topicId, partition: p.partition, ...claim }, {
    sizeBytes: encoded.body.length,
    recordCount: encoded.footer.recordCount,
    batchCount: encoded.footer.batchCount,
    minTimestamp: encoded.footer.minTimestamp,
    maxTimestamp: encoded.footer.maxTimestamp,
    ...(external.length > 0 ? { externalKeys: external } : {}),
    lastLeaderEpoch: (batches[batches.length - 1] as BatchRecord).leaderEpoch,
  });
  if (ok) {
    emitMetric('segmentsRolled', 1);
    emitMetric('segmentBytes', encoded.body.length);
    logger.info({ event: 'segment-rolled', tp: p.tp, baseOffset: claim.baseOffset, endOffset: claim.endOffset, bytes: encoded.body.length }, 'segment rolled');
    await o.hook?.('committed', claim);
  }
  return ok;
}

/** The leader epoch a replica's epoch cache gives `offset` (undefined: the cache does not say). */
export function epochAt(head: Pick<ReplicaHead, 'epochs'>, offset: number): number | undefined {
  let epoch: number | undefined;
  for (const [e, start] of head.epochs) if (start <= offset) epoch = e;
  return epoch;
}

/**
 * Whether a replica holds the same log as a segment below its end: the same leader epoch at the
 * segment's last offset (logs that agree on an offset's epoch agree below it, KIP-101). Only a
 * replica of a leader chosen by an unclean election can differ.
 */
async function sameLog(store: ReplicaStoreRef, tp: string, end: number, lastLeaderEpoch: number | undefined): Promise<boolean> {
  if (lastLeaderEpoch === undefined) return true;
  const head = await readHead(store, tp);
  const epoch = head ? epochAt(head, end - 1) : undefined;
  return epoch === undefined || epoch === lastLeaderEpoch;
}

/** (d) on every replica. Returns how many replicas moved their tail start. */
async function trim(p: Partition, segment: Pick<SegmentRecord, 'baseOffset' | 'endOffset' | 'lastLeaderEpoch'>, o: RollOptions, rolled?: readonly BatchRecord[]): Promise<number> {
  let moved = 0;
  const known = rolled?.map((b) => ({ off: b.lastOffset, sizeBytes: b.sizeBytes, ...(b.expiresAt === undefined ? {} : { expiresAt: b.expiresAt }) }));
  for (const store of p.replicas) {
    try {
      if (!(await sameLog(store, p.tp, segment.endOffset, segment.lastLeaderEpoch))) {
        emitMetric('segmentAheadOfLeader', 1);
        logger.error({ event: 'segment-log-differs', tp: p.tp, broker: store.brokerId, segment: [segment.baseOffset, segment.endOffset] }, 'a replica holds another log than a live segment there; it is not trimmed');
      } else if (await advanceTailStart(store, p.tp, segment.endOffset, (o.now ?? Date.now)(), known)) moved++;
    } catch (err) {
      // An unreachable replica keeps its batches until a later roll pass (or its full sync).
      logger.warn({ event: 'segment-trim-failed', tp: p.tp, broker: store.brokerId, err: (err as Error).message }, 'could not trim a replica table after a roll');
    }
    await o.hook?.('trimmed-one', segment);
  }
  return moved;
}

/**
 * Trims every follower whose table still holds what the leader's no longer does (its store failed
 * during a trim, or a full sync installed an older tail start): up to the leader's tail start, when
 * it holds that far and agrees with the leader's log there.
 */
async function trimBehindFollowers(p: Partition, o: RollOptions): Promise<void> {
  const leaderHead = await readHead(p.leader, p.tp);
  if (!leaderHead || leaderHead.role !== 'leader') return;
  const end = tailStartOf(leaderHead);
  await Promise.all(p.replicas.filter((r) => r.brokerId !== p.leader.brokerId).map(async (store) => {
    try {
      const head = await readHead(store, p.tp);
      if (!head || tailStartOf(head) >= end || head.leo < end || head.snapshotting !== undefined) return;
      if (epochAt(head, end - 1) !== epochAt(leaderHead, end - 1)) return;
      await advanceTailStart(store, p.tp, end, (o.now ?? Date.now)());
    } catch (err) {
      logger.warn({ event: 'segment-trim-failed', tp: p.tp, broker: store.brokerId, err: (err as Error).message }, 'could not trim a follower behind its leader');
    }
  }));
}

/**
 * A compaction may have merged the segment this leader's tail starts at into one that starts
 * lower (its tail start was not trimmed when that one rolled — it was a follower then, its store
 * down): that segment is the log there. The leader adopts it as an earlier roll's (every replica
 * trims to its end) instead of rolling an overlap beside it. Returns whether it trimmed; a leader
 * that does not hold the segment's records (only after an unclean election) leaves it, and rolls
 * nothing here.
 */
async function adoptAround(p: Partition, head: ReplicaHead, base: number, o: RollOptions): Promise<boolean> {
  const around = await liveSegmentAround(p.topicId, p.partition, base);
  if (!around) return false;
  const epoch = epochAt(head, around.endOffset - 1);
  if (head.leo < around.endOffset || (around.lastLeaderEpoch !== undefined && epoch !== undefined && epoch !== around.lastLeaderEpoch)) {
    emitMetric('segmentAheadOfLeader', 1);
    logger.error({ event: 'segment-around-leader-tail', tp: p.tp, leo: head.leo, tailStart: base, segment: [around.baseOffset, around.endOffset] }, 'a live segment holds the leader\'s tail start but not its log');
    return false;
  }
  return (await trim(p, around, o)) > 0;
}

/**
 * Rolls a partition's table tail into segments while it is due (or `force`), first finishing
 * what an earlier roller left (a live segment above a replica's `tailStart`, a stale claim).
 * Safe to run concurrently from anywhere: the registry's conditional writes pick one roller per
 * range. Returns what it did; does nothing when the partition has no leader.
 */
export async function rollPartition(topic: string, partition: number, o: RollOptions = {}): Promise<RollResult> {
  const now = o.now ?? Date.now;
  const p = await partitionOf(topic, partition);
  let rolled = 0;
  let trimmed = 0;
  if (!p) return { rolled, trimmed };
  await trimBehindFollowers(p, o);
  for (let i = 0; i < (o.maxSegments ?? 16) && (o.deadline === undefined || now() < o.deadline); i++) {
    const head = await readHead(p.leader, p.tp);
    if (!head || head.role !== 'leader') break;
    const base = tailStartOf(head);
    const above = await listSegments(p.topicId, p.partition, { states: ['pending', 'live', 'deleted'], fromOffset: base });
    const found = above.find((g) => g.itemSk === undefined || !g.itemSk.includes('.'));
    // (a tombstone at the base — a claim the garbage pass abandoned or a fence of its own — blocks
    // the range until that pass removes it)
    if (found?.baseOffset === base && found.state === 'deleted') {
      if (await adoptAround(p, head, base, o)) { trimmed++; continue; }
      break;
    }
    if (found?.baseOffset === base && found.state === 'live') {
      const epoch = epochAt(head, found.endOffset - 1);
      if (head.leo < found.endOffset || (found.lastLeaderEpoch !== undefined && epoch !== undefined && epoch !== found.lastLeaderEpoch)) {
        // Only an unclean election makes a leader that lacks rolled records or holds others at
        // their offsets. Its log is the log now: this segment and every live one above it are
        // superseded (tombstoned; the garbage pass removes them, and then the range rolls again).
        // Readers lose nothing: the leader holds its log above its tail start in its table, and a
        // follower whose tail start is higher gets a full sync rather than a truncation.
        emitMetric('segmentAheadOfLeader', 1);
        const stale = above.filter((g) => g.state === 'live');
        const superseded = await tombstoneSegments(stale, now());
        logger.error({ event: 'segments-superseded', tp: p.tp, leo: head.leo, segments: stale.map((g) => [g.baseOffset, g.endOffset]), superseded }, 'the leader lacks records live segments hold: they are superseded by its log');
        break;
      }
      // An earlier roll got as far as (c): finish (d).
      if (await trim(p, found, o) === 0) break;
      trimmed++;
      continue;
    }
    if (found?.baseOffset === base) {
      // A pending claim: its roller is still at it, or died.
      if (now() - found.createdAt < PENDING_STALE_MS) break;
      // A dead roller's range is rolled only once it is committed here: it was cut under another
      // head (another leader's, whose high watermark may have been higher), and a segment holds
      // committed records only. Until then it waits (or the garbage pass abandons the claim).
      if (found.endOffset > head.hw) break;
      if (!(await writeAndCommit(p, found, o))) break;
      continue;
    }
    if (!o.force && !rollDue(head, p.segmentBytes, p.segmentMs, now())) break;
    // (whole batches below the high watermark, up to segment.bytes)
    const batches = await queryBatches(p.leader, p.tp, { fromOffset: base, toOffset: head.hw - 1, maxBytes: p.segmentBytes });
    const first = batches[0];
    if (!first || first.baseOffset !== base) break;
    // (keyed by last offset, the Query returned whole batches below the high watermark only)
    const last = batches[batches.length - 1] as BatchRecord;
    // The Query stops before a batch that would take it past segment.bytes; one that ran to the
    // high watermark instead found less than a segment's worth below it.
    const belowHwFits = last.lastOffset + 1 >= head.hw && batches.reduce((n, b) => n + b.sizeBytes, 0) < p.segmentBytes;
    if (!o.force && belowHwFits && !(head.tailSince !== undefined && now() - head.tailSince >= p.segmentMs)) {
      // Due by tailBytes, but not a segment's worth is committed: the rest waits on replication,
      // or tailBytes drifted (a truncation or a full sync does not keep it exact). A drift is
      // corrected; a small segment is never rolled for it.
      const tail = await queryBatches(p.leader, p.tp, { fromOffset: base, toOffset: head.leo - 1, maxBytes: p.segmentBytes });
      const tailEnd = tail.length > 0 ? (tail[tail.length - 1] as BatchRecord).lastOffset + 1 : base;
      const tailBytes = tail.reduce((n, b) => n + b.sizeBytes, 0);
      if (tailEnd >= head.leo && tailBytes < p.segmentBytes) await correctTailBytes(p.leader, p.tp, tailBytes - (head.tailBytes ?? 0));
      break;
    }
    if (await adoptAround(p, head, base, o)) { trimmed++; continue; }
    const claim = { baseOffset: base, endOffset: last.lastOffset + 1, key: segmentObjectKey(p.topicId, p.partition, base), lastLeaderEpoch: last.leaderEpoch };
    if (!(await registerPending({ topicId: p.topicId, partition: p.partition, baseOffset: claim.baseOffset, endOffset: claim.endOffset, key: claim.key, createdAt: now() }))) continue;
    await o.hook?.('registered', claim);
    if (!(await writeAndCommit(p, claim, o, batches))) break;
    rolled++;
    await trim(p, claim, o, batches);
    trimmed++;
  }
  return { rolled, trimmed };
}
