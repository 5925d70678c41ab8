/**
 * The group commit's plan and answers (lib/log/staged-commit.ts): how a round plans the requests
 * it read from the stage, how a writer's answer is made from its outcomes, and how waiting writers
 * pace their reads.
 */
import { KafkaError } from '../protocol/errors.js';
import type { ReplicaHead } from '../storage/model.js';
import { readHead } from '../storage/replica/head.js';
import type { StagedOutcome } from '../storage/replica/rounds.js';
import type { StagedBatchItem } from '../storage/stage.js';
import { PACK_MAX_PARTS } from '../storage/replica/items.js';
import { BATCH_ITEM_OVERHEAD, CHUNK_MAX_BYTES, PRODUCER_ITEM_BYTES, TRANSACTION_MAX_ITEMS } from './append-chunks.js';
import {
  forkPlan, notEnoughReplicas, planBatch, producerStates, startPlan, type AppendedRange, type AppendTarget, type Plan, type ReadyBatch,
} from './append-plan.js';

/** How long a writer's batch may wait in the stage for an earlier sequence of its producer (in flight at once, staged later). */
export const GAP_GRACE_MS = 2_000;
/** acks=all: how long a writer whose batches another writer committed waits for that writer's fast commit. */
const HW_WAIT_MS = 1_000;
/** A waiting writer reads again after about a commit's time, within these bounds. */
const POLL_MIN_MS = 5;
const POLL_MAX_MS = 1_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * How long this instance's writers recently waited (moving averages, ms): from staging to finding
 * their batches committed, and then (acks=all) for the high watermark. Waits are paced by them, so
 * a writer reads about twice per wait however long the stage is.
 */
export const waited = { commit: 50, hw: 50, transaction: 50 };
export const learn = (k: keyof typeof waited, ms: number): void => {
  waited[k] = 0.8 * waited[k] + 0.2 * ms;
};
/**
 * The pause before a writer's next read: most of the wait it expects the first time, then half of
 * that or of how long it has waited so far, whichever is longer (an overloaded partition is read
 * less often, not more), jittered.
 */
export const pauseFor = (k: keyof typeof waited, first: boolean, waitedSoFar: number): number =>
  Math.min(POLL_MAX_MS, Math.max(POLL_MIN_MS, first ? 0.8 * waited[k] : 0.5 * Math.max(waited[k], waitedSoFar))) * (0.75 + Math.random() / 2);

/** One writer's request as a commit reads it from the stage. */
export interface StagedRequest {
  /** Its stage id. */
  readonly off: string;
  /** acks=all: its writer waits for the high watermark. */
  readonly acksAll?: boolean;
  /** acks=all: the ISR count a commit must have (min.insync.replicas). */
  readonly minIsr?: number;
  readonly batches: readonly ReadyBatch[];
}

/** The ready batches of staged batch items. */
export const readyOf = (batches: readonly StagedBatchItem[]): ReadyBatch[] => batches.map((b) => ({
  ...(b.data ? { bytes: Buffer.from(b.data) } : {}),
  ...(b.s3 ? { s3: b.s3 } : {}),
  sizeBytes: b.sizeBytes, recordCount: b.recordCount, maxTimestamp: b.maxTimestamp,
  ...(b.producerId !== undefined ? {
    producer: {
      producerId: b.producerId, producerEpoch: b.producerEpoch as number, baseSequence: b.baseSequence as number,
      ...(b.transactional ? { transactional: true } : {}), ...(b.control ? { control: b.control } : {}),
    },
  } : {}),
}));

/** Staged batch items of ready batches (what a writer stages). */
export const stagedBatches = (chunk: readonly ReadyBatch[]): StagedBatchItem[] => chunk.map((b) => ({
  ...(b.bytes ? { data: b.bytes } : {}), ...(b.s3 ? { s3: b.s3 } : {}),
  recordCount: b.recordCount, maxTimestamp: b.maxTimestamp, sizeBytes: b.sizeBytes,
  ...(b.producer ? { producerId: b.producer.producerId, producerEpoch: b.producer.producerEpoch, baseSequence: b.producer.baseSequence } : {}),
  ...(b.producer?.transactional ? { transactional: true } : {}), ...(b.producer?.control ? { control: b.producer.control } : {}),
}));

export const toOutcome = (r: AppendedRange | KafkaError): StagedOutcome =>
  (r instanceof KafkaError ? { error: r.kafkaName, message: r.message } : { base: r.baseOffset, last: r.lastOffset });

/** The log end committed outcomes need the high watermark at. */
export const endOf = (outcomes: readonly StagedOutcome[]): number => Math.max(-1, ...outcomes.map((o) => ('last' in o ? o.last : -1))) + 1;

/** A writer's answer from its outcomes (with the high watermark seen to cover them, if any). */
export const answerOf = (outcomes: readonly StagedOutcome[], committed?: AppendedRange['committed']): (AppendedRange | KafkaError)[] => outcomes.map((o) =>
  ('error' in o ? new KafkaError(o.error as ConstructorParameters<typeof KafkaError>[0], o.message) : { baseOffset: o.base, lastOffset: o.last, ...(committed ? { committed } : {}) }));

