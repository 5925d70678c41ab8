/**
 * Appending prepared batches to a partition's leader replica (DESIGN §4 step 5): offsets assigned
 * from the head's log end offset, one transaction per chunk of batches, lost races retried from
 * the head the failed condition returned, batches above `inline.max.bytes` stored in S3 first.
 */
import { randomUUID } from 'node:crypto';
import { KafkaError } from '../errors.js';
import { readBatchHeader, withBaseOffset } from '../protocol/record-batch.js';
import type { BatchRecord, ReplicaHead } from '../storage/model.js';
import { putObject } from '../storage/objects.js';
import { appendBatches, headFromItem, readHead, type ReplicaStoreRef } from '../storage/replica.js';
import { ConditionFailed, MAX_TRANSACTION_ITEMS } from '../storage/transact.js';
import type { PreparedBatch } from './batches.js';

export interface AppendTarget {
  readonly leader: ReplicaStoreRef;
  readonly topicId: string;
  readonly partition: number;
  readonly tp: string;
  /** The leader epoch the partition state names; the head must agree. */
  readonly leaderEpoch: number;
  /** Batches larger than this go to S3 with a pointer in the table. */
  readonly inlineMaxBytes: number;
}

export interface AppendedRange {
  readonly baseOffset: number;
  readonly lastOffset: number;
}

/** Inline bytes per transaction, under DynamoDB's 4 MB transaction limit with room for keys. */
const MAX_TRANSACTION_BYTES = 3_500_000;
const MAX_ATTEMPTS = 25;

/** Heads this instance last saw per replica and partition: the first attempt needs no read. */
const knownHeads = new Map<string, ReplicaHead>();
const headKey = (t: AppendTarget): string => `${t.leader.brokerId}/${t.tp}`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Throws the Kafka error for a head that this leader epoch may not append to. */
function checkLeadership(head: ReplicaHead | undefined, t: AppendTarget): asserts head is ReplicaHead {
  const where = { topicId: t.topicId, partition: t.partition, broker: t.leader.brokerId };
  if (!head) throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${t.partition} has no replica on broker ${t.leader.brokerId}.`, where);
  if (head.leaderEpoch > t.leaderEpoch) {
    throw new KafkaError('FENCED_LEADER_EPOCH', `Leader epoch ${t.leaderEpoch} is older than the replica's ${head.leaderEpoch}.`, where);
  }
  if (head.leaderEpoch < t.leaderEpoch) {
    throw new KafkaError('UNKNOWN_LEADER_EPOCH', `Leader epoch ${t.leaderEpoch} is newer than the replica's ${head.leaderEpoch}.`, where);
  }
  if (head.role !== 'leader') {
    throw new KafkaError('NOT_LEADER_OR_FOLLOWER', `Broker ${t.leader.brokerId} is not the leader of partition ${t.partition}.`, where);
  }
}

/** Splits batches into groups that fit one transaction each. */
function chunks(batches: readonly PreparedBatch[], inlineMaxBytes: number): PreparedBatch[][] {
  const out: PreparedBatch[][] = [];
  let current: PreparedBatch[] = [];
  let bytes = 0;
  for (const b of batches) {
    const inlineBytes = b.bytes.length <= inlineMaxBytes ? b.bytes.length : 200;
    if (current.length > 0 && (current.length >= MAX_TRANSACTION_ITEMS - 1 || bytes + inlineBytes > MAX_TRANSACTION_BYTES)) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(b);
    bytes += inlineBytes;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/**
 * Appends batches in order; returns the offset range each batch got.
 * Errors: NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH (refresh metadata and
 * retry), UNKNOWN_TOPIC_OR_PARTITION (no head), REQUEST_TIMED_OUT (contention outlasted retries).
 */
export async function appendToLeader(t: AppendTarget, batches: readonly PreparedBatch[]): Promise<AppendedRange[]> {
  // Large batches go to S3 once, with base offset 0; readers set the offset from the table item.
  const pointers = await Promise.all(batches.map(async (b) => {
    if (b.bytes.length <= t.inlineMaxBytes) return undefined;
    const key = `data/${t.topicId}/${t.partition}/${randomUUID()}.batch`;
    await putObject(key, b.bytes);
    return { key, position: 0, length: b.bytes.length };
  }));
  const pointerOf = new Map(batches.map((b, i) => [b, pointers[i]]));
  const ranges: AppendedRange[] = [];
  for (const chunk of chunks(batches, t.inlineMaxBytes)) {
    ranges.push(...(await appendChunk(t, chunk, pointerOf)));
  }
  return ranges;
}

async function appendChunk(
  t: AppendTarget,
  chunk: readonly PreparedBatch[],
  pointerOf: ReadonlyMap<PreparedBatch, BatchRecord['s3']>,
): Promise<AppendedRange[]> {
  const cached = knownHeads.get(headKey(t));
  let head = cached ?? (await readHead(t.leader, t.tp));
  for (let attempt = 1; ; attempt++) {
    // A cached head may be behind a role or epoch change: only a fresh read may refuse the append.
    if (cached && head === cached && (cached.leaderEpoch !== t.leaderEpoch || cached.role !== 'leader')) head = await readHead(t.leader, t.tp);
    checkLeadership(head, t);
    let next = head.leo;
    const records: BatchRecord[] = chunk.map((b) => {
      const baseOffset = next;
      next += b.recordCount;
      const s3 = pointerOf.get(b);
      const header = readBatchHeader(b.bytes);
      return {
        baseOffset, lastOffset: next - 1, leaderEpoch: t.leaderEpoch, maxTimestamp: header.maxTimestamp,
        recordCount: b.recordCount, sizeBytes: b.bytes.length,
        ...(s3 ? { s3 } : { data: withBaseOffset(b.bytes, baseOffset, t.leaderEpoch) }),
      };
    });
    const lastEpoch = head.epochs[head.epochs.length - 1];
    const needsEpochEntry = !lastEpoch || lastEpoch[0] < t.leaderEpoch;
    try {
      await appendBatches(t.leader, t.tp, {
        expectLeo: head.leo,
        leaderEpoch: t.leaderEpoch,
        batches: records,
        // Single-copy commit until replication tracks the ISR: the leader's append is the commit.
        hw: next,
        ...(needsEpochEntry ? { epochEntry: [t.leaderEpoch, head.leo] as const } : {}),
      });
      knownHeads.set(headKey(t), {
        ...head, leo: next, hw: next,
        epochs: needsEpochEntry ? [...head.epochs, [t.leaderEpoch, head.leo]] : head.epochs,
      });
      return records.map((r) => ({ baseOffset: r.baseOffset, lastOffset: r.lastOffset }));
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      knownHeads.delete(headKey(t));
      if (attempt >= MAX_ATTEMPTS) {
        throw new KafkaError('REQUEST_TIMED_OUT', `Append to partition ${t.partition} lost ${attempt} races in a row.`, { topicId: t.topicId, partition: t.partition });
      }
      const failed = err.at(0);
      head = failed?.code === 'ConditionalCheckFailed' ? headFromItem(failed.current) : await readHead(t.leader, t.tp);
      if (attempt > 2) await sleep(Math.random() * Math.min(100, 2 ** attempt));
    }
  }
}
