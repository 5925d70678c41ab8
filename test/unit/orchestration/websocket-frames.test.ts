/** A delivery's frames: under API Gateway's message limit, each saying where its subscription goes on from. */
import { describe, expect, it } from 'vitest';
import { MAX_FRAME_BYTES, recordFrames } from '../../../lib/orchestration/websocket-delivery.js';

const record = (offset: number, bytes: number) => ({ offset, timestamp: 1, key: null, value: Buffer.alloc(bytes, 1), headers: [] });

describe('recordFrames', () => {
  it('splits one read into frames under MAX_FRAME_BYTES; each frame goes on from past its last record, and the last from where the read stopped', () => {
    const read = { records: [0, 1, 2, 3].map((o) => record(o, 40_000)), highWatermark: 9, lastStableOffset: 7, nextOffset: 5 };
    const frames = recordFrames('t', 0, read as never, 'g');
    expect(frames.map((f) => f.records.map((r) => r.offset))).toEqual([[0], [1], [2], [3]]);
    for (const f of frames) expect(Buffer.byteLength(JSON.stringify(f))).toBeLessThanOrEqual(MAX_FRAME_BYTES);
    expect(frames.map((f) => f.next_offset)).toEqual([1, 2, 3, 5]);
    expect(frames.every((f) => f.high_watermark === 9 && f.last_stable_offset === 7 && f.subscription_id === 'g')).toBe(true);
  });

  it('a read of nothing but skipped records (control records, aborted ones) is one empty frame that moves the subscription on', () => {
    expect(recordFrames('t', 0, { records: [], highWatermark: 4, lastStableOffset: 4, nextOffset: 4 }, 'g')).toEqual([
      { type: 'records', topic: 't', partition: 0, records: [], high_watermark: 4, last_stable_offset: 4, next_offset: 4, subscription_id: 'g' },
    ]);
  });
});
