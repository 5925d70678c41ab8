/**
 * The pieces every history event is made of, shared by the workloads' event families
 * (history.ts, txn-history.ts): a record as read, an operation's outcome, and the field table
 * parseHistory validates each event type by.
 */

/** One record as a reader saw it. Values are globally unique, so a value names one write. */
export interface Rec {
  offset: number;
  value: string;
}

/**
 * How an operation ended. `unknown`: timed out, connection lost or a 5xx — it may or may not have
 * taken effect, so the checker never counts it as acknowledged nor as failed.
 */
export type Outcome = 'ok' | 'fail' | 'unknown';

export type Field = 'string' | 'int' | 'number' | 'boolean' | 'outcome' | 'acks' | 'recs' | 'tpRecs' | 'tps' | 'tpOffsets' | 'cut' | 'deletion';
export interface Shape { readonly required: Readonly<Record<string, Field>>; readonly optional?: Readonly<Record<string, Field>> }
