/**
 * The group commit of concurrent appends from different instances (docs/architecture.md,
 * "Request path"; the protocol is spec/commit.qnt's): an append that lost the head's race stages
 * its batches under a key of its own — no condition, no race — then reads its item, the
 * committer lease and the head. The lease's holder reads the stage and commits: one transaction
 * per round appends every staged batch it read and marks each staged item committed with its
 * outcome, on condition that the head is as read and each item still staged. The other writers
 * read again until they find their batches committed, and take the lease when it is free; a
 * writer that gives up takes its item back with a conditional write first, so a staged batch is
 * either in the log or never visible. The lease only keeps commits from colliding: safety is the transaction's conditions.
 *
 * Idempotent producers: one producer's staged batches commit in sequence order whichever
 * instances staged them (a batch whose predecessor is not in yet waits in the stage a little); a
 * retry of a sequence in the log is answered with its first offset.
 */
import { KafkaError } from '../protocol/errors.js';
import { isKafkaError } from '../errors.js';
import type { ReplicaHead } from '../storage/model.js';
import { readHead } from '../storage/replica/head.js';
import { AppendConditionFailed } from '../storage/replica/batches.js';
import {
  claimCommitter, dropStaged, lostCommit, markCombining, readStage, readWaiting, releaseCommitter, settleStaged, stageBatches, type CommitterLease, type Stage, type StagedItem, type StagedOutcome,
} from '../storage/replica/staging.js';
import { ConditionFailed } from '../storage/transact.js';
import { BATCH_ITEM_OVERHEAD, CHUNK_MAX_BYTES, PRODUCER_ITEM_BYTES, TRANSACTION_MAX_ITEMS } from './append-chunks.js';
import {
  appendOnHead, AppendOutcomeUnknown, checkLeadership, forkPlan, headKey, isStoreFailure, notEnoughReplicas, planBatch,
  producerStates, producerWrites, startPlan, type AppendedRange, type AppendTarget, type Plan, type ReadyBatch,
} from './append-plan.js';
import { commitFromMemory, type FastCommit } from './fast-commit.js';

/** How far back a commit looks for staged items: longer than a writer waits (its race budget, 10 s). */
const STAGE_WINDOW_MS = 20_000;
/**
 * How far behind a commit's clock a staged item's id may be when the item lands — its writer's
 * clock behind, or its put slow (on a loaded store, a put can take seconds): the next commit reads
 * the stage from this long before this one. An item that lands later still is staged again above.
 */
const LATE_MS = 2_000;
/** The committer lease: how long it holds (its holder's commits end well within it), and how long a holder commits for others. */
const LEASE_MS = 2_000;
const COMMITTER_MS = 500;
/** acks=all: how long a writer whose batches another writer committed waits for that writer's fast commit. */
const HW_WAIT_MS = 1_000;
/** A waiting writer reads again after about a commit's time, within these bounds. */
const POLL_MIN_MS = 5;
const POLL_MAX_MS = 1_000;
/** After losing a race, an instance stages its appends to the partition for this long without trying the direct write. */
const CONTENDED_MS = 10_000;
/**
 * How long after a commit that combined writers an append goes to the stage without trying the
 * head: several rounds while writers keep coming, short enough that a writer left alone soon
 * appends directly again.
 */
const COMBINED_MS = 1_000;
/** A staged item holds at most this many inline bytes (an item is at most 400 KB). */
const STAGED_MAX_BYTES = 300 * 1024;
/** How long a writer's batch may wait in the stage for an earlier sequence of its producer (in flight at once, staged later). */
const GAP_GRACE_MS = 2_000;
/** A staged item lives a day at most (DynamoDB's TTL deletes it). */
const STAGED_TTL_MS = 24 * 3_600_000;
/** Store failures in a row before the writer answers REQUEST_TIMED_OUT. */
const MAX_STORE_FAILURES = 3;
/** A commit leaves out a batch whose writer gives up within twice its recent commit time, and never less than this. */
const LANDING_MIN_MS = 250;
/** Commits in a row one round tries on what its lost ones said (the head now, the batches taken back) before it reads the stage again. */
const ROUND_TRIES = 3;

