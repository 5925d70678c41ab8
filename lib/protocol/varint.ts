/**
 * Zigzag varints as Kafka's ByteUtils writes them, plus the growable writer and bounds-checked reader
 * the record codec is built on.
 *
 *   varint  => zigzag(int32)  = (v << 1) ^ (v >> 31), then unsigned LEB128, 1..5 bytes
 *   varlong => zigzag(int64)  = (v << 1) ^ (v >> 63), then unsigned LEB128, 1..10 bytes
 *   LEB128  => 7 bits per byte, least significant group first, high bit set on every byte but the last
 *
 *   0 -> 00, -1 -> 01, 1 -> 02, 63 -> 7e, -64 -> 7f, 64 -> 80 01, 300 -> d8 04
 *
 * Reading past the end is a KafkaError CORRUPT_MESSAGE, never a RangeError: every byte the reader hands
 * out has been checked against its window first, because what it reads came off a wire or out of storage.
 */
import { KafkaError } from './errors.js';

const INT32_MIN = -0x8000_0000;
const INT32_MAX = 0x7fff_ffff;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

const corrupt = (message: string): KafkaError => new KafkaError('CORRUPT_MESSAGE', message);
const invalid = (message: string): KafkaError => new KafkaError('INVALID_RECORD', message);

const isInt32 = (v: number): boolean => Number.isInteger(v) && v >= INT32_MIN && v <= INT32_MAX;

/** Small enough that zigzag (2v or -2v - 1) stays below 2^53, where float arithmetic is still exact. */
const isSmall = (value: number | bigint): value is number =>
  typeof value === 'number' && Number.isInteger(value) && Math.abs(value) < 2 ** 52;

function toInt64(value: number | bigint): bigint {
  if (typeof value === 'number' && !Number.isSafeInteger(value)) throw invalid(`varlong ${value} is not a safe integer`);
  const v = BigInt(value);
  if (v < INT64_MIN || v > INT64_MAX) throw invalid(`varlong ${v} is outside the int64 range`);
  return v;
}

const zigzag64 = (v: bigint): bigint => BigInt.asUintN(64, (v << 1n) ^ (v >> 63n));

/** Bytes `writeVarint(v)` takes (Kafka's ByteUtils.sizeOfVarint). */
export function sizeOfVarint(value: number): number {
  let v = ((value << 1) ^ (value >> 31)) >>> 0;
  let bytes = 1;
  while (v > 0x7f) { v >>>= 7; bytes++; }
  return bytes;
}

/** Bytes `writeVarlong(v)` takes (Kafka's ByteUtils.sizeOfVarlong). */
export function sizeOfVarlong(value: number | bigint): number {
  if (isSmall(value)) {
    let v = value >= 0 ? value * 2 : -value * 2 - 1;
    let bytes = 1;
    while (v > 0x7f) { v = Math.floor(v / 128); bytes++; }
    return bytes;
  }
  let v = zigzag64(toInt64(value));
  let bytes = 1;
  while (v > 0x7fn) { v >>= 7n; bytes++; }
  return bytes;
}

/** A byte buffer that grows as it is written; `finish()` hands back exactly the bytes written. */
export class ByteWriter {
  private buf: Buffer;
  private pos = 0;

  constructor(initialCapacity = 256) {
    this.buf = Buffer.allocUnsafe(Math.max(16, initialCapacity));
  }

  get length(): number { return this.pos; }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  int8(v: number): this { this.ensure(1); this.pos = this.buf.writeInt8(v, this.pos); return this; }
  int16(v: number): this { this.ensure(2); this.pos = this.buf.writeInt16BE(v, this.pos); return this; }
  int32(v: number): this { this.ensure(4); this.pos = this.buf.writeInt32BE(v, this.pos); return this; }
  uint32(v: number): this { this.ensure(4); this.pos = this.buf.writeUInt32BE(v, this.pos); return this; }
  int64(v: number | bigint): this {
    this.ensure(8);
    this.pos = this.buf.writeBigInt64BE(toInt64(v), this.pos);
    return this;
  }

  bytes(b: Uint8Array): this {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
    return this;
  }

  utf8(s: string, byteLength = Buffer.byteLength(s, 'utf8')): this {
    this.ensure(byteLength);
    this.pos += this.buf.write(s, this.pos, byteLength, 'utf8');
    return this;
  }

