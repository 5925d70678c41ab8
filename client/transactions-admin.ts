/**
 * The admin client's transactions, in Kafka's Admin names (KIP-664: listTransactions,
 * describeTransactions, and kafka-transactions.sh's abort by transactional id), over
 * `/v3/clusters/{c}/transactions`. Admin delegates here; answers are camelCase and typed.
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
