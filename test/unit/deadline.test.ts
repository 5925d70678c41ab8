import { describe, expect, it } from 'vitest';
import { ANSWER_MARGIN_MS, API_INTEGRATION_LIMIT_MS, answerByFor, deadlineIn, withAnswerBy } from '../../lib/deadline.js';

describe('Request deadlines', () => {
  it('outside a request, a deadline is the caller\'s own', () => {
    const before = Date.now();
    const d = deadlineIn(25_000);
    expect(d).toBeGreaterThanOrEqual(before + 25_000);
    expect(d).toBeLessThanOrEqual(Date.now() + 25_000);
  });

  it('inside a request, no deadline passes its answer-by time, across awaits', async () => {
    const by = Date.now() + 2000;
    await withAnswerBy(by, async () => {
      await new Promise((r) => setTimeout(r, 5));
      expect(deadlineIn(25_000)).toBe(by);
      expect(deadlineIn(10)).toBeLessThan(by);
    });
    expect(deadlineIn(25_000)).toBeGreaterThan(by);
  });

  it("answers by the sooner of the function's timeout and the API's 30 s limit, less the margin", () => {
    expect(answerByFor(900_000, 0)).toBe(API_INTEGRATION_LIMIT_MS - ANSWER_MARGIN_MS);
    expect(answerByFor(10_000, 0)).toBe(10_000 - ANSWER_MARGIN_MS);
  });
});
