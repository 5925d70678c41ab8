/**
 * Appending prepared batches to a partition's leader replica (docs/architecture.md, "Request
 * path"): offsets assigned from the head's log end offset, one transaction per chunk of batches,
 * lost races retried from the head the failed condition returned, batches above `inline.max.bytes`
 * stored in S3 first.
 */
import { randomUUID } from 'node:crypto';
import { KafkaError } from '../protocol/errors.js';
import { asKafkaError } from '../errors.js';
import { withBaseOffset } from '../protocol/record-batch.js';
import type { BatchRecord, ReplicaHead, StoredProducerState } from '../storage/model.js';
import { logger } from '../logger.js';
import { markLagging } from '../storage/coordination/lag-index.js';
import { topicNameById } from '../storage/coordination/topics.js';
import { putObject } from '../storage/objects.js';
import { appendBatches } from '../storage/replica/batches.js';
import { headFromItem, readHead } from '../storage/replica/head.js';
import { readProducerStates, type ProducerStateWrite } from '../storage/replica/producer-states.js';
import { type ReplicaStoreRef } from '../storage/replica/store.js';
import { ConditionFailed } from '../storage/transact.js';
import { packChunks, type ChunkCost } from './append-chunks.js';
import type { PreparedBatch } from './batches.js';
import { check, type ProducerState } from './producer-state.js';
import { forgetLeader, knownHead, rememberAppend } from './fast-commit.js';
import { batchExpiresAt } from './roll.js';

export interface AppendTarget {
  /** The topic's name, for the lag index (read from the coordination table by id when absent). */
  readonly topic?: string;
  readonly leader: ReplicaStoreRef;
  readonly topicId: string;
  readonly partition: number;
  readonly tp: string;
  /** The leader epoch the partition state names; the head must agree. */
  readonly leaderEpoch: number;
  /** Batches larger than this go to S3 with a pointer in the table. */
  readonly inlineMaxBytes: number;
  /**
   * acks=all: the leader's ISR count must have at least this many members (min.insync.replicas),
   * else NOT_ENOUGH_REPLICAS and nothing is written. Checked in the append's own condition.
   */
  readonly minIsr?: number;
}

export interface AppendedRange {
  readonly baseOffset: number;
  readonly lastOffset: number;
}

/** How long an append keeps retrying lost races before REQUEST_TIMED_OUT. */
const RACE_BUDGET_MS = 10_000;

const headKey = (t: AppendTarget): string => `${t.leader.brokerId}/${t.tp}`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A batch ready for the table: its bytes, or where in S3 they already are. */
interface StagedBatch {
  readonly batch: PreparedBatch;
  readonly s3?: BatchRecord['s3'];
}

/** One caller's append waiting in its partition's lane. */
interface Waiter {
  readonly staged: readonly StagedBatch[];
  readonly ranges: AppendedRange[];
  resolve(r: AppendedRange[]): void;
  reject(e: unknown): void;
}

/**
 * Appends from this instance to one partition go through one lane: while a transaction is in
 * flight, later appends wait and then go together (group commit), so they never race each other.
 * Appends from other instances still race, and the head condition settles it.
 */
const lanes = new Map<string, { running: boolean; waiting: Waiter[] }>();

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

/**
 * The refusal of an append the leader's count is too small for. A count with a member on its way
 * out (lib/cluster/isr-count.ts) may be one whose shrinker died or lost its race and left it
 * there: the partition goes in the lag index, so the sweep's replicate run settles it.
 */
async function notEnoughReplicas(t: AppendTarget, head: ReplicaHead, minIsr: number): Promise<KafkaError> {
  if (head.leaving.length > 0) {
    await markPartition(t).catch((err: unknown) => logger.warn({ event: 'lag-mark-failed', topicId: t.topicId, partition: t.partition, err: (err as Error).message }, 'could not mark a partition whose ISR count has members leaving'));
  }
  return new KafkaError('NOT_ENOUGH_REPLICAS', `NOT_ENOUGH_REPLICAS: partition ${t.partition} has ${head.isr.length} in-sync replicas (${head.isr.join(', ')}), fewer than min.insync.replicas=${minIsr}.`, { topicId: t.topicId, partition: t.partition });
}

/** What a staged batch costs its transaction (lib/log/append-chunks.ts). */
const costOf = (b: StagedBatch): ChunkCost => ({
  inlineBytes: b.s3 ? 0 : b.batch.bytes.length,
  ...(b.batch.producer ? { producerId: b.batch.producer.producerId } : {}),
});

