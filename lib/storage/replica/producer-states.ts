/**
 * Idempotent producers' states on one replica: one item per producer under `producersKey(tp)`,
 * `off` = the producer id, `ver` the compare-and-set token every write bumps.
 *
 * Conditional writes (transaction items: appendBatches, copyBatches and truncateLog add them to
 * their own transactions):
 * - `producerPut` — condition: with `expectVer` null, no state yet (`attribute_not_exists(tp)`);
 *   else still that version (`ver = :v`). Effect: the state put with `ver = expectVer + 1` (1 when
 *   new). Failure: the enclosing transaction writes nothing and throws `ConditionFailed`, whose
 *   entry at this item's index carries the current state when it exists.
 * - `producerDelete` — condition: still that version (`ver = :v`). Effect: the state deleted.
 *   Failure: as `producerPut`.
 *
 * `readProducerStates` and `listProducerStates` read, strongly consistent.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { batchGetAll } from '../batch-get.js';
import type { StoredProducerState } from '../model.js';
import { producersKey } from '../tables.js';
import { client, type ReplicaStoreRef } from './store.js';

/** A producer state to write with an append or copy: `expectVer` null means it must not exist yet. */
export interface ProducerStateWrite {
  readonly state: Omit<StoredProducerState, 'ver'>;
  readonly expectVer: number | null;
}

/** The transaction item that writes a producer state on condition of its version (`ProducerStateWrite`). */
export function producerPut(store: ReplicaStoreRef, tp: string, w: ProducerStateWrite) {
  return {
    Put: {
      TableName: store.replicaTable,
      Item: { tp: producersKey(tp), off: w.state.producerId, ...w.state, ver: (w.expectVer ?? 0) + 1 },
      ConditionExpression: w.expectVer === null ? 'attribute_not_exists(tp)' : 'ver = :v',
      ...(w.expectVer === null ? {} : { ExpressionAttributeValues: { ':v': w.expectVer } }),
    },
  };
}

/** The transaction item that deletes a producer state on condition that its version is still `expectVer`. */
export function producerDelete(store: ReplicaStoreRef, tp: string, producerId: number, expectVer: number) {
  return { Delete: { TableName: store.replicaTable, Key: { tp: producersKey(tp), off: producerId }, ConditionExpression: 'ver = :v', ExpressionAttributeValues: { ':v': expectVer } } };
}

const toProducerState = (item: Record<string, unknown>): StoredProducerState => ({
  producerId: item.off as number,
  producerEpoch: item.producerEpoch as number,
  batches: (item.batches as StoredProducerState['batches'] | undefined) ?? [],
  ...(typeof item.txnFirst === 'number' ? { txnFirst: item.txnFirst } : {}),
  ...(typeof item.markerEpoch === 'number' ? { markerEpoch: item.markerEpoch } : {}),
  ...(item.closed !== undefined ? { closed: item.closed as { first: number; marker: number } } : {}),
  ver: item.ver as number,
});

/** Reads some producers' states of a partition (BatchGetItem, strongly consistent). */
export async function readProducerStates(store: ReplicaStoreRef, tp: string, producerIds: readonly number[]): Promise<Map<number, StoredProducerState>> {
  const items = await batchGetAll(client(store), store.replicaTable, [...new Set(producerIds)].map((id) => ({ tp: producersKey(tp), off: id })));
  return new Map(items.map((item) => [item.off as number, toProducerState(item)]));
}

/** Every producer state of a partition. */
export async function listProducerStates(store: ReplicaStoreRef, tp: string): Promise<StoredProducerState[]> {
  const out: StoredProducerState[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const res = await client(store).send(new QueryCommand({
      TableName: store.replicaTable, KeyConditionExpression: 'tp = :tp', ExpressionAttributeValues: { ':tp': producersKey(tp) },
      ConsistentRead: true, ExclusiveStartKey: start,
    }));
    out.push(...(res.Items ?? []).map(toProducerState));
    start = res.LastEvaluatedKey;
  } while (start);
  return out;
}
