/**
 * The transaction coordinator (Kafka's KIP-98, with KIP-890's epoch bump at the end of every
 * transaction; docs/architecture.md "Transactions", the protocol spec/transactions.qnt checks).
 * Its state is one item per transactional id (lib/storage/coordination/transactions.ts), and every
 * step is a compare-and-set on it, so any instance may run any step and a step cut short by a
 * timeout or a crash is finished by the next one:
 *
 *   init ──► Empty ──add partition / offsets──► Ongoing ──end──► PrepareCommit | PrepareAbort
 *                                                         (epoch + 1; an abort writes its mark)
 *        ──finish: a marker on every partition (acks=all), the offsets (commit only)──►
 *        CompleteCommit | CompleteAbort ──add──► Ongoing ...
 *
 * - `initTransactions` bumps the epoch: the previous producer of the id is fenced (PRODUCER_FENCED
 *   on its next call) and what it left open is aborted, what it left prepared is finished.
 * - A produce of a transactional producer adds its partitions first (`addPartitions`, KIP-890's
 *   server-side add): the write is refused unless the transaction is open under the producer's
 *   epoch. The marker carries the bumped epoch, so a produce retried after its transaction ended
 *   is refused by the partition (INVALID_PRODUCER_EPOCH) and never joins the next transaction.
 * - Offsets sent in a transaction wait in its item, and the group gets a pending item in the same
 *   write: a reader asking for stable offsets (`require_stable`) is answered UNSTABLE_OFFSET_COMMIT
 *   until the transaction is complete (lib/groups/coordinator.ts `committed`).
 * - An aborted transaction's mark (producer id, epoch) is written with PrepareAbort, before any
 *   marker: a read_committed reader (lib/log/read.ts) drops the batches of a marked transaction,
 *   and a transaction below the last stable offset without a mark committed.
 * - `expireTransactions` (the controller's pass) aborts transactions open past their timeout,
 *   finishes prepared ones whose finisher died, and forgets ids idle past
 *   `transactional.id.expiration.ms`.
 */
import { KafkaError } from '../protocol/errors.js';
import { isKafkaError } from '../errors.js';
import { config } from '../config.js';
import { logger } from '../logger.js';
import { initProducer } from '../cluster/producers.js';
import { appendMarker, executePlan, planProduce, type ProduceOutcome, type ProduceRecord } from '../log/produce.js';
import { checkMember, commit as commitOffsets } from '../groups/coordinator.js';
import {
  clearPendingOffsets, createTxn, deleteTxn, listTxns, readTxn, replaceTxn, type TxnGroupOffsets, type TxnPartition, type TxnRecord, type TxnState,
} from '../storage/coordination/transactions.js';

export type { TxnPartition, TxnRecord, TxnState } from '../storage/coordination/transactions.js';

/** Kafka's defaults: transaction.timeout.ms, transaction.max.timeout.ms, transactional.id.expiration.ms. */
export const DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000;
export const MAX_TRANSACTION_TIMEOUT_MS = 900_000;
export const TRANSACTIONAL_ID_EXPIRATION_MS = 7 * 24 * 3_600_000;
/**
 * A prepared transaction untouched this long has lost its finisher: the controller's pass finishes
 * it. Longer than a finisher's markers may take (each an acks=all append within the request
 * timeout), so the pass does not race a finisher that is still at work.
 */
const stuckPrepareMs = (): number => config().requestTimeoutMs + 5_000;
/**
 * Epochs are int16 and an end writes its markers one epoch up: a producer runs transactions up to
 * this epoch; an init past it, or the end of a transaction at it, moves the id to a new producer id
 * at epoch 0 (as Kafka does, KIP-890).
 */
const MAX_EPOCH = 32_766;
/** Compare-and-set attempts of one step before CONCURRENT_TRANSACTIONS. */
const MAX_ATTEMPTS = 20;

