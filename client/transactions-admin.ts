/**
 * The admin client's transactions, in Kafka's Admin names (KIP-664: listTransactions,
 * describeTransactions, describeProducers, and kafka-transactions.sh's abort by transactional id
 * or of a partition's hanging transaction), over `/v3/clusters/{c}/transactions` and a
 * partition's `producers` and `hanging-transactions:end`. Admin delegates here; answers are camelCase and typed.
 */
import type { Connection } from './connection.js';

/** Kafka's transaction states, as Kafka names them (`TransactionState`'s strings). */
export type TransactionState = 'Empty' | 'Ongoing' | 'PrepareCommit' | 'PrepareAbort' | 'CompleteCommit' | 'CompleteAbort';

/** Every state a `listTransactions` filter may name. */
export const TRANSACTION_STATES: readonly TransactionState[] = ['Empty', 'Ongoing', 'PrepareCommit', 'PrepareAbort', 'CompleteCommit', 'CompleteAbort'];

/** A transactional id and its current (or last) transaction, as Kafka's DescribeTransactions answers it. */
export interface TransactionDescription {
  readonly transactionalId: string;
  readonly producerId: number;
  /** The epoch a producer of this id must hold now (it moves on at every transaction's end). */
  readonly producerEpoch: number;
  readonly state: TransactionState;
  /** Kafka's `transaction.timeout.ms` the producer asked for: an open transaction older than this is aborted by the cluster. */
  readonly transactionTimeoutMs: number;
  /** When the open transaction began (epoch ms); null when none is open or being completed. */
  readonly transactionStartTimeMs: number | null;
  /** The partitions in the open transaction, by topic. */
  readonly topics: { readonly topic: string; readonly partitions: number[] }[];
  /** Consumer groups whose offsets the open transaction carries. */
  readonly groups: string[];
}

/** What `listTransactions` filters on. */
export interface ListTransactionsOptions {
  /** Only ids in these states. @default every state */
  readonly states?: readonly TransactionState[];
}

type Json = Record<string, unknown>;
const enc = encodeURIComponent;

/** A `KafkaTransaction` answer as a TransactionDescription. */
export function transactionDescription(t: Json): TransactionDescription {
  const topics = Array.isArray(t.topics) ? (t.topics as Json[]) : [];
  return {
    transactionalId: String(t.transactional_id),
    producerId: Number(t.producer_id),
    producerEpoch: Number(t.producer_epoch),
    state: String(t.state) as TransactionState,
    transactionTimeoutMs: Number(t.transaction_timeout_ms),
    transactionStartTimeMs: typeof t.transaction_start_time_ms === 'number' ? t.transaction_start_time_ms : null,
    topics: topics.map((x) => ({ topic: String(x.topic_name), partitions: Array.isArray(x.partitions) ? (x.partitions as unknown[]).map(Number) : [] })),
    groups: Array.isArray(t.groups) ? (t.groups as unknown[]).map(String) : [],
  };
}

/**
 * Kafka's ListTransactions: every transactional id the caller may DESCRIBE, optionally only those
 * in some states, by id. A state the server does not know is refused (400, naming the states).
 */
export async function listTransactions(conn: Connection, o: ListTransactionsOptions = {}): Promise<{ transactions: TransactionDescription[] }> {
  const query = o.states && o.states.length > 0 ? { state: o.states.join(',') } : undefined;
  const r = await conn.call<{ data?: Json[] }>('GET', await conn.v3('/transactions'), query ? { query } : {});
  return { transactions: (r.data ?? []).map(transactionDescription) };
}

/**
 * Kafka's DescribeTransactions: each id's state, in the order asked. An id with no producer
 * rejects the call with TRANSACTIONAL_ID_NOT_FOUND (404).
 */
export async function describeTransactions(conn: Connection, transactionalIds: readonly string[]): Promise<{ transactions: TransactionDescription[] }> {
  const transactions = await Promise.all(transactionalIds.map(async (id) =>
    transactionDescription(await conn.call<Json>('GET', await conn.v3(`/transactions/${enc(id)}`)))));
  return { transactions };
}

