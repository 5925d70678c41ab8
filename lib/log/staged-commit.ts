/**
 * The group commit of concurrent appends from different instances (docs/architecture.md,
 * "Request path"; the protocol is spec/rounds.qnt's): an append that lost the head's race puts its
 * batches as an object of its own in the stage bucket (lib/storage/stage.ts) — no condition, no
 * database write — then reads the rounds committed since the head it read before, the committer
 * lease and the head, until a round names its object. The lease's holder commits in rounds: it
 * deletes the objects of the rounds committed since the head's `clean`, lists the stage, reads
 * what it lists, writes their bytes as one round object, and in one transaction conditioned on
 * the head as read appends every batch it takes (pointers into the round object) and the round
 * item, which names each object's offsets or refusal (lib/storage/replica/rounds.ts). The lease
 * only keeps commits from colliding: safety is the head's condition and the delete-before-list.
 *
 * Nothing marks a staged object: a writer that gives up deletes its object and answers with an
 * unknown outcome (REQUEST_TIMED_OUT, as Kafka's timeout), since a round may already have read it.
 *
 * Idempotent producers: one producer's staged batches commit in sequence order whichever
 * instances staged them (a batch whose predecessor is not in yet waits in the stage a little); a
 * retry of a sequence in the log is answered with its first offset.
 */
import { KafkaError } from '../protocol/errors.js';
import { isKafkaError } from '../errors.js';
import type { BatchRecord, ReplicaHead } from '../storage/model.js';
import { packsBatchItems } from '../cluster/metadata.js';
import { putObject } from '../storage/objects.js';
import { headFromItem, readHead } from '../storage/replica/head.js';
import { AppendConditionFailed } from '../storage/replica/batches.js';
import {
  claimCommitter, firstRound, markCombining, readRounds, releaseCommitter, settleRound, type CommitterLease, type Round, type RoundsRead, type RoundWrite, type StagedOutcome,
} from '../storage/replica/rounds.js';
import { deleteStaged, listStaged, newStageId, putStaged, readStaged, roundObjectKey, stagePrefix, type ListedStaged, type StagedObject } from '../storage/stage.js';
import { ConditionFailed } from '../storage/transact.js';
import {
  appendOnHead, AppendOutcomeUnknown, checkLeadership, headKey, isStoreFailure, producerWrites, type AppendedRange, type AppendTarget, type ReadyBatch,
} from './append-plan.js';
import { commitFromMemory, type FastCommit } from './fast-commit.js';
import {
  answerOf, awaitHighWatermark, endOf, GAP_GRACE_MS, learn, pauseFor, planCommit, readyOf, stagedBatches, waited, type Commit, type StagedRequest,
} from './stage-plan.js';

/** The committer lease: how long it holds (its holder's commits end well within it), and how long a holder commits for others. */
const LEASE_MS = 2_000;
const COMMITTER_MS = 500;
/** After losing a race, an instance stages its appends to the partition for this long without trying the direct write. */
const CONTENDED_MS = 10_000;
/**
 * How long after a commit that combined writers an append goes to the stage without trying the
 * head: several rounds while writers keep coming, short enough that a writer left alone soon
 * appends directly again.
 */
const COMBINED_MS = 1_000;
/** Store failures in a row before the writer answers REQUEST_TIMED_OUT. */
const MAX_STORE_FAILURES = 3;
/** A round leaves out an object whose writer gives up within twice its recent commit time, and never less than this. */
const LANDING_MIN_MS = 250;
/** Commits in a row one round tries on a head that only a direct append moved, before it reads the stage again. */
const ROUND_TRIES = 3;
/** Staged objects a holder reads at once. */
const GETS_IN_FLIGHT = 16;
/**
 * The bytes of a round's inline batches that stay in its items instead of going to a round object.
 * Up to 1 KB they add at most one write unit to each item written (3 replicas, doubled in a
 * transaction: 6), and the round object's PUT they save costs as much as 8 (S3 Standard, $0.005
 * per 1,000, against DynamoDB's $0.625 per million units) and a sequential round trip.
 */
const ROUND_INLINE_MAX_BYTES = 1_024;

const contendedUntil = new Map<string, number>();

/** True while this instance keeps losing the partition's head race: appends go straight to the stage. */
export const contended = (t: AppendTarget): boolean => (contendedUntil.get(headKey(t)) ?? 0) > Date.now();

