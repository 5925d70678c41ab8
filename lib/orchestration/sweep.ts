/**
 * The replication sweep (docs/architecture.md, "Replication": nothing waits for an event that may
 * never come): re-drives every partition whose followers lag its leader, so replication converges
 * with no new writes whatever dropped the event that should have driven it (a stream batch given up
 * on, a Lambda that timed out, a stream record past its 24 h retention).
 *
 * Each pass reads the lag index (one Query: lib/log/lag-index.ts says who writes it) and runs
 * `replicate` for each partition it names; a partition caught up and idle leaves the index. Every
 * `fullPassMs` a full pass also reads every partition's leader head (one batched read per leader
 * store) and re-drives any that lags without a mark — the index is kept by the data path without
 * transactions, so a mark can be lost to a race or a store failure; the full pass bounds that.
 * The full pass marks each such partition before it runs it, so one it cannot run (out of time, its
 * run failed) is the next ordinary pass's, not the next full pass's. Idle partitions cost nothing
 * between full passes. The full pass also runs log maintenance (maintenance.ts: rolls by
 * `segment.ms`, retention, compaction) on every partition whose head calls for it, and ends the
 * hanging transactions of every partition whose head has one open (hanging-transactions.ts).
 *
 * A mark is cleared only once its partition is idle: the mark at least `idleClearMs` old and the
 * leader's log end offset unchanged for `idleClearMs` across visits (the first visit never clears).
 * A busy acks=all partition is caught up between nearly every two requests; clearing it then would
 * cost its next append a failed transaction and a new mark every tick, instead of one mark per
 * idle→active transition.
 *
 * `replicate` judges `replica.lag.time.max.ms` by the clock, so a sweep run also shrinks a
 * follower that has not caught up within it (its store down, say) and lets the high watermark
 * move on over the rest. A mark whose run made no progress is visited again after a doubling
 * wait (up to `backoffMaxMs`), so a follower that stays down costs a run every few seconds, not
 * every tick.
 *
 * Any number of sweeps may run at once (two controllers, a deposed one still running): every
 * write `replicate` makes is conditional, and a clear of the index is conditioned on the mark it
 * read (`markedAt`), so a lost race writes nothing and deletes no newer mark.
 */
import { config } from '../config.js';
import { cachedTopic, replicaStore } from '../cluster/metadata.js';
import { asKafkaError } from '../errors.js';
import { numericConfig } from '../cluster/topic-configs.js';
import { logger } from '../logger.js';
import { emitMetric } from '../metrics.js';
import { replicate, type ReplicateResult } from '../log/commit.js';
import { fullSync } from '../log/full-sync.js';
import { closedMarker } from '../log/producer-state.js';
import { tailOverdue } from '../log/roll.js';
import { claimGarbagePass, readGarbageClock } from '../storage/coordination/garbage-clock.js';
import { clearLagging, listLagging, markLagging, type LagMark } from '../storage/coordination/lag-index.js';
import { listTopicNames } from '../storage/coordination/topics.js';
import { topicPartitionKey, type ReplicaHead } from '../storage/model.js';
import { clearLagFlag, readHead, readHeads } from '../storage/replica/head.js';
import { collectGarbageLogged, maintainPartition, maintenanceDue } from './maintenance.js';
import { endHangingTransactions } from './hanging-transactions.js';
import { expireTransactions } from './transactions.js';

export interface SweepOptions {
  /** Period of the full pass over every partition. @default 300000 (5 min) */
  readonly fullPassMs?: number;
  /** Longest wait before a mark whose last run made no progress is visited again. @default 5000 */
  readonly backoffMaxMs?: number;
  /** Time budget of one partition's `replicate` run. @default 10000 */
  readonly runBudgetMs?: number;
  /** Partitions re-driven at once. @default 8 */
  readonly concurrency?: number;
  /** Kafka's replica.lag.time.max.ms. @default config().replicaLagTimeMaxMs */
  readonly lagTimeMaxMs?: number;
  /** How long a caught-up partition's mark and log end offset must stay unchanged before its mark is cleared. @default 30000 */
  readonly idleClearMs?: number;
  /** Period of the garbage pass over the bucket (lib/log/garbage.ts). @default 3600000 (1 h) */
  readonly garbageEveryMs?: number;
}