/** A transactional producer as it names itself on every call. */
export interface TxnProducer {
  readonly transactionalId: string;
  readonly producerId: number;
  readonly producerEpoch: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const backoff = (attempt: number) => sleep(Math.min(200, 5 * 2 ** attempt) * Math.random());

/** Kafka's transactional id rules: a non-empty string (the HTTP layer bounds its length). */
function validateId(id: string): void {
  if (id.length === 0 || id.length > 249) throw new KafkaError('INVALID_REQUEST', 'A transactional id is 1 to 249 characters.');
}

const isPrepared = (s: TxnState): boolean => s === 'PrepareCommit' || s === 'PrepareAbort';
const isClosed = (s: TxnState): boolean => s === 'Empty' || s === 'CompleteCommit' || s === 'CompleteAbort';
const fields = (r: TxnRecord): Omit<TxnRecord, 'ver'> => {
  const { ver: _ver, ...rest } = r;
  return rest;
};

async function requireTxn(id: string): Promise<TxnRecord> {
  const r = await readTxn(id);
  if (!r) throw new KafkaError('TRANSACTIONAL_ID_NOT_FOUND', `TRANSACTIONAL_ID_NOT_FOUND: transactional id ${id} is not known (a producer creates it with init; an id idle past transactional.id.expiration.ms is forgotten).`);
  return r;
}

/** The check every call of a producer passes: its id and epoch are the current ones. */
function checkProducer(r: TxnRecord, p: TxnProducer): void {
  if (r.producerId !== p.producerId) {
    throw new KafkaError('INVALID_PRODUCER_ID_MAPPING', `INVALID_PRODUCER_ID_MAPPING: transactional id ${p.transactionalId} has producer id ${r.producerId}, not ${p.producerId}.`);
  }
  if (p.producerEpoch < r.producerEpoch) {
    throw new KafkaError('PRODUCER_FENCED', `PRODUCER_FENCED: transactional id ${p.transactionalId} is at epoch ${r.producerEpoch}; this producer's epoch ${p.producerEpoch} is fenced.`);
  }
  if (p.producerEpoch > r.producerEpoch) {
    throw new KafkaError('INVALID_PRODUCER_EPOCH', `INVALID_PRODUCER_EPOCH: transactional id ${p.transactionalId} is at epoch ${r.producerEpoch}, not ${p.producerEpoch}.`);
  }
}

/**
 * Kafka's InitProducerId for a transactional id: a producer id and a new epoch that fences every
 * earlier producer of the id; what an earlier producer left open is aborted first, what it left
 * prepared is finished. Errors: INVALID_TRANSACTION_TIMEOUT; CONCURRENT_TRANSACTIONS when other
 * calls keep winning the id's item (retriable).
 */
export async function initTransactions(transactionalId: string, timeoutMs = DEFAULT_TRANSACTION_TIMEOUT_MS): Promise<{ producerId: number; producerEpoch: number }> {
  validateId(transactionalId);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_TRANSACTION_TIMEOUT_MS) {
    throw new KafkaError('INVALID_TRANSACTION_TIMEOUT', `INVALID_TRANSACTION_TIMEOUT: transaction.timeout.ms must be 1 to ${MAX_TRANSACTION_TIMEOUT_MS}, not ${timeoutMs}.`);
  }
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const r = await readTxn(transactionalId);
    const now = Date.now();
    if (!r) {
      const { producerId } = await initProducer();
      if (await createTxn({ transactionalId, producerId, producerEpoch: 0, state: 'Empty', partitions: [], groups: {}, timeoutMs, updatedAt: now })) return { producerId, producerEpoch: 0 };
      continue;
    }
    if (r.state === 'Ongoing') {
      await abortOpen(r);
      continue;
    }
    if (isPrepared(r.state)) {
      await finish(r);
      continue;
    }
    const fresh = r.producerEpoch >= MAX_EPOCH ? await initProducer() : undefined;
    const next = { producerId: fresh?.producerId ?? r.producerId, producerEpoch: fresh ? 0 : r.producerEpoch + 1 };
    const { lastEpoch: _last, lastProducerId: _lastId, startedAt: _started, ...kept } = fields(r);
    if (await replaceTxn({ ...kept, ...next, state: 'Empty', partitions: [], groups: {}, timeoutMs, updatedAt: now }, r.ver)) return next;
    await backoff(attempt);
  }
  throw new KafkaError('CONCURRENT_TRANSACTIONS', `CONCURRENT_TRANSACTIONS: transactional id ${transactionalId} kept changing; try again.`);
}

/** The record prepared to end its transaction: the epoch bumped (the markers carry it), the ended one remembered. */
function preparing(r: TxnRecord, state: 'PrepareCommit' | 'PrepareAbort'): Omit<TxnRecord, 'ver'> {
  const { lastProducerId: _lastId, ...rest } = fields(r);
  return { ...rest, state, lastEpoch: r.producerEpoch, producerEpoch: r.producerEpoch + 1, updatedAt: Date.now() };
}

/** Aborts a transaction left open (its producer fenced by the epoch bump), then finishes the abort. */
async function abortOpen(r: TxnRecord): Promise<void> {
  const prepared = preparing(r, 'PrepareAbort');
  if (await replaceTxn(prepared, r.ver, { aborted: { producerId: r.producerId, epoch: r.producerEpoch } })) await finish({ ...prepared, ver: r.ver + 1 });
}

