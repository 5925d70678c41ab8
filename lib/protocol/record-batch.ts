/**
 * Kafka RecordBatch v2 (magic 2), byte for byte as DefaultRecordBatch / DefaultRecord write it.
 *
 * RecordBatch =>
 *   baseOffset           int64    offset of the first record                      @0
 *   batchLength          int32    bytes after this field (sizeBytes - 12)         @8
 *   partitionLeaderEpoch int32    -1 = NO_PARTITION_LEADER_EPOCH                  @12
 *   magic                int8     = 2                                             @16
 *   crc                  uint32   CRC-32C (Castagnoli) of attributes..end         @17
 *   attributes           int16    bits 0-2 compression (0 none, 1 gzip, 2 snappy, @21
 *                                 3 lz4, 4 zstd), bit 3 timestampType (1 = log-append),
 *                                 bit 4 transactional, bit 5 control
 *   lastOffsetDelta      int32                                                    @23
 *   baseTimestamp        int64    the first record's timestamp                    @27
 *   maxTimestamp         int64                                                    @35
 *   producerId           int64    -1 = none                                       @43
 *   producerEpoch        int16    -1 = none                                       @51
 *   baseSequence         int32    -1 = none                                       @53
 *   recordsCount         int32                                                    @57
 *   records              [Record] compressed as one block when compression != 0 @61
 *
 * Record =>
 *   length varint (bytes after it), attributes int8 (unused, 0), timestampDelta varlong,
 *   offsetDelta varint, keyLength varint (-1 = null), key, valueLength varint (-1 = null), value,
 *   headersCount varint, headers [Header]
 * Header =>
 *   keyLength varint, key utf8, valueLength varint (-1 = null), value
 *
 * baseOffset and partitionLeaderEpoch sit before the CRC'd region on purpose: the leader stamps them
 * on append without re-encoding (`withBaseOffset`). Anything malformed is a CORRUPT_MESSAGE.
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import { crc32c } from '@aws-crypto/crc32c';
import { KafkaError } from './errors.js';
import { ByteReader, ByteWriter, sizeOfVarint, sizeOfVarlong } from './varint.js';

export interface RecordHeader { key: string; value: Buffer | null }
/** A decoded record. `key`, `value` and header values are views (no copy) into the input buffer, or into the decompressed block for gzip. */
export interface BatchRecord { offset: number; timestamp: number; key: Buffer | null; value: Buffer | null; headers: RecordHeader[] }
export type Compression = 'none' | 'gzip';
export type BatchCompression = Compression | 'snappy' | 'lz4' | 'zstd';
export type TimestampType = 'create' | 'log-append';

export interface EncodeBatchInput {
  baseOffset: number;
  /** @default -1 (Kafka's NO_PARTITION_LEADER_EPOCH) */
  partitionLeaderEpoch?: number;
  /** At least one. The first record's timestamp becomes the batch's baseTimestamp. */
  records: { timestamp: number; key: Buffer | null; value: Buffer | null; headers?: RecordHeader[] }[];
  /** @default 'none' */
  compression?: Compression;
  /** For 'log-append', pass the append time as every record's timestamp; it becomes maxTimestamp. @default 'create' */
  timestampType?: TimestampType;
  /** @default -1 */
  producerId?: number;
  /** @default -1 */
  producerEpoch?: number;
  /** @default -1 */
  baseSequence?: number;
  /** @default false */
  isTransactional?: boolean;
  /** @default false */
  isControl?: boolean;
}

export interface DecodedBatch {
  baseOffset: number; lastOffset: number; partitionLeaderEpoch: number;
  maxTimestamp: number; baseTimestamp: number;
  compression: BatchCompression; timestampType: TimestampType;
  producerId: number; producerEpoch: number; baseSequence: number;
  isTransactional: boolean; isControl: boolean;
  /** recordsCount from the header. */
  recordCount: number;
  /** Bytes the whole batch takes, 12 + batchLength. */
  sizeBytes: number;
  records: BatchRecord[];
}
export type BatchHeader = Omit<DecodedBatch, 'records'>;

const MAGIC = 2;
/** baseOffset + batchLength: the bytes not counted by batchLength. */
export const LOG_OVERHEAD = 12;
/** Header field positions (the layout above), for code that patches a batch in place. */
export const BATCH_LENGTH_OFFSET = 8;
export const PARTITION_LEADER_EPOCH_OFFSET = 12;
const MAGIC_OFFSET = 16;
export const CRC_OFFSET = 17;
/** The CRC covers the batch from here to its end. */
export const ATTRIBUTES_OFFSET = 21;
export const MAX_TIMESTAMP_OFFSET = 35;
export const RECORDS_COUNT_OFFSET = 57;
export const RECORDS_OFFSET = 61;
const COMPRESSIONS: readonly BatchCompression[] = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];
const TIMESTAMP_TYPE_BIT = 0x08;
const TRANSACTIONAL_BIT = 0x10;
const CONTROL_BIT = 0x20;

