/**
 * What every append to a leader replica decides before it writes, whichever way it commits (the
 * single conditional write of lib/log/append.ts, or the group commit of lib/log/staged-commit.ts):
 * whether the head lets this leader epoch append, the offsets each batch gets from the head's log
 * end, idempotent producers' verdicts, and the lag flag the append carries.
 */
import { KafkaError } from '../protocol/errors.js';
import { asKafkaError } from '../errors.js';
import { withBaseOffset } from '../protocol/record-batch.js';
import type { BatchRecord, ReplicaHead, S3Pointer, StoredProducerState } from '../storage/model.js';
import { logger } from '../logger.js';
import { markLagging } from '../storage/coordination/lag-index.js';
import { topicNameById } from '../storage/coordination/topics.js';
import { readProducerStates, type ProducerStateWrite } from '../storage/replica/producer-states.js';
import { appendBatches, type AppendWrite } from '../storage/replica/batches.js';
import { packsBatchItems } from '../cluster/metadata.js';
import { forgetLeader, rememberAppend } from './fast-commit.js';
import { type ReplicaStoreRef } from '../storage/replica/store.js';
import type { PreparedBatch, ProducerTag } from './batches.js';
import { check, checkMarker, openTxnsAfter, stateFields, type ProducerState } from './producer-state.js';
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
  /** The partition state's ISR as the caller has it (cached): a group commit's holder commits acks=all rounds from memory with it. */
  readonly stateIsr?: readonly number[];
}

export interface AppendedRange {
  readonly baseOffset: number;
  readonly lastOffset: number;
  /**
   * Another writer's group commit appended it, and — acks=all — the high watermark that writer's
   * commit moved, with the leader's ISR count then, once it covered the batch (absent when it did
   * not in time: the caller replicates).
   */
  readonly committed?: { readonly highWatermark: number; readonly isr: readonly number[] };
}

/** A batch ready for the table: its bytes (base offset 0) inline, or where in S3 they already are. */
export interface ReadyBatch {
  readonly bytes?: Buffer;
  readonly s3?: S3Pointer;
  readonly sizeBytes: number;
  readonly recordCount: number;
  readonly maxTimestamp: number;
  readonly producer?: ProducerTag;
}

/** A prepared batch as the table will hold it: inline, or at `s3`. */
export const readyBatch = (batch: PreparedBatch, s3?: S3Pointer): ReadyBatch => ({
  sizeBytes: batch.bytes.length, recordCount: batch.recordCount, maxTimestamp: batch.maxTimestamp,
  ...(batch.producer ? { producer: batch.producer } : {}),
  ...(s3 ? { s3 } : { bytes: batch.bytes }),
});

export const headKey = (t: AppendTarget): string => `${t.leader.brokerId}/${t.tp}`;

