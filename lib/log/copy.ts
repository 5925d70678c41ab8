/**
 * The copy step (docs/architecture.md, "Replication"): a follower's log brought forward from its
 * leader's table, in offset order, under conditional writes — and, before a follower copies under a
 * new leader epoch, KIP-101 truncation to where its log and the leader's agree. Safe to run
 * concurrently from anywhere: a copier that lost a race wrote nothing.
 */
import { logger } from '../logger.js';
import { type BatchRecord, type ReplicaHead } from '../storage/model.js';
import { batchStartAt, queryBatches } from '../storage/replica/reads.js';
import { copyBatches } from '../storage/replica/batches.js';
import { packsBatchItems } from '../cluster/metadata.js';
import { listProducerStates, readProducerStates, type ProducerStateWrite } from '../storage/replica/producer-states.js';
import { readHead, tailStartOf } from '../storage/replica/head.js';
import { raiseLogStart } from '../storage/replica/tail.js';
import { truncateLog } from '../storage/replica/truncation.js';
import { type ReplicaStoreRef } from '../storage/replica/store.js';
import { applyBatch, applyMarker, openTxnsAfter, stateFields, truncateState, truncationTouches, type ProducerState } from './producer-state.js';
import { ConditionFailed, MAX_TRANSACTION_ITEMS } from '../storage/transact.js';

/** Bytes read from the leader per copy step (and at most one transaction's worth). */
const COPY_BYTES = 3_000_000;

export type CopyOutcome =
  /** The follower holds everything the leader had when the step began. */
  | { readonly kind: 'caught-up'; readonly followerLeo: number; readonly leaderLeo: number; readonly bytes?: number }
  /** Batches were copied (`bytes` of them); more may remain. */
  | { readonly kind: 'copied'; readonly followerLeo: number; readonly leaderLeo: number; readonly bytes?: number }
  /** Another copier moved the follower first: nothing was written. */
  | { readonly kind: 'lost-race' }
  /** The follower is empty, wiped, or behind the leader's log start: it needs a full sync. */
  | { readonly kind: 'needs-snapshot'; readonly leaderLeo: number }
  /** The follower has not been told the leader's epoch yet (the controller pushes it). */
  | { readonly kind: 'behind-epoch' }
  /** The follower knows a newer epoch than the leader: the leader is stale and may copy nothing. */
  | { readonly kind: 'fenced' };

/** What a log answers to Kafka's OffsetsForLeaderEpoch for one requested epoch. */
export interface EpochEnd {
  /** The largest epoch at or below the requested one that the log has (the requested one when the log's first epoch is later). */
  readonly epoch: number;
  /** Where that epoch ended: the start of the log's next epoch, or its log end for its latest. */
  readonly endOffset: number;
}

/**
 * Kafka's OffsetsForLeaderEpoch (KIP-279) answered from a log's leader-epoch cache: the largest
 * epoch at or below `epoch` that the log has, and where it ended in the log — the start of the
 * next epoch, or the log end for its latest. A request below the log's first epoch gets that
 * epoch back with the first epoch's start offset (as Kafka answers); an empty cache knows nothing.
 */
export function endOffsetForEpoch(log: Pick<ReplicaHead, 'epochs' | 'leo'>, epoch: number): EpochEnd | undefined {
  const epochs = log.epochs;
  const first = epochs[0];
  if (!first) return undefined;
  let i = epochs.length - 1;
  while (i >= 0 && (epochs[i] as readonly [number, number])[0] > epoch) i--;
  if (i < 0) return { epoch, endOffset: first[1] };
  const next = epochs[i + 1];
  return { epoch: (epochs[i] as readonly [number, number])[0], endOffset: next ? next[1] : log.leo };
}

/**
 * The offset a follower must truncate to before copying under the leader's epoch: KIP-101, with
 * KIP-279's rounds. The leader answers for the follower's last epoch with its largest epoch E at
 * or below it and where E ended on the leader; the follower truncates to the smaller of that and
 * its own end of E. When the follower's largest epoch at or below E is an older one, its log
 * after that epoch's end differs from the leader's whatever the offsets say: cut there and ask
 * again (the follower's last epoch drops every round, so this ends). A follower without an epoch
 * cache keeps only its high watermark, as Kafka's did before KIP-101.
 */
export function truncationOffset(follower: ReplicaHead, leader: ReplicaHead): number {
  let log: Pick<ReplicaHead, 'epochs' | 'leo'> = follower;
  for (;;) {
    const last = log.epochs[log.epochs.length - 1];
    const theirs = last && endOffsetForEpoch(leader, last[0]);
    if (!theirs) return Math.min(log.leo, follower.hw);
    const mine = endOffsetForEpoch(log, theirs.epoch) as EpochEnd;
    const to = Math.min(theirs.endOffset, mine.endOffset, log.leo);
    if (mine.epoch === theirs.epoch) return to;
    log = { leo: to, epochs: log.epochs.filter(([, start]) => start < to) };
  }
}

