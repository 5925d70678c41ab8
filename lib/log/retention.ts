/**
 * Retention and DeleteRecords: how the log's start moves forward.
 *
 * Both follow one order, so no reader ever finds a hole:
 *   1. raise `logStartOffset` on every replica, the leader first (never backwards): from then on
 *      fetch below it is OFFSET_OUT_OF_RANGE, so nothing reads what is about to go;
 *   2. tombstone the live segments wholly below the leader's new log start (the garbage pass
 *      deletes their objects after its grace period, lib/log/garbage.ts);
 *   3. DeleteRecords only: drop the table batches wholly below it (`advanceTailStart`).
 * Every write is conditional and monotonic, so two passes at once, or a pass racing a roll or a
 * compaction, leave the same state as one pass would (a lost tombstone is retaken by the next).
 */
import { KafkaError } from '../protocol/errors.js';
import { numericConfig, stringConfig } from '../cluster/topic-configs.js';
import { listBrokers } from '../storage/coordination/brokers.js';
import { readTopic } from '../storage/coordination/topics.js';
import { topicPartitionKey, type PartitionRecord, type ReplicaHead, type TopicRecord } from '../storage/model.js';
import { advanceTailStart, batchBoundsBelow, raiseLogStart } from '../storage/replica/tail.js';
import { readHead, tailStartOf } from '../storage/replica/head.js';
import { type ReplicaStoreRef } from '../storage/replica/store.js';
import { listSegments, tombstoneSegments, type SegmentRecord } from '../storage/coordination/segments.js';

/** A partition as retention sees it: the topic, its state, the leader's and the followers' stores. */
interface PartitionView {
  readonly topic: TopicRecord;
  readonly state: PartitionRecord;
  readonly tp: string;
  readonly leader: ReplicaStoreRef;
  readonly followers: readonly ReplicaStoreRef[];
}

async function partitionView(topicName: string, partition: number): Promise<PartitionView> {
  const view = await readTopic(topicName);
  if (!view || view.topic.state !== 'active') throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Topic ${topicName} not found.`, { topic: topicName });
  const state = view.partitions[partition];
  if (!state) throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${partition} not found.`, { topic: topicName, partition });
  if (state.leader < 0) throw new KafkaError('LEADER_NOT_AVAILABLE', `Partition ${partition} has no leader.`, { topic: topicName, partition });
  const brokers = new Map((await listBrokers()).map((b) => [b.brokerId, b as ReplicaStoreRef]));
  const leader = brokers.get(state.leader);
  if (!leader) throw new KafkaError('BROKER_NOT_AVAILABLE', `Broker ${state.leader} is not registered.`, { topic: topicName, partition });
  const followers = state.replicas.filter((id) => id !== state.leader).flatMap((id) => brokers.get(id) ?? []);
  return { topic: view.topic, state, tp: topicPartitionKey(view.topic.topicId, partition), leader, followers };
}

