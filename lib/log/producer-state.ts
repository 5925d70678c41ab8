/**
 * Idempotent producer rules (Kafka's ProducerStateManager): per partition and producer id, the
 * producer epoch and the last five batches' sequence ranges and offsets. A batch is appended when
 * its first sequence follows the last one; a retry of one of the last five is answered with its
 * original offsets; anything else is refused. Pure: the stores keep the state, this decides.
 */
import { KafkaError } from '../errors.js';

/** How many recent batches per producer are remembered for duplicate detection (Kafka: 5). */
export const RECENT_BATCHES = 5;

export interface ProducerBatch {
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly baseOffset: number;
  readonly lastOffset: number;
}

export interface ProducerState {
  readonly producerId: number;
  readonly producerEpoch: number;
  /** Oldest first. */
  readonly batches: readonly ProducerBatch[];
}

export interface IncomingBatch {
  readonly producerId: number;
  readonly producerEpoch: number;
  readonly firstSeq: number;
  readonly recordCount: number;
}

export type Verdict =
  | { readonly kind: 'append'; readonly next: (baseOffset: number) => ProducerState }
  | { readonly kind: 'duplicate'; readonly baseOffset: number; readonly lastOffset: number }
  | { readonly kind: 'reject'; readonly error: KafkaError };

/** Sequences wrap at 2^31 - 1 as Kafka's do. */
const lastSeqOf = (first: number, count: number): number => (first + count - 1) % 2 ** 31;
const nextSeq = (seq: number): number => (seq + 1) % 2 ** 31;

export function check(state: ProducerState | undefined, b: IncomingBatch): Verdict {
  const lastSeq = lastSeqOf(b.firstSeq, b.recordCount);
  const append = (kept: readonly ProducerBatch[]): Verdict => ({
    kind: 'append',
    next: (baseOffset) => ({
      producerId: b.producerId,
      producerEpoch: b.producerEpoch,
      batches: [...kept, { firstSeq: b.firstSeq, lastSeq, baseOffset, lastOffset: baseOffset + b.recordCount - 1 }].slice(-RECENT_BATCHES),
    }),
  });
  const reject = (name: 'OUT_OF_ORDER_SEQUENCE_NUMBER' | 'INVALID_PRODUCER_EPOCH', message: string): Verdict =>
    ({ kind: 'reject', error: new KafkaError(name, `${name}: ${message}`, { producerId: b.producerId }) });

  if (!state) {
    return b.firstSeq === 0 ? append([]) : reject('OUT_OF_ORDER_SEQUENCE_NUMBER', `producer ${b.producerId} is new here, so its first sequence must be 0, not ${b.firstSeq}.`);
  }
  if (b.producerEpoch < state.producerEpoch) {
    return reject('INVALID_PRODUCER_EPOCH', `producer ${b.producerId} epoch ${b.producerEpoch} is older than ${state.producerEpoch}.`);
  }
  if (b.producerEpoch > state.producerEpoch) {
    return b.firstSeq === 0 ? append([]) : reject('OUT_OF_ORDER_SEQUENCE_NUMBER', `a new producer epoch must start at sequence 0, not ${b.firstSeq}.`);
  }
  const dup = state.batches.find((x) => x.firstSeq === b.firstSeq && x.lastSeq === lastSeq);
  if (dup) return { kind: 'duplicate', baseOffset: dup.baseOffset, lastOffset: dup.lastOffset };
  const last = state.batches[state.batches.length - 1];
  if (!last || b.firstSeq === nextSeq(last.lastSeq)) return append(state.batches);
  return reject('OUT_OF_ORDER_SEQUENCE_NUMBER', `expected sequence ${last ? nextSeq(last.lastSeq) : 0} from producer ${b.producerId}, got ${b.firstSeq}.`);
}

/** The state after a batch the leader accepted (a follower mirrors the leader's decisions). */
export function applyBatch(state: ProducerState | undefined, b: IncomingBatch & { readonly baseOffset: number }): ProducerState {
  const kept = state && state.producerEpoch === b.producerEpoch ? state.batches : [];
  return {
    producerId: b.producerId,
    producerEpoch: b.producerEpoch,
    batches: [...kept, { firstSeq: b.firstSeq, lastSeq: lastSeqOf(b.firstSeq, b.recordCount), baseOffset: b.baseOffset, lastOffset: b.baseOffset + b.recordCount - 1 }].slice(-RECENT_BATCHES),
  };
}

/** The state after truncating the log to `offset` (batches at or above it are gone); undefined when none remain. */
export function truncateState(state: ProducerState, offset: number): ProducerState | undefined {
  const batches = state.batches.filter((x) => x.lastOffset < offset);
  return batches.length > 0 ? { ...state, batches } : undefined;
}
