import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { prepareBatches, type BatchOptions } from '../../../lib/log/batches.js';
import { decodeBatch } from '../../../lib/protocol/record-batch.js';

const options = (o: Partial<BatchOptions> = {}): BatchOptions => ({
  compression: 'none', timestampType: 'CreateTime', maxMessageBytes: 1_048_588,
  timestampBeforeMaxMs: Number.MAX_SAFE_INTEGER, timestampAfterMaxMs: Number.MAX_SAFE_INTEGER, ...o,
});
const rec = (bytes: number, i = 0) => ({ key: Buffer.from(`k${i}`), value: Buffer.alloc(bytes, i % 256), headers: [] });

describe('Function: prepareBatches', () => {
  it('keeps every record, in order, in batches no larger than max.message.bytes', () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: 3000 }), { minLength: 1, maxLength: 60 }), fc.integer({ min: 3200, max: 20_000 }), (sizes, max) => {
      const records = sizes.map((s, i) => rec(s, i));
      const batches = prepareBatches(records, options({ maxMessageBytes: max }), 1_000);
      const values = batches.flatMap((b) => {
        expect(b.bytes.length).toBeLessThanOrEqual(max);
        return decodeBatch(b.bytes).records.map((r) => r.value);
      });
      expect(values).toEqual(records.map((r) => r.value));
      expect(batches.reduce((n, b) => n + b.recordCount, 0)).toBe(records.length);
    }));
  });

  it('rejects a record that does not fit in a batch alone with MESSAGE_TOO_LARGE', () => {
    expect(() => prepareBatches([rec(10), rec(5000)], options({ maxMessageBytes: 4000 }))).toThrow(expect.objectContaining({ kafkaName: 'MESSAGE_TOO_LARGE' }));
  });

  it('stamps the append time under LogAppendTime and checks producer timestamps against the allowed skew', () => {
    const [b] = prepareBatches([{ ...rec(1), timestamp: 5 }], options({ timestampType: 'LogAppendTime' }), 123_456);
    expect(b?.timestamps).toEqual([123_456]);
    expect(decodeBatch(b?.bytes as Buffer).timestampType).toBe('log-append');
    expect(() => prepareBatches([{ ...rec(1), timestamp: 0 }], options({ timestampBeforeMaxMs: 1000 }), 10_000))
      .toThrow(expect.objectContaining({ kafkaName: 'INVALID_TIMESTAMP' }));
    expect(() => prepareBatches([{ ...rec(1), timestamp: 20_000 }], options({ timestampAfterMaxMs: 1000 }), 10_000))
      .toThrow(expect.objectContaining({ kafkaName: 'INVALID_TIMESTAMP' }));
  });

  it('compresses with gzip when the topic says so', () => {
    const [b] = prepareBatches([rec(10_000)], options({ compression: 'gzip' }));
    expect(decodeBatch(b?.bytes as Buffer).compression).toBe('gzip');
    expect(b?.bytes.length).toBeLessThan(1000);
  });
});