/** The time after which a head's `combinedAt` still counts (the direct append's condition checks it). */
export const combiningSince = (): number => Date.now() - COMBINED_MS;
/**
 * True when the head shows a recent group commit of more than one writer's batches: an append goes
 * to the stage, where it loses no race and makes no commit lose, instead of writing the head.
 */
export const combining = (head: ReplicaHead): boolean => head.combinedAt !== undefined && head.combinedAt > combiningSince();

/** True when a chunk may go through the stage (a repair's marker goes on the direct path: another instance's commit, of an older version, would not know its rule). */
export const stageable = (chunk: readonly ReadyBatch[]): boolean => chunk.every((b) => !b.producer?.repair);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The outcomes a round of the writer's epoch gave its object, if one did. */
const outcomeIn = (rounds: readonly Round[], leaderEpoch: number, id: string): readonly StagedOutcome[] | undefined =>
  rounds.find((r) => r.leaderEpoch === leaderEpoch && r.outcomes[id])?.outcomes[id];

/**
 * The last round of the writer's epoch a read saw with every round before it (the next read starts
 * after it). A Query is no snapshot: a round it missed may sit below one it found.
 */
const lastRound = (read: RoundsRead, before: number, leaderEpoch: number): number => {
  const ours = new Set(read.rounds.filter((r) => r.leaderEpoch === leaderEpoch).map((r) => r.round));
  let last = before;
  while (ours.has(last + 1)) last++;
  return last;
};

/** acks=all: a committed object's answer once the high watermark covers it (the read may show it already). */
async function answerCommitted(t: AppendTarget, outcomes: readonly StagedOutcome[], head: ReplicaHead | undefined): Promise<(AppendedRange | KafkaError)[]> {
  if (t.minIsr === undefined) return answerOf(outcomes);
  if (head && head.leaderEpoch === t.leaderEpoch && head.role === 'leader' && head.isr.length > 0 && head.hw >= endOf(outcomes)) {
    return answerOf(outcomes, { highWatermark: head.hw, isr: head.isr });
  }
  return awaitHighWatermark(t, outcomes);
}

/**
 * The writer gives up: deletes its object, then reads the rounds once more. Committed by then, it
 * answers from the round. Else the leadership error is definite when the head shows a later epoch,
 * or this epoch with another role (no round of the writer's epoch can commit any more); any other
 * give-up is an unknown outcome (a round that read the object may still commit it).
 */
async function giveUp(t: AppendTarget, prefix: string, id: string, seenRound: number, err: KafkaError): Promise<(AppendedRange | KafkaError)[]> {
  let read: RoundsRead;
  try {
    await deleteStaged(prefix, [id]);
    read = await readRounds(t.leader, t.tp, seenRound + 1);
  } catch (e) {
    throw new AppendOutcomeUnknown(t, e);
  }
  const found = outcomeIn(read.rounds, t.leaderEpoch, id);
  if (found) return answerCommitted(t, found, read.head);
  const h = read.head;
  const moved = h !== undefined && (h.leaderEpoch > t.leaderEpoch || (h.leaderEpoch === t.leaderEpoch && h.role !== 'leader'));
  if (moved && err.kafkaName !== 'REQUEST_TIMED_OUT') throw err;
  throw new AppendOutcomeUnknown(t, err);
}

/**
 * Appends a chunk through the stage (see the file comment); returns each batch's offsets or refusal.
 * `seen` is a head of the leader read before (or remembered from this instance's own append): the
 * rounds after its `round` are those that can name the object.
 * Errors: as appendToLeader's — a leadership error once no round can take the object;
 * AppendOutcomeUnknown (REQUEST_TIMED_OUT) when the writer gave up or the store stopped answering
 * with the object staged (a round may still commit it).
 */
