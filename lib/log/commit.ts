/**
 * Commit on the slow path (docs/architecture.md, "Replication"): `replicate` brings a partition's
 * followers up with the copy step, keeps the ISR honest (joins, shrinks, the leader's ISR count) and
 * advances the high watermark to the smallest log end offset the ISR count waits for. It reads
 * everything; lib/log/fast-commit.ts is the acks=all path that proves a commit from what it holds.
 * Safe to run concurrently from anywhere: every write is conditional.
 */
import { editCount, JOIN_STALE_MS, settleJoin, settleLeave, shrinkWithCount } from '../cluster/isr-count.js';
import { cachedBrokers, cachedTopic, invalidateMetadata, replicaStore } from '../cluster/metadata.js';
import { KafkaError } from '../protocol/errors.js';
import { asKafkaError } from '../errors.js';
import { logger } from '../logger.js';
import { emitMetric } from '../metrics.js';
import { alterPartition, PartitionChanged, readPartition } from '../storage/coordination/partitions.js';
import { markLagging } from '../storage/coordination/lag-index.js';
import { leftLagging, owesMark } from './lag-index.js';
import { topicPartitionKey, type FollowerProgress, type PartitionRecord, type ReplicaHead } from '../storage/model.js';
import { advanceHighWatermark } from '../storage/replica/batches.js';
import { readHead, setRole } from '../storage/replica/head.js';
import { type ReplicaStoreRef } from '../storage/replica/store.js';
import { commitFromMemory } from './fast-commit.js';
import { paceReassignment } from './throttle.js';
import { highWatermarkMoved } from './hw-signal.js';
import { ConditionFailed } from '../storage/transact.js';
import { copyStep, LeaderUnavailable } from './copy.js';

export interface ReplicateOptions {
  /** Keep copying until every ISR follower holds offsets below this (acks=all). */
  readonly until?: number;
  /**
   * Copy only to the followers the high watermark waits for — the partition state's ISR and the
   * followers joining it — and contact no other replica (acks=all: a replica outside the ISR,
   * catching up or paused, must never delay an answer; the replicator, the controller and the sweep
   * bring it up, and it joins the ISR on one of their runs).
   * @default true when `until` is given, else false
   */
  readonly isrOnly?: boolean;
  /**
   * The leader epoch the records to commit were appended under. A commit is only proven under
   * that epoch: the same offsets under a later leader may hold other records.
   */
  readonly leaderEpoch?: number;
  readonly deadline: number;
  /** Remove an ISR follower whose store fails at once (acks=all must not wait on a dead broker). */
  readonly shrinkOnFailure: boolean;
  /** Kafka's replica.lag.time.max.ms: an ISR follower not caught up for this long leaves the ISR. */
  readonly lagTimeMaxMs: number;
  /** Runs a full sync for a follower that needs one (snapshot); absent: such followers are skipped. */
  readonly fullSync?: (leader: ReplicaStoreRef, follower: ReplicaStoreRef, tp: string, o: { readonly deadline?: number }) => Promise<boolean>;
  /**
   * How long a full sync may run: past `deadline` (a sync outlasts a replication run's budget, so
   * it would never finish within one), to the invocation's end.
   * @default unbounded
   */
  readonly syncDeadline?: number;
}

export interface ReplicateResult {
  readonly highWatermark: number;
  readonly isr: readonly number[];
  readonly leaderEpoch: number;
  /** The run left a follower (or the high watermark) behind the leader's log end it set out to copy. */
  readonly lagging?: boolean;
  /** The leader the run found (the sweep clears the lag flag on its head). */
  readonly leader?: number;
}

interface FollowerResult {
  readonly brokerId: number;
  /** Known log end offset, or undefined when the follower could not be reached. */
  readonly leo?: number;
  readonly error?: KafkaError;
  /** The follower lost its log (empty, wiped, diverged): it cannot count as in sync, whatever the options. */
  readonly lostLog?: boolean;
  /** The follower knows a newer leader epoch (or the leader stopped leading): this run proves nothing. */
  readonly fenced?: boolean;
}

/** A follower head whose log is a prefix of the `leaderEpoch` leader's: reconciled with it (truncated if need be), not in a full sync. */
const reconciledWith = (h: ReplicaHead, leaderEpoch: number): boolean =>
  h.role === 'follower' && h.leaderEpoch === leaderEpoch && h.syncEpoch === leaderEpoch && h.snapshotting === undefined;

