/**
 * Full sync via snapshot (DESIGN §5, seed 3.1.2.1): for a follower that is empty, wiped, or behind
 * the leader's log start. The follower is first claimed (its head says `snapshotting` since when,
 * so no copy step touches it and no second full sync starts), then the leader's log up to offset X
 * and its state are written to `snapshots/` in S3 while the leader keeps serving writes, the
 * follower replays the snapshot, and copying resumes from X. The claimant renews its claim while it
 * works; a claim not renewed for FULL_SYNC_STALE_MS may be taken over, and every write of a replay
 * checks that its claim still holds, so a paused claimant that wakes up writes nothing.
 */
import { randomUUID } from 'node:crypto';
import { logger } from '../logger.js';
import type { BatchRecord, ReplicaHead, StoredProducerState } from '../storage/model.js';
import { putObject, readObject } from '../storage/objects.js';
import { deleteLog, deletePartition, emptyHead, fillClaimed, listProducerStates, putHead, queryBatches, readHead, renewClaim, type ReplicaStoreRef } from '../storage/replica.js';
import { ConditionFailed } from '../storage/transact.js';
import { truncateState, type ProducerState } from './producer-state.js';

/** A full sync whose claim was not renewed for this long is presumed dead and may be taken over. */
export const FULL_SYNC_STALE_MS = 20_000;
/** How often a running full sync renews its claim. */
const RENEW_EVERY_MS = FULL_SYNC_STALE_MS / 4;

interface SnapshotFile {
  readonly version: 1;
  readonly tp: string;
  /** The log it holds is [logStartOffset, endOffset). */
  readonly endOffset: number;
  readonly head: ReplicaHead;
  /** Batches with inline bytes as base64. */
  readonly batches: readonly (Omit<BatchRecord, 'data'> & { data?: string })[];
  /** Idempotent producer states as of `endOffset`. */
  readonly producers: readonly Omit<StoredProducerState, 'ver'>[];
}

export interface Snapshot {
  readonly key: string;
  readonly endOffset: number;
  readonly batches: number;
  readonly bytes: number;
}

/** Writes the leader's log up to its current end, and its state, to S3. */
export async function writeSnapshot(leader: ReplicaStoreRef, tp: string): Promise<Snapshot & { head: ReplicaHead }> {
  const head = await readHead(leader, tp);
  if (!head || head.role !== 'leader') throw new Error(`broker ${leader.brokerId} does not lead ${tp}`);
  const batches: BatchRecord[] = [];
  for (let from = head.logStartOffset; from < head.leo;) {
    const page = await queryBatches(leader, tp, { fromOffset: from, toOffset: head.leo - 1, maxBytes: 8_000_000 });
    const last = page[page.length - 1];
    if (!last) break;
    batches.push(...page);
    from = last.lastOffset + 1;
  }
  const producers = (await listProducerStates(leader, tp))
    .map((st) => truncateState(st, head.leo))
    .filter((st): st is ProducerState => st !== undefined);
  const file: SnapshotFile = {
    version: 1, tp, endOffset: head.leo, head, producers,
    batches: batches.map(({ data, ...rest }) => ({ ...rest, ...(data ? { data: Buffer.from(data).toString('base64') } : {}) })),
  };
  const body = Buffer.from(JSON.stringify(file));
  const key = `snapshots/${tp.replace('#', '/')}/${String(head.leo).padStart(20, '0')}-${randomUUID()}.json`;
  await putObject(key, body);
  return { key, endOffset: head.leo, batches: batches.length, bytes: body.length, head };
}

/**
 * Claims a follower for a full sync: returns the claim's start time, or undefined when another
 * full sync of it is under way (and not stale).
 */
async function claim(follower: ReplicaStoreRef, tp: string, leaderEpoch: number): Promise<number | undefined> {
  const existing = await readHead(follower, tp);
  const now = Date.now();
  if (existing?.snapshotting !== undefined && now - (existing.snapshotRenewedAt ?? existing.snapshotting) < FULL_SYNC_STALE_MS) return undefined;
  // (never behind an epoch the follower was already told)
  const claimed = { ...emptyHead(tp, 'follower', Math.max(leaderEpoch, existing?.leaderEpoch ?? 0)), snapshotting: now };
  try {
    if (existing?.snapshotting !== undefined) {
      await putHead(follower, claimed, { snapshotting: existing.snapshotting });
      // From here the dead sync can write nothing (its writes check its claim); clear what it wrote.
      await deleteLog(follower, tp);
    } else {
      // A follower with a log that cannot be caught up incrementally starts again from nothing.
      if (existing) await deletePartition(follower, tp);
      await putHead(follower, claimed, 'ifAbsent');
    }
    return now;
  } catch (err) {
    if (err instanceof ConditionFailed) return undefined;
    throw err;
  }
}

