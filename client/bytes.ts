/**
 * Bytes without Node: UTF-8 through TextEncoder and base64 through btoa/atob, which
 * Node 20, browsers and edge runtimes all have. Values come back as Buffers where Buffer exists
 * (kafkajs users call `message.value.toString()`), else as Uint8Arrays.
 */

const encoder = new TextEncoder();

/** What a key, value or header value may be: text (sent as UTF-8), bytes, or Kafka's null. */
export type Bytes = string | Uint8Array | null | undefined;

export const utf8 = (s: string): Uint8Array => encoder.encode(s);

export function toBase64(b: Uint8Array): string {
  let s = '';
  // In chunks: String.fromCharCode(...all) overflows the stack on large values.
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
  return btoa(s);
}

export function fromBase64(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

const NodeBuffer = (globalThis as { Buffer?: { from(a: ArrayBufferLike, offset: number, length: number): Uint8Array } }).Buffer;

/** A Buffer where Buffer exists (sharing the memory), else the bytes as they are. */
export const asBuffer = (b: Uint8Array): Uint8Array => (NodeBuffer ? NodeBuffer.from(b.buffer, b.byteOffset, b.length) : b);

/** The bytes of a key or value, for partitioning and size accounting. */
export const bytesOf = (v: string | Uint8Array): Uint8Array => (typeof v === 'string' ? utf8(v) : v);

/** A key or value in the v3 produce form: text as STRING (no base64 cost), bytes as BINARY. */
export function wireData(v: Bytes): { type: 'STRING' | 'BINARY'; data: string } | null {
  if (v === null || v === undefined) return null;
  return typeof v === 'string' ? { type: 'STRING', data: v } : { type: 'BINARY', data: toBase64(v) };
}

/** A key or value from a v3 fetch answer (`format=binary`). */
export function readData(d: unknown): Uint8Array | null {
  if (!d || typeof d !== 'object') return null;
  const { type, data } = d as { type?: string; data?: unknown };
  if (data === null || data === undefined) return null;
  if (type === 'BINARY' && typeof data === 'string') return asBuffer(fromBase64(data));
  return asBuffer(utf8(typeof data === 'string' ? data : JSON.stringify(data)));
}

/**
 * `text` as UTF-8, gzipped with the platform's CompressionStream (Node 18+, browsers, edge
 * runtimes), so the client needs no zlib.
 */
export async function gzipText(text: string): Promise<Uint8Array<ArrayBuffer>> {
  const compressed = new Blob([text]).stream().pipeThrough(new CompressionStream('gzip'));
  return new Uint8Array(await new Response(compressed).arrayBuffer());
}
