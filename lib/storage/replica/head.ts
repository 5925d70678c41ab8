/**
 * A partition's head item on one replica: reading it, creating it, and the writes the controller
 * and the sweep make to it (role pushes, the leader's ISR count, clearing the lag flag).
 *
 * Conditional writes:
 * - `createHeads` — no condition (new topic ids cannot collide). Effect: one empty head per `tp`.
 *   Failure: none by condition; throws once unprocessed items outlast the retries.
 * - `putHead` — condition `'ifAbsent'`: no head exists (`attribute_not_exists(tp)`);
 *   `{ snapshotting }`: the head is still in the full sync that began then (`snapshotting = :t`),
 *   and with `leaderEpoch` still at that epoch (`leaderEpoch = :e`). Effect: the whole head
 *   written. Failure: throws `ConditionFailed` (index 0 carries the current head when it exists).
 * - `setRole` — condition: the head exists and its leader epoch is not newer
 *   (`attribute_exists(tp) AND leaderEpoch <= :epoch`): epochs never go backwards; a leader push
 *   with `isr` also needs the head not to lead at that epoch already (`leaderEpoch < :epoch OR
 *   (leaderEpoch = :epoch AND role <> :role)`). Effect: `role`, `leaderEpoch`; with `isr`, also
 *   `isr`, `joining = leaving = []` and `isrVersion + 1`. Failure: a leader push at the epoch the
 *   head leads at returns and changes nothing; otherwise throws `ConditionFailed` (index 0 carries
 *   the current head).
 * - `setHeadIsr` — condition: still the leader under `leaderEpoch`, and the ISR count still at
 *   `expectVersion` (`leaderEpoch = :epoch AND role = leader AND isrVersion = :v`). Effect: `isr`,
 *   `joining`, `leaving` (and `joiningSince` when given), `isrVersion = :v + 1`. Failure: returns false.
 * - `clearLagFlag` — condition: the leader under `leaderEpoch`, nothing appended since the sweep
 *   found it caught up (`leo = :leo AND hw = :leo AND leaderEpoch = :epoch AND role = leader`).
 *   Effect: `lagMarkedEpoch` removed, `lagClears + 1`. Failure: returns false.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { batchGetAll } from '../batch-get.js';
import type { ReplicaHead, ReplicaRole } from '../model.js';
import { HEAD_OFFSET } from '../tables.js';
import { ConditionFailed, transactWrite } from '../transact.js';
import { batchWriteAll, client, isrVersionIs, toHead, type ReplicaStoreRef } from './store.js';

/** The stored form of a head. */
function headItem(h: ReplicaHead): Record<string, unknown> {
  return { ...h, off: HEAD_OFFSET };
}

/** The first offset a replica's table holds: below it the log is in S3 segments. */
export const tailStartOf = (head: Pick<ReplicaHead, 'tailStart' | 'logStartOffset'>): number => head.tailStart ?? head.logStartOffset;

/** Reads a partition's head; strongly consistent unless asked otherwise. */
export async function readHead(store: ReplicaStoreRef, tp: string, consistent = true): Promise<ReplicaHead | undefined> {
  const out = await client(store).send(new GetCommand({
    TableName: store.replicaTable, Key: { tp, off: HEAD_OFFSET }, ConsistentRead: consistent,
  }));
  return out.Item ? toHead(out.Item) : undefined;
}

/** Reads many heads from one replica table (BatchGetItem, strongly consistent); missing ones are absent from the map. */
export async function readHeads(store: ReplicaStoreRef, tps: readonly string[]): Promise<Map<string, ReplicaHead>> {
  const items = await batchGetAll(client(store), store.replicaTable, tps.map((tp) => ({ tp, off: HEAD_OFFSET })));
  return new Map(items.map((item) => [item.tp as string, toHead(item)]));
}

/** Parses the head a failed condition returned (ALL_OLD), if there was one. */
export function headFromItem(item: Record<string, unknown> | undefined): ReplicaHead | undefined {
  return item && item.off === HEAD_OFFSET ? toHead(item) : undefined;
}

/**
 * Creates the heads of new partitions (new topic ids cannot collide, so no condition).
 * Effect: one head per `tp`, empty log (leo = hw = logStartOffset = 0).
 */
export async function createHeads(
  store: ReplicaStoreRef,
  heads: readonly { tp: string; role: ReplicaRole; leaderEpoch: number; isr: readonly number[] }[],
): Promise<void> {
  await batchWriteAll(store, heads.map((h) => ({ PutRequest: { Item: headItem(emptyHead(h.tp, h.role, h.leaderEpoch, h.isr)) } })));
}

/** A head with an empty log. */
export const emptyHead = (tp: string, role: ReplicaRole, leaderEpoch: number, isr: readonly number[] = []): ReplicaHead => ({
  tp, leo: 0, hw: 0, logStartOffset: 0, leaderEpoch, role, epochs: [], syncEpoch: leaderEpoch, followers: {}, isr, joining: [], leaving: [], isrVersion: 0,
});

/**
 * Writes a whole head.
 * Condition: `ifAbsent` — no head exists; `{ snapshotting: t }` — the head is still in the full
 * sync that began at `t` (so one that finished, or was taken over, is left alone), and, with
 * `leaderEpoch`, still at that epoch (no role was pushed to it since it was read).
 * Errors: `ConditionFailed`.
 */
