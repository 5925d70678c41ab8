/**
 * The transactional workload's history events (txn-workload.ts writes them, txn-checker.ts judges
 * them): each transactional producer's inits, the transactions it begins, their sends and offsets
 * and the end it asks for; read_committed reads with the last stable offset they were answered;
 * the final read_committed read of each partition. `txn` names one transaction
 * (`<transactional id>:<n>`); a value names one send.
 */
import type { Outcome, Rec, Shape } from './history-fields.js';

/** An init of a transactional id (Kafka's InitProducerId): fences earlier producers, aborts what they left open. */
export interface TxnInitEvent {
  type: 'txn-init';
  id: number;
  process: string;
  transactionalId: string;
  start: number;
  end: number;
  outcome: Outcome;
  producerId?: number;
  producerEpoch?: number;
  error?: string;
}

/** A transaction begins: the worker's next calls carry this producer id and epoch. */
export interface TxnBeginEvent {
  type: 'txn-begin';
  id: number;
  process: string;
  transactionalId: string;
  txn: string;
  producerId: number;
  producerEpoch: number;
  at: number;
}

/** One transactional produce of one value (each retry of the same record, same sequence, is its own event). */
export interface TxnSendEvent {
  type: 'txn-send';
  id: number;
  process: string;
  transactionalId: string;
  txn: string;
  topic: string;
  partition: number;
  value: string;
  sequence: number;
  start: number;
  end: number;
  outcome: Outcome;
  /** The acknowledged offset, when outcome is 'ok'. */
  offset?: number;
  error?: string;
}

/** Offsets of a group sent in a transaction (committed only if it commits); each offset is unique to its transaction. */
export interface TxnOffsetsEvent {
  type: 'txn-offsets';
  id: number;
  process: string;
  transactionalId: string;
  txn: string;
  group: string;
  start: number;
  end: number;
  outcome: Outcome;
  offsets: { topic: string; partition: number; offset: number }[];
  error?: string;
}

/** An end asked for (commit or abort) from `start`, and its answer. */
export interface TxnEndEvent {
  type: 'txn-end';
  id: number;
  process: string;
  transactionalId: string;
  txn: string;
  commit: boolean;
  start: number;
  end: number;
  outcome: Outcome;
  error?: string;
}

/** A read_committed fetch from `fromOffset`, with the offsets the answer carried. */
export interface TxnReadEvent {
  type: 'txn-read';
  id: number;
  process: string;
  topic: string;
  partition: number;
  fromOffset: number;
  start: number;
  end: number;
  outcome: Outcome;
  records: Rec[];
  nextOffset?: number;
  highWatermark?: number;
  lastStableOffset?: number;
  error?: string;
}

/**
 * A read_committed read of a whole partition from its log start after the faults healed;
 * `complete`: it got to the high watermark with no transaction left open (last stable offset = high watermark).
 */
export interface TxnFinalReadEvent {
  type: 'txn-final-read';
  id: number;
  topic: string;
  partition: number;
  at: number;
  records: Rec[];
  complete: boolean;
  highWatermark?: number;
  lastStableOffset?: number;
}

export type TxnEvent = TxnInitEvent | TxnBeginEvent | TxnSendEvent | TxnOffsetsEvent | TxnEndEvent | TxnReadEvent | TxnFinalReadEvent;

const op = { process: 'string', transactionalId: 'string', start: 'number', end: 'number', outcome: 'outcome' } as const;

/** The field tables `parseHistory` validates these events with. */
export const TXN_SHAPES: Readonly<Record<TxnEvent['type'], Shape>> = {
  'txn-init': { required: { id: 'int', ...op }, optional: { producerId: 'int', producerEpoch: 'int', error: 'string' } },
  'txn-begin': { required: { id: 'int', process: 'string', transactionalId: 'string', txn: 'string', producerId: 'int', producerEpoch: 'int', at: 'number' } },
  'txn-send': {
    required: { id: 'int', ...op, txn: 'string', topic: 'string', partition: 'int', value: 'string', sequence: 'int' },
    optional: { offset: 'int', error: 'string' },
  },
  'txn-offsets': { required: { id: 'int', ...op, txn: 'string', group: 'string', offsets: 'tpOffsets' }, optional: { error: 'string' } },
  'txn-end': { required: { id: 'int', ...op, txn: 'string', commit: 'boolean' }, optional: { error: 'string' } },
  'txn-read': {
    required: { id: 'int', process: 'string', topic: 'string', partition: 'int', fromOffset: 'int', start: 'number', end: 'number', outcome: 'outcome', records: 'recs' },
    optional: { nextOffset: 'int', highWatermark: 'int', lastStableOffset: 'int', error: 'string' },
  },
  'txn-final-read': {
    required: { id: 'int', topic: 'string', partition: 'int', at: 'number', records: 'recs', complete: 'boolean' },
    optional: { highWatermark: 'int', lastStableOffset: 'int' },
  },
};
