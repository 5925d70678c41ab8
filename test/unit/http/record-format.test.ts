import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonArrayWithin, responseCost } from '../../../lib/http/record-format.js';

/** What a body costs in the function's response, measured the way Lambda does: the response's own JSON. */
const inResponse = (body: string) => Buffer.byteLength(JSON.stringify({ body })) - Buffer.byteLength(JSON.stringify({ body: '' }));

describe('Function: responseCost', () => {
  it('is what the text adds to the function response that carries it', () => {
    fc.assert(fc.property(fc.json(), (json) => {
      expect(responseCost(json)).toBe(inResponse(json));
    }));
  });
});

describe('Function: jsonArrayWithin', () => {
  it('renders items in order while they fit the budget, the first always, and the result is that JSON array', () => {
    fc.assert(fc.property(fc.array(fc.string({ unit: 'binary' }), { maxLength: 40 }), fc.integer({ min: 2, max: 400 }), (items, budget) => {
      const { json, count } = jsonArrayWithin(items, (s) => ({ s }), budget);
      expect(JSON.parse(json)).toEqual(items.slice(0, count).map((s) => ({ s })));
      if (items.length > 0) expect(count).toBeGreaterThanOrEqual(1);
      if (count > 1) expect(responseCost(json)).toBeLessThanOrEqual(budget);
      if (count < items.length) {
        const more = JSON.stringify(items.slice(0, count + 1).map((s) => ({ s })));
        expect(responseCost(more)).toBeGreaterThan(budget);
      }
    }));
  });
});