export interface SweepReport {
  /** The pass included the full pass over every partition. */
  readonly full: boolean;
  /** Marks in the index when the pass began. */
  readonly marked: number;
  /** Partitions re-driven (marked, or found lagging by the full pass). */
  readonly driven: number;
  /** Re-driven partitions that no longer lag. */
  readonly converged: number;
  /** Marks this pass removed (the partition's own run may have removed others). */
  readonly cleared: number;
  /** Lagging partitions the full pass found without a mark. */
  readonly unmarked: number;
  /** Runs that failed (logged; retried on the next pass). */
  readonly failed: number;
  /** Marks skipped this pass because their last run made no progress. */
  readonly backedOff: number;
  /** Partitions the full pass ran log maintenance on (lib/orchestration/maintenance.ts). */
  readonly maintained: number;
  /** Hanging transactions the full pass ended (a marker written: lib/orchestration/hanging-transactions.ts). */
  readonly hangingEnded: number;
  /** The pass ran the garbage pass. */
  readonly garbage: boolean;
}

interface PartitionRef { readonly topic: string; readonly topicId: string; readonly partition: number }

interface Backoff {
  /** The mark the wait is for: a newer mark (an append, a move started since) is visited at once. */
  readonly markedAt: number | undefined;
  readonly waitMs: number;
  readonly nextAt: number;
  readonly hw: number;
}

/** What a visit of a caught-up mark saw: the leader's log end offset, and since when (the pass's clock). */
interface Seen {
  readonly markedAt: number;
  readonly leo: number;
  readonly since: number;
}

/** Does the leader's own head say a follower (or the high watermark) is behind its log end? */
export function headLags(head: ReplicaHead, followers: readonly number[]): boolean {
  return head.hw < head.leo || followers.some((b) => (head.followers[String(b)]?.leo ?? 0) < head.leo);
}

export class ReplicationSweep {
  readonly o: Required<SweepOptions>;
  private lastFullAt: number | undefined;
  /** The garbage pass's clock as this process last read or set it (lib/storage/coordination/garbage-clock.ts). */
  private garbageRunAt: number | undefined;
  private readonly backoff = new Map<string, Backoff>();
  private readonly seen = new Map<string, Seen>();

  /** Test hooks: `afterFlagCleared` runs between the two steps of a clear (an interleaving test's pause). */
  hooks: { afterFlagCleared?: (mark: LagMark) => Promise<void> } = {};

  constructor(o: SweepOptions = {}) {
    this.o = {
      fullPassMs: o.fullPassMs ?? 300_000,
      backoffMaxMs: o.backoffMaxMs ?? 5000,
      runBudgetMs: o.runBudgetMs ?? 10_000,
      concurrency: o.concurrency ?? 8,
      lagTimeMaxMs: o.lagTimeMaxMs ?? config().replicaLagTimeMaxMs,
      idleClearMs: o.idleClearMs ?? 30_000,
      garbageEveryMs: o.garbageEveryMs ?? 3_600_000,
    };
  }