/** Epoch cache entries that copying `batches` onto `follower` starts. */
function epochEntries(follower: ReplicaHead, batches: readonly BatchRecord[]): [number, number][] {
  let latest = follower.epochs[follower.epochs.length - 1]?.[0] ?? -1;
  const out: [number, number][] = [];
  for (const b of batches) {
    if (b.leaderEpoch > latest) {
      out.push([b.leaderEpoch, b.baseOffset]);
      latest = b.leaderEpoch;
    }
  }
  return out;
}

/**
 * The leader's store failed during a copy step: nothing can be said about the follower, and no
 * follower may be blamed for it (leave the ISR alone; the controller deals with the leader).
 */
export class LeaderUnavailable extends Error {
  override readonly name = 'LeaderUnavailable';
  constructor(override readonly cause: unknown) {
    super(`the leader's store failed: ${(cause as Error)?.message ?? cause}`);
  }
}

/** Runs a read of the leader's store, telling its failure apart from the follower's. */
async function onLeaderStore<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    throw new LeaderUnavailable(err);
  }
}

/**
 * One copy step from `leader` to `follower`. `leaderHead`, when given, is a read of the leader's
 * head the caller made before (it may be stale by now). Store failures propagate.
 *
 * A follower's log never shrinks within one leader epoch: a follower reconciled with its epoch
 * holds only batches the leader wrote under it or before, and a leader's log only grows within its
 * epoch, so a follower ahead of the leader's head is ahead of a stale read of it, never diverged.
 * Only a follower not yet reconciled with a new epoch truncates, and then from a read of the
 * leader made after the follower's head was read:
 *
 *   copier A: read leader (leo 100) ─────────────────────────────────── read follower (leo 110)
 *   copier B:        append 100..109, copy them to the follower, hw → 110 (acknowledged)
 *   A must not truncate the follower to 100: it learns nothing from its head but that it is stale.
 */
