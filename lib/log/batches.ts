/**
 * Turning a partition's records into RecordBatch v2 bytes before anything is written: timestamps
 * checked against the topic's bounds, records split into batches no larger than
 * `max.message.bytes`, a record that cannot fit alone rejected with MESSAGE_TOO_LARGE.
 */
import { KafkaError } from '../protocol/errors.js';
import { encodeBatch, type Compression, type RecordHeader } from '../protocol/record-batch.js';

export interface LogRecord {
  /** Producer timestamp (ms); the append time when absent. */
  readonly timestamp?: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: readonly RecordHeader[];
}

export interface BatchOptions {
  readonly compression: Compression;
  readonly timestampType: 'CreateTime' | 'LogAppendTime';
  readonly maxMessageBytes: number;
  /** `message.timestamp.before.max.ms` / `after.max.ms`. */
  readonly timestampBeforeMaxMs: number;
  readonly timestampAfterMaxMs: number;
}

/** An idempotent producer's identity and the sequence of a batch's first record. */
export interface ProducerTag {
  readonly producerId: number;
  readonly producerEpoch: number;
  /** -1 for a transaction marker. */
  readonly baseSequence: number;
  /** A transactional producer's batch (the header's transactional bit). */
  readonly transactional?: boolean;
  /** A transaction marker (a control batch, transactional too): which kind. */
  readonly control?: 'commit' | 'abort';
  /** A marker that repairs a hanging transaction (lib/log/producer-state.ts `IncomingMarker.repair`). */
  readonly repair?: boolean;
}

export interface PreparedBatch {
  /** Encoded with base offset 0; the append sets the real base offset and leader epoch. */
  readonly bytes: Buffer;
  readonly recordCount: number;
  readonly maxTimestamp: number;
  /** Timestamps as stored, record by record (the append time under LogAppendTime). */
  readonly timestamps: readonly number[];
  /** Set for an idempotent producer's batch. */
  readonly producer?: ProducerTag;
}

/** Kafka's per-record overhead estimate, to split without encoding twice in the common case. */
const RECORD_OVERHEAD = 24;
const BATCH_OVERHEAD = 61;

function estimate(r: LogRecord): number {
  let n = RECORD_OVERHEAD + (r.key?.length ?? 0) + (r.value?.length ?? 0);
  for (const h of r.headers) n += 10 + Buffer.byteLength(h.key) + (h.value?.length ?? 0);
  return n;
}

/** The latest instant a JavaScript Date holds: later timestamps could not be shown as ISO 8601. */
export const MAX_TIMESTAMP_MS = 8_640_000_000_000_000;

function checkTimestamp(ts: number, now: number, o: BatchOptions): void {
  if (!Number.isSafeInteger(ts) || ts < 0 || ts > MAX_TIMESTAMP_MS) throw new KafkaError('INVALID_TIMESTAMP', `Timestamp ${ts} is not a valid epoch-millisecond value.`);
  if (now - ts > o.timestampBeforeMaxMs) {
    throw new KafkaError('INVALID_TIMESTAMP', `Timestamp ${ts} is more than message.timestamp.before.max.ms (${o.timestampBeforeMaxMs}) before the append time ${now}.`);
  }
  if (ts - now > o.timestampAfterMaxMs) {
    throw new KafkaError('INVALID_TIMESTAMP', `Timestamp ${ts} is more than message.timestamp.after.max.ms (${o.timestampAfterMaxMs}) after the append time ${now}.`);
  }
}

function encode(records: readonly LogRecord[], timestamps: readonly number[], o: BatchOptions, producer?: ProducerTag): PreparedBatch {
  const bytes = encodeBatch({
    baseOffset: 0,
    ...(producer ? { producerId: producer.producerId, producerEpoch: producer.producerEpoch, baseSequence: producer.baseSequence } : {}),
    ...(producer?.transactional || producer?.control ? { isTransactional: true } : {}),
    ...(producer?.control ? { isControl: true } : {}),
    compression: o.compression,
    timestampType: o.timestampType === 'LogAppendTime' ? 'log-append' : 'create',
    records: records.map((r, i) => ({ timestamp: timestamps[i] as number, key: r.key, value: r.value, headers: [...r.headers] })),
  });
  return { bytes, recordCount: records.length, maxTimestamp: timestamps.reduce((a, b) => Math.max(a, b), -1), timestamps, ...(producer ? { producer } : {}) };
}

