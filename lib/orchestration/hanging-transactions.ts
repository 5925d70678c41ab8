/**
 * Hanging transactions (Kafka's KIP-664: DescribeProducers, `kafka-transactions.sh find-hanging`
 * and `abort`): a transaction open on a partition although its coordinator has moved past it. The
 * coordinator adds a partition before any batch lands there (KIP-890), so the way to get here is an
 * unclean election that cut the marker: a truncation that cuts a marker opens its transaction again
 * (lib/log/producer-state.ts), and nothing would write the marker again, so the partition's last
 * stable offset would stay behind it for good.
 *
 * The repair writes the marker again (docs/architecture.md "Transactions"; the protocol is
 * spec/transactions.qnt's `cut`, `repairRead` and `repairAppend`):
 *   1. read the partition's producer state: its open transaction, and the newest epoch a batch of
 *      it can have; the marker's epoch is the next one;
 *   2. then read the coordinator (epochs only grow, so a later read finds no less decided): the
 *      transaction is decided when the transactional id holding the producer id is at an epoch past
 *      the newest batch's (every end bumps it), or moved to another producer id, or gone (idle ids
 *      expire; an open one never does);
 *   3. append the marker — an abort when the transaction has its aborted mark, else a commit; it
 *      is the marks that read_committed readers go by, so the kind is what Kafka's tools show —
 *      only while the transaction is still open there (`repair`), and, as every marker, only
 *      while it holds no batch of the marker's epoch or later, so the producer's next
 *      transaction, not decided yet, is never closed with it.
 * A transaction being completed (its id in PrepareCommit or PrepareAbort for it, the partition
 * among its partitions) is left to its finisher, or to the controller's pass when its finisher
 * died; one writing the same marker at the same time as the repair would be harmless all the same
 * (one of the two is a repeat).
 *
 * The controller's full pass runs it on every partition whose leader's head has an open
 * transaction; the HTTP API lists a partition's producers and runs it on request.
 */
import { KafkaError } from '../protocol/errors.js';
import { replicaStore, requireTopic } from '../cluster/metadata.js';
import { appendMarker } from '../log/produce.js';
import { closedMarker, newestBatchEpoch, type ProducerState } from '../log/producer-state.js';
import { abortedAmong, listTxns, type TxnRecord } from '../storage/coordination/transactions.js';
import { topicPartitionKey } from '../storage/model.js';
import { readHead } from '../storage/replica/head.js';
import { listProducerStates, readProducerStates } from '../storage/replica/producer-states.js';

/** A producer's state on a partition, as Kafka's DescribeProducers shows it. */
export interface PartitionProducer {
  readonly producerId: number;
  readonly producerEpoch: number;
  /** The last sequence written, -1 when none of this epoch is remembered. */
  readonly lastSequence: number;
  /** The first offset of the producer's transaction open here, -1 when none is. */
  readonly currentTransactionStartOffset: number;
  /** The transactional id that holds the producer id, when one does. */
  readonly transactionalId?: string;
  /** Open here although its coordinator has decided it (its marker is missing). */
  readonly hanging: boolean;
}

/** A hanging transaction the repair ended: its marker is in the log. */
export interface EndedHanging {
  readonly topic: string;
  readonly partition: number;
  readonly producerId: number;
  readonly startOffset: number;
  readonly markerEpoch: number;
  readonly commit: boolean;
  readonly markerOffset: number;
}

/** Epochs are int16: no marker goes past this one. */
const MAX_MARKER_EPOCH = 32_767;

/** The transactional ids' items by the producer id each holds. */
const byProducerId = (txns: readonly TxnRecord[]): ReadonlyMap<number, TxnRecord> => new Map(txns.map((r) => [r.producerId, r]));

/**
 * The marker epoch that ends the producer's open transaction on the partition, when the
 * coordinator has decided it (`owners`: every transactional id's item by producer id, read after
 * the state); undefined when none is open, it is not decided, or it is being completed (its id
 * prepared for it, with this partition among its partitions: its finisher writes the marker).
 */
export function hangingMarkerEpoch(st: ProducerState, owners: ReadonlyMap<number, TxnRecord>, at: { readonly topic: string; readonly partition: number }): number | undefined {
  if (st.txnFirst === undefined) return undefined;
  const markerEpoch = newestBatchEpoch(st) + 1;
  if (markerEpoch > MAX_MARKER_EPOCH) return undefined;
  const owner = owners.get(st.producerId);
  if (owner && owner.producerEpoch < markerEpoch) return undefined;
  const completing = owner && (owner.state === 'PrepareCommit' || owner.state === 'PrepareAbort') && owner.producerEpoch === markerEpoch
    && owner.partitions.some((p) => p.topic === at.topic && p.partition === at.partition);
  return completing ? undefined : markerEpoch;
}