  /**
   * One pass: every mark (unless backed off), and every partition when the full pass is due. No
   * run starts after `deadline`, and none is given time beyond it (a Lambda's remaining time).
   */
  async sweep(now = Date.now(), deadline = Number.POSITIVE_INFINITY): Promise<SweepReport> {
    const marks = await listLagging();
    const full = this.lastFullAt === undefined || now - this.lastFullAt >= this.o.fullPassMs;
    const due = marks.filter((m) => {
      const b = this.backoff.get(key(m));
      return !b || b.nextAt <= now || b.markedAt !== m.markedAt;
    });
    const work = new Map<string, { mark?: LagMark; topic: string; topicId: string; partition: number }>(due.map((m) => [key(m), { mark: m, ...m }]));
    let unmarked = 0;
    let maintain: PartitionRef[] = [];
    let withOpenTxns: PartitionRef[] = [];
    if (full) {
      this.lastFullAt = now;
      const marked = new Set(marks.map(key));
      const found = await this.fullPass(now);
      maintain = found.maintain;
      withOpenTxns = found.withOpenTxns;
      for (const p of found.lagging) {
        const k = key(p);
        if (marked.has(k) || work.has(k)) continue;
        unmarked++;
        // Marked before it runs: if this pass cannot run it (out of time) or its run fails, the
        // next ordinary pass visits it, not the next full pass. A mark that cannot be written
        // leaves it to the run (which marks it if it stays behind) or to the next full pass.
        const mark = await markLagging(p.topic, p.topicId, p.partition).catch((err: unknown) => {
          logger.warn({ event: 'sweep-mark-failed', topic: p.topic, partition: p.partition, err: (err as Error).message }, 'sweep could not mark a lagging partition');
          return undefined;
        });
        work.set(k, mark ? { ...p, mark } : p);
      }
    }
    const live = new Set(marks.map(key));
    for (const k of this.backoff.keys()) if (!live.has(k)) this.backoff.delete(k);
    for (const k of this.seen.keys()) if (!live.has(k)) this.seen.delete(k);

    let converged = 0;
    let cleared = 0;
    let failed = 0;
    await pool([...work.values()], this.o.concurrency, async (p) => {
      const k = key(p);
      if (Date.now() >= deadline) return;
      let result: ReplicateResult | undefined;
      try {
        result = await replicate(p.topic, p.topicId, p.partition, {
          deadline: Math.min(Date.now() + this.o.runBudgetMs, deadline), shrinkOnFailure: false, lagTimeMaxMs: this.o.lagTimeMaxMs, fullSync,
          ...(Number.isFinite(deadline) ? { syncDeadline: deadline } : {}),
        });
      } catch (err) {
        const e = asKafkaError(err);
        // A deleted topic's mark goes; a partition between leaders is the controller's (the next pass retries).
        if (e.kafkaName === 'UNKNOWN_TOPIC_OR_PARTITION' && p.mark) {
          if (await clearLagging(p.topicId, p.partition, p.mark.markedAt)) cleared++;
          return;
        }
        failed++;
        logger.warn({ event: 'sweep-replicate-failed', topic: p.topic, partition: p.partition, kafkaError: e.kafkaName, message: e.message }, 'sweep could not re-drive a partition');
        this.backOff(k, -1, Date.now(), p.mark?.markedAt);
        return;
      }
      if (!result.lagging) {
        converged++;
        this.backoff.delete(k);
        // (without a mark — the full pass could not write one — only the head's flag goes, so the next append marks again)
        if (await this.clear(p, result, now) && p.mark) cleared++;
        return;
      }
      this.seen.delete(k); // behind: not idle
      if (!p.mark) await markLagging(p.topic, p.topicId, p.partition);
      this.backOff(k, result.highWatermark, Date.now(), p.mark?.markedAt);
    });
    // Log maintenance (rolls, retention, compaction) after replication, in what time is left.
    let maintained = 0;
    await pool(maintain, this.o.concurrency, async (p) => {
      if (Date.now() >= deadline) return;
      await maintainPartition(p.topic, p.partition, { deadline: Math.min(Date.now() + this.o.runBudgetMs, deadline) });
      maintained++;
    });
    // Transactions past their timeout are aborted, prepared ones whose finisher died finished.
    if (Date.now() < deadline) {
      const txns = await expireTransactions().catch((err: unknown) => {
        logger.warn({ event: 'transaction-pass-failed', err: (err as Error).message }, 'transaction pass failed');
        return undefined;
      });
      if (txns && txns.aborted + txns.finished + txns.expired > 0) logger.info({ event: 'transaction-pass', ...txns }, 'transaction pass');
    }
    const hangingEnded = withOpenTxns.length > 0 && Date.now() < deadline ? await this.endHanging(withOpenTxns, deadline) : 0;
    const garbage = Date.now() < deadline && await this.garbageDue(now);
    if (garbage) await collectGarbageLogged(deadline);
    const report: SweepReport = { full, marked: marks.length, driven: work.size, converged, cleared, unmarked, failed, backedOff: marks.length - due.length, maintained, hangingEnded, garbage };
    if (work.size > 0) logger.info({ event: 'replication-sweep', ...report }, 'replication sweep');
    return report;
  }