/** Copies to one follower until it holds `target` (or the leader's end), the deadline passes, or it cannot progress. */
async function catchUp(
  leader: ReplicaStoreRef, follower: ReplicaStoreRef, tp: string, target: number, o: ReplicateOptions, leaderHead: ReplicaHead, throttled = false,
): Promise<FollowerResult> {
  let leo: number | undefined;
  let told = false;
  try {
    for (let step = 0; Date.now() < o.deadline; step++) {
      // The leader's head was just read: the first step need not read it again.
      const out = await copyStep(leader, follower, tp, step === 0 ? leaderHead : undefined);
      if (out.kind === 'caught-up' || out.kind === 'copied') leo = out.followerLeo;
      if (throttled && (out.kind === 'caught-up' || out.kind === 'copied')) await paceReassignment(out.bytes ?? 0, o.deadline);
      if (out.kind === 'caught-up' && out.followerLeo >= target) break;
      if (out.kind === 'needs-snapshot') {
        const lost = { brokerId: follower.brokerId, lostLog: true, error: new KafkaError('REPLICA_NOT_AVAILABLE', `follower ${follower.brokerId} needs a full sync`) };
        if (!o.fullSync || !(await o.fullSync(leader, follower, tp, o.syncDeadline === undefined ? {} : { deadline: o.syncDeadline }))) return lost;
        if (throttled) await paceReassignment((await readHead(follower, tp))?.tailBytes ?? 0, o.deadline);
        // (a full sync that fails on the leader's side surfaces as a store error of this follower's
        // sync; the follower is out of the ISR already, having lost its log)
        continue;
      }
      if (out.kind === 'behind-epoch' && !told) {
        // The follower missed a role push (it was down, or a full sync ended after it): the
        // leader, current under the partition state, tells it, as the controller would.
        told = await setRole(follower, tp, 'follower', leaderHead.leaderEpoch).then(() => true, (err) => {
          if (err instanceof ConditionFailed) return false;
          throw err;
        });
        if (told) {
          logger.info({ event: 'role-pushed', tp, broker: follower.brokerId, role: 'follower', leaderEpoch: leaderHead.leaderEpoch, by: 'leader' }, 'replica told its role');
          continue;
        }
      }
      if (out.kind === 'behind-epoch' || out.kind === 'fenced') {
        // A follower on another epoch holds another leader's log: its log end proves nothing here.
        return { brokerId: follower.brokerId, fenced: out.kind === 'fenced', error: new KafkaError('FENCED_LEADER_EPOCH', `follower ${follower.brokerId} is at another leader epoch (${out.kind})`) };
      }
      if (out.kind === 'lost-race') await new Promise((r) => setTimeout(r, Math.random() * 10 * Math.min(step + 1, 10)));
      if (out.kind === 'caught-up' && out.followerLeo < target) await new Promise((r) => setTimeout(r, 5));
    }
    if (leo === undefined) {
      // No copy step checked it (the deadline came first): its log end counts only if it is
      // reconciled with the leader's epoch, i.e. a prefix of this leader's log.
      const h = await readHead(follower, tp);
      if (h && reconciledWith(h, leaderHead.leaderEpoch)) leo = h.leo;
    }
    return { brokerId: follower.brokerId, ...(leo !== undefined ? { leo } : {}) };
  } catch (err) {
    if (err instanceof LeaderUnavailable) throw err;
    return { brokerId: follower.brokerId, error: asKafkaError(err) };
  }
}

/**
 * Adds a caught-up follower to the ISR without letting the high watermark get ahead of it:
 * (1) the leader counts it as joining (from then on no high watermark passes its log end),
 * (2) it is brought up to the high watermark, (3) the partition state takes it — by
 * compare-and-set on `state`, read before (1), so any change that raced (a shrink, an election)
 * wins and this one writes nothing to the partition state — and (4) the leader counts it as in
 * sync. Returns the new partition state, or undefined when it did not join (the leader's count is
 * then as it was: the follower leaves `joining`).
 */
