/**
 * Full sync via snapshot (DESIGN §5, seed 3.1.2.1): for a follower that is empty, wiped, or behind
 * the leader's log start. The leader's log up to offset X and its head state are written to
 * `snapshots/` in S3 while the leader keeps serving writes; the follower replays the snapshot into
 * its table (marked `snapshotting` meanwhile, so no copy step touches it) and then copies from X.
 */
import { randomUUID } from 'node:crypto';
import { logger } from '../logger.js';
import type { BatchRecord, ReplicaHead, StoredProducerState } from '../storage/model.js';
import { putObject, readObject } from '../storage/objects.js';
import { deletePartition, emptyHead, listProducerStates, putBatches, putHead, queryBatches, readHead, replaceProducerStates, type ReplicaStoreRef } from '../storage/replica.js';
import { truncateState, type ProducerState } from './producer-state.js';
import { ConditionFailed } from '../storage/transact.js';

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

/** Writes the leader's log up to its current end, and its head, to S3. */
export async function writeSnapshot(leader: ReplicaStoreRef, tp: string): Promise<Snapshot> {
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
  return { key, endOffset: head.leo, batches: batches.length, bytes: body.length };
}

/**
 * Replays a snapshot into a follower's table: clears what it held, marks it snapshotting, writes
 * the batches, then sets its head to the snapshot's end under `leaderEpoch` as a follower.
 * Errors: `ConditionFailed` when another full sync finished first (then nothing more is needed).
 */
export async function installSnapshot(follower: ReplicaStoreRef, tp: string, key: string, leaderEpoch: number): Promise<void> {
  const file = JSON.parse((await readObject(key)).toString('utf8')) as SnapshotFile;
  const existing = await readHead(follower, tp);
  if (existing && !existing.snapshotting) await deletePartition(follower, tp);
  if (!existing || !existing.snapshotting) {
    await putHead(follower, { ...emptyHead(tp, 'follower', leaderEpoch), snapshotting: true }, 'ifAbsent');
  }
  await putBatches(follower, tp, file.batches.map((b) => ({ ...b, ...(b.data ? { data: Buffer.from(b.data, 'base64') } : {}) }) as BatchRecord));
  await replaceProducerStates(follower, tp, file.producers.map((state) => ({ producerId: state.producerId, state })));
  const { snapshotting: _s, ...rest } = emptyHead(tp, 'follower', leaderEpoch);
  await putHead(follower, {
    ...rest,
    leo: file.endOffset, hw: Math.min(file.head.hw, file.endOffset), logStartOffset: file.head.logStartOffset,
    epochs: file.head.epochs.filter(([, start]) => start < file.endOffset),
  }, 'ifSnapshotting');
}

/** A full sync of `follower` from `leader`: snapshot, replay, logged with its size and duration. */
export async function fullSync(leader: ReplicaStoreRef, follower: ReplicaStoreRef, tp: string): Promise<void> {
  const started = Date.now();
  const leaderHead = await readHead(leader, tp);
  if (!leaderHead) return;
  logger.info({ event: 'full-sync-started', tp, leader: leader.brokerId, follower: follower.brokerId, leaderEpoch: leaderHead.leaderEpoch }, 'full sync started');
  const snap = await writeSnapshot(leader, tp);
  try {
    await installSnapshot(follower, tp, snap.key, leaderHead.leaderEpoch);
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
    logger.info({ event: 'full-sync-superseded', tp, follower: follower.brokerId }, 'another full sync finished first');
    return;
  }
  logger.info({
    event: 'full-sync-done', tp, leader: leader.brokerId, follower: follower.brokerId, endOffset: snap.endOffset,
    batches: snap.batches, bytes: snap.bytes, ms: Date.now() - started,
  }, 'full sync done');
}
