/**
 * Full sync via snapshot (docs/architecture.md, "Replication"): for a follower that
 * is empty, wiped, behind the leader's log start, or diverged. Bounded: the snapshot is written to
 * and read from S3 in parts (lib/log/snapshot-parts.ts), never held whole in memory. Safe to fail:
 * the follower's log is not touched until the snapshot is complete.
 *
 *   1. claim    the follower's head gets `snapshotting` (when); its log and head stay as they are,
 *               but no copy step or truncation writes to it and no second full sync starts
 *   2. build    the leader's log up to offset X (its end when the sync began) and its producer
 *               states go to `snapshots/` part by part, the manifest last, while the leader keeps
 *               serving writes
 *   3. install  the follower's head says an empty log (still claimed), its old items are deleted,
 *               the parts are replayed one by one, then the head says [logStart, X)
 *   4. copying resumes from X
 *
 * What a failure leaves ("no worse off"):
 *   - in 1-2: the follower exactly as it was (the claim released, its log never touched); when it
 *     took over a dead sync's claim, that claim given up (it was already a claimed replica);
 *   - in 3: a claimed replica whose claim is given up (stale at once): nothing reads or copies into
 *     its half-installed log, and the next sync takes it over at once, deletes what is there and
 *     installs again. Its old log is gone — as in Kafka, where a follower below the leader's log
 *     start truncates fully before it fetches again.
 * The claimant renews its claim while it works, and checks it between parts; a claim not renewed
 * for FULL_SYNC_STALE_MS may be taken over, and every write of an install checks that its claim
 * still holds, so a paused claimant that wakes up writes (and deletes) nothing.
 */
import { randomUUID } from 'node:crypto';
import { logger } from '../logger.js';
import type { BatchRecord, ReplicaHead } from '../storage/model.js';
import { packsBatchItems } from '../cluster/metadata.js';
import { putObject, readObject } from '../storage/objects.js';
import { claimHead, fillClaimed, releaseClaim, renewClaim } from '../storage/replica/claims.js';
import { deleteLog } from '../storage/replica/deletion.js';
import { emptyHead, putHead, readHead, tailStartOf } from '../storage/replica/head.js';
import { listProducerStates } from '../storage/replica/producer-states.js';
import { queryBatches } from '../storage/replica/reads.js';
import { type ReplicaStoreRef } from '../storage/replica/store.js';
import { ConditionFailed } from '../storage/transact.js';
import { truncateState } from './producer-state.js';
import { SnapshotWriter, readManifest, readParts, type SnapshotManifest } from './snapshot-parts.js';

/** A full sync whose claim was not renewed for this long is presumed dead and may be taken over. */
export const FULL_SYNC_STALE_MS = 20_000;
/** How often a running full sync renews its claim (besides between parts). */
const RENEW_EVERY_MS = FULL_SYNC_STALE_MS / 4;
/** The largest part of a snapshot: a sync holds about two parts' worth of batches at a time. */
export const SNAPSHOT_PART_BYTES = 4 * 1024 * 1024;

/** A point between the parts of a full sync: before part `part` is written (build) or read and replayed (install). */
export interface FullSyncStep {
  readonly phase: 'build' | 'install';
  readonly part: number;
}

export interface FullSyncOptions {
  /** The largest part of the snapshot (a single batch above it gets a part of its own). @default SNAPSHOT_PART_BYTES */
  readonly partBytes?: number;
  /** Called at each step; what it throws fails the sync there (tests inject faults with it). */
  readonly onStep?: (step: FullSyncStep) => Promise<void> | void;
  /**
   * The time (ms) after which the sync goes no further: it fails at its next step, as a sync cut
   * short would (before the install the follower is released as it was; during it the claim is
   * left stale for the next sync). A Lambda's end: nothing runs once it returns.
   * @default none
   */
  readonly deadline?: number;
}

/** The sync's deadline passed at a step. */
export class FullSyncDeadline extends Error {
  override readonly name = 'FullSyncDeadline';
}

/** The sync lost its claim (another took it over): it stops and writes nothing more. */
class Superseded extends Error {}

/**
 * Writes the leader's log up to its current end, and its producer states, to S3 in parts of at
 * most `partBytes`, the manifest last. `beforePart` runs before each part is put.
 */
