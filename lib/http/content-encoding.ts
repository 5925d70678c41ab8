/**
 * Request bodies sent compressed (`Content-Encoding: gzip` or `deflate`): the event's body is
 * turned back into bytes (base64 when API Gateway encoded it), decompressed, bounded, and only
 * then read as UTF-8. A gzip body is binary whatever its Content-Type says, so it must never be
 * read as text before it is decompressed.
 */
import { gunzipSync, inflateSync } from 'node:zlib';
import { HttpError } from '../errors.js';

/**
 * The most a compressed body may decompress to: twice Lambda's 6 MB event, the most an
 * uncompressed request can carry (JSON with base64 values shrinks several times under gzip, so a
 * compressed request may hold more records than an uncompressed one). It bounds a decompression
 * bomb: zlib stops at this size instead of filling the function's memory.
 */
export const MAX_DECOMPRESSED_BYTES = 12 * 1024 * 1024;

type Decoder = (b: Buffer, o: { maxOutputLength: number }) => Buffer;
const DECODERS = new Map<string, Decoder>([['gzip', gunzipSync], ['x-gzip', gunzipSync], ['deflate', inflateSync]]);

/** The codings of a Content-Encoding header, in the order they were applied ('' and identity dropped). */
export function contentCodings(header: string | undefined): string[] {
  if (header === undefined) return [];
  return header.split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity');
}

/**
 * The body's text: `raw` (base64 when `isBase64Encoded`) undone coding by coding, last applied
 * first. 415/415 for a coding other than gzip, deflate or identity; 400/40002 for bytes that do
 * not decompress; 413/413 past {@link MAX_DECOMPRESSED_BYTES}.
 */
export function decodeBody(raw: string | undefined, isBase64Encoded: boolean, contentEncoding: string | undefined, limit = MAX_DECOMPRESSED_BYTES): string {
  if (raw === undefined) return '';
  const codings = contentCodings(contentEncoding);
  if (codings.length === 0) return isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
  for (const c of codings) {
    if (!DECODERS.has(c)) {
      throw new HttpError(415, 415, `HTTP 415 Unsupported Media Type: Content-Encoding '${c}' is not supported; use gzip, deflate or identity.`);
    }
  }
  let bytes: Buffer = isBase64Encoded ? Buffer.from(raw, 'base64') : Buffer.from(raw, 'utf8');
  if (bytes.length === 0) return '';
  for (const c of [...codings].reverse()) {
    const decode = DECODERS.get(c) as Decoder;
    try {
      bytes = decode(bytes, { maxOutputLength: limit });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
        throw new HttpError(413, 413, `HTTP 413 Request Entity Too Large: the ${c} body decompresses to more than ${limit} bytes.`);
      }
      // Text-typed bodies reach the function as UTF-8 text, which mangles compressed bytes.
      const hint = isBase64Encoded ? '' : ' (send compressed bodies with a binary Content-Type such as application/octet-stream, so the gateway passes their bytes unchanged)';
      throw new HttpError(400, 40002, `The request body is not valid ${c} data: ${(err as Error).message}${hint}.`);
    }
  }
  return bytes.toString('utf8');
}