  /**
   * Ends the hanging transactions among the partitions whose leader's head has one open (a marker
   * an unclean election cut: nothing else would write it again). Returns how many markers it wrote.
   */
  private async endHanging(parts: readonly PartitionRef[], deadline: number): Promise<number> {
    const { ended, errors } = await endHangingTransactions(parts, { deadlineMs: Math.max(1000, Math.min(config().requestTimeoutMs, deadline - Date.now())) })
      .catch((err: unknown) => ({ ended: [], errors: [err] }));
    for (const err of errors) logger.warn({ event: 'hanging-transactions-failed', err: (err as Error).message }, 'could not end hanging transactions');
    for (const e of ended) logger.warn({ event: 'hanging-transaction-ended', ...e }, 'a hanging transaction was ended with the marker its coordinator decided');
    return ended.length;
  }

  /**
   * Whether this pass runs the garbage pass: once a period by the clock in the coordination table,
   * which this process reads once and then follows (no container need live a period). A new
   * cluster's clock starts at its first pass, so the first garbage pass is a period later; of two
   * controllers that find it due, the one whose claim lands runs it.
   */
  private async garbageDue(now: number): Promise<boolean> {
    if (this.garbageRunAt === undefined) {
      this.garbageRunAt = await readGarbageClock();
      if (this.garbageRunAt === undefined) {
        this.garbageRunAt = (await claimGarbagePass(undefined, now)) ? now : await readGarbageClock();
        return false;
      }
    }
    if (now - (this.garbageRunAt ?? now) < this.o.garbageEveryMs) return false;
    if (await claimGarbagePass(this.garbageRunAt, now)) {
      this.garbageRunAt = now;
      return true;
    }
    this.garbageRunAt = await readGarbageClock();
    return false;
  }

  /**
   * Takes a caught-up partition out of the index (`p.mark`, the mark this pass read, if any) once
   * it is idle — the mark at least `idleClearMs` old, and an earlier visit (under the same mark)
   * saw the same log end offset at least `idleClearMs` ago — race-safe against appends (lag-index.ts):
   *   1. the leader's head, if fully caught up (hw = leo, every follower it records at leo), loses
   *      its lag flag — on condition that leo and hw are still those (no append since);
   *   2. the mark is deleted — on condition that it is still the one this pass read.
   * An append between 1 and 2 finds the head unflagged and writes a new mark, which 2 leaves.
   * Returns whether the mark went; if not, the next pass visits it again.
   */
  private async clear(p: { topicId: string; partition: number; mark?: LagMark }, result: ReplicateResult, now: number): Promise<boolean> {
    if (result.leader === undefined) return false;
    const store = await replicaStore(result.leader);
    const tp = topicPartitionKey(p.topicId, p.partition);
    const head = await readHead(store, tp);
    if (!head || head.role !== 'leader' || head.leaderEpoch !== result.leaderEpoch) return false;
    const followers = [...new Set([...Object.keys(head.followers).map(Number), ...head.isr])].filter((b) => b !== result.leader);
    if (headLags(head, followers)) return false;
    if (p.mark) {
      const k = key(p);
      const before = this.seen.get(k);
      const same = before !== undefined && before.markedAt === p.mark.markedAt && before.leo === head.leo;
      if (!same) this.seen.set(k, { markedAt: p.mark.markedAt, leo: head.leo, since: now });
      if (!same || now - before.since < this.o.idleClearMs || now - p.mark.markedAt < this.o.idleClearMs) return false;
      this.seen.delete(k);
    }
    if (!(await clearLagFlag(store, tp, head.leaderEpoch, head.leo))) return false;
    if (!p.mark) return true;
    await this.hooks.afterFlagCleared?.(p.mark);
    return clearLagging(p.topicId, p.partition, p.mark.markedAt);
  }