/**
 * Changes an open (or about to open) transaction: the producer must hold the current epoch and
 * the transaction must not be ending. `change` returns the new record, or undefined for nothing to
 * write; `also` what goes in the same write; `lost` runs after a lost write, before the next try.
 */
async function update(
  p: TxnProducer, change: (r: TxnRecord) => Omit<TxnRecord, 'ver'> | undefined,
  also?: (next: Omit<TxnRecord, 'ver'>) => Parameters<typeof replaceTxn>[2], lost?: () => Promise<void>,
): Promise<void> {
  validateId(p.transactionalId);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const r = await requireTxn(p.transactionalId);
    checkProducer(r, p);
    if (isPrepared(r.state)) {
      throw new KafkaError('CONCURRENT_TRANSACTIONS', `CONCURRENT_TRANSACTIONS: the last transaction of ${p.transactionalId} is still being completed; try again.`);
    }
    const next = change(r);
    if (!next || await replaceTxn(next, r.ver, also?.(next))) return;
    await lost?.();
    await backoff(attempt);
  }
  throw new KafkaError('CONCURRENT_TRANSACTIONS', `CONCURRENT_TRANSACTIONS: transactional id ${p.transactionalId} kept changing; try again.`);
}

/** The record with the transaction open (begun now when it was not). */
const opened = (r: TxnRecord): Omit<TxnRecord, 'ver'> => ({
  ...fields(r), state: 'Ongoing', updatedAt: Date.now(),
  ...(r.state === 'Ongoing' ? {} : { startedAt: Date.now(), partitions: [], groups: {} }),
});

const samePartition = (a: TxnPartition, b: TxnPartition): boolean => a.topic === b.topic && a.partition === b.partition;

/**
 * Kafka's AddPartitionsToTxn: the partitions join the producer's transaction (opening one when
 * none is open). One read when they are in it already. Errors: TRANSACTIONAL_ID_NOT_FOUND,
 * PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING, CONCURRENT_TRANSACTIONS.
 */
export async function addPartitions(p: TxnProducer, partitions: readonly TxnPartition[]): Promise<void> {
  await update(p, (r) => {
    if (r.state === 'Ongoing' && partitions.every((x) => r.partitions.some((y) => samePartition(x, y)))) return undefined;
    const base = opened(r);
    return { ...base, partitions: [...base.partitions, ...partitions.filter((x, i) => !base.partitions.some((y) => samePartition(x, y)) && partitions.findIndex((z) => samePartition(x, z)) === i)] };
  });
}

/**
 * A transactional producer's produce (acks=all, as Kafka requires of one): the records are routed
 * and checked, their partitions join the transaction, then the batches — transactional, under the
 * producer's epoch — are appended. Errors: those of addPartitions for the whole request; per
 * record, those of a produce.
 */
export async function produceInTransaction(p: TxnProducer, topic: string, records: readonly ProduceRecord[]): Promise<ProduceOutcome[]> {
  const plan = await planProduce(topic, records, { acks: 'all', producer: { producerId: p.producerId, producerEpoch: p.producerEpoch, transactional: true } });
  const partitions = [...plan.prepared.keys()].map((partition) => ({ topic, partition }));
  if (partitions.length > 0) await addPartitions(p, partitions);
  return executePlan(plan);
}

/**
 * Kafka's AddOffsetsToTxn and TxnOffsetCommit in one: offsets for a group, committed only if the
 * transaction commits. With `consumer` (the group metadata of the consumer that read them,
 * KIP-447), the consumer must still be the group's member at that generation — checked first, and
 * again in the write itself, so a rebalance between the two cannot let a deposed member's offsets in.
 * Errors: those of addPartitions; UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION.
 */
export async function addOffsets(
  p: TxnProducer, groupId: string, offsets: TxnGroupOffsets['offsets'], consumer?: { readonly memberId: string; readonly generationId: number },
): Promise<void> {
  if (consumer) await checkMember(groupId, consumer.memberId, consumer.generationId);
  // The group's pending item goes with the change, so a reader asking for stable offsets waits for this transaction.
  await update(p, (r) => {
    const base = opened(r);
    const before = base.groups[groupId]?.offsets ?? [];
    const merged = [...before.filter((o) => !offsets.some((n) => samePartition(n, o))), ...offsets];
    return { ...base, groups: { ...base.groups, [groupId]: { offsets: merged } } };
  }, (next) => ({
    pending: {
      groupId, transactionalId: p.transactionalId, producerId: next.producerId, epoch: next.producerEpoch,
      partitions: (next.groups[groupId]?.offsets ?? []).map((o) => `${o.topic}#${o.partition}`),
    },
    ...(consumer ? { member: { memberId: consumer.memberId, memberEpoch: consumer.generationId } } : {}),
  }), consumer ? () => checkMember(groupId, consumer.memberId, consumer.generationId) : undefined);
}