export async function copyStep(leader: ReplicaStoreRef, follower: ReplicaStoreRef, tp: string, leaderHead?: ReplicaHead): Promise<CopyOutcome> {
  let lHead = leaderHead ?? (await onLeaderStore(() => readHead(leader, tp)));
  if (!lHead || lHead.role !== 'leader') return { kind: 'fenced' };
  let fHead = await readHead(follower, tp);
  if (!fHead || fHead.snapshotting) return { kind: 'needs-snapshot', leaderLeo: lHead.leo };
  if (fHead.leaderEpoch < lHead.leaderEpoch) return { kind: 'behind-epoch' };
  if (fHead.leaderEpoch > lHead.leaderEpoch || fHead.role !== 'follower') return { kind: 'fenced' };
  if (fHead.syncEpoch === fHead.leaderEpoch && fHead.leo > lHead.leo) {
    // Within the epoch: the leader's head was read before the follower got these records from it.
    return { kind: 'caught-up', followerLeo: fHead.leo, leaderLeo: fHead.leo };
  }
  if (fHead.syncEpoch !== fHead.leaderEpoch) {
    // A new epoch: where the follower's log leaves the leader's is decided on a fresh read of the leader.
    lHead = await onLeaderStore(() => readHead(leader, tp));
    if (!lHead || lHead.role !== 'leader' || lHead.leaderEpoch < fHead.leaderEpoch) return { kind: 'fenced' };
    if (lHead.leaderEpoch > fHead.leaderEpoch) return { kind: 'behind-epoch' };
    const target = Math.min(truncationOffset(fHead, lHead), lHead.leo);
    // Below the follower's table tail its log is in segments that are no longer the leader's log
    // (only an unclean election gets there): a truncation cannot cut them, a full sync replaces them.
    if (target < tailStartOf(fHead)) return { kind: 'needs-snapshot', leaderLeo: lHead.leo };
    // Whole batches only: the follower's log ends where the batch holding the target starts.
    const to = target < fHead.leo ? await batchStartAt(follower, tp, target) : fHead.leo;
    // Producer states forget the truncated batches, as Kafka rebuilds them from the log.
    const states = to < fHead.leo ? await listProducerStates(follower, tp) : [];
    const touched = states.filter((st) => truncationTouches(st, to));
    const producers = touched.map((st) => {
      const kept = truncateState(st, to);
      return { producerId: st.producerId, expectVer: st.ver, ...(kept ? { state: stateFields(kept) } : {}) };
    });
    const openTxns = openTxnsAfter(fHead.openTxns, touched.map((st) => truncateState(st, to) ?? { producerId: st.producerId }), Math.min(fHead.hw, to), to);
    let end: number;
    try {
      end = await truncateLog(follower, tp, fHead, to, producers, openTxns);
    } catch (err) {
      if (err instanceof ConditionFailed) return { kind: 'lost-race' };
      throw err;
    }
    if (end < fHead.leo) logger.info({ event: 'replica-truncated', tp, broker: follower.brokerId, from: fHead.leo, to: end, leaderEpoch: fHead.leaderEpoch }, 'follower truncated');
    fHead = { ...fHead, leo: end, hw: Math.min(fHead.hw, end), epochs: fHead.epochs.filter(([, s]) => s < end), syncEpoch: fHead.leaderEpoch, ...(openTxns ? { openTxns } : {}) };
  }
  // Below the leader's table tail the log is in shared S3 segments: a full sync installs the
  // segment list and copies only the tail.
  if (fHead.leo < Math.max(lHead.logStartOffset, tailStartOf(lHead))) return { kind: 'needs-snapshot', leaderLeo: lHead.leo };
  // The log start is part of the log: a follower that missed a raise (its store was down during a
  // DeleteRecords or a retention pass) takes the leader's, so that it never serves deleted records
  // once it leads.
  if (fHead.logStartOffset < lHead.logStartOffset && await raiseLogStart(follower, tp, lHead.logStartOffset)) {
    fHead = { ...fHead, logStartOffset: lHead.logStartOffset };
  }
  if (fHead.leo >= lHead.leo) return { kind: 'caught-up', followerLeo: fHead.leo, leaderLeo: lHead.leo };

  let batches = await onLeaderStore(() => queryBatches(leader, tp, { fromOffset: fHead.leo, toOffset: lHead.leo - 1, maxBytes: COPY_BYTES }));
  // Room in the transaction for the head, the batches and each idempotent producer's state.
  const room = (n: number) => n + new Set(batches.slice(0, n).flatMap((b) => (b.producerId !== undefined ? [b.producerId] : []))).size <= MAX_TRANSACTION_ITEMS - 1;
  let take = Math.min(batches.length, MAX_TRANSACTION_ITEMS - 1);
  while (take > 1 && !room(take)) take--;
  batches = batches.slice(0, take);
  const first = batches[0];
  if (!first) return { kind: 'caught-up', followerLeo: fHead.leo, leaderLeo: lHead.leo };
  if (first.baseOffset > fHead.leo && (await onLeaderStore(() => readHead(leader, tp)).then((h) => h !== undefined && fHead.leo < tailStartOf(h)))) {
    // The leader rolled its tail to S3 after its head was read.
    return { kind: 'needs-snapshot', leaderLeo: lHead.leo };
  }
  if (first.baseOffset !== fHead.leo) {
    // The follower's end is not a batch boundary of the leader's log: their logs differ.
    logger.warn({ event: 'replica-diverged', tp, broker: follower.brokerId, followerLeo: fHead.leo, leaderBatch: first.baseOffset }, 'follower log diverged');
    return { kind: 'needs-snapshot', leaderLeo: lHead.leo };
  }
  const last = batches[batches.length - 1] as BatchRecord;
  const newLeo = last.lastOffset + 1;
  const producers = await followerProducerStates(follower, tp, batches);
  const openTxns = openTxnsAfter(fHead.openTxns, producers.map((w) => w.state), Math.min(lHead.hw, newLeo));
  try {
    await copyBatches(follower, tp, {
      expectLeo: fHead.leo, leaderEpoch: lHead.leaderEpoch, batches, hw: Math.min(lHead.hw, newLeo), epochEntries: epochEntries(fHead, batches),
      producers, ...(openTxns ? { openTxns } : {}), pack: await packsBatchItems(),
    });
  } catch (err) {
    if (err instanceof ConditionFailed) return { kind: 'lost-race' };
    throw err;
  }
  const bytes = batches.reduce((n, b) => n + b.sizeBytes, 0);
  return newLeo >= lHead.leo
    ? { kind: 'caught-up', followerLeo: newLeo, leaderLeo: lHead.leo, bytes }
    : { kind: 'copied', followerLeo: newLeo, leaderLeo: lHead.leo, bytes };
}

/** The follower's producer states after `batches`, derived from the batches themselves (as Kafka rebuilds them). */
async function followerProducerStates(follower: ReplicaStoreRef, tp: string, batches: readonly BatchRecord[]): Promise<ProducerStateWrite[]> {
  const tagged = batches.filter((b) => b.producerId !== undefined && b.producerId >= 0);
  if (tagged.length === 0) return [];
  const stored = await readProducerStates(follower, tp, tagged.map((b) => b.producerId as number));
  const next = new Map<number, ProducerState>(stored);
  for (const b of tagged) {
    const id = b.producerId as number;
    next.set(id, b.control
      ? applyMarker(next.get(id), { producerId: id, markerEpoch: b.producerEpoch ?? 0, commit: b.control === 'commit' }, b.baseOffset)
      : applyBatch(next.get(id), {
        producerId: id, producerEpoch: b.producerEpoch ?? 0, firstSeq: b.baseSequence ?? 0, recordCount: b.recordCount, baseOffset: b.baseOffset,
        ...(b.transactional ? { transactional: true } : {}),
      }));
  }
  return [...next].filter(([id]) => tagged.some((b) => b.producerId === id)).map(([id, st]) => ({
    state: stateFields(st), expectVer: stored.get(id)?.ver ?? null,
  }));
}