  /** A run that left the partition lagging: visit again at once if it made progress, else after a doubling wait. */
  private backOff(k: string, hw: number, now: number, markedAt: number | undefined): void {
    const before = this.backoff.get(k);
    const progressed = before === undefined || hw > before.hw || before.markedAt !== markedAt;
    const waitMs = progressed ? 0 : Math.min(this.o.backoffMaxMs, Math.max(250, before.waitMs * 2));
    this.backoff.set(k, { markedAt, waitMs, nextAt: now + waitMs, hw: Math.max(hw, before?.hw ?? -1) });
  }

  /**
   * The full pass: every partition whose leader's head says it lags, and every one whose head
   * calls for log maintenance (one batched read per leader store).
   */
  private async fullPass(now: number): Promise<{ lagging: PartitionRef[]; maintain: PartitionRef[]; withOpenTxns: PartitionRef[] }> {
    const byLeader = new Map<number, (PartitionRef & { followers: number[]; configs: Readonly<Record<string, string>> })[]>();
    for (const name of await listTopicNames()) {
      const t = await cachedTopic(name);
      for (const p of t?.partitions ?? []) {
        if (p.leader < 0 || !t) continue;
        const list = byLeader.get(p.leader) ?? [];
        list.push({ topic: name, topicId: t.topic.topicId, partition: p.partition, followers: p.replicas.filter((r) => r !== p.leader), configs: t.topic.configs });
        byLeader.set(p.leader, list);
      }
    }
    const lagging: PartitionRef[] = [];
    const maintain: PartitionRef[] = [];
    const withOpenTxns: PartitionRef[] = [];
    const overdue: (PartitionRef & { tailSince?: number })[] = [];
    await Promise.all([...byLeader].map(async ([leader, parts]) => {
      try {
        const heads = await readHeads(await replicaStore(leader), parts.map((p) => topicPartitionKey(p.topicId, p.partition)));
        for (const p of parts) {
          const head = heads.get(topicPartitionKey(p.topicId, p.partition));
          if (!head || head.role !== 'leader') continue;
          const ref = { topic: p.topic, topicId: p.topicId, partition: p.partition };
          if (headLags(head, p.followers)) lagging.push(ref);
          if (maintenanceDue(head, p.configs, now)) maintain.push(ref);
          if (Object.keys(head.openTxns ?? {}).some((k) => closedMarker(k) === undefined)) withOpenTxns.push(ref);
          if (tailOverdue(head, numericConfig(p.configs, 'segment.ms'), now)) overdue.push({ ...ref, tailSince: head.tailSince });
        }
      } catch (err) {
        // A leader whose store is down is the controller's to replace; its partitions come back on a later pass.
        logger.debug({ event: 'sweep-leader-unreadable', broker: leader, err: (err as Error).message }, 'sweep could not read a leader');
      }
    }));
    // The watchdog of the batches' expiry (DynamoDB TTL, BATCH_TTL_MS after the append): an
    // unrolled tail that old would lose them. The maintenance it is due for runs in this pass.
    emitMetric('tailOverdue', overdue.length);
    for (const p of overdue) {
      logger.error({ event: 'tail-overdue', topic: p.topic, partition: p.partition, tailSince: p.tailSince }, 'a table tail is past its roll by more than an hour: its batches expire three days after their append');
    }
    return { lagging, maintain, withOpenTxns };
  }
}

const key = (p: { topicId: string; partition: number }) => `${p.topicId}#${p.partition}`;

/** Runs `f` over `items`, at most `limit` at a time. */
async function pool<T>(items: readonly T[], limit: number, f: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await f(items[next++] as T);
  }));
}
