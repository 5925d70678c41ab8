/**
 * The S3 segment object, format version 1: pure bytes, no I/O. docs/segment-format.md is the
 * byte-by-byte reference; this is its summary (all integers big-endian, positions from the object's
 * first byte):
 *
 * Segment =>
 *   batch region   RecordBatch v2 bytes of the in-object batches, back to back in offset order,
 *                  with their real base offsets                                       @0
 *   offset index   [IndexEntry] one per batch (external ones too), offset order      @indexPosition
 *   time index     [TimeEntry] only where the running maximum timestamp grows         @timeIndexPosition
 *   keys           [Key] distinct external object keys, in order of first use         @keysPosition
 *   footer         FOOTER_BYTES                                                        @keysPosition+keysBytes
 * IndexEntry (44) => baseOffset int64, lastOffsetDelta uint32, leaderEpoch int32, maxTimestamp int64,
 *                    position int64, length uint32, recordCount uint32, keyNumber uint32 (0xffffffff: in this object)
 * TimeEntry (12) => timestamp int64, batchNumber uint32
 * Key => byteLength uint16, UTF-8 bytes
 * Footer (144) => baseOffset int64, endOffset int64, recordCount int64, minTimestamp int64,
 *   maxTimestamp int64, batchRegionBytes int64, indexPosition int64, indexBytes int64,
 *   timeIndexPosition int64, timeIndexBytes int64, keysPosition int64, keysBytes int64,
 *   batchCount uint32, externalCount uint32, timeIndexCount uint32, keyCount uint32,
 *   batchRegionCrc uint32, indexCrc uint32, timeIndexCrc uint32, keysCrc uint32,
 *   footerBytes uint32, magic "TRIBSEG", version uint8, footerCrc uint32 (CRC-32C of the 140 bytes before it)
 *
 * The last 16 bytes (footerBytes, magic, version, footerCrc) keep this layout in every version, so
 * a reader that fetched the tail can always tell a newer format from a damaged one.
 * Encoding is deterministic: the same batches give the same bytes, whoever rolls them.
 */
import { crc32c } from '@aws-crypto/crc32c';
import { KafkaError } from '../protocol/errors.js';
import { readBatchHeader, withBaseOffset } from '../protocol/record-batch.js';

export const SEGMENT_FORMAT_VERSION = 1;
export const FOOTER_BYTES = 144;
export const INDEX_ENTRY_BYTES = 44;
export const TIME_INDEX_ENTRY_BYTES = 12;
/** "TRIBSEG"; the format version byte follows it. */
export const SEGMENT_MAGIC = Buffer.from('TRIBSEG', 'ascii');
const IN_OBJECT = 0xffff_ffff;
const MAX_KEY_BYTES = 0xffff;
/** Kafka's lastOffsetDelta is an int32. */
const MAX_OFFSET_DELTA = 0x7fff_ffff;

// Footer field positions, relative to the footer's first byte.
const F = {
  baseOffset: 0, endOffset: 8, recordCount: 16, minTimestamp: 24, maxTimestamp: 32, batchRegionBytes: 40,
  indexPosition: 48, indexBytes: 56, timeIndexPosition: 64, timeIndexBytes: 72, keysPosition: 80, keysBytes: 88,
  batchCount: 96, externalCount: 100, timeIndexCount: 104, keyCount: 108,
  batchRegionCrc: 112, indexCrc: 116, timeIndexCrc: 120, keysCrc: 124,
  footerBytes: 128, magic: 132, version: 139, footerCrc: 140,
} as const;
/** The tail every version keeps: footerBytes, magic, version, footerCrc. */
const STABLE_TAIL_BYTES = FOOTER_BYTES - F.footerBytes;

/** One batch going into a segment: either its bytes (RecordBatch v2, real base offset) or a pointer to an external object (a `data/` object of a large produce request; the bytes there may carry base offset 0 and are rebased on read with withBaseOffset). */
export interface SegmentBatchInput {
  baseOffset: number; lastOffset: number; leaderEpoch: number; maxTimestamp: number; recordCount: number; sizeBytes: number;
  bytes?: Uint8Array;
  external?: { key: string; position: number; length: number };
}

