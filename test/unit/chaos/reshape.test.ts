import { describe, expect, it } from 'vitest';
import type { PlannedFault } from '../../../chaos/faults.js';
import { Reshaper } from '../../../chaos/reshape.js';
import { fakeShape } from './fake-shape.js';

const clock = { hold: async () => undefined, waitFor: async (ok: () => Promise<boolean>) => ok() };
const fault = (f: Partial<PlannedFault>): PlannedFault => ({
  kind: 'add-broker', broker: 2, controller: 'controller-1', gateway: 'gateway', tp: { topic: 'a', partition: 0 }, holdMs: 1, gapMs: 1, moment: 0.5, copier: 'controller', ...f,
});

describe('Class: Reshaper', () => {
  it('where a broker is added and held, it is removed again on heal, so the cluster returns to its original brokers', async () => {
    // Prepare
    const shape = fakeShape([1, 2, 3]);
    const r = new Reshaper(shape, [1, 2, 3], clock);
    // Act
    const done = await r.addBroker(fault({ kind: 'add-broker' }));
    // Assess
    expect(shape.calls).toEqual(['POST 4', 'DELETE 4']);
    expect(shape.ids()).toEqual([1, 2, 3]);
    expect(done.detail).toMatch(/broker 4 added \(201\).*DELETE 202, drained and deregistered/);
  });

  it('where removing a broker is refused for the replication factor, a replacement is added first, and later faults drawn for the removed broker go to it', async () => {
    // Prepare
    const shape = fakeShape([1, 2, 3]);
    const r = new Reshaper(shape, [1, 2, 3], clock);
    // Act
    const done = await r.removeBroker(fault({ kind: 'remove-broker', broker: 2 }));
    // Assess
    expect(shape.calls).toEqual(['DELETE 2', 'POST 4', 'DELETE 2']);
    expect(shape.ids()).toEqual([1, 3, 4]);
    expect(done.detail).toMatch(/refused \(INVALID_REPLICATION_FACTOR\), so broker 4 added first/);
    expect(r.resolve(2)).toBe(4);
    expect(r.resolve(1)).toBe(1);
    // Removing the one drawn again takes its replacement, with another one first: never below three brokers.
    await r.removeBroker(fault({ kind: 'remove-broker', broker: 2 }));
    expect(shape.ids()).toEqual([1, 3, 5]);
    expect(r.resolve(2)).toBe(5);
  });

  it('where a removal needs no replacement, later faults drawn for the removed broker have no target', async () => {
    // Prepare: four brokers, so three stay
    const shape = fakeShape([1, 2, 3, 4]);
    const r = new Reshaper(shape, [1, 2, 3, 4], clock);
    // Act
    await r.removeBroker(fault({ kind: 'remove-broker', broker: 3 }));
    // Assess
    expect(shape.calls).toEqual(['DELETE 3']);
    expect(r.resolve(3)).toBeUndefined();
    await expect(r.removeBroker(fault({ kind: 'remove-broker', broker: 3 }))).rejects.toThrow(/removed already/);
  });

  it('where every broker holds the partition, a reassignment adds a broker, moves one replica to it (same replication factor), and removes the broker again', async () => {
    // Prepare
    const shape = fakeShape([1, 2, 3]);
    const r = new Reshaper(shape, [1, 2, 3], clock);
    // Act: moment 0.5 replaces the second replica; the coin says cancel
    const done = await r.reassign(fault({ kind: 'reassign', moment: 0.5, copier: 'gateway' }));
    // Assess
    expect(shape.calls).toEqual(['POST 4', 'PATCH a/0 1,4,3', 'CANCEL a/0', 'DELETE 4']);
    expect(done.detail).toMatch(/\[1,2,3\] → \[1,4,3\].*cancel → 404 NO_REASSIGNMENT_IN_PROGRESS \(completed already\)/);
    expect(shape.ids()).toEqual([1, 2, 3]);
  });

  it('where a broker outside the replica set is registered, a reassignment moves a replica to it and waits for it to complete', async () => {
    // Prepare
    const shape = fakeShape([1, 2, 3, 4]);
    const r = new Reshaper(shape, [1, 2, 3, 4], clock);
    // Act
    const done = await r.reassign(fault({ kind: 'reassign', moment: 0, copier: 'controller' }));
    // Assess
    expect(shape.calls).toEqual(['PATCH a/0 4,2,3']);
    expect(done.detail).toMatch(/completed by itself/);
  });
});