export async function putHead(store: ReplicaStoreRef, head: ReplicaHead, condition: 'ifAbsent' | { snapshotting: number; leaderEpoch?: number }): Promise<void> {
  const epoch = condition !== 'ifAbsent' && condition.leaderEpoch !== undefined;
  await transactWrite(client(store), [{
    Put: {
      TableName: store.replicaTable,
      Item: headItem(head),
      ...(condition === 'ifAbsent'
        ? { ConditionExpression: 'attribute_not_exists(tp)' }
        : {
          ConditionExpression: `snapshotting = :t${epoch ? ' AND leaderEpoch = :e' : ''}`,
          ExpressionAttributeValues: { ':t': condition.snapshotting, ...(epoch ? { ':e': condition.leaderEpoch } : {}) },
        }),
    },
  }]);
}

/**
 * Sets a replica's role and leader epoch (what the controller pushes after an election), and for
 * a leader the ISR its high watermark counts (the partition state's ISR at the election).
 * Condition: the head exists and its leader epoch is not newer than `leaderEpoch` — epochs never
 * go backwards. A leader push at the epoch the head already leads at changes nothing: the count is
 * the leader's own from its election on (joins and shrinks keep it in step with the partition
 * state), and a push computed before a join and landing after it would drop the joiner from what
 * the high watermark waits for.
 * Errors: `ConditionFailed` (index 0 carries the current head).
 *
 *   controller: read state (ISR {1,2}) ─────────────── stalls ─────────────── push leader {1,2}
 *   leader:                  joinIsr(3): count {1,2,3}, state {1,2,3}          (a no-op here)
 */
export async function setRole(store: ReplicaStoreRef, tp: string, role: ReplicaRole, leaderEpoch: number, isr?: readonly number[]): Promise<void> {
  const count = role === 'leader' && isr !== undefined;
  try {
    await transactWrite(client(store), [{
      Update: {
        TableName: store.replicaTable,
        Key: { tp, off: HEAD_OFFSET },
        UpdateExpression: `SET #role = :role, leaderEpoch = :epoch${count ? ', isr = :isr, joining = :none, leaving = :none, isrVersion = if_not_exists(isrVersion, :zero) + :one' : ''}`,
        ConditionExpression: count
          ? 'attribute_exists(tp) AND (leaderEpoch < :epoch OR (leaderEpoch = :epoch AND #role <> :role))'
          : 'attribute_exists(tp) AND leaderEpoch <= :epoch',
        ExpressionAttributeNames: { '#role': 'role' },
        ExpressionAttributeValues: { ':role': role, ':epoch': leaderEpoch, ...(count ? { ':isr': [...isr], ':none': [], ':zero': 0, ':one': 1 } : {}) },
      },
    }]);
  } catch (err) {
    const current = err instanceof ConditionFailed ? err.at(0)?.current : undefined;
    // Already the leader at this epoch: the push has nothing to say.
    if (count && current?.leaderEpoch === leaderEpoch && current.role === 'leader') return;
    throw err;
  }
}

/** A leader's ISR count (see `ReplicaHead`): what `min.insync.replicas` counts, and who is on the way in or out. */
export interface IsrCount {
  readonly isr: readonly number[];
  readonly joining: readonly number[];
  readonly leaving: readonly number[];
  /** When each follower in `joining` began to join; written only when given (the entries stay otherwise). */
  readonly joiningSince?: Readonly<Record<string, number>>;
}

/**
 * Changes a leader's ISR count (lib/cluster/isr-count.ts keeps it in step with the partition state).
 * Condition: still the leader under `leaderEpoch`, and `isrVersion` is still `expectVersion`.
 * Effect: the lists, `isrVersion` + 1. Returns false when the condition failed.
 */
export async function setHeadIsr(store: ReplicaStoreRef, tp: string, leaderEpoch: number, expectVersion: number, next: IsrCount): Promise<boolean> {
  try {
    await client(store).send(new UpdateCommand({
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: `SET isr = :isr, joining = :joining, leaving = :leaving, isrVersion = :next${next.joiningSince ? ', joiningSince = :since' : ''}`,
      ConditionExpression: `leaderEpoch = :epoch AND #role = :leader AND ${isrVersionIs(expectVersion)}`,
      ExpressionAttributeNames: { '#role': 'role' },
      ExpressionAttributeValues: {
        ':isr': [...next.isr], ':joining': [...next.joining], ':leaving': [...next.leaving], ':next': expectVersion + 1, ':v': expectVersion, ':epoch': leaderEpoch, ':leader': 'leader',
        ...(next.joiningSince ? { ':since': { ...next.joiningSince } } : {}),
      },
    }));
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}

/**
 * The sweep's first step in clearing a partition's lag mark (lib/orchestration/sweep.ts): removes
 * the leader's lag flag and counts the clear, so an append that then finds the head unmarked
 * writes the mark again (and one that read the head before cannot set the flag without a mark).
 * Condition: the leader under `leaderEpoch`, `leo = hw = leo` (nothing appended since the sweep
 * found it caught up). Effects: `lagMarkedEpoch` removed, `lagClears` + 1.
 * Returns false when the condition failed (an append landed, or leadership moved).
 */
export async function clearLagFlag(store: ReplicaStoreRef, tp: string, leaderEpoch: number, leo: number): Promise<boolean> {
  try {
    await client(store).send(new UpdateCommand({
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: 'SET lagClears = if_not_exists(lagClears, :zero) + :one REMOVE lagMarkedEpoch',
      ConditionExpression: 'leo = :leo AND hw = :leo AND leaderEpoch = :epoch AND #role = :leader',
      ExpressionAttributeNames: { '#role': 'role' },
      ExpressionAttributeValues: { ':leo': leo, ':epoch': leaderEpoch, ':leader': 'leader', ':zero': 0, ':one': 1 },
    }));
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}