export async function appendStaged(t: AppendTarget, chunk: readonly ReadyBatch[], deadline: number, seen?: ReplicaHead): Promise<(AppendedRange | KafkaError)[]> {
  contendedUntil.set(headKey(t), Date.now() + CONTENDED_MS);
  const prefix = stagePrefix(t.topicId, t.partition, t.leaderEpoch);
  const id = newStageId(deadline);
  const minIsr = t.minIsr !== undefined && t.minIsr > 1 ? t.minIsr : undefined;
  const object: StagedObject = { id, deadline, ...(t.minIsr !== undefined ? { acksAll: true } : {}), ...(minIsr !== undefined ? { minIsr } : {}), batches: stagedBatches(chunk) };
  let seenRound: number;
  try {
    const before = seen && seen.leaderEpoch === t.leaderEpoch ? seen : await readHead(t.leader, t.tp);
    checkLeadership(before, t);
    seenRound = Math.max(before.round ?? 0, firstRound(t.leaderEpoch));
    await putStaged(prefix, object);
  } catch (err) {
    throw isStoreFailure(err) ? new AppendOutcomeUnknown(t, err) : err;
  }
  const stagedAt = Date.now();
  let failures = 0;
  /** Set once the writer gives up: what giveUp answers or throws is the answer. */
  let gaveUp = false;
  for (let attempt = 1; ; attempt++) {
    try {
      const read = await readRounds(t.leader, t.tp, seenRound + 1);
      const found = outcomeIn(read.rounds, t.leaderEpoch, id);
      seenRound = lastRound(read, seenRound, t.leaderEpoch);
      if (found) {
        learn('commit', Date.now() - stagedAt);
        return await answerCommitted(t, found, read.head);
      }
      if (Date.now() >= deadline) {
        gaveUp = true;
        return await giveUp(t, prefix, id, seenRound, new KafkaError('REQUEST_TIMED_OUT', `Append to partition ${t.partition} was not committed in time (${attempt} reads).`, { topicId: t.topicId, partition: t.partition }));
      }
      try {
        checkLeadership(read.head, t);
      } catch (err) {
        if (!isKafkaError(err)) throw err;
        gaveUp = true;
        return await giveUp(t, prefix, id, seenRound, err);
      }
      // One writer at a time commits, holding the committer lease: the others wait for its
      // rounds, and one of them takes the lease when it is free — released, or run out because
      // its holder died or stalled.
      const now = Date.now();
      if (!read.lease || read.lease.until < now) {
        const holder = id;
        if (await claimCommitter(t.leader, t.tp, holder, now + LEASE_MS, now)) {
          try {
            const out = await commitRounds(t, object, Math.min(deadline, now + COMMITTER_MS), { holder, until: now + LEASE_MS }, read.head);
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
      // (a refusal is the answer; anything else — a store that did not answer, an S3 error on a
      // holder's round — leaves the object staged: the rounds tell, once the stores answer again)
      if (gaveUp || (isKafkaError(err) && !isStoreFailure(err) && !(err instanceof AppendOutcomeUnknown))) throw err;
      if (++failures >= MAX_STORE_FAILURES) throw new AppendOutcomeUnknown(t, err);
      await sleep(20 * failures);
    }
  }
}

/** Reads listed objects, a few at a time; those gone since the list are left out, and those that do not decode deleted. */
async function readAll(prefix: string, listed: readonly ListedStaged[]): Promise<StagedObject[]> {
  const out: (StagedObject | 'unreadable' | undefined)[] = [];
  for (let i = 0; i < listed.length; i += GETS_IN_FLIGHT) out.push(...(await Promise.all(listed.slice(i, i + GETS_IN_FLIGHT).map((o) => readStaged(o.key)))));
  const unreadable = listed.filter((_, i) => out[i] === 'unreadable').map((o) => o.id);
  if (unreadable.length > 0) await deleteStaged(prefix, unreadable);
  return out.filter((o): o is StagedObject => o !== undefined && o !== 'unreadable');
}

/** The requests of the objects a round read. */
const requestsOf = (objects: readonly StagedObject[]): StagedRequest[] => objects.map((o) => ({
  off: o.id, ...(o.acksAll ? { acksAll: true } : {}), ...(o.minIsr !== undefined ? { minIsr: o.minIsr } : {}), batches: readyOf(o.batches),
}));

/**
 * Writes the inline batches a round appends, in offset order, as one round object, and returns
 * the plan's batches with each of those a pointer into it (so they share items). Batches whose
 * bytes total at most ROUND_INLINE_MAX_BYTES stay in the items, as a direct append keeps them.
 */
async function intoRoundObject(t: AppendTarget, records: readonly BatchRecord[]): Promise<readonly BatchRecord[]> {
  if (records.reduce((n, r) => n + (r.data?.length ?? 0), 0) <= ROUND_INLINE_MAX_BYTES) return records;
  const key = roundObjectKey(t.topicId, t.partition);
  const parts: Uint8Array[] = [];
  let position = 0;
  const out = records.map((r) => {
    if (!r.data) return r;
    const { data, ...rest } = r;
    parts.push(data);
    position += data.length;
    return { ...rest, s3: { key, position: position - data.length, length: data.length } };
  });
  if (parts.length > 0) await putObject(key, Buffer.concat(parts));
  return out;
}

/**
 * The lease holder's rounds, until nothing is left or `endBy` (see the file comment); under acks=all
 * each round's batches are committed (the fast commit) while the next round is read and appended.
 * A round whose commit lost to a direct append tries again at once on the head the loss returned;
 * one that lost to anything else — another round above all — reads the rounds and the stage again.
 * Returns the holder's own answer once its object is committed, or undefined (the caller reads
 * again: rounds lost, or leadership moved).
 */
async function commitRounds(t: AppendTarget, ownObject: StagedObject, endBy: number, claimed: CommitterLease, seen: ReplicaHead | undefined): Promise<(AppendedRange | KafkaError)[] | undefined> {
  const own = ownObject.id;
  const prefix = stagePrefix(t.topicId, t.partition, t.leaderEpoch);
  const epochStart = firstRound(t.leaderEpoch);
  const packs = await packsBatchItems();
  let lease = claimed;
  let answer: (AppendedRange | KafkaError)[] | undefined;
  let copying: Promise<FastCommit | undefined> = Promise.resolve(undefined);
  let ownCopy: Promise<FastCommit | undefined> | undefined;
  let marked = false;
  /** This holder's deletes of its own rounds' objects, right after each commit: round → whether it went through. */
  const deleted = new Map<number, Promise<boolean>>();
  let clean = seen?.clean ?? 0;
  rounds: for (let lost = 0; lost < 2;) {
    // The rounds since the head's `clean`: their objects are deleted before the stage is listed,
    // so no object a round committed is listed (and committed) again.
    let read = await readRounds(t.leader, t.tp, clean + 1);
    let head = read.head;
    let committed: Round[];
    for (let again = false; ; again = true) {
      if (!head || head.leaderEpoch !== t.leaderEpoch || head.role !== 'leader') break rounds;
      // (rounds of earlier epochs name objects under their own prefixes, never listed here)
      const from = Math.max(head.clean ?? 0, epochStart);
      const upTo = Math.max(head.round ?? 0, epochStart);
      committed = read.rounds.filter((r) => r.leaderEpoch === t.leaderEpoch && r.round > from && r.round <= upTo);
      // (one Query is no snapshot: a round committed while it ran counts on the head and may be
      // missing from the items read. The head read first, the Query shows every round it counts —
      // but those its TTL deleted, whose objects are past their deadlines and never taken)
      if (committed.length === upTo - from || again) break;
      head = await readHead(t.leader, t.tp);
      read = await readRounds(t.leader, t.tp, from + 1);
    }
    clean = head.clean ?? 0;
    const mine = outcomeIn(committed, t.leaderEpoch, own);
    if (!answer && mine) answer = answerOf(mine);
    // (a round whose objects this holder deleted after its commit needs no second delete)
    const done = await Promise.all(committed.map((r) => deleted.get(r.round) ?? false));
    await deleteStaged(prefix, committed.filter((_, i) => !done[i]).flatMap((r) => Object.keys(r.outcomes)));
    const listed = (await listStaged(prefix)).sort((a, b) => a.lastModified - b.lastModified || (a.id < b.id ? -1 : 1));
    const now = Date.now();
    // (alone in the stage, a writer has no one to combine with: its instance appends directly again)
    if (listed.length === 1 && listed[0]?.id === own) contendedUntil.delete(headKey(t));
    // (an object whose writer gives up before this round could land would only be an unknown
    // outcome: it is not read; one past its deadline, whose writer answered or died, is deleted)
    const landsBy = now + Math.max(LANDING_MIN_MS, 2 * waited.transaction);
    const expired = listed.filter((o) => o.id !== own && o.deadline < now).map((o) => o.id);
    // (the holder's own object is taken from memory, while it is still listed: no round took it)
    const fetched = new Map((await readAll(prefix, listed.filter((o) => o.id !== own && o.deadline > landsBy))).map((o) => [o.id, o]));
    const objects = listed.flatMap((o) => (o.id === own ? [ownObject] : fetched.get(o.id) ?? []));
    if (expired.length > 0) await deleteStaged(prefix, expired);
    if (objects.length === 0) break;
    const landedAt = new Map(listed.map((o) => [o.id, o.lastModified]));
    const requests = requestsOf(objects);
    for (let tries = 1; ; tries++) {
      const commit = await planCommit(t, head, requests, (off) => now - (landedAt.get(off) ?? now) > GAP_GRACE_MS, packs);
      if (commit.marks.length === 0) break rounds;
      const from = head.round ?? 0;
      const number = Math.max(from, epochStart);
      const round: RoundWrite = {
        expectRound: from, clean: number,
        item: { round: number + 1, leaderEpoch: t.leaderEpoch, outcomes: Object.fromEntries(commit.marks.map((m) => [m.off, m.outcomes])) },
      };
      const sent = Date.now();
      // (the lease is renewed with a commit that could land after half of it is gone: another
      // writer takes a lease that ran out, and two holders' commits would make each other lose)
      const renew = lease.until - sent < LEASE_MS / 2 + 2 * waited.transaction ? { holder: lease.holder, until: sent + LEASE_MS } : undefined;
      const out = await writeRound(t, head, commit, round, renew);
      learn('transaction', Date.now() - sent);
      if (out === 'no lease') break rounds;
      if (renew && out === true) lease = renew;
      if (out !== true) {
        // (the head moved under the round: an append that lost no race — its instance knows the
        // head from its own last append — wrote it, and could again on every round; marked as
        // combining, the head makes such appends lose and stage)
        if (out && out.leo !== head.leo && !marked) {
          marked = true;
          await markCombining(t.leader, t.tp, t.leaderEpoch, Date.now());
        }
        // (only a head that a direct append moved is retried on: another round may have taken these objects)
        if (!out || (out.round ?? 0) !== from || out.leaderEpoch !== t.leaderEpoch || out.role !== 'leader' || tries >= ROUND_TRIES) {
          lost++;
          continue rounds;
        }
        head = out;
        continue;
      }
      clean = number;
      // (its objects go now, best effort; the next round's deletes are the ones safety rests on)
      deleted.set(round.item.round, deleteStaged(prefix, commit.marks.map((m) => m.off)).then(() => true, () => false));
      const mark = commit.marks.find((m) => m.off === own);
      if (mark) answer = answerOf(mark.outcomes);
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
  // (the fast commits and the deletes end before the answer: after it, the instance may be frozen)
  await Promise.all([copying, ...deleted.values()]);
  const fast = await ownCopy;
  return fast && answer ? answer.map((r) => (r instanceof KafkaError ? r : { ...r, committed: fast })) : answer;
}

/**
 * One round's transaction, renewing the committer lease when `lease` is given. Returns true when
 * it was applied; 'no lease' when its holder lost the lease; when it lost otherwise, the head as
 * the loss returned it, or undefined when the loss did not tell.
 */
async function writeRound(t: AppendTarget, head: ReplicaHead, commit: Commit, round: RoundWrite, lease: CommitterLease | undefined): Promise<true | 'no lease' | ReplicaHead | undefined> {
  const { plan } = commit;
  const combinedAt = commit.marks.length > 1 ? Date.now() : undefined;
  try {
    if (plan.records.length === 0) await settleRound(t.leader, t.tp, { expectLeo: head.leo, leaderEpoch: t.leaderEpoch }, round, lease);
    else await appendOnHead(t, head, await intoRoundObject(t, plan.records), producerWrites(plan), { round, once: true, ...(combinedAt ? { combinedAt } : {}), ...(lease ? { lease } : {}), ...(commit.minIsr !== undefined ? { minIsr: commit.minIsr } : {}) });
    return true;
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
    // (a settle holds the head, the round item, the lease; an append says where its lease is)
    const leaseAt = err instanceof AppendConditionFailed ? err.entries.lease : 2;
    if (lease && err.at(leaseAt)?.code === 'ConditionalCheckFailed') return 'no lease';
    const failed = err.at(0);
    return failed?.code === 'ConditionalCheckFailed' && failed.current ? headFromItem(failed.current) : undefined;
  }
}
