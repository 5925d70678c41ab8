/**
 * The repair's decisions (lib/orchestration/hanging-transactions.ts, lib/log/producer-state.ts):
 * which marker epoch ends an open transaction, when its coordinator has decided it, and when the
 * partition refuses a marker (the guard every marker has, and the repair's own).
 */
import { describe, expect, it } from 'vitest';
import { checkMarker, type ProducerState } from '../../../lib/log/producer-state.js';
import { hangingMarkerEpoch } from '../../../lib/orchestration/hanging-transactions.js';
import type { TxnRecord } from '../../../lib/storage/coordination/transactions.js';

const run = { firstSeq: 0, lastSeq: 1, baseOffset: 10, lastOffset: 11 };
/** Batches of epoch 3 open at offset 10, no marker since. */
const open: ProducerState = { producerId: 7, producerEpoch: 3, batches: [run], txnFirst: 10 };
/** The same after a cut marker: the marker's epoch 4 kept, no batch of it. */
const cut: ProducerState = { producerId: 7, producerEpoch: 4, batches: [], txnFirst: 10 };
const txn = (producerId: number, producerEpoch: number, state: TxnRecord['state'], partitions: TxnRecord['partitions'] = []): TxnRecord => ({
  transactionalId: 'tid', producerId, producerEpoch, state, partitions, groups: {}, timeoutMs: 60_000, updatedAt: 0, ver: 1,
});
const at = { topic: 't', partition: 0 };
/** The marker epoch that ends the state's open transaction, with these transactional ids' items. */
const markerEpoch = (st: ProducerState, txns: TxnRecord[]) => hangingMarkerEpoch(st, new Map(txns.map((r) => [r.producerId, r])), at);

describe('Hanging transactions: the repair\'s decisions', () => {
  it('the marker epoch is the one after the newest batch\'s, and only once the coordinator moved past that batch\'s epoch', () => {
    expect(markerEpoch(open, [txn(7, 3, 'Ongoing')])).toBeUndefined();
    expect(markerEpoch(open, [txn(7, 4, 'CompleteCommit')])).toBe(4);
    expect(markerEpoch(cut, [txn(7, 4, 'CompleteAbort')])).toBe(4);
    expect(markerEpoch(open, [txn(8, 0, 'Ongoing')])).toBe(4); // the id moved to another producer id, or is gone
    expect(markerEpoch(open, [])).toBe(4);
    expect(markerEpoch({ ...open, txnFirst: undefined }, [])).toBeUndefined();
    // no marker past the int16 epochs (a producer id's epoch a client made up)
    expect(markerEpoch({ ...open, producerEpoch: 32_767 }, [])).toBeUndefined();
  });

  it('a transaction being completed is its finisher\'s, unless the prepare is another transaction\'s or leaves this partition out', () => {
    expect(markerEpoch(open, [txn(7, 4, 'PrepareCommit', [at])])).toBeUndefined();
    expect(markerEpoch(open, [txn(7, 4, 'PrepareAbort', [{ topic: 't', partition: 1 }])])).toBe(4);
    expect(markerEpoch(open, [txn(7, 5, 'PrepareCommit', [at])])).toBe(4);
  });

  it('the partition writes a marker only while the open transaction holds no batch of its epoch or later, and the repair\'s only while one is open', () => {
    const marker = { producerId: 7, markerEpoch: 4, commit: true, repair: true };
    expect(checkMarker(open, marker).kind).toBe('append');
    expect(checkMarker(cut, marker).kind).toBe('append');
    // the producer's next transaction landed a batch under epoch 4: refused (a plain marker would close it)
    const next: ProducerState = { producerId: 7, producerEpoch: 4, batches: [{ firstSeq: 0, lastSeq: 0, baseOffset: 12, lastOffset: 12 }], txnFirst: 10 };
    expect(checkMarker(next, marker).kind).toBe('repeat');
    expect(checkMarker(next, { ...marker, repair: false }).kind).toBe('repeat'); // a finisher's, late
    expect(checkMarker({ ...next, txnFirst: undefined }, { ...marker, repair: false }).kind).toBe('append');
    // closed meanwhile (a marker came)
    expect(checkMarker({ ...open, txnFirst: undefined }, marker).kind).toBe('repeat');
  });
});