const corrupt = (message: string): KafkaError => new KafkaError('CORRUPT_MESSAGE', message);
const invalid = (message: string): KafkaError => new KafkaError('INVALID_RECORD', message);

function checkInt(name: string, v: number, min: number, max: number): number {
  if (!Number.isInteger(v) || v < min || v > max) throw invalid(`${name} ${v} must be an integer in [${min}, ${max}]`);
  return v;
}
const INT16: [number, number] = [-0x8000, 0x7fff];
const INT32: [number, number] = [-0x8000_0000, 0x7fff_ffff];
const SAFE: [number, number] = [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER];

const sizeOfBytes = (b: Uint8Array | null): number => (b === null ? 1 : sizeOfVarint(b.length) + b.length);

function checkBytes(name: string, b: unknown): void {
  if (b !== null && !(b instanceof Uint8Array)) throw invalid(`${name} must be a Buffer or null`);
}

export function encodeBatch(input: EncodeBatchInput): Buffer {
  const { records } = input;
  const first = records[0];
  if (first === undefined) throw invalid('a record batch needs at least one record');
  const baseOffset = checkInt('baseOffset', input.baseOffset, 0, Number.MAX_SAFE_INTEGER - records.length + 1);
  const compression = input.compression ?? 'none';
  if (compression !== 'none' && compression !== 'gzip') throw invalid(`compression ${String(compression)} is not supported`);

  const baseTimestamp = first.timestamp;
  let maxTimestamp = baseTimestamp;
  const deltas: number[] = new Array<number>(records.length);
  const sizes: number[] = new Array<number>(records.length);
  let recordsBytes = 0;
  records.forEach((rec, i) => {
    if (!Number.isSafeInteger(rec.timestamp)) throw new KafkaError('INVALID_TIMESTAMP', `record ${i}: timestamp ${rec.timestamp} is not a safe integer`);
    const delta = rec.timestamp - baseTimestamp;
    if (!Number.isSafeInteger(delta)) throw new KafkaError('INVALID_TIMESTAMP', `record ${i}: timestamp ${rec.timestamp} is too far from the first record's ${baseTimestamp}`);
    if (rec.timestamp > maxTimestamp) maxTimestamp = rec.timestamp;
    checkBytes(`record ${i} key`, rec.key);
    checkBytes(`record ${i} value`, rec.value);
    const headers = rec.headers ?? [];
    let size = 1 + sizeOfVarlong(delta) + sizeOfVarint(i) + sizeOfBytes(rec.key) + sizeOfBytes(rec.value) + sizeOfVarint(headers.length);
    for (const h of headers) {
      if (typeof h.key !== 'string') throw invalid(`record ${i}: header key must be a string`);
      checkBytes(`record ${i} header ${h.key} value`, h.value);
      const keyBytes = Buffer.byteLength(h.key, 'utf8');
      size += sizeOfVarint(keyBytes) + keyBytes + sizeOfBytes(h.value);
    }
    deltas[i] = delta;
    sizes[i] = size;
    recordsBytes += sizeOfVarint(size) + size;
  });

  const body = new ByteWriter(recordsBytes);
  records.forEach((rec, i) => {
    body.varint(sizes[i] as number).int8(0).varlong(deltas[i] as number).varint(i);
    writeBytes(body, rec.key);
    writeBytes(body, rec.value);
    const headers = rec.headers ?? [];
    body.varint(headers.length);
    for (const h of headers) {
      const keyBytes = Buffer.byteLength(h.key, 'utf8');
      body.varint(keyBytes).utf8(h.key, keyBytes);
      writeBytes(body, h.value);
    }
  });
  const block = compression === 'gzip' ? gzipSync(body.finish()) : body.finish();

  const attributes = COMPRESSIONS.indexOf(compression)
    | (input.timestampType === 'log-append' ? TIMESTAMP_TYPE_BIT : 0)
    | (input.isTransactional ? TRANSACTIONAL_BIT : 0)
    | (input.isControl ? CONTROL_BIT : 0);
  const w = new ByteWriter(RECORDS_OFFSET + block.length)
    .int64(baseOffset)
    .int32(0) // batchLength, patched below
    .int32(checkInt('partitionLeaderEpoch', input.partitionLeaderEpoch ?? -1, ...INT32))
    .int8(MAGIC)
    .uint32(0) // crc, patched below
    .int16(attributes)
    .int32(records.length - 1)
    .int64(baseTimestamp)
    .int64(maxTimestamp)
    .int64(checkInt('producerId', input.producerId ?? -1, ...SAFE))
    .int16(checkInt('producerEpoch', input.producerEpoch ?? -1, ...INT16))
    .int32(checkInt('baseSequence', input.baseSequence ?? -1, ...INT32))
    .int32(records.length)
    .bytes(block);
  const out = w.finish();
  w.patchInt32(LOG_OVERHEAD - 4, out.length - LOG_OVERHEAD);
  w.patchUInt32(CRC_OFFSET, crc32c(out.subarray(ATTRIBUTES_OFFSET)));
  return out;
}

