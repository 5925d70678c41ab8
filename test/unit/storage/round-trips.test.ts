/** The sequential round trips of a traced piece of work: the longest chain of calls, each sent after the one before answered. */
import { describe, expect, it } from 'vitest';
import { sequentialRoundTrips, type StoreCall } from '../../../lib/storage/metering.js';

const call = (start: number, end: number, op = 'GetItem'): StoreCall => ({ service: 'dynamodb', op, start, end });

describe('Function: sequentialRoundTrips', () => {
  it('counts nothing for no calls', () => {
    expect(sequentialRoundTrips([])).toBe(0);
  });

  it('counts calls in flight together once', () => {
    expect(sequentialRoundTrips([call(0, 10), call(1, 12), call(2, 8)])).toBe(1);
  });

  it('counts each call of a chain, in whatever order they were recorded', () => {
    expect(sequentialRoundTrips([call(20, 30), call(0, 10), call(10, 20)])).toBe(3);
  });

  it('counts leader append → parallel follower writes → high watermark as 3', () => {
    const calls = [call(0, 5, 'TransactWriteItems'), call(5, 9, 'TransactWriteItems'), call(5.5, 11, 'TransactWriteItems'), call(11, 13, 'UpdateItem')];
    expect(sequentialRoundTrips(calls)).toBe(3);
  });

  it('follows the longest chain when a long call overlaps a shorter chain', () => {
    // One slow call over [0, 30] beside a chain of three: the chain is the critical path.
    expect(sequentialRoundTrips([call(0, 30), call(1, 5), call(6, 10), call(11, 15)])).toBe(3);
  });

  it('does not count a call sent before the previous one answered as a new round trip', () => {
    expect(sequentialRoundTrips([call(0, 10), call(9, 20)])).toBe(1);
  });
});
