/**
 * The fast commit of acks=all: after the leader's append, every follower the leader's
 * high watermark counts is written in parallel from the batches this instance just appended —
 * still in memory — under the follower's expected log end and the leader's epoch, then the
 * leader's high watermark moves: three sequential round trips in all (append, copies, high
 * watermark), no reads. Anything it cannot prove from what it holds — a follower whose log end it
 * cannot learn or whose batches are no longer in memory, a count (ISR) that changed, a member the
 * metadata says is down or no longer in the partition state's ISR — falls back to `replicate` (lib/log/commit.ts), which reads everything
 * and decides the ISR.
 *
 * Why it is safe: every write is conditional. A follower copy holds only if the follower's head
 * says exactly the log end it is copied onto, the leader's epoch, reconciled (syncEpoch) and not in
 * a full sync — so its log was the leader's log up to there, and the batches go on from it. The
 * high watermark moves only under the ISR version the members were taken from (the leader's count,
 * its ISR and joining followers, which always covers the partition state's ISR: members join it
 * before the state, and leave it after), and only to an offset every member now holds.
 *
 * It also keeps what this instance knows of each leader replica it appends to: the head (the
 * append's first attempt needs no read) and the follower log ends it wrote.
 */
import { cachedBrokers, packsBatchItems, replicaStore } from '../cluster/metadata.js';
import type { BatchRecord, FollowerProgress, ReplicaHead, StoredProducerState } from '../storage/model.js';
import { copyBatches, recordCommit } from '../storage/replica/batches.js';
import { headFromItem, readHead } from '../storage/replica/head.js';
import { type ReplicaStoreRef } from '../storage/replica/store.js';
import { ConditionFailed, MAX_TRANSACTION_ITEMS } from '../storage/transact.js';
import { highWatermarkMoved } from './hw-signal.js';

/** What this instance appended to one leader replica of a partition, under one leader epoch. */
interface InMemory {
  readonly leaderEpoch: number;
  /** The most recent batches, contiguous, ending at `end`. */
  batches: BatchRecord[];
  bytes: number;
  end: number;
  /** Each idempotent producer's state after its latest batch here. */
  readonly producers: Map<number, Omit<StoredProducerState, 'ver'>>;
  /** Follower log ends this instance wrote (or learnt from a failed condition). */
  readonly followerLeo: Map<number, number>;
  /** The leader head's open transactions at `end`. */
  openTxns: Readonly<Record<string, number>>;
}

/** Batches kept per partition: enough for the appends of a commit in flight and a follower a little behind. */
const KEEP_BATCHES = 256;
const KEEP_BYTES = 4_000_000;
/**
 * With `awaitPredecessor` (a group commit's holder): a follower short of the batches in memory —
 * another instance's commit came just before this one's and is still copying — is read again
 * after this pause, for at most this long, before the commit falls back to replicate.
 */
const PREDECESSOR_WAIT_MS = 200;
const PREDECESSOR_POLL_MS = 10;
/** One copy is one transaction: the head, the batches, the producer states, under DynamoDB's 4 MB. */
const COPY_MAX_BYTES = 3_000_000;

const heads = new Map<string, ReplicaHead>();
const appended = new Map<string, InMemory>();
const keyOf = (brokerId: number, tp: string): string => `${brokerId}/${tp}`;

/** The head this instance last saw on a leader replica (as of its last append or commit). */
export const knownHead = (brokerId: number, tp: string): ReplicaHead | undefined => heads.get(keyOf(brokerId, tp));

/** Forgets a leader replica's head and appends: the next append reads the head, the next commit replicates. */
export function forgetLeader(brokerId: number, tp: string): void {
  heads.delete(keyOf(brokerId, tp));
  appended.delete(keyOf(brokerId, tp));
}

/**
 * Records a successful append: `before` is the head it was conditioned on, `after` the head it
 * left (its log end, epoch cache and lag flag; the rest as `before`).
 */