export interface IndexEntry {
  baseOffset: number; lastOffset: number; leaderEpoch: number; maxTimestamp: number; recordCount: number;
  /** Where the batch's bytes are: in this object's batch region, or in `externalKey` when set. */
  position: number; length: number;
  /** undefined: in this object's batch region */
  externalKey?: string;
}

export interface SegmentFooter {
  version: number;
  baseOffset: number;
  /** Exclusive: the last batch's lastOffset + 1 (or the wider end given to encodeSegment). */
  endOffset: number;
  batchCount: number; externalCount: number; recordCount: number;
  /** The smallest and largest batch maxTimestamp (the format keeps no per-record minimum). */
  minTimestamp: number; maxTimestamp: number;
  batchRegionBytes: number;
  indexPosition: number; indexBytes: number;
  timeIndexPosition: number; timeIndexBytes: number; timeIndexCount: number;
  keysPosition: number; keysBytes: number; keyCount: number;
  batchRegionCrc: number; indexCrc: number; timeIndexCrc: number; keysCrc: number;
}

export interface TimeIndexEntry { timestamp: number; /** position in `entries` */ entry: number }

export interface SegmentIndex {
  footer: SegmentFooter;
  entries: IndexEntry[];
  /** Running-maximum points: `timestamp` is strictly increasing, `entry[0]` is batch 0. */
  timeIndex: TimeIndexEntry[];
  /** The distinct external object keys, in order of first use. */
  keys: string[];
}

export interface EncodedSegment { body: Buffer; footer: SegmentFooter; index: IndexEntry[] }

export interface EncodeSegmentOptions {
  /** Accept offset gaps between batches (a compacted rewrite drops whole batches). @default false */
  allowGaps?: boolean;
  /** The first offset the segment covers, when below its first batch (a compacted rewrite). @default the first batch's baseOffset */
  baseOffset?: number;
  /** The end (exclusive) the segment covers, when past its last batch (a compacted rewrite). @default the last batch's lastOffset + 1 */
  endOffset?: number;
}

/** A segment's bytes fail a check (magic, CRC, layout): the reader answers CORRUPT_MESSAGE and returns no bytes. */
export class SegmentCorrupt extends KafkaError {
  constructor(message: string, context: Record<string, unknown> = {}) {
    super('CORRUPT_MESSAGE', `Segment corrupt: ${message}`, context);
  }
}

/** A footer that verifies but names a format version this code does not know (written by newer code). Still CORRUPT_MESSAGE to clients. */
export class SegmentVersionUnsupported extends SegmentCorrupt {
  constructor(readonly version: number) {
    super(`format version ${version} is not supported (this reader knows version ${SEGMENT_FORMAT_VERSION})`, { version });
  }
}

/** The input to encodeSegment breaks its contract (a bug in the caller, not damaged data). */
export class InvalidSegmentInput extends Error {
  override readonly name = 'InvalidSegmentInput';
}

const int = (v: number, min: number, max: number): boolean => Number.isInteger(v) && v >= min && v <= max;

function checkInput(b: SegmentBatchInput, i: number): void {
  const bad = (why: string): never => { throw new InvalidSegmentInput(`batch ${i} (offset ${b.baseOffset}): ${why}`); };
  if (!int(b.baseOffset, 0, Number.MAX_SAFE_INTEGER - 1)) bad('baseOffset must be a non-negative safe integer');
  if (!int(b.lastOffset, b.baseOffset, Math.min(b.baseOffset + MAX_OFFSET_DELTA, Number.MAX_SAFE_INTEGER - 1))) bad(`lastOffset ${b.lastOffset} must be in [baseOffset, baseOffset + 2^31 - 1]`);
  if (!int(b.leaderEpoch, -0x8000_0000, 0x7fff_ffff)) bad('leaderEpoch must be an int32');
  if (!Number.isSafeInteger(b.maxTimestamp)) bad('maxTimestamp must be a safe integer');
  if (!int(b.recordCount, 0, 0x7fff_ffff)) bad('recordCount must be an int32 >= 0');
  if (!int(b.sizeBytes, 1, 0xffff_ffff)) bad('sizeBytes must be a uint32 > 0');
  if ((b.bytes === undefined) === (b.external === undefined)) bad('needs exactly one of bytes and external');
  if (b.bytes !== undefined) {
    if (b.bytes.length !== b.sizeBytes) bad(`holds ${b.bytes.length} bytes, sizeBytes says ${b.sizeBytes}`);
    let header;
    try {
      header = readBatchHeader(Buffer.from(b.bytes.buffer, b.bytes.byteOffset, b.bytes.length));
    } catch (e) {
      return bad(`bytes are not a RecordBatch v2: ${(e as Error).message}`);
    }
    if (header.sizeBytes !== b.sizeBytes) bad(`bytes hold a batch of ${header.sizeBytes} bytes and more after it`);
    if (header.baseOffset !== b.baseOffset || header.lastOffset !== b.lastOffset) {
      bad(`bytes carry offsets [${header.baseOffset}, ${header.lastOffset}], the input says [${b.baseOffset}, ${b.lastOffset}]`);
    }
  } else {
    const x = b.external as NonNullable<SegmentBatchInput['external']>;
    if (typeof x.key !== 'string' || x.key.length === 0 || Buffer.byteLength(x.key, 'utf8') > MAX_KEY_BYTES) bad('external key must be a non-empty string of at most 65535 UTF-8 bytes');
    if (!int(x.position, 0, Number.MAX_SAFE_INTEGER)) bad('external position must be a non-negative safe integer');
    if (x.length !== b.sizeBytes) bad(`external length ${x.length} differs from sizeBytes ${b.sizeBytes}`);
  }
}