/**
 * An append transaction that was sent but whose answer never came (a timeout, a reset
 * connection): it may have been applied. Nothing appends it again — a new attempt would be a
 * second copy — so the caller answers REQUEST_TIMED_OUT (Kafka's answer to a produce whose
 * outcome is unknown; an idempotent producer's retry is then answered from its state).
 */
export class AppendOutcomeUnknown extends KafkaError {
  constructor(t: AppendTarget, override readonly cause: unknown) {
    super('REQUEST_TIMED_OUT', `REQUEST_TIMED_OUT: the append to partition ${t.partition} on broker ${t.leader.brokerId} got no answer (${(cause as Error)?.name ?? 'error'}); it may or may not have been written.`, { topicId: t.topicId, partition: t.partition, broker: t.leader.brokerId });
  }
}

/** A store that did not answer (timeout, reset, 5xx, throttled), as lib/errors.ts tells them. */
function isStoreFailure(err: unknown): boolean {
  try {
    return asKafkaError(err).kafkaName === 'KAFKA_STORAGE_ERROR';
  } catch {
    return false;
  }
}

/**
 * Appends batches in order; returns the offset range each batch got.
 * Errors: NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH (refresh metadata and
 * retry), UNKNOWN_TOPIC_OR_PARTITION (no head), REQUEST_TIMED_OUT (contention outlasted retries),
 * AppendOutcomeUnknown — REQUEST_TIMED_OUT too — (the append transaction got no answer: it may
 * have been written, and must not be sent again), KAFKA_STORAGE_ERROR (a read before it failed).
 */
export async function appendToLeader(t: AppendTarget, batches: readonly PreparedBatch[]): Promise<AppendedRange[]> {
  // Large batches go to S3 once, with base offset 0; readers set the offset from the table item.
  const staged = await Promise.all(batches.map(async (batch): Promise<StagedBatch> => {
    if (batch.bytes.length <= t.inlineMaxBytes) return { batch };
    const key = `data/${t.topicId}/${t.partition}/${randomUUID()}.batch`;
    await putObject(key, batch.bytes);
    return { batch, s3: { key, position: 0, length: batch.bytes.length } };
  }));
  // (appends that need an ISR size go in their own lane: a group shares one condition)
  const key = `${headKey(t)}/${t.leaderEpoch}/${t.inlineMaxBytes}/${t.minIsr ?? 0}`;
  let lane = lanes.get(key);
  if (!lane) {
    lane = { running: false, waiting: [] };
    lanes.set(key, lane);
  }
  const done = new Promise<AppendedRange[]>((resolve, reject) => lane.waiting.push({ staged, ranges: [], resolve, reject }));
  if (!lane.running) void drain(t, key, lane);
  return done;
}

/** Runs a lane: everything waiting goes in as few transactions as fit, in arrival order. */
async function drain(t: AppendTarget, key: string, lane: { running: boolean; waiting: Waiter[] }): Promise<void> {
  lane.running = true;
  while (lane.waiting.length > 0) {
    const group = lane.waiting.splice(0);
    const owners = new Map<StagedBatch, Waiter>();
    for (const w of group) for (const b of w.staged) owners.set(b, w);
    const pending = new Set(group);
    try {
      for (const chunk of packChunks(group.map((w) => w.staged), costOf)) {
        const results = await appendChunk(t, chunk);
        chunk.forEach((b, i) => {
          const w = owners.get(b) as Waiter;
          const r = results[i] as AppendedRange | KafkaError;
          if (r instanceof KafkaError) {
            if (pending.delete(w)) w.reject(r);
          } else {
            w.ranges.push(r);
          }
        });
        for (const w of pending) {
          if (w.ranges.length === w.staged.length) {
            w.resolve(w.ranges);
            pending.delete(w);
          }
        }
      }
    } catch (err) {
      for (const w of pending) w.reject(err);
    }
  }
  lane.running = false;
  lanes.delete(key);
}

/**
 * Producer states this instance last wrote per replica, partition and leader epoch. The epoch is
 * part of the key: under a later epoch the replica may have been a follower meanwhile (truncated,
 * copied into, fully synced) and a state version number may have come round again, so a broker
 * leading again never starts from what it cached under an earlier epoch.
 */