const contendedUntil = new Map<string, number>();
/** Per leader replica and partition: the stage id the last commit this instance saw reads from (the head's `stagedFrom`). */
const stagedFrom = new Map<string, number>();
/**
 * How long this instance's writers recently waited (moving averages, ms): from staging to finding
 * their batches committed, and then (acks=all) for the high watermark. Waits are paced by them, so
 * a writer reads about twice per wait however long the stage is.
 */
const waited = { commit: 50, hw: 50, transaction: 50 };
const learn = (k: keyof typeof waited, ms: number): void => {
  waited[k] = 0.8 * waited[k] + 0.2 * ms;
};
/**
 * The pause before a writer's next read: most of the wait it expects the first time, then half of
 * that or of how long it has waited so far, whichever is longer (an overloaded partition is read
 * less often, not more), jittered.
 */
const pauseFor = (k: keyof typeof waited, first: boolean, waitedSoFar: number): number =>
  Math.min(POLL_MAX_MS, Math.max(POLL_MIN_MS, first ? 0.8 * waited[k] : 0.5 * Math.max(waited[k], waitedSoFar))) * (0.75 + Math.random() / 2);

/** True while this instance keeps losing the partition's head race: appends go straight to the stage. */
export const contended = (t: AppendTarget): boolean => (contendedUntil.get(headKey(t)) ?? 0) > Date.now();

/** The time after which a head's `combinedAt` still counts (the direct append's condition checks it). */
export const combiningSince = (): number => Date.now() - COMBINED_MS;
/**
 * True when the head shows a recent group commit of more than one writer's batches: an append goes
 * to the stage, where it loses no race and makes no commit lose, instead of writing the head.
 */
export const combining = (head: ReplicaHead): boolean => head.combinedAt !== undefined && head.combinedAt > combiningSince();

/** True when a chunk fits one staged item. */
export const stageable = (chunk: readonly ReadyBatch[]): boolean =>
  chunk.reduce((n, b) => n + (b.s3 ? 0 : b.sizeBytes) + 64, 0) <= STAGED_MAX_BYTES
  // (a repair's marker goes on the direct path: another instance's commit, of an older version, would not know its rule)
  && chunk.every((b) => !b.producer?.repair);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A stage id: the staging time in microseconds plus a random tail. */
const stageIdAt = (ms: number): number => ms * 1000;
const newStageId = (): number => stageIdAt(Date.now()) + Math.floor(Math.random() * 1000);

/** The ready batches a staged item holds. */
const readyOf = (item: StagedItem): ReadyBatch[] => (item.batches ?? []).map((b) => ({
  ...(b.data ? { bytes: Buffer.from(b.data) } : {}),
  ...(b.s3 ? { s3: b.s3 } : {}),
  sizeBytes: b.sizeBytes, recordCount: b.recordCount, maxTimestamp: b.maxTimestamp,
  ...(b.producerId !== undefined ? {
    producer: {
      producerId: b.producerId, producerEpoch: b.producerEpoch as number, baseSequence: b.baseSequence as number,
      ...(b.transactional ? { transactional: true } : {}), ...(b.control ? { control: b.control } : {}),
    },
  } : {}),
}));

const toOutcome = (r: AppendedRange | KafkaError): StagedOutcome =>
  (r instanceof KafkaError ? { error: r.kafkaName, message: r.message } : { base: r.baseOffset, last: r.lastOffset });

/** The log end a committed item's batches need the high watermark at. */
const endOf = (item: StagedItem): number => Math.max(-1, ...(item.outcomes ?? []).map((o) => ('last' in o ? o.last : -1))) + 1;

/** A committed item's answer to its writer (with the high watermark seen to cover it, if any). */
const answerOf = (item: StagedItem, committed?: AppendedRange['committed']): (AppendedRange | KafkaError)[] => (item.outcomes ?? []).map((o) =>
  ('error' in o ? new KafkaError(o.error as ConstructorParameters<typeof KafkaError>[0], o.message) : { baseOffset: o.base, lastOffset: o.last, ...(committed ? { committed } : {}) }));

/** What one commit attempt writes: the plan, each taken item's outcomes, the ISR count it needs. */
interface Commit {
  readonly plan: Plan;
  readonly marks: { readonly off: number; readonly outcomes: StagedOutcome[] }[];
  readonly minIsr?: number;
  /** It appends batches of an acks=all writer. */
  readonly acksAll: boolean;
}