export async function writeSnapshot(
  leader: ReplicaStoreRef, tp: string, o: { partBytes?: number; beforePart?: (part: number) => Promise<void> | void } = {},
): Promise<{ key: string; manifest: SnapshotManifest }> {
  const head = await readHead(leader, tp);
  if (!head || head.role !== 'leader') throw new Error(`broker ${leader.brokerId} does not lead ${tp}`);
  const partBytes = o.partBytes ?? SNAPSHOT_PART_BYTES;
  const prefix = `snapshots/${tp.replace('#', '/')}/${String(head.leo).padStart(20, '0')}-${randomUUID()}`;
  const writer = new SnapshotWriter(prefix, partBytes, putObject, o.beforePart);
  // Only the table tail is copied: what is below it is in S3 segments every replica shares.
  for (let from = tailStartOf(head); from < head.leo;) {
    // (one part's worth at a time: the page is in the part, or put, before the next is read)
    const page = await queryBatches(leader, tp, { fromOffset: from, toOffset: head.leo - 1, maxBytes: partBytes });
    const last = page[page.length - 1];
    if (!last) throw new Error(`leader ${leader.brokerId} of ${tp} has no batch at offset ${from} below its log end ${head.leo}`);
    // (a roll or a truncation moved the log under the snapshot: this one would have a hole)
    if ((page[0] as BatchRecord).baseOffset > from) throw new Error(`leader ${leader.brokerId} of ${tp} no longer holds offset ${from} in its table; the snapshot is retried`);
    for (const b of page) await writer.addBatch(b);
    from = last.lastOffset + 1;
  }
  for (const st of await listProducerStates(leader, tp)) {
    const kept = truncateState(st, head.leo);
    if (kept) await writer.addProducer(kept);
  }
  return writer.finish({ tp, endOffset: head.leo, head });
}

/**
 * Claims a follower for a full sync. Returns when it claimed and whether it took a dead sync's
 * claim over, or undefined when another full sync of it is under way (and not stale).
 */
async function claim(follower: ReplicaStoreRef, tp: string, leaderEpoch: number): Promise<{ at: number; tookOver: boolean } | undefined> {
  const existing = await readHead(follower, tp);
  const now = Date.now();
  if (existing?.snapshotting !== undefined && now - (existing.snapshotRenewedAt ?? existing.snapshotting) < FULL_SYNC_STALE_MS) return undefined;
  if (!existing) {
    try {
      await putHead(follower, { ...emptyHead(tp, 'follower', leaderEpoch), snapshotting: now, snapshotRenewedAt: now }, 'ifAbsent');
    } catch (err) {
      if (err instanceof ConditionFailed) return undefined;
      throw err;
    }
    return { at: now, tookOver: false };
  }
  const prior = existing.snapshotting === undefined ? undefined
    : { snapshotting: existing.snapshotting, ...(existing.snapshotRenewedAt === undefined ? {} : { snapshotRenewedAt: existing.snapshotRenewedAt }) };
  return (await claimHead(follower, tp, now, prior)) ? { at: now, tookOver: prior !== undefined } : undefined;
}

/**
 * Rewrites a claimed head, keeping a role pushed to the follower during the sync: a head that
 * was told a newer epoch than the snapshot's keeps it (and its role), so a sync from a leader
 * replaced meanwhile leaves a follower of the new leader that truncates whatever the old one had
 * alone (KIP-101), never a head that went back to the old epoch. Returns the head it replaced.
 */
async function putClaimedHead(
  follower: ReplicaStoreRef, tp: string, claimedAt: number, snapEpoch: number,
  next: (role: ReplicaHead['role'], leaderEpoch: number, current: ReplicaHead) => ReplicaHead,
): Promise<ReplicaHead> {
  for (let attempt = 0; ; attempt++) {
    const current = await readHead(follower, tp);
    if (current?.snapshotting !== claimedAt) throw new Superseded();
    const told = current.leaderEpoch > snapEpoch;
    try {
      await putHead(follower, next(told ? current.role : 'follower', Math.max(snapEpoch, current.leaderEpoch), current), { snapshotting: claimedAt, leaderEpoch: current.leaderEpoch });
      return current;
    } catch (err) {
      // A role pushed between the read and the write: read again.
      if (!(err instanceof ConditionFailed) || attempt >= 5) throw err;
    }
  }
}

/** Replays a snapshot into a claimed follower, part by part, and hands it to the copy step at the snapshot's end. */
async function install(
  follower: ReplicaStoreRef, tp: string, manifest: SnapshotManifest, claimedAt: number, step: (s: FullSyncStep) => Promise<void>,
): Promise<void> {
  const snapEpoch = manifest.head.leaderEpoch;
  // From here the follower's old log is given up: its head says an empty log, still claimed. Its
  // log start never goes back (a DeleteRecords may have raised it during the sync; the snapshot's
  // may be older): each head written keeps the larger.
  await putClaimedHead(follower, tp, claimedAt, snapEpoch, (role, leaderEpoch, current) => ({
    ...emptyHead(tp, role, leaderEpoch), snapshotting: claimedAt, snapshotRenewedAt: Date.now(), logStartOffset: current.logStartOffset,
  }));
  await deleteLog(follower, tp, claimedAt);
  const pack = await packsBatchItems();
  for await (const part of readParts(manifest, async (key, index) => {
    await step({ phase: 'install', part: index });
    return readObject(key);
  })) {
    await fillClaimed(follower, tp, claimedAt, part.batches, part.producers, pack);
  }
  const { head, endOffset } = manifest;
  await putClaimedHead(follower, tp, claimedAt, snapEpoch, (role, leaderEpoch, current) => ({
    ...emptyHead(tp, role, leaderEpoch),
    syncEpoch: snapEpoch, logId: randomUUID(),
    leo: endOffset, hw: Math.min(head.hw, endOffset), logStartOffset: Math.min(Math.max(head.logStartOffset, current.logStartOffset), endOffset), tailStart: tailStartOf(head), tailSince: Date.now(),
    epochs: head.epochs.filter(([, start]) => start < endOffset),
    // (the leader's open transactions at the snapshot's end: its head was read at that end)
    ...(head.openTxns ? { openTxns: head.openTxns } : {}),
  }));
}

