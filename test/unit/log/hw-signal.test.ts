import { describe, expect, it } from 'vitest';
import { highWatermarkMoved, knownHighWatermark, noteHighWatermark, sleepUntilMoved } from '../../../lib/log/hw-signal.js';

describe('Function: sleepUntilMoved', () => {
  it('wakes every waiter on its partition when the high watermark moves, and only those', async () => {
    const woken: string[] = [];
    const a = sleepUntilMoved('t#0', 60_000).then(() => woken.push('a'));
    const b = sleepUntilMoved('t#0', 60_000).then(() => woken.push('b'));
    const other = sleepUntilMoved('t#1', 30).then(() => woken.push('other'));
    highWatermarkMoved('t#0', 1);
    await Promise.all([a, b]);
    expect(woken.sort()).toEqual(['a', 'b']);
    await other;
    expect(woken).toContain('other');
  });

  it('resolves after its time when nothing moves, and a later move wakes nobody twice', async () => {
    await sleepUntilMoved('t#2', 5);
    highWatermarkMoved('t#2', 1);
    const next = sleepUntilMoved('t#2', 60_000);
    highWatermarkMoved('t#2', 1);
    await next;
  });
});

describe('Function: knownHighWatermark', () => {
  it('keeps the highest high watermark seen, never a lower one', () => {
    expect(knownHighWatermark('t#9')).toBe(0);
    noteHighWatermark('t#9', 5);
    highWatermarkMoved('t#9', 7);
    noteHighWatermark('t#9', 3);
    expect(knownHighWatermark('t#9')).toBe(7);
  });
});