export async function joinIsr(
  topic: string, partition: number, state: PartitionRecord, leader: ReplicaStoreRef, follower: ReplicaStoreRef, tp: string, deadline: number,
): Promise<PartitionRecord | undefined> {
  const b = follower.brokerId;
  const epoch = state.leaderEpoch;
  const leave = () => editCount(leader, tp, epoch, async (h) => (h.joining.includes(b) ? { isr: h.isr, joining: h.joining.filter((x) => x !== b), leaving: h.leaving } : undefined));
  const counting = await editCount(leader, tp, epoch, async (h) => (h.isr.includes(b) || h.joining.includes(b) ? undefined
    : { isr: h.isr, joining: [...h.joining, b], leaving: h.leaving, joiningSince: { ...h.joiningSince, [String(b)]: Date.now() } }));
  if (!counting) return undefined;
  try {
    for (;;) {
      const [lh, fh] = await Promise.all([readHead(leader, tp), readHead(follower, tp)]);
      if (!lh || !fh) return undefined;
      // (and it holds the leader's log start: a member a clean election may choose serves nothing deleted)
      if (fh.leo >= lh.hw && fh.logStartOffset >= lh.logStartOffset && reconciledWith(fh, epoch)) break;
      const out = await copyStep(leader, follower, tp, lh);
      if ((out.kind !== 'copied' && out.kind !== 'caught-up' && out.kind !== 'lost-race') || Date.now() > deadline) return undefined;
    }
    // Past its deadline a joiner writes nothing more: an entry it left in `joining` is settled by
    // `replicate` once it is older than any joiner lives (JOIN_STALE_MS).
    if (Date.now() > deadline) return undefined;
    let next: PartitionRecord;
    try {
      next = await alterPartition(topic, state, { isr: state.replicas.filter((r) => state.isr.includes(r) || r === b) });
    } catch (err) {
      if (err instanceof PartitionChanged) return undefined;
      throw err;
    }
    invalidateMetadata(topic);
    logger.info({ event: 'isr-expand', topic, partition, broker: b, leaderEpoch: epoch, isr: next.isr }, 'ISR expand');
    await editCount(leader, tp, epoch, async (h) => ({ isr: h.isr.includes(b) ? h.isr : [...h.isr, b], joining: h.joining.filter((x) => x !== b), leaving: h.leaving.filter((x) => x !== b) }));
    return next;
  } finally {
    await leave().catch(() => undefined);
  }
}

/**
 * The high watermark a leader may move to: the smallest log end offset over every member it
 * counts (its ISR, followers joining or leaving it, and the partition state's ISR `stateIsr`), where a
 * member whose log end offset is unknown (`leoOf` lacks it) holds it where it is. Never moves
 * backwards, never past the leader's own log end.
 */
export function highWatermarkOf(head: ReplicaHead, leaderId: number, stateIsr: readonly number[], leoOf: ReadonlyMap<number, number>): number {
  let hw = head.leo;
  for (const b of new Set([...head.isr, ...head.joining, ...head.leaving, ...stateIsr])) {
    if (b !== leaderId) hw = Math.min(hw, leoOf.get(b) ?? head.hw);
  }
  return Math.max(hw, head.hw);
}

/**
 * Brings a partition's followers up to the leader (or to `until`), maintains the ISR, and
 * advances the leader's high watermark to the smallest log end offset in the ISR.
 * Errors: NOT_LEADER_OR_FOLLOWER when the leader moved; store failures of the leader.
 */
