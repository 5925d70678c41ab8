/**
 * Appending prepared batches to a partition's leader replica (docs/architecture.md, "Request
 * path"): offsets assigned from the head's log end offset, one transaction per chunk of batches,
 * batches above `inline.max.bytes` stored in S3 first. Appends from this instance go through one
 * lane per partition (they never race each other); an append that loses the head's race to
 * another instance joins a group commit (lib/log/staged-commit.ts) instead of retrying.
 */
import { randomUUID } from 'node:crypto';
import { KafkaError } from '../protocol/errors.js';
import { putObject } from '../storage/objects.js';
import { headFromItem, readHead } from '../storage/replica/head.js';
import { AppendConditionFailed } from '../storage/replica/batches.js';
import type { ReplicaHead, StoredProducerState } from '../storage/model.js';
import { ConditionFailed } from '../storage/transact.js';
import { packChunks, type ChunkCost } from './append-chunks.js';
import {
  appendOnHead, AppendOutcomeUnknown, checkLeadership, headKey, isStoreFailure, notEnoughReplicas, planBatch, producerStates,
  producerWrites, readyBatch, startPlan, type AppendedRange, type AppendTarget, type ReadyBatch,
} from './append-plan.js';
import type { PreparedBatch } from './batches.js';
import { knownHead } from './fast-commit.js';
import { appendStaged, combining, combiningSince, contended, stageable } from './staged-commit.js';

export { AppendOutcomeUnknown, type AppendedRange, type AppendTarget } from './append-plan.js';

/** How long an append keeps retrying lost races before REQUEST_TIMED_OUT. */
const RACE_BUDGET_MS = 10_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One caller's append waiting in its partition's lane. */
interface Waiter {
  readonly staged: readonly ReadyBatch[];
  readonly ranges: AppendedRange[];
  resolve(r: AppendedRange[]): void;
  reject(e: unknown): void;
}

/**
 * Appends from this instance to one partition go through one lane: while a transaction is in
 * flight, later appends wait and then go together (group commit), so they never race each other.
 * Appends from other instances meet in the staged group commit.
 */
const lanes = new Map<string, { running: boolean; waiting: Waiter[] }>();

/** What a ready batch costs its transaction (lib/log/append-chunks.ts). */
const costOf = (b: ReadyBatch): ChunkCost => ({
  inlineBytes: b.s3 ? 0 : b.sizeBytes,
  ...(b.producer ? { producerId: b.producer.producerId } : {}),
});

/**
 * Appends batches in order; returns the offset range each batch got.
 * Errors: NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH (refresh metadata and
 * retry), UNKNOWN_TOPIC_OR_PARTITION (no head), REQUEST_TIMED_OUT (contention outlasted retries),
 * AppendOutcomeUnknown — REQUEST_TIMED_OUT too — (the append transaction got no answer: it may
 * have been written, and must not be sent again), KAFKA_STORAGE_ERROR (a read before it failed).
 */
export async function appendToLeader(t: AppendTarget, batches: readonly PreparedBatch[]): Promise<AppendedRange[]> {
  // Large batches go to S3 once, with base offset 0; readers set the offset from the table item.
  const staged = await Promise.all(batches.map(async (batch): Promise<ReadyBatch> => {
    if (batch.bytes.length <= t.inlineMaxBytes) return readyBatch(batch);
    const key = `data/${t.topicId}/${t.partition}/${randomUUID()}.batch`;
    await putObject(key, batch.bytes);
    return readyBatch(batch, { key, position: 0, length: batch.bytes.length });
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
    const owners = new Map<ReadyBatch, Waiter>();
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

/** Plans a chunk from `head.leo`: each batch's offsets, an idempotent retry's first offsets, or its refusal. */
function planChunk(t: AppendTarget, head: ReplicaHead, chunk: readonly ReadyBatch[], states: ReadonlyMap<number, StoredProducerState>) {
  const plan = startPlan(head, states);
  const results = chunk.map((b) => planBatch(t, plan, b));
  return { records: plan.records, results, producers: producerWrites(plan), end: plan.next };
}

/**
 * The uncontended append: one conditional write on the head as this instance knows it (no read
 * when it appended last). A lost race — another instance appended meanwhile — joins the group
 * commit with the chunk, as does every append while this instance keeps losing races or the head
 * shows a recent commit that combined writers — on a cached head too: the write's condition
 * checks it, so an instance that appended last cannot keep the head from the stage's commits. A
 * chunk too large to stage retries from the head the failed condition returned.
 */
async function appendChunk(t: AppendTarget, chunk: readonly ReadyBatch[]): Promise<(AppendedRange | KafkaError)[]> {
  const deadline = Date.now() + RACE_BUDGET_MS;
  const canStage = stageable(chunk);
  const cached = knownHead(t.leader.brokerId, t.tp);
  if (canStage && contended(t)) return appendStaged(t, chunk, deadline, cached);
  let head = cached ?? (await readHead(t.leader, t.tp));
  // (while other instances' appends combine, this one joins them rather than race their commit)
  if (canStage && head && head.leaderEpoch === t.leaderEpoch && head.role === 'leader' && combining(head)) return appendStaged(t, chunk, deadline, head);
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
    try {
      // (a chunk that can stage writes only while no commit combines writers: else it joins them;
      // one that cannot — too large to stage, a repair's marker — writes regardless, and is rare)
      await appendOnHead(t, head, plan.records, plan.producers, { ...(minIsr !== undefined ? { minIsr } : {}), ...(canStage ? { notCombinedSince: combiningSince() } : {}) });
      return plan.results;
    } catch (err) {
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
      // Another instance appended meanwhile (or its transaction collided with this one): join the group commit.
      if (canStage && head && head.leaderEpoch === t.leaderEpoch && head.role === 'leader') return appendStaged(t, chunk, deadline, head);
      // (a producer state's condition failed: this instance's cached states are behind)
      if (err instanceof AppendConditionFailed && err.items.some((i) => i.index >= err.entries.producers)) {
        states = await producerStates(t, chunk, true);
        statesFresh = true;
      }
      // Full jitter: racing instances spread out instead of colliding again in lockstep.
      if (attempt > 1) await sleep(Math.random() * Math.min(200, 5 * 2 ** attempt));
    }
  }
}