function writeBytes(w: ByteWriter, b: Uint8Array | null): void {
  if (b === null) w.varint(-1);
  else w.varint(b.length).bytes(b);
}

/** The header of the batch at the start of `buf` (which may hold more batches after it). No CRC check, no decompression. */
export function readBatchHeader(buf: Buffer): BatchHeader {
  if (buf.length < LOG_OVERHEAD) throw corrupt(`record batch truncated: ${buf.length} bytes, the log overhead alone is ${LOG_OVERHEAD}`);
  const batchLength = buf.readInt32BE(LOG_OVERHEAD - 4);
  if (batchLength < RECORDS_OFFSET - LOG_OVERHEAD) {
    throw corrupt(`record batch length ${batchLength} is below the ${RECORDS_OFFSET - LOG_OVERHEAD}-byte minimum`);
  }
  const sizeBytes = LOG_OVERHEAD + batchLength;
  if (buf.length > MAGIC_OFFSET && buf[MAGIC_OFFSET] !== MAGIC) {
    throw corrupt(`record batch magic is ${String(buf[MAGIC_OFFSET])}, only magic ${MAGIC} (RecordBatch v2) is supported`);
  }
  if (buf.length < sizeBytes) throw corrupt(`record batch truncated: batchLength says ${sizeBytes} bytes, ${buf.length} present`);

  const r = new ByteReader(buf, 0, sizeBytes, 'record batch');
  const baseOffset = r.int64Number('baseOffset');
  r.int32('batchLength');
  const partitionLeaderEpoch = r.int32('partitionLeaderEpoch');
  r.int8('magic');
  r.uint32('crc');
  const attributes = r.int16('attributes');
  const compression = COMPRESSIONS[attributes & 0x07];
  if (compression === undefined) throw corrupt(`record batch at offset ${baseOffset}: unknown compression type id ${attributes & 0x07}`);
  const lastOffsetDelta = r.int32('lastOffsetDelta');
  const lastOffset = baseOffset + lastOffsetDelta;
  if (!Number.isSafeInteger(lastOffset)) throw corrupt(`record batch at offset ${baseOffset}: lastOffset is outside the safe integer range`);
  const baseTimestamp = r.int64Number('baseTimestamp');
  const maxTimestamp = r.int64Number('maxTimestamp');
  const producerId = r.int64Number('producerId');
  const producerEpoch = r.int16('producerEpoch');
  const baseSequence = r.int32('baseSequence');
  const recordCount = r.int32('recordsCount');
  if (recordCount < 0) throw corrupt(`record batch at offset ${baseOffset}: invalid record count ${recordCount}`);
  return {
    baseOffset, lastOffset, partitionLeaderEpoch, maxTimestamp, baseTimestamp, compression,
    timestampType: attributes & TIMESTAMP_TYPE_BIT ? 'log-append' : 'create',
    producerId, producerEpoch, baseSequence,
    isTransactional: (attributes & TRANSACTIONAL_BIT) !== 0,
    isControl: (attributes & CONTROL_BIT) !== 0,
    recordCount, sizeBytes,
  };
}

/** Decodes one batch; `buf` must hold exactly that batch. Records carry absolute offsets and timestamps. */
export function decodeBatch(buf: Buffer, opts: { verifyCrc?: boolean } = {}): DecodedBatch {
  const header = readBatchHeader(buf);
  if (buf.length !== header.sizeBytes) {
    throw corrupt(`record batch at offset ${header.baseOffset}: ${buf.length - header.sizeBytes} bytes after its end (use decodeBatches for several)`);
  }
  return decodeRecords(buf, header, opts.verifyCrc ?? true);
}

/** Decodes back-to-back batches (a log segment, a fetch response's record set). Empty input gives []. */
export function decodeBatches(buf: Buffer, opts: { verifyCrc?: boolean } = {}): DecodedBatch[] {
  const batches: DecodedBatch[] = [];
  for (let pos = 0; pos < buf.length;) {
    const view = buf.subarray(pos);
    const header = readBatchHeader(view);
    batches.push(decodeRecords(view.subarray(0, header.sizeBytes), header, opts.verifyCrc ?? true));
    pos += header.sizeBytes;
  }
  return batches;
}