/**
 * Lays out one segment object. Batches must be in offset order, non-overlapping and (unless
 * `allowGaps`) contiguous; in-object bytes must carry the offsets the input states.
 * Throws InvalidSegmentInput otherwise (and on an empty list).
 */
export function encodeSegment(batches: readonly SegmentBatchInput[], opts: EncodeSegmentOptions = {}): EncodedSegment {
  const first = batches[0];
  const last = batches[batches.length - 1];
  if (first === undefined || last === undefined) throw new InvalidSegmentInput('a segment needs at least one batch');
  batches.forEach((b, i) => {
    checkInput(b, i);
    const prev = batches[i - 1];
    if (prev === undefined) return;
    if (b.baseOffset <= prev.lastOffset) throw new InvalidSegmentInput(`batch ${i} starts at ${b.baseOffset}, overlapping or before batch ${i - 1} which ends at ${prev.lastOffset}`);
    if (b.baseOffset !== prev.lastOffset + 1 && !opts.allowGaps) throw new InvalidSegmentInput(`gap: batch ${i} starts at ${b.baseOffset}, batch ${i - 1} ends at ${prev.lastOffset}`);
  });
  const baseOffset = opts.baseOffset ?? first.baseOffset;
  const endOffset = opts.endOffset ?? last.lastOffset + 1;
  if (!int(baseOffset, 0, first.baseOffset)) throw new InvalidSegmentInput(`baseOffset ${baseOffset} must be in [0, ${first.baseOffset}]`);
  if (!int(endOffset, last.lastOffset + 1, Number.MAX_SAFE_INTEGER)) throw new InvalidSegmentInput(`endOffset ${endOffset} must be at least ${last.lastOffset + 1}`);

  const keys: string[] = [];
  const keyNumbers = new Map<string, number>();
  const index: IndexEntry[] = [];
  const timeIndex: TimeIndexEntry[] = [];
  const region: Uint8Array[] = [];
  let regionBytes = 0;
  let recordCount = 0;
  let externalCount = 0;
  let minTimestamp = Infinity;
  let maxTimestamp = -Infinity;
  batches.forEach((b, i) => {
    const common = { baseOffset: b.baseOffset, lastOffset: b.lastOffset, leaderEpoch: b.leaderEpoch, maxTimestamp: b.maxTimestamp, recordCount: b.recordCount };
    if (b.external) {
      externalCount++;
      if (!keyNumbers.has(b.external.key)) {
        keyNumbers.set(b.external.key, keys.length);
        keys.push(b.external.key);
      }
      index.push({ ...common, position: b.external.position, length: b.external.length, externalKey: b.external.key });
    } else {
      const bytes = b.bytes as Uint8Array;
      index.push({ ...common, position: regionBytes, length: bytes.length });
      region.push(bytes);
      regionBytes += bytes.length;
    }
    recordCount += b.recordCount;
    if (b.maxTimestamp < minTimestamp) minTimestamp = b.maxTimestamp;
    if (b.maxTimestamp > maxTimestamp) {
      maxTimestamp = b.maxTimestamp;
      timeIndex.push({ timestamp: b.maxTimestamp, entry: i });
    }
  });
  if (!Number.isSafeInteger(recordCount + regionBytes)) throw new InvalidSegmentInput('segment too large');

  const indexBuf = Buffer.alloc(index.length * INDEX_ENTRY_BYTES);
  index.forEach((e, i) => {
    const at = i * INDEX_ENTRY_BYTES;
    indexBuf.writeBigInt64BE(BigInt(e.baseOffset), at);
    indexBuf.writeUInt32BE(e.lastOffset - e.baseOffset, at + 8);
    indexBuf.writeInt32BE(e.leaderEpoch, at + 12);
    indexBuf.writeBigInt64BE(BigInt(e.maxTimestamp), at + 16);
    indexBuf.writeBigInt64BE(BigInt(e.position), at + 24);
    indexBuf.writeUInt32BE(e.length, at + 32);
    indexBuf.writeUInt32BE(e.recordCount, at + 36);
    indexBuf.writeUInt32BE(e.externalKey === undefined ? IN_OBJECT : keyNumbers.get(e.externalKey) as number, at + 40);
  });
  const timeBuf = Buffer.alloc(timeIndex.length * TIME_INDEX_ENTRY_BYTES);
  timeIndex.forEach((t, i) => {
    timeBuf.writeBigInt64BE(BigInt(t.timestamp), i * TIME_INDEX_ENTRY_BYTES);
    timeBuf.writeUInt32BE(t.entry, i * TIME_INDEX_ENTRY_BYTES + 8);
  });
  const keysBuf = Buffer.concat(keys.map((k) => {
    const utf8 = Buffer.from(k, 'utf8');
    const lengthPrefix = Buffer.alloc(2);
    lengthPrefix.writeUInt16BE(utf8.length);
    return Buffer.concat([lengthPrefix, utf8]);
  }));
  const regionBuf = Buffer.concat(region, regionBytes);

  const footer: SegmentFooter = {
    version: SEGMENT_FORMAT_VERSION, baseOffset, endOffset,
    batchCount: index.length, externalCount, recordCount, minTimestamp, maxTimestamp,
    batchRegionBytes: regionBytes,
    indexPosition: regionBytes, indexBytes: indexBuf.length,
    timeIndexPosition: regionBytes + indexBuf.length, timeIndexBytes: timeBuf.length, timeIndexCount: timeIndex.length,
    keysPosition: regionBytes + indexBuf.length + timeBuf.length, keysBytes: keysBuf.length, keyCount: keys.length,
    batchRegionCrc: crc32c(regionBuf), indexCrc: crc32c(indexBuf), timeIndexCrc: crc32c(timeBuf), keysCrc: crc32c(keysBuf),
  };
  const body = Buffer.concat([regionBuf, indexBuf, timeBuf, keysBuf, encodeFooter(footer)]);
  return { body, footer, index };
}