/**
 * Plans a commit of the staged items, oldest first: each item's batches all fit (offsets,
 * duplicates, refusals) or the item stays staged. An item with an out-of-order sequence waits for
 * a later pass (its predecessor may be further on); the writer's own item, once past the grace,
 * is refused instead. Stops at what one transaction holds.
 */
async function planCommit(t: AppendTarget, head: ReplicaHead, staged: readonly StagedItem[], own: number): Promise<Commit> {
  const ready = new Map(staged.map((i) => [i.off, readyOf(i)]));
  const plan0 = startPlan(head, await producerStates(t, [...ready.values()].flat(), true));
  let plan = plan0;
  const marks: Commit['marks'] = [];
  let minIsr: number | undefined;
  let acksAll = false;
  let items = 1;
  let bytes = 0;
  let pending = [...staged];
  const ownAge = Date.now() - Math.floor(own / 1000);
  let shortOfReplicas: KafkaError | undefined;
  for (let progress = true; progress && pending.length > 0;) {
    progress = false;
    const deferred: StagedItem[] = [];
    for (const item of pending) {
      const batches = ready.get(item.off) as ReadyBatch[];
      const countRequired = item.minIsr !== undefined && item.minIsr > 1 && head.isr.length > 0 ? item.minIsr : undefined;
      if (countRequired !== undefined && head.isr.length < countRequired) {
        shortOfReplicas ??= await notEnoughReplicas(t, head, countRequired);
        marks.push({ off: item.off, outcomes: batches.map(() => toOutcome(shortOfReplicas as KafkaError)) });
        items++;
        progress = true;
        continue;
      }
      const fork = forkPlan(plan);
      const results = batches.map((b) => planBatch(t, fork, b));
      if (results.some((r) => r instanceof KafkaError && r.kafkaName === 'OUT_OF_ORDER_SEQUENCE_NUMBER') && !(item.off === own && ownAge > GAP_GRACE_MS)) {
        deferred.push(item);
        continue;
      }
      const added = fork.records.length - plan.records.length;
      const addedBytes = fork.records.slice(plan.records.length).reduce((n, r) => n + (r.data ? r.sizeBytes : 0) + BATCH_ITEM_OVERHEAD, 0);
      const newProducers = fork.dirty.size - plan.dirty.size;
      if (items + added + newProducers + 1 > TRANSACTION_MAX_ITEMS - 2 || bytes + addedBytes + newProducers * PRODUCER_ITEM_BYTES > CHUNK_MAX_BYTES) {
        pending = [];
        break;
      }
      items += added + newProducers + 1;
      bytes += addedBytes + newProducers * PRODUCER_ITEM_BYTES;
      plan = fork;
      if (added > 0 && countRequired !== undefined) minIsr = Math.max(minIsr ?? 0, countRequired);
      if (added > 0 && item.acksAll) acksAll = true;
      marks.push({ off: item.off, outcomes: results.map(toOutcome) });
      progress = true;
    }
    if (pending.length > 0) pending = deferred;
  }
  return { plan, marks, acksAll, ...(minIsr !== undefined ? { minIsr } : {}) };
}

/** Takes the writer's staged item back; answers from the commit that took it first, if one did. */
async function giveUp(t: AppendTarget, off: number, err: KafkaError): Promise<(AppendedRange | KafkaError)[]> {
  let stored;
  try {
    stored = await dropStaged(t.leader, t.tp, off);
  } catch (e) {
    if (isStoreFailure(e)) throw new AppendOutcomeUnknown(t, e);
    throw e;
  }
  if (stored?.stage === 'committed') return answerOf(stored);
  throw err;
}

/**
 * Appends a chunk through the stage (see the file comment); returns each batch's offsets or refusal.
 * Errors: as appendToLeader's — a leadership error or REQUEST_TIMED_OUT once the item is taken
 * back; AppendOutcomeUnknown when the store stops answering with the item staged (another writer
 * may still commit it).
 */
