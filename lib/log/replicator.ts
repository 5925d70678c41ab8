/**
 * The replicator: what runs when a leader's replica table changes (DynamoDB Streams → Lambda in
 * AWS, the stream poller locally). Each new batch on a leader triggers `replicate` for its
 * partition: followers copy, the ISR is maintained, the high watermark advances, and a follower
 * that needs it gets a full sync.
 *
 * A partition whose replication fails is put in the lag index before the failure is reported, so
 * the controller's sweep repairs it even if the event source gives the batch up (AWS: after its
 * bounded retries, to the on-failure queue; locally: the stream poller's on-failure hand-off,
 * `handOffToSweep`).
 */
import { config } from '../config.js';
import { cachedBrokers, cachedTopic, replicaStore } from '../cluster/metadata.js';
import { readHead } from '../storage/replica/head.js';
import { asKafkaError } from '../errors.js';
import { logger } from '../logger.js';
import { markLagging } from '../storage/coordination/lag-index.js';
import { topicNameById } from '../storage/coordination/topics.js';
import { numericConfig } from '../cluster/topic-configs.js';
import { replicate } from './commit.js';
import { rollPartition } from './roll.js';
import { fullSync } from './full-sync.js';

/** A change to a replica table item, as a stream record names it. */
export interface ReplicaChange {
  readonly table: string;
  readonly tp: string;
  readonly off: number;
  /** Opaque position of the change in its stream (reported back on failure). */
  readonly position: string;
}

/** What the replicator reads of a DynamoDB Streams record (Lambda's event shape, which the local stream poller plays too). */
export interface ReplicaStreamRecord {
  readonly eventName?: string;
  readonly eventSourceARN?: string;
  readonly dynamodb?: {
    readonly Keys?: { readonly [key: string]: { readonly S?: string; readonly N?: string } };
    readonly SequenceNumber?: string;
  };
}

/** `arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>` → `<name>`. */
const tableOf = (arn: string | undefined): string => /:table\/([^/]+)\//.exec(arn ?? '')?.[1] ?? '';

/** The log changes stream records hold (deletes are truncations' and retention's echoes). */
export function changesOf(records: readonly ReplicaStreamRecord[]): ReplicaChange[] {
  return records.flatMap((r) => {
    const tp = r.dynamodb?.Keys?.tp?.S;
    const off = r.dynamodb?.Keys?.off?.N;
    const position = r.dynamodb?.SequenceNumber;
    return tp && off !== undefined && position && r.eventName !== 'REMOVE'
      ? [{ table: tableOf(r.eventSourceARN), tp, off: Number(off), position }] : [];
  });
}

const topicNames = new Map<string, string | null>();

async function topicName(topicId: string): Promise<string | undefined> {
  if (!topicNames.has(topicId)) topicNames.set(topicId, (await topicNameById(topicId)) ?? null);
  return topicNames.get(topicId) ?? undefined;
}

/** How long one replication of a partition may take inside one invocation. */
const REPLICATE_BUDGET_MS = 20_000;

/**
 * Replicates every partition that got a new batch on some table. Returns the positions of the
 * first change of each partition that failed (to be retried, as Lambda's partial batch response).
 * `endBy`: when the invocation ends (a full sync goes no further; nothing runs after it returns).
 */
export async function replicateChanges(changes: readonly ReplicaChange[], endBy?: number): Promise<string[]> {
  const tables = new Map((await cachedBrokers()).map((b) => [b.replicaTable, b.brokerId]));
  const firstByTp = new Map<string, ReplicaChange>();
  const lastOffset = new Map<string, number>();
  for (const c of changes) {
    // Heads, producer states and the store's incarnation are not log data.
    if (c.off < 0 || !tables.has(c.table) || c.tp.split('#').length !== 2) continue;
    if (!firstByTp.has(c.tp)) firstByTp.set(c.tp, c);
    lastOffset.set(c.tp, Math.max(lastOffset.get(c.tp) ?? -1, c.off));
  }
  const failed: string[] = [];
  await Promise.all([...firstByTp.values()].map(async (c) => {
    const [topicId, p] = c.tp.split('#') as [string, string];
    const topic = await topicName(topicId);
    if (!topic) return; // deleted meanwhile
    // Only the leader's own changes drive replication; a follower's copy writes are echoes.
    const view = (await cachedTopic(topic))?.partitions[Number(p)];
    const leader = view?.leader;
    if (leader !== undefined && leader !== tables.get(c.table)) return;
    try {
      // An acks=all producer usually replicated it already: one read tells. (acks=all copies to
      // the ISR only: a follower outside it is still behind, and this run brings it up.)
      const head = leader === undefined ? undefined : await readHead(await replicaStore(leader), c.tp);
      const last = lastOffset.get(c.tp) ?? -1;
      const deadline = Date.now() + REPLICATE_BUDGET_MS;
      if (!(head && head.role === 'leader' && head.hw > last && view?.replicas.every((b) => b === leader || (head.followers[String(b)]?.leo ?? -1) > last))) {
        await replicate(topic, topicId, Number(p), { deadline, shrinkOnFailure: false, lagTimeMaxMs: config().replicaLagTimeMaxMs, fullSync, ...(endBy === undefined ? {} : { syncDeadline: endBy }) });
      }
      // The append that took the tail over segment.bytes rolls it (segment.ms is the sweep's).
      const configs = (await cachedTopic(topic))?.topic.configs ?? {};
      if (head && head.role === 'leader' && (head.tailBytes ?? 0) >= numericConfig(configs, 'segment.bytes')) {
        await rollPartition(topic, Number(p), { deadline }).catch((err: unknown) => {
          logger.warn({ event: 'roll-failed', tp: c.tp, err: (err as Error).message }, 'could not roll a partition (the sweep retries)');
        });
      }
    } catch (err) {
      const e = asKafkaError(err);
      if (e.kafkaName === 'NOT_LEADER_OR_FOLLOWER' || e.kafkaName === 'UNKNOWN_TOPIC_OR_PARTITION') return;
      // The sweep covers it from here on, whatever becomes of the retries (best effort: the full pass covers a failed mark).
      const marked = await markLagging(topic, topicId, Number(p)).then(() => true, () => false);
      logger.warn({ event: 'replication-failed', tp: c.tp, kafkaError: e.kafkaName, message: e.message, marked }, 'replication failed');
      failed.push(c.position);
    }
  }));
  return failed;
}

/**
 * The local event source's on-failure destination: puts every partition a given-up batch names in
 * the lag index, so the sweep re-drives it. Throws when a mark cannot be written (the batch is then
 * not given up: the poller retries it).
 */
export async function handOffToSweep(changes: readonly ReplicaChange[]): Promise<void> {
  const tps = new Set(changes.filter((c) => c.off >= 0 && c.tp.split('#').length === 2).map((c) => c.tp));
  for (const tp of tps) {
    const [topicId, p] = tp.split('#') as [string, string];
    const topic = await topicName(topicId);
    if (topic) await markLagging(topic, topicId, Number(p));
  }
  logger.error({ event: 'replication-handed-to-sweep', partitions: [...tps] }, 'stream batch given up; its partitions are left to the sweep');
}
