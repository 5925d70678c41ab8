/** The controller's pass over WebSocket subscriptions: which partitions it wakes (lib/orchestration/websocket-wake.ts, `lagging`). */
import { describe, expect, it } from 'vitest';
import { lagging } from '../../../lib/orchestration/websocket-wake.js';

const NOW = 1_000_000;
const head = { hw: 10, openTxns: { '7': 6 } };

describe('Function: lagging', () => {
  it('is true for a subscription behind the high watermark with no live delivery lease (none, or one run out)', () => {
    expect(lagging([{ next: 9, isolation: 'read_uncommitted' }], head, NOW)).toBe(true);
    expect(lagging([{ next: 9, isolation: 'read_uncommitted', leaseUntil: NOW - 1 }], head, NOW)).toBe(true);
  });

  it('is false for a subscription caught up, or one whose delivery holds a live lease', () => {
    expect(lagging([{ next: 10, isolation: 'read_uncommitted' }], head, NOW)).toBe(false);
    expect(lagging([{ next: 3, isolation: 'read_uncommitted', leaseUntil: NOW + 1 }], head, NOW)).toBe(false);
    expect(lagging([], head, NOW)).toBe(false);
  });

  it('bounds a read_committed subscription by the last stable offset, not the high watermark', () => {
    expect(lagging([{ next: 6, isolation: 'read_committed' }], head, NOW)).toBe(false);
    expect(lagging([{ next: 5, isolation: 'read_committed' }], head, NOW)).toBe(true);
  });

  it('is true when any one of the partition\'s subscriptions lags', () => {
    expect(lagging([{ next: 10, isolation: 'read_uncommitted' }, { next: 2, isolation: 'read_committed' }], head, NOW)).toBe(true);
  });
});