export async function appendStaged(t: AppendTarget, chunk: readonly ReadyBatch[], deadline: number): Promise<(AppendedRange | KafkaError)[]> {
  contendedUntil.set(headKey(t), Date.now() + CONTENDED_MS);
  const minIsr = t.minIsr !== undefined && t.minIsr > 1 ? t.minIsr : undefined;
  const body = {
    stage: 'staged' as const, leaderEpoch: t.leaderEpoch, ...(t.minIsr !== undefined ? { acksAll: true } : {}), ...(minIsr !== undefined ? { minIsr } : {}),
    deadline,
    expiresAt: Math.ceil((Date.now() + STAGED_TTL_MS) / 1000),
    batches: chunk.map((b) => ({
      ...(b.bytes ? { data: b.bytes } : {}), ...(b.s3 ? { s3: b.s3 } : {}),
      recordCount: b.recordCount, maxTimestamp: b.maxTimestamp, sizeBytes: b.sizeBytes,
      ...(b.producer ? { producerId: b.producer.producerId, producerEpoch: b.producer.producerEpoch, baseSequence: b.producer.baseSequence } : {}),
      ...(b.producer?.transactional ? { transactional: true } : {}), ...(b.producer?.control ? { control: b.producer.control } : {}),
    })),
  };
  /** Stages the batches under a new id at or above `atLeast`; returns it. */
  const stageAt = async (atLeast: number): Promise<number> => {
    try {
      for (;;) {
        const id = Math.max(newStageId(), atLeast + Math.floor(Math.random() * 1000));
        if (await stageBatches(t.leader, t.tp, { off: id, ...body })) return id;
      }
    } catch (err) {
      throw isStoreFailure(err) ? new AppendOutcomeUnknown(t, err) : err;
    }
  };
  let own = await stageAt(0);
  const stagedAt = Date.now();
  let failures = 0;
  for (let attempt = 1; ; attempt++) {
    try {
      const seen = await readWaiting(t.leader, t.tp, own);
      if (seen.head?.stagedFrom !== undefined) stagedFrom.set(headKey(t), seen.head.stagedFrom);
      const mine = seen.own;
      if (mine?.stage === 'committed') {
        learn('commit', Date.now() - stagedAt);
        if (t.minIsr === undefined) return answerOf(mine);
        // (the read that found it committed may show the high watermark over it already)
        const h = seen.head;
        if (h && h.leaderEpoch === t.leaderEpoch && h.role === 'leader' && h.isr.length > 0 && h.hw >= endOf(mine)) return answerOf(mine, { highWatermark: h.hw, isr: h.isr });
        return await awaitHighWatermark(t, mine);
      }
      if (mine?.stage !== 'staged') throw new KafkaError('REQUEST_TIMED_OUT', `REQUEST_TIMED_OUT: the batches staged for partition ${t.partition} are gone.`, { partition: t.partition });
      if (Date.now() >= deadline) {
        return await giveUp(t, own, new KafkaError('REQUEST_TIMED_OUT', `Append to partition ${t.partition} was not committed in time (${attempt} reads).`, { topicId: t.topicId, partition: t.partition }));
      }
      try {
        checkLeadership(seen.head, t);
      } catch (err) {
        if (!isKafkaError(err)) throw err;
        return await giveUp(t, own, err);
      }
      // Below where commits read the stage (this instance's clock behind the committer's, or its
      // put slow to land), no other writer sees the batch: take it back and stage it again above.
      const readsFrom = seen.head?.stagedFrom;
      if (readsFrom !== undefined && own < readsFrom) {
        const stored = await dropStaged(t.leader, t.tp, own);
        if (stored?.stage === 'committed') continue;
        own = await stageAt(readsFrom);
        continue;
      }
      // One writer at a time commits, holding the committer lease: the others wait for its
      // commits, and one of them takes the lease when it is free — released, or run out because
      // its holder died or stalled.
      const now = Date.now();
      if (!seen.lease || seen.lease.until < now) {
        const holder = `${own}`;
        if (await claimCommitter(t.leader, t.tp, holder, now + LEASE_MS, now)) {
          try {
            const out = await commitRounds(t, own, Math.min(deadline, now + COMMITTER_MS), { holder, until: now + LEASE_MS });
            if (out) {
              learn('commit', Date.now() - stagedAt);
              return out;
            }
          } finally {
            await releaseCommitter(t.leader, t.tp, holder).catch(() => undefined);
          }
        }
      }
      failures = 0;
      await sleep(pauseFor('commit', attempt === 1, Date.now() - stagedAt));
    } catch (err) {
      if (!isStoreFailure(err) && !(err instanceof AppendOutcomeUnknown)) throw err;
      // The store did not answer: what is staged and committed tells, once it answers again.
      if (++failures >= MAX_STORE_FAILURES) throw new AppendOutcomeUnknown(t, err);
      await sleep(20 * failures);
    }
  }
}