function encodeFooter(f: SegmentFooter): Buffer {
  const out = Buffer.alloc(FOOTER_BYTES);
  const i64 = (at: number, v: number): void => { out.writeBigInt64BE(BigInt(v), at); };
  i64(F.baseOffset, f.baseOffset); i64(F.endOffset, f.endOffset); i64(F.recordCount, f.recordCount);
  i64(F.minTimestamp, f.minTimestamp); i64(F.maxTimestamp, f.maxTimestamp); i64(F.batchRegionBytes, f.batchRegionBytes);
  i64(F.indexPosition, f.indexPosition); i64(F.indexBytes, f.indexBytes);
  i64(F.timeIndexPosition, f.timeIndexPosition); i64(F.timeIndexBytes, f.timeIndexBytes);
  i64(F.keysPosition, f.keysPosition); i64(F.keysBytes, f.keysBytes);
  out.writeUInt32BE(f.batchCount, F.batchCount); out.writeUInt32BE(f.externalCount, F.externalCount);
  out.writeUInt32BE(f.timeIndexCount, F.timeIndexCount); out.writeUInt32BE(f.keyCount, F.keyCount);
  out.writeUInt32BE(f.batchRegionCrc, F.batchRegionCrc); out.writeUInt32BE(f.indexCrc, F.indexCrc);
  out.writeUInt32BE(f.timeIndexCrc, F.timeIndexCrc); out.writeUInt32BE(f.keysCrc, F.keysCrc);
  out.writeUInt32BE(FOOTER_BYTES, F.footerBytes);
  SEGMENT_MAGIC.copy(out, F.magic);
  out.writeUInt8(f.version, F.version);
  out.writeUInt32BE(crc32c(out.subarray(0, F.footerCrc)), F.footerCrc);
  return out;
}