const knownProducers = new Map<string, StoredProducerState>();
const KNOWN_PRODUCERS_MAX = 10_000;
const producerKey = (t: AppendTarget, producerId: number): string => `${headKey(t)}/${t.leaderEpoch}/${producerId}`;

async function producerStates(t: AppendTarget, chunk: readonly StagedBatch[], fresh: boolean): Promise<Map<number, StoredProducerState>> {
  const ids = [...new Set(chunk.flatMap((b) => (b.batch.producer ? [b.batch.producer.producerId] : [])))];
  const out = new Map<number, StoredProducerState>();
  const missing = fresh ? ids : ids.filter((id) => {
    const known = knownProducers.get(producerKey(t, id));
    if (known) out.set(id, known);
    return !known;
  });
  if (missing.length > 0) for (const [id, st] of await readProducerStates(t.leader, t.tp, missing)) out.set(id, st);
  return out;
}

/** What one attempt at a chunk will write, and what each batch gets. */
interface ChunkPlan {
  readonly records: BatchRecord[];
  readonly results: (AppendedRange | KafkaError)[];
  readonly producers: ProducerStateWrite[];
  readonly end: number;
}

/** Assigns offsets from `head.leo`, answering idempotent retries and refusing out-of-order batches. */
function planChunk(t: AppendTarget, head: ReplicaHead, chunk: readonly StagedBatch[], states: ReadonlyMap<number, StoredProducerState>): ChunkPlan {
  let next = head.leo;
  const records: BatchRecord[] = [];
  const results: (AppendedRange | KafkaError)[] = [];
  const evolving = new Map<number, ProducerState>(states);
  const dirty = new Set<number>();
  for (const { batch, s3 } of chunk) {
    const tag = batch.producer;
    if (tag) {
      const verdict = check(evolving.get(tag.producerId), {
        producerId: tag.producerId, producerEpoch: tag.producerEpoch, firstSeq: tag.baseSequence, recordCount: batch.recordCount,
      });
      if (verdict.kind === 'reject') {
        results.push(verdict.error);
        continue;
      }
      if (verdict.kind === 'duplicate') {
        results.push({ baseOffset: verdict.baseOffset, lastOffset: verdict.lastOffset });
        continue;
      }
      evolving.set(tag.producerId, verdict.next(next));
      dirty.add(tag.producerId);
    }
    const baseOffset = next;
    next += batch.recordCount;
    records.push({
      baseOffset, lastOffset: next - 1, leaderEpoch: t.leaderEpoch, maxTimestamp: batch.maxTimestamp,
      recordCount: batch.recordCount, sizeBytes: batch.bytes.length,
      ...(s3 ? { s3 } : { data: withBaseOffset(batch.bytes, baseOffset, t.leaderEpoch) }),
      ...(tag ? { producerId: tag.producerId, producerEpoch: tag.producerEpoch, baseSequence: tag.baseSequence } : {}),
      expiresAt: batchExpiresAt(Date.now()),
    });
    results.push({ baseOffset, lastOffset: next - 1 });
  }
  const producers = [...dirty].map((id) => {
    const st = evolving.get(id) as ProducerState;
    return { state: { producerId: id, producerEpoch: st.producerEpoch, batches: st.batches }, expectVer: states.get(id)?.ver ?? null };
  });
  return { records, results, producers, end: next };
}

/** Puts the target's partition in the lag index. */
async function markPartition(t: AppendTarget): Promise<void> {
  const topic = t.topic ?? await topicNameById(t.topicId);
  if (topic === undefined) throw new Error(`topic ${t.topicId} not found`);
  await markLagging(topic, t.topicId, t.partition);
}