/**
 * kafka-transactions.sh abort for a transactional id: its producer is fenced (its next call fails
 * PRODUCER_FENCED) and its open transaction aborted, so read_committed readers move past it; a
 * transaction being completed is finished. Resolves with the id's state after. Safe to repeat.
 * Errors: TRANSACTIONAL_ID_NOT_FOUND; CLUSTER_AUTHORIZATION_FAILED without CLUSTER ALTER.
 */
export async function abortTransaction(conn: Connection, transactionalId: string): Promise<TransactionDescription> {
  return transactionDescription(await conn.call<Json>('POST', await conn.v3(`/transactions/${enc(transactionalId)}/abort`)));
}

/** A producer's state on a partition, as Kafka's DescribeProducers answers it. */
export interface ProducerStateDescription {
  readonly producerId: number;
  readonly producerEpoch: number;
  /** The last sequence written; -1 when none of this epoch is remembered. */
  readonly lastSequence: number;
  /** The first offset of the producer's transaction open on the partition; -1 when none is. */
  readonly currentTransactionStartOffset: number;
  /** The transactional id holding the producer id, when one does. */
  readonly transactionalId: string | null;
  /** Open on the partition although its coordinator has decided it: its marker is missing (an unclean election cut it). */
  readonly hanging: boolean;
}

/** A hanging transaction ended with the marker its coordinator decided (now in the log at `markerOffset`). */
export interface EndedHangingTransaction {
  readonly topic: string;
  readonly partition: number;
  readonly producerId: number;
  readonly startOffset: number;
  readonly marker: 'COMMIT' | 'ABORT';
  /** The producer epoch the marker carries (it fences the epochs below it on the partition). */
  readonly markerEpoch: number;
  readonly markerOffset: number;
}

const partitionPath = (topic: string, partition: number) => `/topics/${enc(topic)}/partitions/${partition}`;

/**
 * Kafka's DescribeProducers (KIP-664, `kafka-transactions.sh describe-producers`): each partition's
 * producers, with the offset their open transaction starts at and whether it hangs (what
 * `find-hanging` looks for). Needs TOPIC READ. Errors: UNKNOWN_TOPIC_OR_PARTITION.
 */
export async function describeProducers(conn: Connection, partitions: readonly { readonly topic: string; readonly partition: number }[]): Promise<{ topic: string; partition: number; producers: ProducerStateDescription[] }[]> {
  return Promise.all(partitions.map(async ({ topic, partition }) => {
    const r = await conn.call<{ data?: Json[] }>('GET', await conn.v3(`${partitionPath(topic, partition)}/producers`));
    return {
      topic, partition,
      producers: (r.data ?? []).map((p) => ({
        producerId: Number(p.producer_id), producerEpoch: Number(p.producer_epoch), lastSequence: Number(p.last_sequence),
        currentTransactionStartOffset: Number(p.current_transaction_start_offset),
        transactionalId: typeof p.transactional_id === 'string' ? p.transactional_id : null, hanging: p.hanging === true,
      })),
    };
  }));
}

/**
 * kafka-transactions.sh abort --topic --partition [--start-offset | --producer-id]: ends the
 * partition's hanging transactions (only the one starting at `startOffset`, or of `producerId`,
 * when given) with the marker its coordinator decided — a commit for a committed one, so a
 * committed transaction stays whole. An open transaction its coordinator has not decided is
 * left (abort it by its transactional id). Resolves with what was ended. Needs CLUSTER ALTER.
 */
export async function endHangingTransactions(
  conn: Connection, o: { readonly topic: string; readonly partition: number; readonly producerId?: number; readonly startOffset?: number },
): Promise<EndedHangingTransaction[]> {
  const body = { ...(o.producerId !== undefined ? { producer_id: o.producerId } : {}), ...(o.startOffset !== undefined ? { start_offset: o.startOffset } : {}) };
  const r = await conn.call<{ data?: Json[] }>('POST', await conn.v3(`${partitionPath(o.topic, o.partition)}/hanging-transactions:end`), { body });
  return (r.data ?? []).map((e) => ({
    topic: o.topic, partition: o.partition, producerId: Number(e.producer_id), startOffset: Number(e.start_offset),
    marker: e.marker === 'COMMIT' ? 'COMMIT' : 'ABORT', markerEpoch: Number(e.marker_epoch), markerOffset: Number(e.marker_offset),
  }));
}