function int64(buf: Buffer, at: number, field: string): number {
  const v = Number(buf.readBigInt64BE(at));
  if (!Number.isSafeInteger(v)) throw new SegmentCorrupt(`${field} ${buf.readBigInt64BE(at)} is outside the safe integer range`);
  return v;
}

/** The object's total size per its footer (check it against the Content-Range of the footer GET). */
export const segmentObjectBytes = (f: SegmentFooter): number => f.keysPosition + f.keysBytes + FOOTER_BYTES;
/** The one ranged GET that decodeIndex needs: the index, time index and keys sections. */
export const indexRange = (f: SegmentFooter): { position: number; length: number } =>
  ({ position: f.indexPosition, length: f.indexBytes + f.timeIndexBytes + f.keysBytes });

/**
 * Decodes the footer from `tail`, the object's last FOOTER_BYTES or more (a suffix-range GET).
 * `objectBytes`, when known, must match the size the footer implies. Throws SegmentCorrupt on bad
 * magic, CRC or layout; SegmentVersionUnsupported when a verified footer has a version this code
 * does not know.
 */
export function decodeFooter(tail: Uint8Array, objectBytes?: number): SegmentFooter {
  const t = Buffer.from(tail.buffer, tail.byteOffset, tail.length);
  if (t.length < FOOTER_BYTES) throw new SegmentCorrupt(`${t.length} bytes is shorter than the ${FOOTER_BYTES}-byte footer`);
  const f = t.subarray(t.length - FOOTER_BYTES);
  if (!f.subarray(F.magic, F.magic + SEGMENT_MAGIC.length).equals(SEGMENT_MAGIC)) throw new SegmentCorrupt('bad magic: not a segment object');
  const version = f.readUInt8(F.version);
  const footerBytes = f.readUInt32BE(F.footerBytes);
  const storedCrc = f.readUInt32BE(F.footerCrc);
  if (version !== SEGMENT_FORMAT_VERSION) {
    // Another version's footer may be longer: it verifies only over its own length.
    const other = footerBytes >= STABLE_TAIL_BYTES && footerBytes <= t.length ? t.subarray(t.length - footerBytes) : undefined;
    if (other !== undefined && crc32c(other.subarray(0, footerBytes - 4)) === storedCrc) throw new SegmentVersionUnsupported(version);
    throw new SegmentCorrupt(`footer CRC mismatch (version byte reads ${version})`);
  }
  if (footerBytes !== FOOTER_BYTES) throw new SegmentCorrupt(`footer says ${footerBytes} bytes, version ${version} footers are ${FOOTER_BYTES}`);
  const computed = crc32c(f.subarray(0, F.footerCrc));
  if (computed !== storedCrc) throw new SegmentCorrupt(`footer CRC mismatch: stored 0x${storedCrc.toString(16)}, computed 0x${computed.toString(16)}`);

  const footer: SegmentFooter = {
    version,
    baseOffset: int64(f, F.baseOffset, 'baseOffset'), endOffset: int64(f, F.endOffset, 'endOffset'),
    batchCount: f.readUInt32BE(F.batchCount), externalCount: f.readUInt32BE(F.externalCount),
    recordCount: int64(f, F.recordCount, 'recordCount'),
    minTimestamp: int64(f, F.minTimestamp, 'minTimestamp'), maxTimestamp: int64(f, F.maxTimestamp, 'maxTimestamp'),
    batchRegionBytes: int64(f, F.batchRegionBytes, 'batchRegionBytes'),
    indexPosition: int64(f, F.indexPosition, 'indexPosition'), indexBytes: int64(f, F.indexBytes, 'indexBytes'),
    timeIndexPosition: int64(f, F.timeIndexPosition, 'timeIndexPosition'), timeIndexBytes: int64(f, F.timeIndexBytes, 'timeIndexBytes'),
    timeIndexCount: f.readUInt32BE(F.timeIndexCount),
    keysPosition: int64(f, F.keysPosition, 'keysPosition'), keysBytes: int64(f, F.keysBytes, 'keysBytes'),
    keyCount: f.readUInt32BE(F.keyCount),
    batchRegionCrc: f.readUInt32BE(F.batchRegionCrc), indexCrc: f.readUInt32BE(F.indexCrc),
    timeIndexCrc: f.readUInt32BE(F.timeIndexCrc), keysCrc: f.readUInt32BE(F.keysCrc),
  };
  // A footer that verifies but does not add up was written by a broken writer: same answer.
  const layout: [string, boolean][] = [
    ['offsets', footer.baseOffset >= 0 && footer.endOffset > footer.baseOffset],
    ['batch count', footer.batchCount >= 1 && footer.externalCount <= footer.batchCount && footer.batchCount <= footer.endOffset - footer.baseOffset],
    ['time index count', footer.timeIndexCount >= 1 && footer.timeIndexCount <= footer.batchCount],
    ['key count', footer.keyCount <= footer.externalCount && (footer.keyCount > 0) === (footer.externalCount > 0)],
    ['timestamps', footer.minTimestamp <= footer.maxTimestamp],
    ['batch region', footer.batchRegionBytes >= 0 && footer.indexPosition === footer.batchRegionBytes],
    ['index', footer.indexBytes === footer.batchCount * INDEX_ENTRY_BYTES && footer.timeIndexPosition === footer.indexPosition + footer.indexBytes],
    ['time index', footer.timeIndexBytes === footer.timeIndexCount * TIME_INDEX_ENTRY_BYTES && footer.keysPosition === footer.timeIndexPosition + footer.timeIndexBytes],
    ['keys', footer.keysBytes >= footer.keyCount * 3 && Number.isSafeInteger(segmentObjectBytes(footer))],
  ];
  const broken = layout.find(([, ok]) => !ok);
  if (broken) throw new SegmentCorrupt(`footer layout does not add up (${broken[0]})`, { footer });
  if (objectBytes !== undefined && objectBytes !== segmentObjectBytes(footer)) {
    throw new SegmentCorrupt(`object is ${objectBytes} bytes, its footer describes ${segmentObjectBytes(footer)}`);
  }
  return footer;
}