/** Where a writer reads the stage from: where the last commit left it, and never above its own batch. */
const readFrom = (t: AppendTarget, own: number): number => Math.min(own, stagedFrom.get(headKey(t)) ?? stageIdAt(Date.now() - STAGE_WINDOW_MS));

/**
 * The lease holder's commits: every staged batch it reads, round after round, until nothing is
 * left or `endBy`; under acks=all each round's batches are committed (the fast commit) while the
 * next round is read and appended. A round whose commit lost tries again at once on what the loss said — the head as it is
 * now, the batches taken back left out — and reads the stage again only when that does not tell.
 * Returns the holder's own answer once its batches are in, or undefined (the caller reads the
 * stage again: rounds lost to writers that committed without the lease, or leadership moved).
 */
async function commitRounds(t: AppendTarget, own: number, endBy: number, claimed: CommitterLease): Promise<(AppendedRange | KafkaError)[] | undefined> {
  let lease = claimed;
  let answer: (AppendedRange | KafkaError)[] | undefined;
  let stage: Stage | undefined;
  let copying: Promise<FastCommit | undefined> = Promise.resolve(undefined);
  let ownCopy: Promise<FastCommit | undefined> | undefined;
  let marked = false;
  rounds: for (let lost = 0; lost < 2;) {
    stage ??= await readStage(t.leader, t.tp, readFrom(t, own));
    let { head } = stage;
    const { items } = stage;
    stage = undefined;
    if (head?.stagedFrom !== undefined) stagedFrom.set(headKey(t), head.stagedFrom);
    const mine = items.find((i) => i.off === own);
    if (!answer && mine?.stage === 'committed') answer = answerOf(mine);
    const now = Date.now();
    const live = items.filter((i) => i.stage === 'staged' && i.off >= stageIdAt(now - STAGE_WINDOW_MS));
    // (alone in the stage, a writer has no one to combine with: its instance appends directly again)
    if (live.length === 1 && live[0]?.off === own) contendedUntil.delete(headKey(t));
    // (a batch whose writer gives up before this commit could land would only make it lose)
    const landsBy = now + Math.max(LANDING_MIN_MS, 2 * waited.transaction);
    let takeable = live.filter((i) => i.leaderEpoch === t.leaderEpoch && (i.off === own || i.deadline === undefined || i.deadline > landsBy));
    for (let tries = 1; ; tries++) {
      if (!head || head.leaderEpoch !== t.leaderEpoch || head.role !== 'leader') break rounds;
      const commit = await planCommit(t, head, takeable, own);
      if (commit.marks.length === 0) break rounds;
      const taken = new Set(commit.marks.map((m) => m.off));
      const from = Math.min(stageIdAt(now - LATE_MS), ...live.filter((i) => !taken.has(i.off)).map((i) => i.off));
      const sent = Date.now();
      // (the lease is renewed with a commit that could land after half of it is gone: another
      // writer takes a lease that ran out, and two holders' commits would make each other lose)
      const renew = lease.until - sent < LEASE_MS / 2 + 2 * waited.transaction ? { holder: lease.holder, until: sent + LEASE_MS } : undefined;
      const out = await writeCommit(t, head, commit, from, renew);
      learn('transaction', Date.now() - sent);
      if (out === 'no lease') break rounds;
      if (renew && out === true) lease = renew;
      if (out !== true) {
        // (the head moved under the commit: an append that lost no race — its instance knows the
        // head from its own last append — wrote it, and could again on every round; marked as
        // combining, the head makes such appends lose and stage)
        if (out?.head && out.head.leo !== head.leo && !marked) {
          marked = true;
          await markCombining(t.leader, t.tp, t.leaderEpoch, Date.now());
        }
        if (!out || tries >= ROUND_TRIES) {
          lost++;
          continue rounds;
        }
        head = out.head ?? head;
        const { notStaged } = out;
        takeable = takeable.filter((i) => !notStaged.has(i.off));
        continue;
      }
      stagedFrom.set(headKey(t), from);
      const mark = commit.marks.find((m) => m.off === own);
      if (mark) answer = answerOf({ off: own, stage: 'committed', leaderEpoch: t.leaderEpoch, outcomes: mark.outcomes, expiresAt: 0 });
      // acks=all: the writers of this round wait for the high watermark; it moves now, while the
      // next round is read and appended (one fast commit after another: each copies what the
      // one before left, and one that finds its round covered already writes nothing).
      if (commit.acksAll && t.stateIsr) {
        const [upTo, stateIsr] = [commit.plan.next, t.stateIsr];
        copying = copying.then((before) => (before && before.highWatermark >= upTo ? before
          : commitFromMemory(t.leader, t.tp, t.leaderEpoch, upTo, stateIsr, { awaitPredecessor: true }))).catch(() => undefined);
        if (mark) ownCopy = copying;
      }
      break;
    }
    if (answer && Date.now() >= endBy) break;
  }
  // (the fast commits end before the answer: after it, the instance may be frozen)
  await copying;
  const fast = await ownCopy;
  return fast && answer ? answer.map((r) => (r instanceof KafkaError ? r : { ...r, committed: fast })) : answer;
}