export function rememberAppend(
  leader: ReplicaStoreRef, tp: string, leaderEpoch: number, before: ReplicaHead, after: ReplicaHead,
  batches: readonly BatchRecord[], producers: readonly Omit<StoredProducerState, 'ver'>[],
): void {
  const k = keyOf(leader.brokerId, tp);
  heads.set(k, after);
  let a = appended.get(k);
  if (!a || a.leaderEpoch !== leaderEpoch || a.end !== before.leo) {
    // Another writer appended in between (or a new epoch): what came before is not in memory.
    a = { leaderEpoch, batches: [], bytes: 0, end: before.leo, producers: new Map(), followerLeo: a?.leaderEpoch === leaderEpoch ? a.followerLeo : new Map(), openTxns: {} };
    appended.set(k, a);
  }
  for (const b of batches) {
    a.batches.push(b);
    a.bytes += b.sizeBytes;
  }
  a.end = after.leo;
  a.openTxns = after.openTxns ?? {};
  for (const st of producers) a.producers.set(st.producerId, st);
  while (a.batches.length > KEEP_BATCHES || (a.bytes > KEEP_BYTES && a.batches.length > 1)) a.bytes -= (a.batches.shift() as BatchRecord).sizeBytes;
}

/** Where the leader's log entered `leaderEpoch`, from its epoch cache. */
function epochStart(head: ReplicaHead, leaderEpoch: number): number | undefined {
  const last = head.epochs[head.epochs.length - 1];
  return last && last[0] === leaderEpoch ? last[1] : undefined;
}

/** A follower head whose log is a prefix of the `leaderEpoch` leader's, and that may be copied onto. */
const copyable = (h: ReplicaHead | undefined, leaderEpoch: number): h is ReplicaHead =>
  h !== undefined && h.role === 'follower' && h.leaderEpoch === leaderEpoch && h.syncEpoch === leaderEpoch && h.snapshotting === undefined;

/**
 * Writes the follower up to `a.end` from memory, in one transaction. Returns false when it cannot
 * (batches no longer in memory, too many for one transaction, the follower elsewhere, its store
 * failing): the caller falls back to `replicate`.
 */
async function copyFromMemory(head: ReplicaHead, a: InMemory, follower: ReplicaStoreRef, tp: string, awaitPredecessor: boolean): Promise<boolean> {
  const b = follower.brokerId;
  // Unknown: a guess — an ISR follower usually holds the high watermark — that a failed condition corrects.
  let from = a.followerLeo.get(b) ?? head.followers[String(b)]?.leo ?? head.hw;
  const waitUntil = awaitPredecessor ? Date.now() + PREDECESSOR_WAIT_MS : 0;
  // Twice at most on a log end learnt from a failed condition; a follower short of what is in
  // memory (another instance's commit just before this one, still copying) is awaited a little.
  for (let attempt = 0; attempt < 2;) {
    // Nothing to write only on a log end this instance wrote or learnt under this epoch: the
    // leader's recorded progress may be left from an earlier leadership (setRole keeps it), above
    // what the follower holds after its truncation.
    if (from >= a.end) return from === a.end && a.followerLeo.get(b) === from;
    const i = a.batches.findIndex((x) => x.baseOffset === from);
    if (i < 0) {
      const start = a.batches[0]?.baseOffset ?? a.end;
      if (from > start || Date.now() >= waitUntil) return false;
      await new Promise((r) => setTimeout(r, PREDECESSOR_POLL_MS));
      const current = await readHead(follower, tp).catch(() => undefined);
      if (!copyable(current, a.leaderEpoch)) return false;
      from = current.leo;
      a.followerLeo.set(b, from);
      continue;
    }
    attempt++;
    const batches = a.batches.slice(i);
    const producers = [...new Set(batches.flatMap((x) => (x.producerId !== undefined ? [x.producerId] : [])))].map((id) => a.producers.get(id));
    const bytes = batches.reduce((n, x) => n + x.sizeBytes, 0);
    if (producers.some((p) => p === undefined) || 1 + batches.length + producers.length > MAX_TRANSACTION_ITEMS || bytes > COPY_MAX_BYTES) return false;
    const start = epochStart(head, a.leaderEpoch);
    if (start === undefined || from < start) return false;
    try {
      await copyBatches(follower, tp, {
        expectLeo: from, leaderEpoch: a.leaderEpoch, batches, hw: Math.min(head.hw, a.end),
        // (a follower at the epoch's start has no entry for it yet; past it, it has: it holds batches of the epoch)
        epochEntries: from === start ? [[a.leaderEpoch, from]] : [],
        leaderProducers: producers as Omit<StoredProducerState, 'ver'>[],
        // (the follower's log is the leader's up to `from`, so its open transactions at `a.end` are the leader's)
        ...(batches.some((x) => x.transactional) || Object.keys(a.openTxns).length > 0 ? { openTxns: a.openTxns } : {}),
        pack: await packsBatchItems(),
      });
      a.followerLeo.set(b, (batches[batches.length - 1] as BatchRecord).lastOffset + 1);
      return true;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) return false;
      const current = headFromItem(err.at(0)?.current);
      if (!copyable(current, a.leaderEpoch)) {
        a.followerLeo.delete(b);
        return false;
      }
      from = current.leo;
      a.followerLeo.set(b, from);
    }
  }
  return false;
}