/**
 * Decodes the index sections from `buf`, the bytes indexRange(footer) names (index, time index and
 * keys, fetched with one ranged GET). Throws SegmentCorrupt when a CRC or the layout is wrong.
 */
export function decodeIndex(buf: Uint8Array, footer: SegmentFooter): SegmentIndex {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.length);
  const { length } = indexRange(footer);
  if (b.length !== length) throw new SegmentCorrupt(`index sections are ${b.length} bytes, the footer says ${length}`);
  const indexBuf = b.subarray(0, footer.indexBytes);
  const timeBuf = b.subarray(footer.indexBytes, footer.indexBytes + footer.timeIndexBytes);
  const keysBuf = b.subarray(footer.indexBytes + footer.timeIndexBytes);
  for (const [name, section, crc] of [['offset index', indexBuf, footer.indexCrc], ['time index', timeBuf, footer.timeIndexCrc], ['keys', keysBuf, footer.keysCrc]] as const) {
    const computed = crc32c(section);
    if (computed !== crc) throw new SegmentCorrupt(`${name} CRC mismatch: stored 0x${crc.toString(16)}, computed 0x${computed.toString(16)}`);
  }

  const keys: string[] = [];
  for (let at = 0; at < keysBuf.length;) {
    if (at + 2 > keysBuf.length) throw new SegmentCorrupt('keys table truncated');
    const n = keysBuf.readUInt16BE(at);
    if (at + 2 + n > keysBuf.length) throw new SegmentCorrupt('keys table truncated');
    keys.push(keysBuf.toString('utf8', at + 2, at + 2 + n));
    at += 2 + n;
  }
  if (keys.length !== footer.keyCount) throw new SegmentCorrupt(`keys table holds ${keys.length} keys, the footer says ${footer.keyCount}`);

  const entries: IndexEntry[] = [];
  let regionAt = 0;
  let externals = 0;
  let records = 0;
  let minTimestamp = Infinity;
  for (let i = 0; i < footer.batchCount; i++) {
    const at = i * INDEX_ENTRY_BYTES;
    const baseOffset = int64(indexBuf, at, 'index baseOffset');
    const entry: IndexEntry = {
      baseOffset, lastOffset: baseOffset + indexBuf.readUInt32BE(at + 8), leaderEpoch: indexBuf.readInt32BE(at + 12),
      maxTimestamp: int64(indexBuf, at + 16, 'index maxTimestamp'), recordCount: indexBuf.readUInt32BE(at + 36),
      position: int64(indexBuf, at + 24, 'index position'), length: indexBuf.readUInt32BE(at + 32),
    };
    const keyNumber = indexBuf.readUInt32BE(at + 40);
    const prev = entries[i - 1];
    if ((prev === undefined ? entry.baseOffset < footer.baseOffset : entry.baseOffset <= prev.lastOffset) || entry.lastOffset >= footer.endOffset) {
      throw new SegmentCorrupt(`index entry ${i} [${entry.baseOffset}, ${entry.lastOffset}] is out of order or outside [${footer.baseOffset}, ${footer.endOffset})`);
    }
    if (keyNumber === IN_OBJECT) {
      if (entry.position !== regionAt) throw new SegmentCorrupt(`index entry ${i} is at ${entry.position}, the batch region continues at ${regionAt}`);
      regionAt += entry.length;
    } else {
      const key = keys[keyNumber];
      if (key === undefined) throw new SegmentCorrupt(`index entry ${i} names key ${keyNumber} of ${keys.length}`);
      entry.externalKey = key;
      externals++;
    }
    records += entry.recordCount;
    minTimestamp = Math.min(minTimestamp, entry.maxTimestamp);
    entries.push(entry);
  }
  if (regionAt !== footer.batchRegionBytes || externals !== footer.externalCount || records !== footer.recordCount || minTimestamp !== footer.minTimestamp) {
    throw new SegmentCorrupt('index entries do not add up to the footer\'s batch region, external and record counts and minimum timestamp');
  }

  const timeIndex: TimeIndexEntry[] = [];
  let runningMax = -Infinity;
  let expectedNext = 0;
  for (let i = 0; i < footer.timeIndexCount; i++) {
    const timestamp = int64(timeBuf, i * TIME_INDEX_ENTRY_BYTES, 'time index timestamp');
    const entry = timeBuf.readUInt32BE(i * TIME_INDEX_ENTRY_BYTES + 8);
    // Every batch between two time index points must stay at or below the running maximum.
    const target = entries[entry];
    if (target === undefined || entry < expectedNext || timestamp <= runningMax || target.maxTimestamp !== timestamp
      || (i === 0 && entry !== 0)) {
      throw new SegmentCorrupt(`time index entry ${i} (${timestamp}, batch ${entry}) is not a running maximum of the offset index`);
    }
    for (let j = expectedNext; j < entry; j++) {
      if ((entries[j] as IndexEntry).maxTimestamp > runningMax) throw new SegmentCorrupt(`time index misses the running maximum at batch ${j}`);
    }
    runningMax = timestamp;
    expectedNext = entry + 1;
    timeIndex.push({ timestamp, entry });
  }
  for (let j = expectedNext; j < entries.length; j++) {
    if ((entries[j] as IndexEntry).maxTimestamp > runningMax) throw new SegmentCorrupt(`time index misses the running maximum at batch ${j}`);
  }
  if (runningMax !== footer.maxTimestamp) throw new SegmentCorrupt('time index maximum differs from the footer\'s maxTimestamp');
  return { footer, entries, timeIndex, keys };
}

