/**
 * Replica tables: one per broker, one partition per `tp`, the head at `off = -1` and one item per
 * record batch at `off = lastOffset` (keying by the last offset lets one Query starting at any
 * offset return the batch that holds it first). lib/storage/replica/ is the only code that reads or
 * writes them; this file holds what its family files share: where a table lives, its client, the
 * head's codec, batched writes and the ISR-version condition.
 *
 * Conditional writes: none of its own.
 * - `isrVersionIs` is a condition fragment, not a write: the head's ISR count is still at version
 *   `:v` (`isrVersion = :v`; a head without `isrVersion` counts as version 0). setHeadIsr,
 *   recordCommit and advanceHighWatermark join it into theirs.
 * - `batchWriteAll` writes unconditionally (BatchWriteItem). Failure: throws once unprocessed items
 *   outlast 8 retries.
 */
import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { dynamo } from '../clients.js';
import type { ReplicaHead, ReplicaRole } from '../model.js';

/** Where a broker's replica table lives. */
export interface ReplicaStoreRef {
  readonly brokerId: number;
  readonly replicaTable: string;
  readonly endpoint?: string;
}

export const client = (s: ReplicaStoreRef): DynamoDBDocumentClient => dynamo(s.endpoint);

/** Parses a stored head item. */
export function toHead(item: Record<string, unknown>): ReplicaHead {
  return {
    tp: item.tp as string,
    leo: item.leo as number,
    hw: item.hw as number,
    logStartOffset: item.logStartOffset as number,
    ...(typeof item.tailStart === 'number' ? { tailStart: item.tailStart } : {}),
    ...(typeof item.tailBytes === 'number' ? { tailBytes: item.tailBytes } : {}),
    ...(typeof item.tailSince === 'number' ? { tailSince: item.tailSince } : {}),
    leaderEpoch: item.leaderEpoch as number,
    role: item.role as ReplicaRole,
    epochs: (item.epochs as [number, number][] | undefined) ?? [],
    syncEpoch: (item.syncEpoch as number | undefined) ?? 0,
    ...(typeof item.snapshotting === 'number' ? { snapshotting: item.snapshotting } : {}),
    ...(typeof item.snapshotRenewedAt === 'number' ? { snapshotRenewedAt: item.snapshotRenewedAt } : {}),
    followers: (item.followers as ReplicaHead['followers'] | undefined) ?? {},
    isr: (item.isr as number[] | undefined) ?? [],
    joining: (item.joining as number[] | undefined) ?? [],
    leaving: (item.leaving as number[] | undefined) ?? [],
    ...(item.joiningSince !== undefined ? { joiningSince: item.joiningSince as Record<string, number> } : {}),
    isrVersion: (item.isrVersion as number | undefined) ?? 0,
    ...(typeof item.logId === 'string' ? { logId: item.logId } : {}),
    ...(typeof item.lagMarkedEpoch === 'number' ? { lagMarkedEpoch: item.lagMarkedEpoch } : {}),
    ...(typeof item.lagClears === 'number' ? { lagClears: item.lagClears } : {}),
    ...(typeof item.combinedAt === 'number' ? { combinedAt: item.combinedAt } : {}),
    ...(typeof item.round === 'number' ? { round: item.round } : {}),
    ...(typeof item.clean === 'number' ? { clean: item.clean } : {}),
    ...(item.openTxns !== undefined && Object.keys(item.openTxns as object).length > 0 ? { openTxns: item.openTxns as Record<string, number> } : {}),
  };
}

/** How many BatchWriteItem calls of deletes a replica's cleanup keeps in flight at once. */
export const DELETE_CALLS_IN_FLIGHT = 4;

/**
 * Unconditional BatchWriteItem of `requests`, 25 at a time and up to `inFlight` calls at once,
 * retrying unprocessed items with backoff.
 */
export async function batchWriteAll(store: ReplicaStoreRef, requests: Record<string, unknown>[], inFlight = 1): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      let pending: Record<string, unknown>[] | undefined = requests.slice(next, next + 25);
      next += 25;
      for (let attempt = 0; pending && pending.length > 0; attempt++) {
        if (attempt > 8) throw new Error(`BatchWriteItem on ${store.replicaTable} left ${pending.length} items unprocessed`);
        if (attempt > 0) await new Promise((r) => setTimeout(r, 20 * 2 ** attempt));
        const out = await client(store).send(new BatchWriteCommand({ RequestItems: { [store.replicaTable]: pending } }));
        pending = out.UnprocessedItems?.[store.replicaTable] as Record<string, unknown>[] | undefined;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(inFlight, Math.ceil(requests.length / 25))) }, worker));
}

/** Condition on a head's `isrVersion` (`:v`); a head written before it existed is at version 0. */
export const isrVersionIs = (v: number) => (v === 0 ? '(attribute_not_exists(isrVersion) OR isrVersion = :v)' : 'isrVersion = :v');