/**
 * acks=all, batches another writer committed: that writer's fast commit moves the high watermark
 * over them. Reads the head until it does, for at most `HW_WAIT_MS`; past that (the writer died
 * after its commit, or its fast commit fell back) the caller replicates.
 */
async function awaitHighWatermark(t: AppendTarget, item: StagedItem): Promise<(AppendedRange | KafkaError)[]> {
  const end = endOf(item);
  const until = Date.now() + HW_WAIT_MS;
  // (its fast commit takes about two commits' time: the copies, then the high watermark)
  const began = Date.now();
  for (let n = 0; Date.now() < until; n++) {
    await sleep(pauseFor('hw', n === 0, Date.now() - began));
    const head = await readHead(t.leader, t.tp).catch(() => undefined);
    if (!head || head.leaderEpoch !== t.leaderEpoch || head.role !== 'leader') break;
    if (head.hw >= end && head.isr.length > 0) {
      learn('hw', Date.now() - began);
      return answerOf(item, { highWatermark: head.hw, isr: head.isr });
    }
  }
  return answerOf(item);
}

/**
 * One commit attempt's transaction, renewing the committer lease when `lease` is given. Returns
 * true when it was applied; 'no lease' when its holder lost the lease; when it lost otherwise (a
 * condition failed, or a conflict), what the loss said (lostCommit), or undefined when it did not
 * tell.
 */
async function writeCommit(t: AppendTarget, head: ReplicaHead, commit: Commit, stagedFrom: number, lease: CommitterLease | undefined): Promise<true | 'no lease' | ReturnType<typeof lostCommit>> {
  const { plan } = commit;
  const combinedAt = commit.marks.length > 1 ? Date.now() : undefined;
  const producers = producerWrites(plan);
  const nothingAppended = plan.records.length === 0;
  try {
    if (nothingAppended) await settleStaged(t.leader, t.tp, { expectLeo: head.leo, leaderEpoch: t.leaderEpoch }, commit.marks, lease);
    else await appendOnHead(t, head, plan.records, producers, { staged: commit.marks, stagedFrom, once: true, ...(combinedAt ? { combinedAt } : {}), ...(lease ? { lease } : {}), ...(commit.minIsr !== undefined ? { minIsr: commit.minIsr } : {}) });
    return true;
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
    // (the marks follow the head in a settle; the head, the batches' items and the producer states in an append)
    const marksFrom = err instanceof AppendConditionFailed ? err.entries.staged : 1;
    if (lease && err.at(marksFrom + commit.marks.length)?.code === 'ConditionalCheckFailed') return 'no lease';
    return lostCommit(err, commit.marks, marksFrom);
  }
}