/**
 * The position in `entries` of the batch holding `offset`, or of the first batch after it (an
 * offset below the first batch, or in a compaction gap); -1 when `offset` is past the last batch.
 */
export function entryFor(index: SegmentIndex, offset: number): number {
  const { entries } = index;
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((entries[mid] as IndexEntry).lastOffset < offset) lo = mid + 1;
    else hi = mid;
  }
  return lo < entries.length ? lo : -1;
}

/**
 * The position in `entries` of the first batch whose maxTimestamp is >= `timestamp`, -1 if none:
 * Kafka's ListOffsets by timestamp, at batch granularity (the caller finds the record in it). The
 * first batch whose running maximum reaches the target is that batch, so the time index answers alone.
 */
export function entryForTimestamp(index: SegmentIndex, timestamp: number): number {
  const t = index.timeIndex;
  let lo = 0;
  let hi = t.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((t[mid] as TimeIndexEntry).timestamp < timestamp) lo = mid + 1;
    else hi = mid;
  }
  return lo < t.length ? (t[lo] as TimeIndexEntry).entry : -1;
}

/** One GET: a byte range of this object (`key` undefined) or of an external object, holding entries [first, first + count). */
export interface ReadRange { key?: string; position: number; length: number; first: number; count: number }
export interface ReadPlan { ranges: ReadRange[]; /** Batch bytes the ranges hold. */ bytes: number; /** The offset after the last planned batch. */ nextOffset: number }