/**
 * A full sync of `follower` from `leader`, logged with its size and duration. Returns false when
 * another full sync of the follower is under way or took this one over (nothing more was done),
 * or when the follower became a leader meanwhile (its log is left alone).
 */
export async function fullSync(leader: ReplicaStoreRef, follower: ReplicaStoreRef, tp: string, o: FullSyncOptions = {}): Promise<boolean> {
  const started = Date.now();
  const leaderHead = await readHead(leader, tp);
  if (!leaderHead) return false;
  const claimed = await claim(follower, tp, leaderHead.leaderEpoch);
  if (!claimed) return false;
  const claimedAt = claimed.at;
  logger.info({ event: 'full-sync-started', tp, leader: leader.brokerId, follower: follower.brokerId, leaderEpoch: leaderHead.leaderEpoch }, 'full sync started');
  const renewing = setInterval(() => void renewClaim(follower, tp, claimedAt, Date.now()).catch(() => undefined), RENEW_EVERY_MS);
  // Between parts: the claim must still be ours (and is renewed), then the caller's hook.
  const step = async (s: FullSyncStep) => {
    if (o.deadline !== undefined && Date.now() > o.deadline) throw new FullSyncDeadline(`the full sync of ${tp} to broker ${follower.brokerId} passed its deadline at ${s.phase} part ${s.part}`);
    if (!(await renewClaim(follower, tp, claimedAt, Date.now()))) throw new Superseded();
    await o.onStep?.(s);
  };
  let phase: FullSyncStep['phase'] = 'build';
  let snap: Awaited<ReturnType<typeof writeSnapshot>> | undefined;
  try {
    snap = await writeSnapshot(leader, tp, { partBytes: o.partBytes ?? SNAPSHOT_PART_BYTES, beforePart: (part) => step({ phase: 'build', part }) });
    const current = await readHead(follower, tp);
    if (current?.snapshotting !== claimedAt) throw new Superseded();
    if (current.role === 'leader' && current.leaderEpoch > snap.manifest.head.leaderEpoch) {
      // Elected while this sync built its snapshot: a leader's log is not this sync's to replace.
      clearInterval(renewing);
      await releaseClaim(follower, tp, claimedAt);
      logger.warn({ event: 'full-sync-abandoned', tp, follower: follower.brokerId, leaderEpoch: current.leaderEpoch }, 'follower became leader during its full sync');
      return false;
    }
    phase = 'install';
    await install(follower, tp, await readManifest(snap.key, readObject), claimedAt, step);
  } catch (err) {
    clearInterval(renewing);
    if (err instanceof Superseded || (err instanceof ConditionFailed && (await readHead(follower, tp).catch(() => undefined))?.snapshotting !== claimedAt)) {
      logger.info({ event: 'full-sync-superseded', tp, follower: follower.brokerId }, 'another full sync took this one over');
      return false;
    }
    logger.warn({ event: 'full-sync-failed', tp, leader: leader.brokerId, follower: follower.brokerId, phase, err }, 'full sync failed');
    // Give the claim up, so that the next sync need not wait for it to go stale (renewals stopped
    // first, so that no later tick renews it again). Before the install, the follower's log was
    // never touched: it is released as it was. A dead sync's claim that this one took over stays
    // claimed, as it was (its log may be half-installed).
    if (phase === 'build' && !claimed.tookOver) await releaseClaim(follower, tp, claimedAt).catch(() => undefined);
    else await renewClaim(follower, tp, claimedAt, 0).catch(() => undefined);
    throw err;
  } finally {
    clearInterval(renewing);
  }
  logger.info({
    event: 'full-sync-done', tp, leader: leader.brokerId, follower: follower.brokerId, endOffset: snap.manifest.endOffset,
    batches: snap.manifest.batches, producers: snap.manifest.producers, parts: snap.manifest.parts.length, bytes: snap.manifest.bytes, ms: Date.now() - started,
  }, 'full sync done');
  return true;
}