/** Throws the Kafka error for a head that this leader epoch may not append to. */
export function checkLeadership(head: ReplicaHead | undefined, t: AppendTarget): asserts head is ReplicaHead {
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

/** Puts the target's partition in the lag index. */
export async function markPartition(t: AppendTarget): Promise<void> {
  const topic = t.topic ?? await topicNameById(t.topicId);
  if (topic === undefined) throw new Error(`topic ${t.topicId} not found`);
  await markLagging(topic, t.topicId, t.partition);
}

/**
 * The refusal of an append the leader's count is too small for. A count with a member on its way
 * out (lib/cluster/isr-count.ts) may be one whose shrinker died or lost its race and left it
 * there: the partition goes in the lag index, so the sweep's replicate run settles it.
 */
export async function notEnoughReplicas(t: AppendTarget, head: ReplicaHead, minIsr: number): Promise<KafkaError> {
  if (head.leaving.length > 0) {
    await markPartition(t).catch((err: unknown) => logger.warn({ event: 'lag-mark-failed', topicId: t.topicId, partition: t.partition, err: (err as Error).message }, 'could not mark a partition whose ISR count has members leaving'));
  }
  return new KafkaError('NOT_ENOUGH_REPLICAS', `NOT_ENOUGH_REPLICAS: partition ${t.partition} has ${head.isr.length} in-sync replicas (${head.isr.join(', ')}), fewer than min.insync.replicas=${minIsr}.`, { topicId: t.topicId, partition: t.partition });
}

/**
 * The lag flag an append carries (lib/log/lag-index.ts): an append leaves the followers behind
 * until something replicates it, so the partition must be in the lag index. A head flagged under
 * this epoch says it is (the append is conditioned on the flag still being there); otherwise mark
 * first — one coordination write per idle→active transition, none per append on a marked
 * partition. A mark that cannot be written (the coordination table failing) does not fail the
 * append: it goes without the flag, so the next append tries again, and the full pass covers the gap.
 */
async function lagFlag(t: AppendTarget, head: ReplicaHead): Promise<{ readonly expect: true } | { readonly set: true; readonly clears: number | undefined } | undefined> {
  if (head.lagMarkedEpoch === t.leaderEpoch) return { expect: true };
  const clears = head.lagClears;
  return markPartition(t).then(
    () => ({ set: true as const, clears }),
    (err: unknown) => {
      logger.warn({ event: 'lag-mark-failed', topicId: t.topicId, partition: t.partition, err: (err as Error).message }, 'append could not mark its partition lagging');
      return undefined;
    },
  );
}

/** The leader-epoch cache entry an append under `t.leaderEpoch` adds, when it is the epoch's first. */
function epochEntryFor(t: AppendTarget, head: ReplicaHead): readonly [number, number] | undefined {
  const last = head.epochs[head.epochs.length - 1];
  return !last || last[0] < t.leaderEpoch ? [t.leaderEpoch, head.leo] : undefined;
}

/**
 * Writes planned batches on the head as read — its log end, the epoch's cache entry, the lag flag,
 * the producer states — and remembers the append (the next one needs no head read; an acks=all
 * commit copies from memory). `extra`: the ISR count the append needs, and a group commit's staged
 * marks. Errors: those of `appendBatches` (`ConditionFailed` when it lost), after forgetting the
 * leader's cached head.
 */
export async function appendOnHead(
  t: AppendTarget, head: ReplicaHead, batches: readonly BatchRecord[], producers: readonly ProducerStateWrite[],
  extra: Pick<AppendWrite, 'minIsr' | 'round' | 'combinedAt' | 'notCombinedSince' | 'lease' | 'once'> = {},
): Promise<void> {
  const epochEntry = epochEntryFor(t, head);
  const lag = await lagFlag(t, head);
  const openTxns = openTxnsAfter(head.openTxns, producers.map((w) => w.state), head.hw);
  try {
    await appendBatches(t.leader, t.tp, {
      expectLeo: head.leo, leaderEpoch: t.leaderEpoch, batches, producers, ...extra, pack: await packsBatchItems(),
      ...(epochEntry ? { epochEntry } : {}),
      ...(lag ? { lag } : {}),
      ...(openTxns ? { openTxns } : {}),
    });
  } catch (err) {
    forgetLeader(t.leader.brokerId, t.tp);
    throw err;
  }
  const end = (batches[batches.length - 1] as BatchRecord).lastOffset + 1;
  rememberAppend(t.leader, t.tp, t.leaderEpoch, head, {
    ...head, leo: end, ...(lag ? { lagMarkedEpoch: t.leaderEpoch } : {}),
    ...(extra.round ? { round: extra.round.item.round, clean: extra.round.clean } : {}), ...(extra.combinedAt !== undefined ? { combinedAt: extra.combinedAt } : {}),
    epochs: epochEntry ? [...head.epochs, [...epochEntry]] : head.epochs,
    ...(openTxns ? { openTxns } : {}),
  }, batches, producers.map((w) => w.state));
  rememberProducers(t, producers);
}

/**
 * An append transaction that was sent but whose answer never came (a timeout, a reset
 * connection): it may have been applied. Nothing appends it again — a new attempt would be a
 * second copy — so the caller answers REQUEST_TIMED_OUT (Kafka's answer to a produce whose
 * outcome is unknown; an idempotent producer's retry is then answered from its state).
 */
export class AppendOutcomeUnknown extends KafkaError {
  constructor(t: AppendTarget, override readonly cause: unknown) {
    super('REQUEST_TIMED_OUT', `REQUEST_TIMED_OUT: the append to partition ${t.partition} on broker ${t.leader.brokerId} got no answer (${causeOf(cause)}); it may or may not have been written.`, { topicId: t.topicId, partition: t.partition, broker: t.leader.brokerId });
  }
}

/** A cause's name and the start of its message: which timeout it was (connect, request, abort) tells where to look. */
function causeOf(cause: unknown): string {
  const e = cause as Error | undefined;
  const message = typeof e?.message === 'string' ? e.message.replace(/\s+/g, ' ').slice(0, 160) : '';
  return `${e?.name ?? 'error'}${message ? `: ${message}` : ''}`;
}

/** A store that did not answer (timeout, reset, 5xx, throttled), as lib/errors.ts tells them. */
export function isStoreFailure(err: unknown): boolean {
  try {
    return asKafkaError(err).kafkaName === 'KAFKA_STORAGE_ERROR';
  } catch {
    return false;
  }
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

/** The stored states of the batches' producers: from this instance's cache unless `fresh`. */
export async function producerStates(t: AppendTarget, batches: readonly ReadyBatch[], fresh: boolean): Promise<Map<number, StoredProducerState>> {
  const ids = [...new Set(batches.flatMap((b) => (b.producer ? [b.producer.producerId] : [])))];
  const out = new Map<number, StoredProducerState>();
  const missing = fresh ? ids : ids.filter((id) => {
    const known = knownProducers.get(producerKey(t, id));
    if (known) out.set(id, known);
    return !known;
  });
  if (missing.length > 0) for (const [id, st] of await readProducerStates(t.leader, t.tp, missing)) out.set(id, st);
  return out;
}

/** Remembers the producer states an append wrote. */
function rememberProducers(t: AppendTarget, writes: readonly ProducerStateWrite[]): void {
  if (knownProducers.size > KNOWN_PRODUCERS_MAX) knownProducers.clear();
  for (const w of writes) knownProducers.set(producerKey(t, w.state.producerId), { ...w.state, ver: (w.expectVer ?? 0) + 1 });
}

/** An append being planned: offsets assigned from the head's log end, producer states as they evolve. */
export interface Plan {
  next: number;
  readonly records: BatchRecord[];
  readonly evolving: Map<number, ProducerState>;
  readonly dirty: Set<number>;
  readonly states: ReadonlyMap<number, StoredProducerState>;
}

export const startPlan = (head: ReplicaHead, states: ReadonlyMap<number, StoredProducerState>): Plan =>
  ({ next: head.leo, records: [], evolving: new Map<number, ProducerState>(states), dirty: new Set(), states });

/**
 * Plans one batch at the plan's log end: its offsets, the duplicate's original offsets for an
 * idempotent retry, or the error that refuses it (an out-of-order sequence, a fenced producer epoch).
 */
export function planBatch(t: AppendTarget, p: Plan, b: ReadyBatch): AppendedRange | KafkaError {
  const tag = b.producer;
  if (tag?.control) {
    // A transaction marker: a repeat (the coordinator finishing a transaction twice) writes nothing,
    // but its answer covers the log up to here, where the marker it repeats is: an acks=all repeat
    // waits until that marker is committed, so no finish goes on while it could still be lost.
    const verdict = checkMarker(p.evolving.get(tag.producerId), {
      producerId: tag.producerId, markerEpoch: tag.producerEpoch, commit: tag.control === 'commit', ...(tag.repair ? { repair: true } : {}),
    });
    if (verdict.kind === 'repeat') return { baseOffset: -1, lastOffset: p.next - 1 };
    p.evolving.set(tag.producerId, verdict.next(p.next));
    p.dirty.add(tag.producerId);
  } else if (tag) {
    const verdict = check(p.evolving.get(tag.producerId), {
      producerId: tag.producerId, producerEpoch: tag.producerEpoch, firstSeq: tag.baseSequence, recordCount: b.recordCount,
      ...(tag.transactional ? { transactional: true } : {}),
    });
    if (verdict.kind === 'reject') return verdict.error;
    if (verdict.kind === 'duplicate') return { baseOffset: verdict.baseOffset, lastOffset: verdict.lastOffset };
    p.evolving.set(tag.producerId, verdict.next(p.next));
    p.dirty.add(tag.producerId);
  }
  const baseOffset = p.next;
  p.next += b.recordCount;
  p.records.push({
    baseOffset, lastOffset: p.next - 1, leaderEpoch: t.leaderEpoch, maxTimestamp: b.maxTimestamp,
    recordCount: b.recordCount, sizeBytes: b.sizeBytes,
    ...(b.s3 ? { s3: b.s3 } : { data: withBaseOffset(b.bytes as Buffer, baseOffset, t.leaderEpoch) }),
    ...(tag ? { producerId: tag.producerId, producerEpoch: tag.producerEpoch, baseSequence: tag.baseSequence } : {}),
    ...(tag?.transactional || tag?.control ? { transactional: true } : {}),
    ...(tag?.control ? { control: tag.control } : {}),
    expiresAt: batchExpiresAt(Date.now()),
  });
  return { baseOffset, lastOffset: p.next - 1 };
}

/** A copy of a plan to try batches on (kept only if they all fit). */
export const forkPlan = (p: Plan): Plan =>
  ({ next: p.next, records: [...p.records], evolving: new Map(p.evolving), dirty: new Set(p.dirty), states: p.states });

/** The producer state writes of a plan, each conditioned on the version it was read at. */
export function producerWrites(p: Plan): ProducerStateWrite[] {
  return [...p.dirty].map((id) => {
    const st = p.evolving.get(id) as ProducerState;
    return { state: stateFields(st), expectVer: p.states.get(id)?.ver ?? null };
  });
}