/**
 * Which ranged GETs return the batches from `fromOffset` on, up to `maxBytes` of batch bytes (and
 * at least one batch, as Kafka's fetch does). Consecutive in-object batches coalesce into one range,
 * as do consecutive external batches that sit back to back in one object. No ranges when
 * `fromOffset` is past the last batch.
 */
export function readPlan(index: SegmentIndex, fromOffset: number, maxBytes: number): ReadPlan {
  const ranges: ReadRange[] = [];
  let bytes = 0;
  let nextOffset = fromOffset;
  const start = entryFor(index, fromOffset);
  if (start < 0) return { ranges, bytes, nextOffset: Math.max(fromOffset, index.footer.endOffset) };
  for (let i = start; i < index.entries.length; i++) {
    const e = index.entries[i] as IndexEntry;
    if (i > start && bytes + e.length > maxBytes) break;
    const prev = ranges[ranges.length - 1];
    if (prev !== undefined && prev.key === e.externalKey && prev.position + prev.length === e.position) {
      prev.length += e.length;
      prev.count++;
    } else {
      ranges.push({ ...(e.externalKey !== undefined ? { key: e.externalKey } : {}), position: e.position, length: e.length, first: i, count: 1 });
    }
    bytes += e.length;
    nextOffset = e.lastOffset + 1;
  }
  return { ranges, bytes, nextOffset };
}

/**
 * Cuts the bytes a range's GET returned into its batches, each with its real base offset and leader
 * epoch (external ones are rebased). Throws SegmentCorrupt when a batch header disagrees with its
 * index entry (a wrong or replaced object); the batches' own CRCs are checked when they are decoded.
 */
export function batchesOf(index: SegmentIndex, range: ReadRange, data: Uint8Array): Buffer[] {
  const buf = Buffer.from(data.buffer, data.byteOffset, data.length);
  if (buf.length !== range.length) throw new SegmentCorrupt(`range at ${range.position} returned ${buf.length} bytes, ${range.length} expected`);
  const out: Buffer[] = [];
  let at = 0;
  for (let i = range.first; i < range.first + range.count; i++) {
    const e = index.entries[i] as IndexEntry;
    const bytes = buf.subarray(at, at + e.length);
    at += e.length;
    let header;
    try {
      header = readBatchHeader(bytes);
    } catch (err) {
      throw new SegmentCorrupt(`batch ${i} at offset ${e.baseOffset}: ${(err as Error).message}`);
    }
    const delta = header.lastOffset - header.baseOffset;
    const offsetsOk = e.externalKey !== undefined ? delta === e.lastOffset - e.baseOffset : header.baseOffset === e.baseOffset && header.lastOffset === e.lastOffset;
    if (header.sizeBytes !== e.length || !offsetsOk) {
      throw new SegmentCorrupt(`batch ${i}: header [${header.baseOffset}, ${header.lastOffset}] of ${header.sizeBytes} bytes, index says [${e.baseOffset}, ${e.lastOffset}] of ${e.length}`);
    }
    out.push(e.externalKey !== undefined ? withBaseOffset(bytes, e.baseOffset, e.leaderEpoch) : bytes);
  }
  return out;
}

/** Checks a whole batch region (a compaction or a scrub reads it all) against the footer's CRC. */
export function verifyBatchRegion(region: Uint8Array, footer: SegmentFooter): void {
  if (region.length !== footer.batchRegionBytes) throw new SegmentCorrupt(`batch region is ${region.length} bytes, the footer says ${footer.batchRegionBytes}`);
  const computed = crc32c(region);
  if (computed !== footer.batchRegionCrc) throw new SegmentCorrupt(`batch region CRC mismatch: stored 0x${footer.batchRegionCrc.toString(16)}, computed 0x${computed.toString(16)}`);
}