  /** Kafka's ByteUtils.writeVarint: zigzag int32, 1..5 bytes. */
  varint(value: number): this {
    if (!isInt32(value)) throw invalid(`varint ${value} is outside the int32 range`);
    let v = ((value << 1) ^ (value >> 31)) >>> 0;
    this.ensure(5);
    while (v > 0x7f) {
      this.buf[this.pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[this.pos++] = v;
    return this;
  }

  /** Kafka's ByteUtils.writeVarlong: zigzag int64, 1..10 bytes. Numbers below 2^52 skip bigint. */
  varlong(value: number | bigint): this {
    this.ensure(10);
    if (isSmall(value)) {
      let v = value >= 0 ? value * 2 : -value * 2 - 1;
      while (v > 0x7f) {
        this.buf[this.pos++] = (v % 128) | 0x80;
        v = Math.floor(v / 128);
      }
      this.buf[this.pos++] = v;
      return this;
    }
    let v = zigzag64(toInt64(value));
    while (v > 0x7fn) {
      this.buf[this.pos++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.buf[this.pos++] = Number(v);
    return this;
  }

  /** Overwrite 4 bytes already written (a length or CRC known only once the body is done). */
  patchInt32(at: number, v: number): this { this.buf.writeInt32BE(v, at); return this; }
  patchUInt32(at: number, v: number): this { this.buf.writeUInt32BE(v, at); return this; }

  /** The bytes written so far, as a view (no copy). */
  finish(): Buffer { return this.buf.subarray(0, this.pos); }
}

/**
 * Reads big-endian integers and varints from `buf[start, end)`. Every read checks the window first and
 * throws CORRUPT_MESSAGE naming what it was reading (`what`) and where, so truncation is never a RangeError.
 */
export class ByteReader {
  pos: number;

  constructor(
    readonly buf: Buffer,
    start = 0,
    readonly end = buf.length,
    /** What the bytes are, for error messages ("record batch", "record 3"). */
    readonly what = 'buffer',
  ) {
    this.pos = start;
  }

  get remaining(): number { return this.end - this.pos; }

  private need(n: number, field: string): number {
    if (n > this.end - this.pos) {
      throw corrupt(`${this.what} truncated reading ${field} at offset ${this.pos}: need ${n} bytes, ${this.end - this.pos} left`);
    }
    const at = this.pos;
    this.pos += n;
    return at;
  }

  int8(field = 'int8'): number { return this.buf.readInt8(this.need(1, field)); }
  int16(field = 'int16'): number { return this.buf.readInt16BE(this.need(2, field)); }
  int32(field = 'int32'): number { return this.buf.readInt32BE(this.need(4, field)); }
  uint32(field = 'uint32'): number { return this.buf.readUInt32BE(this.need(4, field)); }
  int64(field = 'int64'): bigint { return this.buf.readBigInt64BE(this.need(8, field)); }

  /** An int64 that must fit a JS number exactly (offsets, timestamps, producer ids). */
  int64Number(field = 'int64'): number {
    const v = this.int64(field);
    if (v < BigInt(Number.MIN_SAFE_INTEGER) || v > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw corrupt(`${this.what}: ${field} ${v} is outside the safe integer range`);
    }
    return Number(v);
  }

  /** `n` bytes as a view into the underlying buffer (no copy). */
  bytes(n: number, field = 'bytes'): Buffer {
    if (n < 0) throw corrupt(`${this.what}: negative length ${n} for ${field} at offset ${this.pos}`);
    const at = this.need(n, field);
    return this.buf.subarray(at, at + n);
  }

  /** Kafka's ByteUtils.readVarint: at most 5 bytes; bits past 32 are dropped exactly as Java's int shift drops them. */
  varint(field = 'varint'): number {
    const start = this.pos;
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      if (shift > 28) throw corrupt(`${this.what}: ${field} at offset ${start} is longer than 5 bytes`);
      const b = this.buf[this.need(1, field)] as number;
      value |= (b & 0x7f) << shift;
      if (b < 0x80) break;
    }
    return (value >>> 1) ^ -(value & 1);
  }

  /** Kafka's ByteUtils.readVarlong: at most 10 bytes, the full int64 range. */
  varlong(field = 'varlong'): bigint {
    const start = this.pos;
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (shift > 63n) throw corrupt(`${this.what}: ${field} at offset ${start} is longer than 10 bytes`);
      const b = this.buf[this.need(1, field)] as number;
      value |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) break;
    }
    value = BigInt.asUintN(64, value);
    return BigInt.asIntN(64, (value >> 1n) ^ -(value & 1n));
  }

  /**
   * A varlong that must fit a JS number exactly (timestamp deltas). Up to 7 bytes (49 bits) decode in
   * float arithmetic; longer encodings go through bigint and are rejected if they are not safe integers.
   */
  varlongNumber(field = 'varlong'): number {
    const start = this.pos;
    let zz = 0;
    let scale = 1;
    for (let i = 0; i < 7; i++) {
      const b = this.buf[this.need(1, field)] as number;
      zz += (b & 0x7f) * scale;
      if (b < 0x80) return zz % 2 === 0 ? zz / 2 : -(zz + 1) / 2;
      scale *= 128;
    }
    this.pos = start;
    const v = this.varlong(field);
    if (v < BigInt(Number.MIN_SAFE_INTEGER) || v > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw corrupt(`${this.what}: ${field} ${v} at offset ${start} is outside the safe integer range`);
    }
    return Number(v);
  }
}