/**
 * Kafka's EndTxn: commits or aborts the producer's transaction and returns the epoch it holds for
 * the next one (KIP-890). A retry of an end that was applied (its answer lost) gets the same answer.
 * Errors: those of addPartitions; INVALID_TXN_STATE for a retry that asks the other outcome.
 */
export async function endTransaction(p: TxnProducer, commit: boolean): Promise<{ producerId: number; producerEpoch: number }> {
  validateId(p.transactionalId);
  const want: TxnState = commit ? 'PrepareCommit' : 'PrepareAbort';
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const r = await requireTxn(p.transactionalId);
    // The end of this producer's transaction was applied already: a retry (its answer lost) gets
    // the same answer; a commit of a transaction that was aborted meanwhile (its timeout, an
    // administrator) finds its producer fenced.
    const moved = r.lastProducerId === p.producerId && r.lastEpoch === p.producerEpoch && r.producerEpoch === 0;
    if (moved || (r.producerId === p.producerId && r.lastEpoch === p.producerEpoch && r.producerEpoch === p.producerEpoch + 1)) {
      const aborted = r.state === 'PrepareAbort' || r.state === 'CompleteAbort';
      const committed = r.state === 'PrepareCommit' || r.state === 'CompleteCommit';
      if ((commit && committed) || (!commit && aborted)) {
        return endAnswer(p, isPrepared(r.state) ? await finish(r) : r);
      }
      if (commit && aborted) throw new KafkaError('PRODUCER_FENCED', `PRODUCER_FENCED: the transaction of ${p.transactionalId} at epoch ${p.producerEpoch} was aborted (its timeout, or an administrator); this producer is fenced.`);
      if (!commit && committed) throw new KafkaError('INVALID_TXN_STATE', `INVALID_TXN_STATE: the transaction of ${p.transactionalId} at epoch ${p.producerEpoch} was committed.`);
    }
    checkProducer(r, p);
    if (isPrepared(r.state)) throw new KafkaError('CONCURRENT_TRANSACTIONS', `CONCURRENT_TRANSACTIONS: the last transaction of ${p.transactionalId} is still being completed; try again.`);
    // Nothing open: nothing to write, and the epoch stays.
    if (r.state !== 'Ongoing') return { producerId: r.producerId, producerEpoch: r.producerEpoch };
    const prepared = preparing(r, want);
    if (await replaceTxn(prepared, r.ver, commit ? {} : { aborted: { producerId: r.producerId, epoch: r.producerEpoch } })) {
      return endAnswer(p, await finish({ ...prepared, ver: r.ver + 1 }));
    }
    await backoff(attempt);
  }
  throw new KafkaError('CONCURRENT_TRANSACTIONS', `CONCURRENT_TRANSACTIONS: transactional id ${p.transactionalId} kept changing; try again.`);
}

/**
 * What an end of `p`'s transaction answers: the epoch after it, or — its epochs ran out and the id
 * moved on at Complete — the new producer id at epoch 0.
 */
function endAnswer(p: TxnProducer, done: TxnRecord | undefined): { producerId: number; producerEpoch: number } {
  if (done?.lastProducerId === p.producerId && done.lastEpoch === p.producerEpoch) return { producerId: done.producerId, producerEpoch: 0 };
  return { producerId: p.producerId, producerEpoch: p.producerEpoch + 1 };
}

/**
 * Completes a prepared transaction: a marker on every partition in it (in parallel, each acks=all;
 * a repeat writes nothing), the offsets of a commit, then Complete*. Safe to run twice at once and
 * to stop anywhere: the next run does the rest. A producer whose epochs ran out moves to a new
 * producer id at epoch 0 with Complete. Returns the item as completed (by this run, or as read after
 * another's), undefined when it is gone. Errors: a marker or offset write that failed (the
 * transaction stays prepared for the next run).
 */
