/**
 * When a table tail is due to roll, and when it is overdue: by `segment.bytes`, or by its age —
 * `segment.ms`, but never more than a day, because its batch items expire (DynamoDB TTL) three days
 * after their append.
 */
import { describe, expect, it } from 'vitest';
import { BATCH_TTL_MS, MAX_TAIL_AGE_MS, TAIL_OVERDUE_MS, batchExpiresAt, rollDue, tailOverdue } from '../../../lib/log/roll.js';

const HOUR = 3_600_000;
const head = (o: { tailSince?: number; tailBytes?: number; hw?: number; leo?: number }) => ({
  tailStart: 10, logStartOffset: 0, hw: o.hw ?? 20, leo: o.leo ?? 20, tailBytes: o.tailBytes ?? 100, ...(o.tailSince === undefined ? {} : { tailSince: o.tailSince }),
});

describe('Function: rollDue', () => {
  it('is due by segment.bytes, or by segment.ms of age', () => {
    expect(rollDue(head({ tailBytes: 2048 }), 1024, HOUR, 0)).toBe(true);
    expect(rollDue(head({ tailSince: 0 }), 1024, HOUR, HOUR - 1)).toBe(false);
    expect(rollDue(head({ tailSince: 0 }), 1024, HOUR, HOUR)).toBe(true);
  });

  it('is due at a day of age whatever a longer segment.ms says, well before the tail\'s batches could expire', () => {
    const week = 7 * 24 * HOUR;
    expect(rollDue(head({ tailSince: 0 }), 1 << 30, week, MAX_TAIL_AGE_MS - 1)).toBe(false);
    expect(rollDue(head({ tailSince: 0 }), 1 << 30, week, MAX_TAIL_AGE_MS)).toBe(true);
    expect(MAX_TAIL_AGE_MS + TAIL_OVERDUE_MS).toBeLessThan(BATCH_TTL_MS / 2);
  });

  it('is not due with nothing committed above the tail start', () => {
    expect(rollDue(head({ tailSince: 0, hw: 10 }), 1024, HOUR, 10 * HOUR)).toBe(false);
  });
});

describe('Function: tailOverdue', () => {
  it('is overdue an hour past the roll\'s due time, only with records above the tail start', () => {
    expect(tailOverdue(head({ tailSince: 0 }), HOUR, HOUR + TAIL_OVERDUE_MS)).toBe(false);
    expect(tailOverdue(head({ tailSince: 0 }), HOUR, HOUR + TAIL_OVERDUE_MS + 1)).toBe(true);
    expect(tailOverdue(head({ tailSince: 0 }), 30 * 24 * HOUR, MAX_TAIL_AGE_MS + TAIL_OVERDUE_MS + 1)).toBe(true);
    expect(tailOverdue(head({ tailSince: 0, leo: 10 }), HOUR, 100 * HOUR)).toBe(false);
  });
});

describe('Function: batchExpiresAt', () => {
  it('is the append time plus the batch TTL, in whole epoch seconds rounded up', () => {
    expect(batchExpiresAt(1_000)).toBe(Math.ceil((1_000 + BATCH_TTL_MS) / 1000));
  });
});