/** A partition's leader replica, or the error a produce to it would get. */
async function leaderOf(topic: string, partition: number) {
  const view = await requireTopic(topic);
  const state = view.partitions[partition];
  if (!state) throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `UNKNOWN_TOPIC_OR_PARTITION: topic ${topic} has no partition ${partition}.`, { topic, partition });
  if (state.leader < 0) throw new KafkaError('LEADER_NOT_AVAILABLE', `LEADER_NOT_AVAILABLE: partition ${partition} of ${topic} has no leader.`, { topic, partition });
  return { store: await replicaStore(state.leader), tp: topicPartitionKey(view.topic.topicId, partition) };
}

/** Kafka's DescribeProducers: every producer with state on the partition's leader, and whether its open transaction hangs. */
export async function describeProducers(topic: string, partition: number): Promise<PartitionProducer[]> {
  const { store, tp } = await leaderOf(topic, partition);
  const states = await listProducerStates(store, tp);
  const owners = byProducerId(states.some((st) => st.txnFirst !== undefined) ? await listTxns() : []);
  return states.map((st) => {
    const last = st.batches[st.batches.length - 1];
    const owner = owners.get(st.producerId);
    return {
      producerId: st.producerId, producerEpoch: st.producerEpoch, lastSequence: last ? last.lastSeq : -1,
      currentTransactionStartOffset: st.txnFirst ?? -1,
      ...(owner ? { transactionalId: owner.transactionalId } : {}),
      hanging: hangingMarkerEpoch(st, owners, { topic, partition }) !== undefined,
    };
  }).sort((a, b) => a.producerId - b.producerId);
}

export interface EndHangingOptions {
  /** Only this producer's transaction. */
  readonly producerId?: number;
  /** Only the transaction that starts at this offset (kafka-transactions.sh abort --start-offset). */
  readonly startOffset?: number;
  /** Each marker's acks=all deadline. */
  readonly deadlineMs?: number;
}

/**
 * Ends the hanging transactions of these partitions (the controller's pass gives every partition
 * whose leader's head has one open; the HTTP API one). Reads each partition's open transactions
 * and their producer states, then every transactional id (one Query, only when some are open),
 * then the aborted marks of the decided ones (one BatchGetItem), and appends their markers.
 * Returns the transactions it ended (one that stopped hanging before its marker — a marker came,
 * or a later transaction's batch — is not among them) and the errors of the partitions it could
 * not read or write (the others still ran).
 */
export async function endHangingTransactions(
  parts: readonly { readonly topic: string; readonly partition: number }[], opts: EndHangingOptions = {},
): Promise<{ ended: EndedHanging[]; errors: unknown[] }> {
  const errors: unknown[] = [];
  const settledOf = <T>(results: PromiseSettledResult<T>[]): T[] => results.flatMap((r) => {
    if (r.status === 'fulfilled') return [r.value];
    errors.push(r.reason);
    return [];
  });
  const open = settledOf(await Promise.allSettled(parts.map(async ({ topic, partition }) => {
    const { store, tp } = await leaderOf(topic, partition);
    const head = await readHead(store, tp);
    const ids = Object.keys(head?.openTxns ?? {}).filter((k) => closedMarker(k) === undefined).map(Number)
      .filter((id) => opts.producerId === undefined || id === opts.producerId);
    if (ids.length === 0) return [];
    const states = await readProducerStates(store, tp, ids);
    return [...states.values()]
      .filter((st) => st.txnFirst !== undefined && (opts.startOffset === undefined || st.txnFirst === opts.startOffset))
      .map((st) => ({ topic, partition, st }));
  }))).flat();
  if (open.length === 0) return { ended: [], errors };
  const owners = byProducerId(await listTxns());
  const decided = open.flatMap((o) => {
    const markerEpoch = hangingMarkerEpoch(o.st, owners, o);
    return markerEpoch === undefined ? [] : [{ ...o, markerEpoch }];
  });
  if (decided.length === 0) return { ended: [], errors };
  const aborted = await abortedAmong(decided.map((d) => ({ producerId: d.st.producerId, epoch: d.markerEpoch - 1 })));
  const written = settledOf(await Promise.allSettled(decided.map(async (d): Promise<EndedHanging> => {
    const commit = !aborted.has(`${d.st.producerId}#${d.markerEpoch - 1}`);
    const markerOffset = await appendMarker(d.topic, d.partition, d.st.producerId, d.markerEpoch, commit, opts.deadlineMs, { repair: true });
    return { topic: d.topic, partition: d.partition, producerId: d.st.producerId, startOffset: d.st.txnFirst as number, markerEpoch: d.markerEpoch, commit, markerOffset };
  })));
  return { ended: written.filter((e) => e.markerOffset >= 0), errors };
}