async function finish(r: TxnRecord): Promise<TxnRecord | undefined> {
  const commit = r.state === 'PrepareCommit';
  await Promise.all(r.partitions.map(async ({ topic, partition }) => {
    try {
      await appendMarker(topic, partition, r.producerId, r.producerEpoch, commit);
    } catch (err) {
      // (a topic deleted since has no log to mark)
      if (isKafkaError(err) && err.kafkaName === 'UNKNOWN_TOPIC_OR_PARTITION') return;
      throw err;
    }
  }));
  for (const [groupId, g] of Object.entries(r.groups)) {
    if (commit) await commitOffsets(groupId, g.offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: o.offset, ...(o.metadata !== undefined ? { metadata: o.metadata } : {}) })), null);
    // (the transaction's epoch: the prepare bumped the producer's)
    await clearPendingOffsets(groupId, r.transactionalId, r.producerId, r.lastEpoch ?? r.producerEpoch - 1);
  }
  const { startedAt: _started, ...kept } = fields(r);
  const fresh = r.producerEpoch > MAX_EPOCH ? await initProducer() : undefined;
  const completed: Omit<TxnRecord, 'ver'> = {
    ...kept, state: commit ? 'CompleteCommit' : 'CompleteAbort', partitions: [], groups: {}, updatedAt: Date.now(),
    ...(fresh ? { producerId: fresh.producerId, producerEpoch: 0, lastProducerId: r.producerId } : {}),
  };
  if (!(await replaceTxn(completed, r.ver))) {
    // Another run completed it (or an init moved on from it): nothing left to do.
    return readTxn(r.transactionalId);
  }
  logger.info({ event: commit ? 'transaction-committed' : 'transaction-aborted', transactionalId: r.transactionalId, producerId: r.producerId, epoch: r.lastEpoch, partitions: r.partitions.length }, 'transaction completed');
  return { ...completed, ver: r.ver + 1 };
}

/** A transactional id's state (Kafka's DescribeTransactions). Errors: TRANSACTIONAL_ID_NOT_FOUND. */
export async function describeTransaction(transactionalId: string): Promise<TxnRecord> {
  validateId(transactionalId);
  return requireTxn(transactionalId);
}

/** Every transactional id's state (Kafka's ListTransactions), optionally only some states. */
export async function listTransactions(states?: readonly TxnState[]): Promise<TxnRecord[]> {
  const all = await listTxns();
  return states && states.length > 0 ? all.filter((r) => states.includes(r.state)) : all;
}

/**
 * Aborts a transactional id's open transaction from outside its producer (Kafka's
 * kafka-transactions.sh abort, KIP-664): the producer is fenced by the epoch bump, the transaction
 * aborted. Finishes a prepared one. Returns the state after. Errors: TRANSACTIONAL_ID_NOT_FOUND.
 */
export async function abortTransaction(transactionalId: string): Promise<TxnRecord> {
  validateId(transactionalId);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const r = await requireTxn(transactionalId);
    if (r.state === 'Ongoing') await abortOpen(r);
    else if (isPrepared(r.state)) await finish(r);
    else return r;
  }
  throw new KafkaError('CONCURRENT_TRANSACTIONS', `CONCURRENT_TRANSACTIONS: transactional id ${transactionalId} kept changing; try again.`);
}

/**
 * The controller's pass over transactions: aborts those open past their timeout, finishes prepared
 * ones left by a finisher that died, and forgets ids idle past transactional.id.expiration.ms.
 * Returns what it did. A failure on one id is logged and left for the next pass.
 */
export async function expireTransactions(now = Date.now()): Promise<{ aborted: number; finished: number; expired: number }> {
  const out = { aborted: 0, finished: 0, expired: 0 };
  for (const r of await listTxns()) {
    try {
      if (r.state === 'Ongoing' && (r.startedAt ?? r.updatedAt) + r.timeoutMs < now) {
        logger.warn({ event: 'transaction-timed-out', transactionalId: r.transactionalId, producerId: r.producerId, epoch: r.producerEpoch, timeoutMs: r.timeoutMs }, 'transaction past its timeout: aborting');
        await abortOpen(r);
        out.aborted++;
      } else if (isPrepared(r.state) && r.updatedAt + stuckPrepareMs() < now) {
        await finish(r);
        out.finished++;
      } else if (isClosed(r.state) && r.updatedAt + TRANSACTIONAL_ID_EXPIRATION_MS < now && await deleteTxn(r.transactionalId, r.ver)) {
        out.expired++;
      }
    } catch (err) {
      logger.warn({ event: 'transaction-pass-failed', transactionalId: r.transactionalId, err: (err as Error).message }, 'transaction pass failed on one id');
    }
  }
  return out;
}
