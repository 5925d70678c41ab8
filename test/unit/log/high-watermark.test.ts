import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { highWatermarkOf } from '../../../lib/log/commit.js';
import type { ReplicaHead } from '../../../lib/storage/model.js';

const head = (h: Partial<ReplicaHead>): ReplicaHead => ({
  tp: 't', leo: 0, hw: 0, logStartOffset: 0, leaderEpoch: 1, role: 'leader', epochs: [], syncEpoch: 1, followers: {}, isr: [], joining: [], leaving: [], isrVersion: 0, ...h,
});

describe('Function: highWatermarkOf', () => {
  it('stops at the slowest counted member, joining and leaving ones included', () => {
    const h = head({ leo: 100, hw: 40, isr: [1, 2], joining: [3] });
    expect(highWatermarkOf(h, 1, [1, 2], new Map([[2, 90], [3, 70]]))).toBe(70);
    expect(highWatermarkOf(h, 1, [1, 2], new Map([[2, 90], [3, 95]]))).toBe(90);
    const out = head({ leo: 100, hw: 40, isr: [1], leaving: [2] });
    expect(highWatermarkOf(out, 1, [1], new Map([[2, 60]]))).toBe(60);
  });

  it('counts a member the partition state has even when the leader does not (yet)', () => {
    expect(highWatermarkOf(head({ leo: 100, hw: 10, isr: [1] }), 1, [1, 2], new Map([[2, 30]]))).toBe(30);
  });

  it('holds where it is for a counted member of unknown log end, and never moves backwards', () => {
    const h = head({ leo: 100, hw: 40, isr: [1, 2, 3] });
    expect(highWatermarkOf(h, 1, [1, 2, 3], new Map([[2, 90]]))).toBe(40);
    expect(highWatermarkOf(h, 1, [1, 2, 3], new Map([[2, 90], [3, 5]]))).toBe(40);
  });

  it('property: between the old high watermark and the leader log end; when it moves, every counted member holds it', () => {
    const ids = fc.uniqueArray(fc.integer({ min: 2, max: 6 }), { maxLength: 4 });
    fc.assert(fc.property(
      fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 0, max: 1000 }), ids, ids, ids, fc.dictionary(fc.constantFrom('2', '3', '4', '5', '6'), fc.integer({ min: 0, max: 1100 })),
      (a, b, isr, joining, stateIsr, leos) => {
        const h = head({ hw: Math.min(a, b), leo: Math.max(a, b), isr: [1, ...isr], joining });
        const leoOf = new Map(Object.entries(leos).map(([k, v]) => [Number(k), v]));
        const hw = highWatermarkOf(h, 1, [1, ...stateIsr], leoOf);
        expect(hw).toBeGreaterThanOrEqual(h.hw);
        expect(hw).toBeLessThanOrEqual(h.leo);
        if (hw > h.hw) for (const m of new Set([...isr, ...joining, ...stateIsr])) expect(leoOf.get(m)).toBeGreaterThanOrEqual(hw);
      },
    ));
  });
});