export async function replicate(topic: string, topicId: string, partition: number, o: ReplicateOptions): Promise<ReplicateResult> {
  const tp = topicPartitionKey(topicId, partition);
  // The partition state decides who leads; the cached guess lets both reads run at once.
  const guess = (await cachedTopic(topic))?.partitions[partition]?.leader;
  const [state, guessed] = await Promise.all([
    readPartition(topic, partition),
    guess !== undefined && guess >= 0 ? replicaStore(guess).then((s) => readHead(s, tp)) : Promise.resolve(undefined),
  ]);
  if (!state || state.topicId !== topicId) throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${partition} of ${topic} not found.`, { topic, partition });
  if (o.leaderEpoch !== undefined && state.leaderEpoch !== o.leaderEpoch) {
    throw new KafkaError('NOT_LEADER_OR_FOLLOWER', `The leadership of ${topic}-${partition} moved on (epoch ${state.leaderEpoch}, appended under ${o.leaderEpoch}): the append's fate is unknown.`, { topic, partition });
  }
  const leader = await replicaStore(state.leader);
  const lHead = guess === state.leader ? guessed : await readHead(leader, tp);
  if (!lHead || lHead.role !== 'leader' || lHead.leaderEpoch !== state.leaderEpoch) {
    throw new KafkaError('NOT_LEADER_OR_FOLLOWER', `Broker ${state.leader} is not the leader of ${topic}-${partition} under epoch ${state.leaderEpoch}.`, { topic, partition });
  }
  const target = o.until ?? lHead.leo;
  const isrOnly = o.isrOnly ?? o.until !== undefined;
  const followers = state.replicas.filter((b) => b !== state.leader && (!isrOnly || state.isr.includes(b) || lHead.joining.includes(b)));
  let results: FollowerResult[];
  try {
    // Replicas a reassignment adds copy at the cluster's replication throttle; the ISR never waits on it.
    results = await Promise.all(followers.map(async (b) => catchUp(leader, await replicaStore(b), tp, target, o, lHead, state.addingReplicas?.includes(b) ?? false)));
  } catch (err) {
    // The leader failed mid-copy: no ISR change, no high watermark move — a store failure of the leader.
    throw err instanceof LeaderUnavailable ? err.cause : err;
  }
  if (results.some((r) => r.fenced)) {
    // A follower follows a newer leader (one elected without this one being told yet): whatever
    // this broker's head says, its records past the new leader's may be gone. No HW move, no ISR change.
    throw new KafkaError('NOT_LEADER_OR_FOLLOWER', `Broker ${state.leader} was replaced as the leader of ${topic}-${partition} (epoch ${state.leaderEpoch} is stale).`, { topic, partition });
  }

  let current: PartitionRecord = state;
  const now = Date.now();
  // A fenced broker rejoins the ISR only after the controller has demoted and unfenced it.
  const alive = new Set((await cachedBrokers()).filter((b) => b.state === 'alive').map((b) => b.brokerId));
  // (what the leader knew of the followers this run did not contact stays as it was)
  const progress: Record<string, FollowerProgress> = Object.fromEntries(state.replicas.flatMap((b) => {
    const before = lHead.followers[String(b)];
    return b !== state.leader && before ? [[String(b), before]] : [];
  }));
  const leoOf = new Map<number, number>();
  for (const r of results) {
    const before = lHead.followers[String(r.brokerId)];
    const caughtUp = r.leo !== undefined && r.leo >= lHead.leo;
    if (r.leo !== undefined && !r.error) leoOf.set(r.brokerId, r.leo);
    progress[String(r.brokerId)] = { leo: r.leo ?? before?.leo ?? 0, caughtUpAt: caughtUp ? now : before?.caughtUpAt ?? now };
    const inIsr = current.isr.includes(r.brokerId);
    const lagging = !caughtUp && now - (progress[String(r.brokerId)] as FollowerProgress).caughtUpAt > o.lagTimeMaxMs;
    if (inIsr && ((r.error && o.shrinkOnFailure) || r.lostLog || lagging)) {
      // Out of what min.insync.replicas counts, out of the partition state, then out of the leader's count (lib/cluster/isr-count.ts).
      const reason = r.error ? r.error.message : `not caught up for ${o.lagTimeMaxMs} ms`;
      const shrink = await shrinkWithCount(topic, partition, leader, tp, state.leaderEpoch, r.brokerId, reason, current);
      current = shrink.state;
      if (shrink.shrunk) emitMetric('isrShrinks', 1);
    } else if (!inIsr && caughtUp && !r.error && alive.has(r.brokerId)) {
      const joined = await joinIsr(topic, partition, current, leader, await replicaStore(r.brokerId), tp, o.deadline);
      if (joined) {
        current = joined;
        emitMetric('isrExpands', 1);
        leoOf.set(r.brokerId, (await readHead(await replicaStore(r.brokerId), tp))?.leo ?? 0);
      }
    }
  }
  // Members the partition state no longer has leave the leader's count (whoever removed them); a
  // leave the state never saw (its shrinker lost a race or died) is undone.
  const unsettled = [...lHead.isr.filter((b) => b !== state.leader && !current.isr.includes(b)), ...lHead.leaving];
  for (const b of unsettled) await settleLeave(topic, partition, leader, tp, state.leaderEpoch, b);
  // A join whose joiner died would hold the high watermark for good (a member the leader knows
  // no log end of holds it where it is): an entry older than any joiner lives is settled by the state.
  const stale = lHead.joining.filter((b) => now - (lHead.joiningSince?.[String(b)] ?? 0) > JOIN_STALE_MS);
  for (const b of stale) await settleJoin(topic, partition, leader, tp, state.leaderEpoch, b);

  // The high watermark: the smallest log end offset over every member the leader counts (its
  // ISR, followers joining it, and the partition state's ISR); a member we know nothing of holds it back.
  const head = await readHead(leader, tp);
  if (!head || head.role !== 'leader' || head.leaderEpoch !== state.leaderEpoch) {
    throw new KafkaError('NOT_LEADER_OR_FOLLOWER', `Broker ${state.leader} stopped leading ${topic}-${partition}.`, { topic, partition });
  }
  let hw = highWatermarkOf(head, state.leader, current.isr, leoOf);
  // Write only when something moved: the head's stream must not re-trigger replication forever.
  const moved = hw > head.hw || followers.some((b) => progress[String(b)]?.leo !== head.followers[String(b)]?.leo);
  // Liveness (lag-index.ts): a run that leaves a follower behind marks the partition for the sweep
  // if its head is not flagged yet; only the sweep clears.
  const lagging = leftLagging(target, hw, followers.map((b) => leoOf.get(b)));
  const mark = owesMark(head, state.leaderEpoch, lagging);
  if (mark) await markLagging(topic, topicId, partition);
  const written = moved || mark ? await advanceHighWatermark(leader, tp, state.leaderEpoch, hw, progress, head.isrVersion, mark ? { clears: head.lagClears } : undefined) : true;
  if (!written) hw = head.hw; // someone changed the count meanwhile: this high watermark proves nothing
  else if (hw > head.hw) highWatermarkMoved(tp, hw);
  const slowest = Math.min(...state.replicas.filter((b) => b !== state.leader).map((b) => leoOf.get(b) ?? progress[String(b)]?.leo ?? lHead.leo), lHead.leo);
  emitMetric('replicationLag', lHead.leo - slowest);
  return { highWatermark: hw, isr: current.isr, leaderEpoch: state.leaderEpoch, lagging: lagging || !written, leader: state.leader };
}