/**
 * Checks one record on its own: its timestamp, and that it fits a batch alone. Run on every record
 * first, so one bad record fails alone rather than with its partition's others.
 * Errors: INVALID_TIMESTAMP, MESSAGE_TOO_LARGE.
 */
export function checkRecord(r: LogRecord, o: BatchOptions, now = Date.now()): void {
  if (o.timestampType === 'CreateTime' && r.timestamp !== undefined) checkTimestamp(r.timestamp, now, o);
  if (BATCH_OVERHEAD + estimate(r) > o.maxMessageBytes - 64) {
    const alone = encode([r], [r.timestamp ?? now], o).bytes.length;
    if (alone > o.maxMessageBytes) {
      throw new KafkaError('MESSAGE_TOO_LARGE', `The record is ${alone} bytes as a batch, larger than max.message.bytes (${o.maxMessageBytes}).`);
    }
  }
}

/**
 * Encodes a partition's records as batches of at most `maxMessageBytes` each, in order.
 * Errors: MESSAGE_TOO_LARGE for a record that does not fit in a batch alone; INVALID_TIMESTAMP.
 */
export function prepareBatches(records: readonly LogRecord[], o: BatchOptions, now = Date.now(), producer?: ProducerTag): PreparedBatch[] {
  const timestamps = records.map((r) => {
    if (o.timestampType === 'LogAppendTime') return now;
    const ts = r.timestamp ?? now;
    checkTimestamp(ts, now, o);
    return ts;
  });
  const out: PreparedBatch[] = [];
  const emit = (from: number, to: number): void => {
    const tag = producer && { ...producer, baseSequence: (producer.baseSequence + from) % 2 ** 31 };
    const batch = encode(records.slice(from, to), timestamps.slice(from, to), o, tag);
    if (batch.bytes.length <= o.maxMessageBytes) {
      out.push(batch);
    } else if (to - from === 1) {
      throw new KafkaError('MESSAGE_TOO_LARGE', `The record batch of ${batch.bytes.length} bytes is larger than max.message.bytes (${o.maxMessageBytes}).`);
    } else {
      const mid = from + Math.floor((to - from) / 2);
      emit(from, mid);
      emit(mid, to);
    }
  };
  let start = 0;
  let size = BATCH_OVERHEAD;
  records.forEach((r, i) => {
    const n = estimate(r);
    if (i > start && size + n > o.maxMessageBytes) {
      emit(start, i);
      start = i;
      size = BATCH_OVERHEAD;
    }
    size += n;
  });
  if (records.length > start) emit(start, records.length);
  return out;
}

/**
 * A transaction marker as Kafka writes it: a control batch (transactional and control bits set,
 * base sequence -1) of the producer at the epoch its transaction ended with, holding one record
 * whose key is the EndTransactionMarker type (version 0, type 0 abort / 1 commit) and whose value
 * is version 0 and the coordinator epoch.
 */
export function prepareMarker(producerId: number, markerEpoch: number, commit: boolean, now = Date.now(), coordinatorEpoch = 0, repair = false): PreparedBatch {
  const key = Buffer.alloc(4);
  key.writeInt16BE(0, 0);
  key.writeInt16BE(commit ? 1 : 0, 2);
  const value = Buffer.alloc(6);
  value.writeInt16BE(0, 0);
  value.writeInt32BE(coordinatorEpoch, 2);
  const tag: ProducerTag = { producerId, producerEpoch: markerEpoch, baseSequence: -1, control: commit ? 'commit' : 'abort', ...(repair ? { repair } : {}) };
  const o: BatchOptions = { compression: 'none', timestampType: 'CreateTime', maxMessageBytes: 1024, timestampBeforeMaxMs: Infinity, timestampAfterMaxMs: Infinity };
  return encode([{ timestamp: now, key, value, headers: [] }], [now], o, tag);
}

/** The marker kind of a control record's key (EndTransactionMarker: version int16, type int16), or undefined. */
export function markerKind(key: Buffer | null): 'commit' | 'abort' | undefined {
  if (!key || key.length < 4) return undefined;
  const type = key.readInt16BE(2);
  return type === 1 ? 'commit' : type === 0 ? 'abort' : undefined;
}
