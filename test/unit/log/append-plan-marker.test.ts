/**
 * A transaction marker in the append plan: the first is written at the log end; a repeat (a second
 * finisher of the same transaction) writes nothing, and its answer covers the log up to the end, so
 * an acks=all repeat waits for the first marker to be committed before its finisher goes on.
 */
import { describe, expect, it } from 'vitest';
import { planBatch, readyBatch, startPlan, type AppendTarget, type ReadyBatch } from '../../../lib/log/append-plan.js';
import { prepareMarker } from '../../../lib/log/batches.js';
import type { ReplicaHead } from '../../../lib/storage/model.js';

const head = { leo: 12, hw: 10 } as ReplicaHead;
const target = { leaderEpoch: 3 } as AppendTarget;
const marker = (epoch: number): ReadyBatch => readyBatch(prepareMarker(7, epoch, true));

describe('Function: planBatch (transaction markers)', () => {
  it('writes a marker at the log end, and answers a repeat of it with the log up to the end (nothing written), never with an empty range', () => {
    const p = startPlan(head, new Map());
    expect(planBatch(target, p, marker(1))).toMatchObject({ baseOffset: 12, lastOffset: 12 });
    expect(p.records).toHaveLength(1);
    const repeat = planBatch(target, p, marker(1));
    expect(repeat).toEqual({ baseOffset: -1, lastOffset: 12 });
    expect(p.records).toHaveLength(1);
    // An older epoch's marker is a repeat too.
    expect(planBatch(target, p, marker(0))).toEqual({ baseOffset: -1, lastOffset: 12 });
  });
});