/** What one commit attempt writes: the plan, each taken request's outcomes, the ISR count it needs. */
export interface Commit {
  readonly plan: Plan;
  readonly marks: { readonly off: string; readonly outcomes: StagedOutcome[] }[];
  readonly minIsr?: number;
  /** It appends batches of an acks=all writer. */
  readonly acksAll: boolean;
}

/** The most requests one round takes (its round item names each). */
const ROUND_MAX_REQUESTS = 500;
/** A round's transaction besides its batches and producer states: the head, the round item, the lease. */
const ROUND_FIXED_ITEMS = 3;
/** How many of a round's batches one item holds: all its inline batches go into the round object back to back, in offset order, and share items (lib/storage/replica/items.ts). */
const itemsFor = (roundBatches: number, packs: boolean): number => (packs ? Math.ceil(roundBatches / PACK_MAX_PARTS) : roundBatches);

/**
 * Plans a commit of the staged requests, in the order given: each request's batches all fit
 * (offsets, duplicates, refusals) or the request stays staged. A request with an out-of-order
 * sequence waits for a later pass (its predecessor may be further on) unless `refuseGap` says it
 * has waited long enough: then it is refused. A request that would take the transaction past what
 * it holds stays staged for a later round. Inline batches are to go into the round object (and,
 * where the cluster's log format `packs`, share items); a batch already in S3 is an item of its own.
 */
export async function planCommit(t: AppendTarget, head: ReplicaHead, staged: readonly StagedRequest[], refuseGap: (off: string) => boolean, packs: boolean): Promise<Commit> {
  let plan = startPlan(head, await producerStates(t, staged.flatMap((r) => r.batches), true));
  const marks: Commit['marks'] = [];
  let minIsr: number | undefined;
  let acksAll = false;
  let items = ROUND_FIXED_ITEMS;
  let roundBatches = 0;
  let bytes = 0;
  let pending = [...staged];
  let shortOfReplicas: KafkaError | undefined;
  for (let progress = true; progress && pending.length > 0;) {
    progress = false;
    const deferred: StagedRequest[] = [];
    for (const item of pending) {
      if (marks.length >= ROUND_MAX_REQUESTS) {
        pending = [];
        break;
      }
      const { batches } = item;
      const countRequired = item.minIsr !== undefined && item.minIsr > 1 && head.isr.length > 0 ? item.minIsr : undefined;
      if (countRequired !== undefined && head.isr.length < countRequired) {
        shortOfReplicas ??= await notEnoughReplicas(t, head, countRequired);
        marks.push({ off: item.off, outcomes: batches.map(() => toOutcome(shortOfReplicas as KafkaError)) });
        progress = true;
        continue;
      }
      const fork = forkPlan(plan);
      const results = batches.map((b) => planBatch(t, fork, b));
      if (results.some((r) => r instanceof KafkaError && r.kafkaName === 'OUT_OF_ORDER_SEQUENCE_NUMBER') && !refuseGap(item.off)) {
        deferred.push(item);
        continue;
      }
      const added = fork.records.slice(plan.records.length);
      const appended = added.length;
      const inRound = added.filter((r) => r.data).length;
      const own = appended - inRound;
      const addedBytes = appended * BATCH_ITEM_OVERHEAD;
      const newProducers = fork.dirty.size - plan.dirty.size;
      if (items + own + newProducers + itemsFor(roundBatches + inRound, packs) > TRANSACTION_MAX_ITEMS || bytes + addedBytes + newProducers * PRODUCER_ITEM_BYTES > CHUNK_MAX_BYTES) continue;
      items += own + newProducers;
      roundBatches += inRound;
      bytes += addedBytes + newProducers * PRODUCER_ITEM_BYTES;
      plan = fork;
      if (appended > 0 && countRequired !== undefined) minIsr = Math.max(minIsr ?? 0, countRequired);
      if (appended > 0 && item.acksAll) acksAll = true;
      marks.push({ off: item.off, outcomes: results.map(toOutcome) });
      progress = true;
    }
    if (pending.length > 0) pending = deferred;
  }
  return { plan, marks, acksAll, ...(minIsr !== undefined ? { minIsr } : {}) };
}

/**
 * acks=all, batches another writer committed: that writer's fast commit moves the high watermark
 * over them. Reads the head until it does, for at most `HW_WAIT_MS`; past that (the writer died
 * after its commit, or its fast commit fell back) the caller replicates.
 */
export async function awaitHighWatermark(t: AppendTarget, outcomes: readonly StagedOutcome[]): Promise<(AppendedRange | KafkaError)[]> {
  const end = endOf(outcomes);
  const until = Date.now() + HW_WAIT_MS;
  // (its fast commit takes about two commits' time: the copies, then the high watermark)
  const began = Date.now();
  for (let n = 0; Date.now() < until; n++) {
    await sleep(pauseFor('hw', n === 0, Date.now() - began));
    const head = await readHead(t.leader, t.tp).catch(() => undefined);
    if (!head || head.leaderEpoch !== t.leaderEpoch || head.role !== 'leader') break;
    if (head.hw >= end && head.isr.length > 0) {
      learn('hw', Date.now() - began);
      return answerOf(outcomes, { highWatermark: head.hw, isr: head.isr });
    }
  }
  return answerOf(outcomes);
}