/** Why one whole batch fails its CRC32C, or undefined when it passes. */
export function crcMismatch(batch: Buffer): string | undefined {
  const stored = batch.readUInt32BE(CRC_OFFSET);
  const computed = crc32c(batch.subarray(ATTRIBUTES_OFFSET));
  return stored === computed ? undefined : `CRC mismatch, stored 0x${stored.toString(16)}, computed 0x${computed.toString(16)}`;
}

function decodeRecords(buf: Buffer, header: BatchHeader, verifyCrc: boolean): DecodedBatch {
  const what = `record batch at offset ${header.baseOffset}`;
  if (verifyCrc) {
    const mismatch = crcMismatch(buf);
    if (mismatch) throw corrupt(`${what}: ${mismatch}`);
  }
  let block = buf.subarray(RECORDS_OFFSET);
  if (header.compression === 'gzip') {
    try {
      block = gunzipSync(block);
    } catch (e) {
      throw corrupt(`${what}: gzip records do not decompress (${(e as Error).message})`);
    }
  } else if (header.compression !== 'none') {
    throw invalid(`compression ${header.compression} is not supported`);
  }

  const r = new ByteReader(block, 0, block.length, what);
  const logAppendTime = header.timestampType === 'log-append' ? header.maxTimestamp : undefined;
  const records: BatchRecord[] = [];
  for (let i = 0; i < header.recordCount; i++) {
    if (r.remaining === 0) throw corrupt(`${what}: header declares ${header.recordCount} records, the batch holds ${i}`);
    records.push(readRecord(r, header, logAppendTime, what));
  }
  if (r.remaining !== 0) throw corrupt(`${what}: ${r.remaining} bytes after the last of ${header.recordCount} records`);
  return { ...header, records };
}

function readRecord(batch: ByteReader, header: BatchHeader, logAppendTime: number | undefined, what: string): BatchRecord {
  const size = batch.varint('record length');
  const at = batch.pos;
  batch.bytes(size, 'record body'); // bounds-checks the whole record, so offsets in errors stay block-relative
  const r = new ByteReader(batch.buf, at, at + size, what);
  r.int8('record attributes');
  const timestampDelta = r.varlongNumber('record timestampDelta');
  const offset = header.baseOffset + r.varint('record offsetDelta');
  const timestamp = logAppendTime ?? header.baseTimestamp + timestampDelta;
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(timestamp)) {
    throw corrupt(`${what}: record at byte ${at} has offset ${offset} / timestamp ${timestamp} outside the safe integer range`);
  }
  const key = readNullableBytes(r, 'record key');
  const value = readNullableBytes(r, 'record value');
  const headerCount = r.varint('record headersCount');
  if (headerCount < 0) throw corrupt(`${what}: record ${offset} has invalid header count ${headerCount}`);
  const headers: RecordHeader[] = [];
  for (let i = 0; i < headerCount; i++) {
    const keyLength = r.varint('header key length');
    if (keyLength < 0) throw corrupt(`${what}: record ${offset} has a null header key`);
    headers.push({ key: r.bytes(keyLength, 'header key').toString('utf8'), value: readNullableBytes(r, 'header value') });
  }
  if (r.remaining !== 0) throw corrupt(`${what}: record ${offset} declares ${size} bytes but its fields take ${size - r.remaining}`);
  return { offset, timestamp, key, value, headers };
}

/** Kafka reads any negative length as null. */
function readNullableBytes(r: ByteReader, field: string): Buffer | null {
  const length = r.varint(`${field} length`);
  return length < 0 ? null : r.bytes(length, field);
}

/** Rewrite baseOffset and partitionLeaderEpoch in place-copy; neither is covered by the CRC, so no re-encode. */
export function withBaseOffset(batch: Buffer, baseOffset: number, partitionLeaderEpoch: number): Buffer {
  const header = readBatchHeader(batch);
  if (batch.length !== header.sizeBytes) throw corrupt(`record batch at offset ${header.baseOffset}: ${batch.length - header.sizeBytes} bytes after its end`);
  checkInt('baseOffset', baseOffset, 0, Number.MAX_SAFE_INTEGER - (header.lastOffset - header.baseOffset));
  checkInt('partitionLeaderEpoch', partitionLeaderEpoch, ...INT32);
  const copy = Buffer.from(batch);
  copy.writeBigInt64BE(BigInt(baseOffset), 0);
  copy.writeInt32BE(partitionLeaderEpoch, LOG_OVERHEAD);
  return copy;
}