async function appendChunk(t: AppendTarget, chunk: readonly StagedBatch[]): Promise<(AppendedRange | KafkaError)[]> {
  const deadline = Date.now() + RACE_BUDGET_MS;
  const cached = knownHead(t.leader.brokerId, t.tp);
  let head = cached ?? (await readHead(t.leader, t.tp));
  let states = await producerStates(t, chunk, false);
  let statesFresh = false;
  for (let attempt = 1; ; attempt++) {
    // A cached head may be behind a role or epoch change: only a fresh read may refuse the append.
    if (cached && head === cached && (cached.leaderEpoch !== t.leaderEpoch || cached.role !== 'leader')) head = await readHead(t.leader, t.tp);
    checkLeadership(head, t);
    // A count too small refuses only on a stored head (a cached one is read again first); the
    // append's condition checks it too. (A head written before the leader kept its count has none.)
    const minIsr = t.minIsr !== undefined && t.minIsr > 1 && head.isr.length > 0 ? t.minIsr : undefined;
    if (minIsr !== undefined && head.isr.length < minIsr) {
      if (head === cached) {
        head = await readHead(t.leader, t.tp);
        continue;
      }
      throw await notEnoughReplicas(t, head, minIsr);
    }
    let plan = planChunk(t, head, chunk, states);
    // A duplicate or a refusal must be judged on the stored producer state, never on a cached one
    // (the log may have been truncated since): an answer without a write proves nothing else.
    if (!statesFresh && plan.records.length < chunk.length) {
      states = await producerStates(t, chunk, true);
      statesFresh = true;
      plan = planChunk(t, head, chunk, states);
    }
    if (plan.records.length === 0) return plan.results;
    const lastEpoch = head.epochs[head.epochs.length - 1];
    const needsEpochEntry = !lastEpoch || lastEpoch[0] < t.leaderEpoch;
    // Liveness (lag-index.ts): an append leaves the followers behind until something replicates
    // it, so the partition must be in the lag index. A head flagged under this epoch says it is
    // (the append is conditioned on the flag still being there); otherwise mark first — one
    // coordination write per idle→active transition, none per append on a marked partition.
    // A mark that cannot be written (the coordination table failing) does not fail the append:
    // it goes without the flag, so the next append tries again, and the full pass covers the gap.
    const marked = head.lagMarkedEpoch === t.leaderEpoch;
    const clears = head.lagClears;
    const lag = marked ? { expect: true as const } : await markPartition(t).then(
      () => ({ set: true as const, clears }),
      (err: unknown) => {
        logger.warn({ event: 'lag-mark-failed', topicId: t.topicId, partition: t.partition, err: (err as Error).message }, 'append could not mark its partition lagging');
        return undefined;
      },
    );
    try {
      await appendBatches(t.leader, t.tp, {
        expectLeo: head.leo,
        leaderEpoch: t.leaderEpoch,
        batches: plan.records,
        producers: plan.producers,
        ...(needsEpochEntry ? { epochEntry: [t.leaderEpoch, head.leo] as const } : {}),
        ...(lag ? { lag } : {}),
        ...(minIsr !== undefined ? { minIsr } : {}),
      });
      rememberAppend(t.leader, t.tp, t.leaderEpoch, head, {
        ...head, leo: plan.end, ...(lag ? { lagMarkedEpoch: t.leaderEpoch } : {}),
        epochs: needsEpochEntry ? [...head.epochs, [t.leaderEpoch, head.leo]] : head.epochs,
      }, plan.records, plan.producers.map((w) => w.state));
      if (knownProducers.size > KNOWN_PRODUCERS_MAX) knownProducers.clear();
      for (const w of plan.producers) knownProducers.set(producerKey(t, w.state.producerId), { ...w.state, ver: (w.expectVer ?? 0) + 1 });
      return plan.results;
    } catch (err) {
      forgetLeader(t.leader.brokerId, t.tp);
      // Only a failed condition proves the transaction was not applied: the store answered and
      // refused it. A store that did not answer may have applied it. (Anything else — a request
      // the store rejected as malformed — is a bug, and propagates as it is.)
      if (!(err instanceof ConditionFailed)) throw isStoreFailure(err) ? new AppendOutcomeUnknown(t, err) : err;
      if (Date.now() >= deadline) {
        throw new KafkaError('REQUEST_TIMED_OUT', `Append to partition ${t.partition} lost ${attempt} races in ${RACE_BUDGET_MS} ms.`, { topicId: t.topicId, partition: t.partition });
      }
      const failed = err.at(0);
      head = failed?.code === 'ConditionalCheckFailed' ? headFromItem(failed.current) : await readHead(t.leader, t.tp);
      if (minIsr !== undefined && head && head.isr.length < minIsr && head.leaderEpoch === t.leaderEpoch && head.role === 'leader') throw await notEnoughReplicas(t, head, minIsr);
      if (err.items.some((i) => i.index > plan.records.length)) {
        states = await producerStates(t, chunk, true);
        statesFresh = true;
      }
      // Full jitter: racing instances spread out instead of colliding again in lockstep.
      if (attempt > 1) await sleep(Math.random() * Math.min(200, 5 * 2 ** attempt));
    }
  }
}