const inflight = new Map<string, Promise<ReplicateResult>>();

/** Who the caller appended the records to, and the partition state's ISR it had (cached) when it did. */
export interface Appended {
  readonly leader: number;
  readonly isr: readonly number[];
}

/**
 * `replicate` shared by every caller in this instance that needs the same partition committed:
 * while one run is in flight, others wait for it and need their own run only if it did not get
 * far enough — acks=all producers of one partition then replicate together (group commit).
 */
export async function replicateShared(
  topic: string, topicId: string, partition: number, o: ReplicateOptions & { until: number; leaderEpoch: number; appended?: Appended },
): Promise<ReplicateResult> {
  const tp = topicPartitionKey(topicId, partition);
  const key = `${tp}@${o.leaderEpoch}`;
  for (;;) {
    const running = inflight.get(key);
    if (running) {
      const result = await running.catch(() => undefined);
      if (result && result.highWatermark >= o.until && result.leaderEpoch === o.leaderEpoch) return result;
      if (Date.now() >= o.deadline) return result ?? replicate(topic, topicId, partition, o);
      continue;
    }
    const run = commitOrReplicate(topic, topicId, partition, tp, o).finally(() => inflight.delete(key));
    // (the run keeps o.leaderEpoch: it refuses to prove anything under another leader)
    inflight.set(key, run);
    const result = await run;
    if (result.highWatermark >= o.until || Date.now() >= o.deadline) return result;
  }
}

/**
 * One commit run of `replicateShared`: from memory when this instance appended the records
 * (lib/log/fast-commit.ts: three round trips, no reads), else — or when that cannot prove it —
 * `replicate` on the ISR.
 */
async function commitOrReplicate(
  topic: string, topicId: string, partition: number, tp: string, o: ReplicateOptions & { until: number; leaderEpoch: number; appended?: Appended },
): Promise<ReplicateResult> {
  if (o.appended) {
    const leader = await replicaStore(o.appended.leader);
    const fast = await commitFromMemory(leader, tp, o.leaderEpoch, o.until, o.appended.isr).catch((err: unknown) => {
      // (a store failure of the leader: replicate tells it apart and reports it)
      logger.debug({ event: 'fast-commit-failed', tp, err: (err as Error).message }, 'fast commit failed; replicating');
      return undefined;
    });
    if (fast) return { highWatermark: fast.highWatermark, isr: fast.isr, leaderEpoch: o.leaderEpoch, leader: o.appended.leader };
    emitMetric('fastCommitFallbacks', 1);
  }
  return replicate(topic, topicId, partition, { ...o, until: undefined, isrOnly: true });
}