/**
 * Replays a snapshot into a claimed follower and hands it to the copy step at the snapshot's end.
 * The log is reconciled with the snapshot's epoch (`syncEpoch`); a role pushed to the follower
 * during the sync is kept, so a sync from a leader that was replaced meanwhile leaves a follower
 * of the new leader that truncates whatever the old one had alone (KIP-101), never a head that
 * went back to the old epoch.
 */
async function install(follower: ReplicaStoreRef, tp: string, key: string, leaderEpoch: number, claimedAt: number): Promise<'done' | 'superseded'> {
  const file = JSON.parse((await readObject(key)).toString('utf8')) as SnapshotFile;
  try {
    await fillClaimed(follower, tp, claimedAt, file.batches.map((b) => ({ ...b, ...(b.data ? { data: Buffer.from(b.data, 'base64') } : {}) }) as BatchRecord), file.producers);
  } catch (err) {
    if (err instanceof ConditionFailed) return 'superseded';
    throw err;
  }
  for (let attempt = 0; ; attempt++) {
    const current = await readHead(follower, tp);
    if (current?.snapshotting !== claimedAt) return 'superseded';
    const told = current.leaderEpoch > leaderEpoch;
    try {
      await putHead(follower, {
        ...emptyHead(tp, told ? current.role : 'follower', Math.max(leaderEpoch, current.leaderEpoch)),
        syncEpoch: leaderEpoch, logId: randomUUID(),
        leo: file.endOffset, hw: Math.min(file.head.hw, file.endOffset), logStartOffset: file.head.logStartOffset,
        epochs: file.head.epochs.filter(([, start]) => start < file.endOffset),
      }, { snapshotting: claimedAt, leaderEpoch: current.leaderEpoch });
      return 'done';
    } catch (err) {
      // A role pushed between the read and the write: read again.
      if (!(err instanceof ConditionFailed) || attempt >= 5) throw err;
    }
  }
}

/**
 * A full sync of `follower` from `leader`, logged with its size and duration. Returns false when
 * another full sync of the follower is under way (nothing was done).
 */
export async function fullSync(leader: ReplicaStoreRef, follower: ReplicaStoreRef, tp: string): Promise<boolean> {
  const started = Date.now();
  const leaderHead = await readHead(leader, tp);
  if (!leaderHead) return false;
  const claimedAt = await claim(follower, tp, leaderHead.leaderEpoch);
  if (claimedAt === undefined) return false;
  logger.info({ event: 'full-sync-started', tp, leader: leader.brokerId, follower: follower.brokerId, leaderEpoch: leaderHead.leaderEpoch }, 'full sync started');
  let snap: Awaited<ReturnType<typeof writeSnapshot>>;
  const renewing = setInterval(() => void renewClaim(follower, tp, claimedAt, Date.now()).catch(() => undefined), RENEW_EVERY_MS);
  try {
    snap = await writeSnapshot(leader, tp);
    if ((await install(follower, tp, snap.key, snap.head.leaderEpoch, claimedAt)) === 'superseded') {
      logger.info({ event: 'full-sync-superseded', tp, follower: follower.brokerId }, 'another full sync took this one over');
      return false;
    }
  } catch (err) {
    logger.warn({ event: 'full-sync-failed', tp, leader: leader.brokerId, follower: follower.brokerId, err }, 'full sync failed');
    // Give the claim up, so that the next sync need not wait for it to go stale (renewals stop
    // first, so that no later tick renews it again).
    clearInterval(renewing);
    await renewClaim(follower, tp, claimedAt, 0).catch(() => undefined);
    throw err;
  } finally {
    clearInterval(renewing);
  }
  logger.info({
    event: 'full-sync-done', tp, leader: leader.brokerId, follower: follower.brokerId, endOffset: snap.endOffset,
    batches: snap.batches, bytes: snap.bytes, ms: Date.now() - started,
  }, 'full sync done');
  return true;
}
