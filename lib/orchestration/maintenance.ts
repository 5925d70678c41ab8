/**
 * Log maintenance (docs/architecture.md, "Tiers"): rolling a partition's table tail into S3
 * segments, retention, compaction. No server runs it; it is driven from:
 * - the stream replicator, when a leader's table tail passes `segment.bytes` (lib/log/replicator.ts);
 * - the sweep's full pass (lib/orchestration/sweep.ts, every 5 minutes by default, and in AWS on
 *   the schedule): every partition whose leader head says a roll is due (`segment.bytes` or
 *   `segment.ms`) or which holds segments (retention, compaction);
 * - the sweep (on the lease holder): the garbage pass, once an hour (`TRIBUTARY_GARBAGE_MS`).
 * Every step is idempotent and safe to run concurrently (conditional writes in the registry and
 * the replica heads), so overlapping triggers cost a little, never correctness.
 */
import { cachedTopic } from '../cluster/metadata.js';
import { numericConfig } from '../cluster/topic-configs.js';
import { logger } from '../logger.js';
import { compactPartition, isCompacted } from '../log/compaction.js';
import { collectGarbage, type GarbageResult } from '../log/garbage.js';
import { applyRetention } from '../log/retention.js';
import { rollDue, rollPartition, type RollResult } from '../log/roll.js';
import type { ReplicaHead } from '../storage/model.js';
import { tailStartOf } from '../storage/replica/head.js';

export interface MaintenanceReport {
  readonly rolled: number;
  /** Segments retention (or an earlier DeleteRecords) took out of the log. */
  readonly expired: number;
  /** Segments a compaction replaced. */
  readonly compacted: number;
}

/** Whether a partition's leader head calls for a maintenance run: a roll is due, or it holds segments. */
export function maintenanceDue(head: ReplicaHead, configs: Readonly<Record<string, string>>, now: number): boolean {
  return rollDue(head, numericConfig(configs, 'segment.bytes'), numericConfig(configs, 'segment.ms'), now)
    || tailStartOf(head) > head.logStartOffset;
}

/**
 * One partition's maintenance: roll what is due, apply retention, then compact (compacted
 * topics). Errors are logged, not thrown (the next pass retries).
 */
export async function maintainPartition(topic: string, partition: number, o: { readonly deadline: number; readonly now?: () => number }): Promise<MaintenanceReport> {
  const now = o.now ?? Date.now;
  let roll: RollResult = { rolled: 0, trimmed: 0 };
  let compacted = 0;
  try {
    roll = await rollPartition(topic, partition, { deadline: o.deadline, now });
  } catch (err) {
    logger.warn({ event: 'roll-failed', topic, partition, err: (err as Error).message }, 'could not roll a partition');
  }
  let expired = 0;
  try {
    // (whatever the policy: segments below a DeleteRecords' log start go too)
    if (now() < o.deadline) expired = (await applyRetention(topic, partition, { now: now() })).tombstoned.length;
  } catch (err) {
    logger.warn({ event: 'retention-failed', topic, partition, err: (err as Error).message }, 'could not apply retention to a partition');
  }
  try {
    const configs = (await cachedTopic(topic))?.topic.configs;
    if (configs && isCompacted(configs) && now() < o.deadline) compacted = (await compactPartition(topic, partition, { now: now(), deadline: o.deadline })).segmentsReplaced;
  } catch (err) {
    logger.warn({ event: 'compaction-failed', topic, partition, err: (err as Error).message }, 'could not compact a partition');
  }
  return { rolled: roll.rolled, expired, compacted };
}

/** The garbage pass (lib/log/garbage.ts), logged; its errors are logged, not thrown. */
export async function collectGarbageLogged(deadline: number): Promise<GarbageResult | undefined> {
  try {
    const r = await collectGarbage({ deadline });
    logger.info({ event: 'garbage-pass', deleted: r.deletedObjects.length, removedItems: r.removedItems, abandonedPending: r.abandonedPending, failed: r.failedPartitions, skipped: r.skippedPartitions }, 'garbage pass');
    return r;
  } catch (err) {
    logger.warn({ event: 'garbage-pass-failed', err: (err as Error).message }, 'garbage pass failed');
    return undefined;
  }
}
