/** Decoding a request body by its Content-Encoding (lib/http/content-encoding.ts), as API Gateway delivers it. */
import { deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../lib/errors.js';
import { MAX_DECOMPRESSED_BYTES, contentCodings, decodeBody } from '../../../lib/http/content-encoding.js';

const json = JSON.stringify({ entries: [{ id: '0', value: { type: 'STRING', data: 'héllo ✓' } }] });
const b64 = (b: Buffer) => b.toString('base64');

function refused(f: () => unknown): HttpError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(HttpError);
    return e as HttpError;
  }
  throw new Error('expected a refusal');
}

describe('Function: decodeBody', () => {
  it('passes a body without Content-Encoding through, text or base64', () => {
    expect(decodeBody(json, false, undefined)).toBe(json);
    expect(decodeBody(b64(Buffer.from(json)), true, undefined)).toBe(json);
    expect(decodeBody(json, false, 'identity')).toBe(json);
    expect(decodeBody(undefined, false, 'gzip')).toBe('');
  });

  it('decodes base64 to bytes before it decompresses, then reads UTF-8 (gzip, x-gzip, deflate, a list last-first)', () => {
    expect(decodeBody(b64(gzipSync(json)), true, 'gzip')).toBe(json);
    expect(decodeBody(b64(gzipSync(json)), true, 'X-GZIP')).toBe(json);
    expect(decodeBody(b64(deflateSync(json)), true, 'deflate')).toBe(json);
    expect(decodeBody(b64(gzipSync(deflateSync(json))), true, 'deflate, identity, gzip')).toBe(json);
  });

  it('refuses an unknown coding with 415 before decoding anything, even a name Object.prototype has', () => {
    for (const c of ['br', 'zstd', 'compress', 'constructor', 'gzip, br']) {
      const e = refused(() => decodeBody(b64(gzipSync(json)), true, c));
      expect([e.status, e.errorCode]).toEqual([415, 415]);
    }
  });

  it('refuses bytes that do not decompress with 400/40002, and hints at the Content-Type when they came as text', () => {
    const corrupt = refused(() => decodeBody(b64(gzipSync(json).subarray(0, 10)), true, 'gzip'));
    expect([corrupt.status, corrupt.errorCode]).toEqual([400, 40002]);
    expect(corrupt.message).toMatch(/not valid gzip data/);
    expect(corrupt.message).not.toMatch(/Content-Type/);
    // What a gateway makes of gzip bytes it passed as UTF-8 text.
    const mangled = refused(() => decodeBody(gzipSync(json).toString('utf8'), false, 'gzip'));
    expect(mangled.message).toMatch(/binary Content-Type such as application\/octet-stream/);
  });

  it('stops a decompression bomb at the limit with 413', () => {
    const bomb = b64(gzipSync(Buffer.alloc(MAX_DECOMPRESSED_BYTES + 1)));
    const e = refused(() => decodeBody(bomb, true, 'gzip'));
    expect([e.status, e.errorCode]).toEqual([413, 413]);
    expect(decodeBody(b64(gzipSync(Buffer.alloc(1000, 'a'))), true, 'gzip', 1000)).toHaveLength(1000);
    expect(refused(() => decodeBody(b64(gzipSync(Buffer.alloc(1001, 'a'))), true, 'gzip', 1000)).status).toBe(413);
  });
});

describe('Function: contentCodings', () => {
  it('lists the codings in the order applied, lower-cased, without identity or empties', () => {
    expect(contentCodings(undefined)).toEqual([]);
    expect(contentCodings(' GZIP , identity,,deflate ')).toEqual(['gzip', 'deflate']);
  });
});