/** What a fast commit proved: the high watermark and the count it was computed over. */
export interface FastCommit {
  readonly highWatermark: number;
  /** The leader's ISR count (the leader included) the high watermark covers. */
  readonly isr: readonly number[];
}

/**
 * Commits what this instance appended to `leader` under `leaderEpoch`, up to at least `until`, from
 * memory. Returns undefined when it cannot (see the file comment): the caller replicates instead.
 */
export async function commitFromMemory(
  leader: ReplicaStoreRef, tp: string, leaderEpoch: number, until: number, stateIsr: readonly number[], o: { readonly awaitPredecessor?: boolean } = {},
): Promise<FastCommit | undefined> {
  const k = keyOf(leader.brokerId, tp);
  const head = heads.get(k);
  const a = appended.get(k);
  if (!head || !a || head.role !== 'leader' || head.leaderEpoch !== leaderEpoch || a.leaderEpoch !== leaderEpoch || head.leo !== a.end || a.end < until) return undefined;
  // A head written before the leader kept its count has no ISR list to decide on.
  if (!head.isr.includes(leader.brokerId)) return undefined;
  // A member the partition state (as this instance has it cached) no longer has is on its way out
  // of the count: replicate drops it, instead of a copy that waits on a store nobody waits for.
  if (head.isr.some((b) => !stateIsr.includes(b))) return undefined;
  // A member of the state's ISR the count lacks could be elected cleanly: the high watermark must
  // wait for it, and replicate, which counts the state's ISR too, does.
  if (stateIsr.some((b) => b !== leader.brokerId && !head.isr.includes(b) && !head.joining.includes(b))) return undefined;
  // A member on its way out (lib/cluster/isr-count.ts) is replicate's to settle.
  if (head.leaving.length > 0) return undefined;
  const members = [...new Set([...head.isr, ...head.joining])].filter((b) => b !== leader.brokerId);
  const down = new Set((await cachedBrokers()).filter((b) => b.state !== 'alive').map((b) => b.brokerId));
  if (members.some((b) => down.has(b))) return undefined;
  const end = a.end;
  const copied = await Promise.all(members.map(async (b) => copyFromMemory(head, a, await replicaStore(b), tp, o.awaitPredecessor ?? false)));
  if (!copied.every(Boolean)) return undefined;
  const now = Date.now();
  const followers: Record<string, FollowerProgress> = Object.fromEntries(members.map((b) => [String(b), { leo: end, caughtUpAt: now }]));
  const out = await recordCommit(leader, tp, { leaderEpoch, hw: end, isrVersion: head.isrVersion, followers });
  const stored = 'head' in out ? out.head : out.current;
  if (stored && stored.role === 'leader' && stored.leaderEpoch === leaderEpoch) {
    // Keep the freshest view: an append that finished meanwhile may know a later log end.
    const cached = heads.get(k);
    heads.set(k, cached && cached.leo > stored.leo ? { ...cached, hw: stored.hw, followers: stored.followers, isr: stored.isr, joining: stored.joining, leaving: stored.leaving, isrVersion: stored.isrVersion } : stored);
  } else {
    forgetLeader(leader.brokerId, tp);
  }
  if ('head' in out) {
    highWatermarkMoved(tp, end);
    return { highWatermark: end, isr: head.isr };
  }
  // Another commit got further under this epoch (a high watermark moves only over what the ISR holds), or the count changed.
  if (stored && stored.leaderEpoch === leaderEpoch && stored.role === 'leader' && stored.hw >= until) {
    return { highWatermark: stored.hw, isr: stored.isr };
  }
  return undefined;
}