async function leaderHeadOf(v: PartitionView): Promise<ReplicaHead> {
  const head = await readHead(v.leader, v.tp);
  if (!head) throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${v.state.partition} has no replica on broker ${v.leader.brokerId}.`, { partition: v.state.partition });
  if (head.role !== 'leader') {
    throw new KafkaError('NOT_LEADER_OR_FOLLOWER', `Broker ${v.leader.brokerId} is not the leader of partition ${v.state.partition}.`, { partition: v.state.partition });
  }
  return head;
}

/**
 * Raises the log start to `offset` on the leader (whose head was read as `leaderLso`), then on
 * every follower whose head is below the leader's log start and holds it; returns the leader's
 * log start afterwards (`offset`, or more when another pass got further).
 * A follower that lags below it keeps its lower log start until a later pass (or the full sync it
 * will need) brings it up; nothing reads a follower below the leader's log start.
 */
async function raiseEverywhere(v: PartitionView, offset: number, leaderLso: number): Promise<number> {
  let lso = leaderLso;
  if (offset > leaderLso) {
    await raiseLogStart(v.leader, v.tp, offset);
    lso = (await readHead(v.leader, v.tp))?.logStartOffset ?? 0;
    if (lso < offset) return lso;
  }
  await Promise.all(v.followers.map(async (f) => {
    // (one store down must not stop the others, nor the leader's tombstones)
    try {
      const h = await readHead(f, v.tp);
      if (h && h.logStartOffset < lso && h.leo >= lso) await raiseLogStart(f, v.tp, lso);
    } catch {
      // the next pass retries it
    }
  }));
  return lso;
}

/** The brokers of the partition state's ISR whose log start is still below `lso` (or whose store did not answer). */
async function replicasBehind(v: PartitionView, lso: number): Promise<number[]> {
  const isr = v.followers.filter((f) => v.state.isr.includes(f.brokerId));
  const behind = await Promise.all(isr.map(async (f) => {
    const h = await readHead(f, v.tp).catch(() => undefined);
    return h === undefined || h.logStartOffset < lso ? [f.brokerId] : [];
  }));
  return behind.flat();
}

/** Why a segment was removed from the log. */
export type RetentionReason = 'retention.ms' | 'retention.bytes' | 'log-start';

export interface RetentionResult {
  /** The leader's log start offset after the pass. */
  readonly logStartOffset: number;
  /** The segments this pass tombstoned (base offset and why). */
  readonly tombstoned: readonly { readonly baseOffset: number; readonly endOffset: number; readonly reason: RetentionReason }[];
  /** Set when the topic's cleanup.policy has no `delete`: only segments below the log start were removed. */
  readonly skipped?: 'cleanup.policy';
}

export interface RetentionOptions {
  /** The clock (tests move it). @default Date.now() */
  readonly now?: number;
  /** Tests: runs after each step, to interleave another writer deterministically. */
  readonly onStep?: (step: 'head-read' | 'raised') => Promise<void> | void;
}

/**
 * Kafka's retention for one partition (cleanup.policy with `delete`): live segments wholly older
 * than `retention.ms` (judged by their largest timestamp, as Kafka does) or beyond
 * `retention.bytes` (the partition's size is its live segments plus the leader's table tail; the
 * oldest segments go while size − segment ≥ retention.bytes, Kafka's rule) leave the log, oldest
 * first, never skipping one. Live segments already wholly below the log start (a DeleteRecords
 * that lost a race with a roll or a compaction) go too, whatever the policy. The table tail never expires: only
 * rolled segments do, as in Kafka only closed segments do.
 * `now` is injectable for tests. Errors: UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE,
 * NOT_LEADER_OR_FOLLOWER.
 */
export async function applyRetention(topicName: string, partition: number, o: RetentionOptions = {}): Promise<RetentionResult> {
  const now = o.now ?? Date.now();
  const v = await partitionView(topicName, partition);
  const policies = stringConfig(v.topic.configs, 'cleanup.policy').split(',').map((s) => s.trim());
  // Read the head before the segment list: a segment committed in between starts at or above the
  // tailStart read, so the log start computed below never passes a segment this pass did not see.
  const head = await leaderHeadOf(v);
  // Without `delete` only segments already below the log start (DeleteRecords) leave the log.
  const deletes = policies.includes('delete');
  const retentionMs = deletes ? numericConfig(v.topic.configs, 'retention.ms') : -1;
  const retentionBytes = deletes ? numericConfig(v.topic.configs, 'retention.bytes') : -1;
  await o.onStep?.('head-read');
  // Only segments below the tail start read: one a roll committed since holds bytes the head's
  // tailBytes still counts (counted twice, the partition would look larger than it is); the next
  // pass sees it.
  const segments = (await listSegments(v.topic.topicId, partition)).filter((s) => s.endOffset <= tailStartOf(head));

  let size = segments.reduce((n, s) => n + (s.sizeBytes ?? 0), 0) + (head.tailBytes ?? 0);
  const expired: { segment: SegmentRecord; reason: RetentionReason }[] = [];
  for (const s of segments) {
    const reason: RetentionReason | undefined = s.endOffset <= head.logStartOffset ? 'log-start'
      : retentionMs >= 0 && s.maxTimestamp !== undefined && now - s.maxTimestamp > retentionMs ? 'retention.ms'
        : retentionBytes >= 0 && size - (s.sizeBytes ?? 0) >= retentionBytes ? 'retention.bytes'
          : undefined;
    if (!reason) break;
    expired.push({ segment: s, reason });
    size -= s.sizeBytes ?? 0;
  }
  const remaining = segments[expired.length];
  let wanted = Math.max(head.logStartOffset, expired.length === 0 ? head.logStartOffset : remaining?.baseOffset ?? tailStartOf(head));
  // A log start that no live segment serves (a replica that missed an earlier raise, now leading)
  // moves up to the first record there is, or a consumer reset to "earliest" would loop on it.
  const firstLive = remaining?.baseOffset ?? tailStartOf(head);
  if (wanted < tailStartOf(head) && wanted < firstLive) wanted = Math.min(firstLive, tailStartOf(head));

  const lso = await raiseEverywhere(v, wanted, head.logStartOffset);
  await o.onStep?.('raised');
  // Only what is wholly below the log start the leader now has (the raise may have lost to a
  // truncation or a leader change; then nothing is tombstoned).
  const gone = expired.filter((e) => e.segment.endOffset <= lso);
  const done = new Set<number>();
  for (const e of gone) if (await tombstoneSegments([e.segment], now) === 1) done.add(e.segment.baseOffset);
  return {
    logStartOffset: lso,
    tombstoned: gone.filter((e) => done.has(e.segment.baseOffset)).map((e) => ({ baseOffset: e.segment.baseOffset, endOffset: e.segment.endOffset, reason: e.reason })),
    ...(deletes ? {} : { skipped: 'cleanup.policy' as const }),
  };
}

export interface DeleteRecordsResult {
  /** Kafka's low watermark: the leader's log start offset afterwards. */
  readonly lowWatermark: number;
}

/**
 * Kafka's DeleteRecords for one partition: every record below `offset` leaves the log (`-1`: the
 * high watermark). The log start is raised on every replica (the leader first; the answer is the
 * leader's new log start, the low watermark, given once every replica of the ISR has it), the
 * live segments wholly below it are tombstoned,
 * and each replica's table drops the batches wholly below it (a batch that straddles the offset
 * stays until the log start passes its end, as Kafka keeps a segment that straddles it).
 * An offset below the current log start changes nothing. Idempotent; every write conditional.
 * Errors: OFFSET_OUT_OF_RANGE (above the high watermark, or below 0 other than -1, with the valid
 * range), UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER,
 * REQUEST_TIMED_OUT (an ISR follower could not raise its log start: retriable).
 */
export async function deleteRecords(topicName: string, partition: number, offset: number): Promise<DeleteRecordsResult> {
  const v = await partitionView(topicName, partition);
  const head = await leaderHeadOf(v);
  if (!Number.isSafeInteger(offset) || offset < -1 || offset > head.hw) {
    throw new KafkaError(
      'OFFSET_OUT_OF_RANGE',
      `OFFSET_OUT_OF_RANGE: cannot delete records below offset ${offset} of partition ${partition}: the valid range is [${head.logStartOffset}, ${head.hw}] (the high watermark), or -1.`,
      { topic: topicName, partition, logStartOffset: head.logStartOffset, highWatermark: head.hw },
    );
  }
  const target = offset === -1 ? head.hw : offset;
  const lso = await raiseEverywhere(v, target, head.logStartOffset);
  if (lso < target) {
    throw new KafkaError('NOT_LEADER_OR_FOLLOWER', `The log start of partition ${partition} could not be raised to ${target} on broker ${v.leader.brokerId}.`, { topic: topicName, partition });
  }
  // As Kafka answers DeleteRecords: once every in-sync replica's log start reached the offset (the
  // low watermark), so that no replica a clean election may choose still serves what was deleted.
  // A follower whose store did not answer fails the request (retriable): a retry raises it again.
  const behind = await replicasBehind(v, lso);
  if (behind.length > 0) {
    throw new KafkaError('REQUEST_TIMED_OUT', `The log start of partition ${partition} is ${lso} on its leader, but brokers ${behind.join(', ')} of its ISR could not raise theirs yet; retry.`, { topic: topicName, partition, brokers: behind });
  }

  const below = (await listSegments(v.topic.topicId, partition)).filter((s) => s.endOffset <= lso);
  await tombstoneSegments(below);
  // Each replica drops the batches it still holds wholly below the log start. Nothing reads them
  // (they are below it) and no live segment is needed in their place.
  await Promise.all([v.leader, ...v.followers].map(async (store) => {
    try {
      await dropBatchesBelow(store, v.tp, lso);
    } catch (err) {
      // A follower's store down: its batches go with a later DeleteRecords or its next full sync.
      if (store === v.leader) throw err;
    }
  }));
  return { lowWatermark: lso };
}

/** Drops a replica's table batches wholly below `offset`: tailStart moves to the last such batch's end. */
async function dropBatchesBelow(store: ReplicaStoreRef, tp: string, offset: number): Promise<void> {
  const head = await readHead(store, tp);
  if (!head) return;
  // (a head raised before tailStart existed may still hold batches below its log start)
  const from = head.tailStart ?? 0;
  const batches = await batchBoundsBelow(store, tp, from, offset);
  const last = batches[batches.length - 1];
  if (!last) return;
  await advanceTailStart(store, tp, last.lastOffset + 1);
}
