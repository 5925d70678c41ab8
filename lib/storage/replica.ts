/**
 * Replica tables: one per broker, one partition per `tp`, the head at `off = -1` and one item per
 * record batch at `off = lastOffset` (keying by the last offset lets one Query starting at any
 * offset return the batch that holds it first). The only module that reads or writes them.
 */
import { randomUUID } from 'node:crypto';
import { BatchGetCommand, BatchWriteCommand, GetCommand, PutCommand, QueryCommand, ScanCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { dynamo } from './clients.js';
import { producersKey, type BatchRecord, type FollowerProgress, type ReplicaHead, type ReplicaRole, type StoredProducerState } from './model.js';
import { MAX_TRANSACTION_ITEMS, transactWrite } from './transact.js';

/** Where a broker's replica table lives. */
export interface ReplicaStoreRef {
  readonly brokerId: number;
  readonly replicaTable: string;
  readonly endpoint?: string;
}

const HEAD_OFFSET = -1;
const client = (s: ReplicaStoreRef): DynamoDBDocumentClient => dynamo(s.endpoint);

function toHead(item: Record<string, unknown>): ReplicaHead {
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
    isrVersion: (item.isrVersion as number | undefined) ?? 0,
    ...(typeof item.logId === 'string' ? { logId: item.logId } : {}),
    ...(typeof item.lagMarkedEpoch === 'number' ? { lagMarkedEpoch: item.lagMarkedEpoch } : {}),
    ...(typeof item.lagClears === 'number' ? { lagClears: item.lagClears } : {}),
  };
}

/** The stored form of a head. */
function headItem(h: ReplicaHead): Record<string, unknown> {
  return { ...h, off: HEAD_OFFSET };
}

function toBatch(item: Record<string, unknown>): BatchRecord {
  const { tp: _tp, off: _off, ...rest } = item;
  return rest as unknown as BatchRecord;
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

/**
 * The key of the item that names a replica store's incarnation (whose accounting its contents
 * belong to): `incarnation`, and `controllerEpoch`, the lease epoch of the controller that wrote it.
 */
const INCARNATION_KEY = { tp: '__incarnation__', off: HEAD_OFFSET };

/**
 * The controller's liveness probe: one strongly consistent read of the store's incarnation item,
 * bounded by `timeoutMs`. Returns the incarnation, `null` when the store answers without one
 * (a new or wiped store), or `undefined` when it did not answer.
 * Strongly consistent because an eventually consistent read may return the incarnation before
 * the last one written (or none): a healthy store would look wiped, and be fenced.
 */
export async function probeStore(store: ReplicaStoreRef, timeoutMs: number): Promise<string | null | undefined> {
  try {
    const out = await client(store).send(
      new GetCommand({ TableName: store.replicaTable, Key: INCARNATION_KEY, ConsistentRead: true }),
      { abortSignal: AbortSignal.timeout(timeoutMs) },
    );
    return (out.Item?.incarnation as string | undefined) ?? null;
  } catch {
    return undefined;
  }
}

export interface IncarnationWrite {
  /** The new incarnation (already recorded as pending in the broker record, under the lease). */
  readonly incarnation: string;
  /** The writer's controller lease epoch. */
  readonly controllerEpoch: number;
  /** The incarnation the writer's probe read and means to replace; `null` for none. */
  readonly replaces: string | null;
}

/**
 * Marks a store's contents as belonging to `incarnation` (the controller, once it has accounted
 * for them). The lease lives in another table (maybe another endpoint), so the write is fenced by
 * the epoch it leaves in the item instead:
 *
 *   controller A (epoch 7): records X ── stalls ──────────────────────────────── writes X ✗ (8 > 7)
 *   controller B (epoch 8):           takes over ── records Y ── writes Y, epoch 8 ✓
 *
 * Condition: the item's `controllerEpoch` is absent or ≤ the writer's, and the item holds
 * `replaces` (or no incarnation when `replaces` is null) — a store wiped or rewritten since the
 * probe is not stamped as if it held what was accounted for.
 * Effect: `incarnation` and `controllerEpoch` written. Returns false when the condition failed.
 */
export async function writeIncarnation(store: ReplicaStoreRef, w: IncarnationWrite): Promise<boolean> {
  try {
    await client(store).send(new PutCommand({
      TableName: store.replicaTable,
      Item: { ...INCARNATION_KEY, incarnation: w.incarnation, controllerEpoch: w.controllerEpoch },
      ConditionExpression: `(attribute_not_exists(controllerEpoch) OR controllerEpoch <= :epoch) AND ${w.replaces === null ? 'attribute_not_exists(incarnation)' : 'incarnation = :replaces'}`,
      ExpressionAttributeValues: { ':epoch': w.controllerEpoch, ...(w.replaces === null ? {} : { ':replaces': w.replaces }) },
    }));
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}

/** Reads many heads from one replica table (BatchGetItem, strongly consistent); missing ones are absent from the map. */
export async function readHeads(store: ReplicaStoreRef, tps: readonly string[]): Promise<Map<string, ReplicaHead>> {
  const heads = new Map<string, ReplicaHead>();
  for (let i = 0; i < tps.length; i += 100) {
    let keys: Record<string, unknown>[] | undefined = tps.slice(i, i + 100).map((tp) => ({ tp, off: HEAD_OFFSET }));
    for (let attempt = 0; keys && keys.length > 0; attempt++) {
      if (attempt > 8) throw new Error(`BatchGetItem on ${store.replicaTable} left ${keys.length} keys unprocessed`);
      if (attempt > 0) await new Promise((r) => setTimeout(r, 20 * 2 ** attempt));
      const out = await client(store).send(new BatchGetCommand({
        RequestItems: { [store.replicaTable]: { Keys: keys, ConsistentRead: true } },
      }));
      for (const item of out.Responses?.[store.replicaTable] ?? []) heads.set(item.tp as string, toHead(item));
      keys = out.UnprocessedKeys?.[store.replicaTable]?.Keys as Record<string, unknown>[] | undefined;
    }
  }
  return heads;
}

/** Parses the head a failed condition returned (ALL_OLD), if there was one. */
export function headFromItem(item: Record<string, unknown> | undefined): ReplicaHead | undefined {
  return item && item.off === HEAD_OFFSET ? toHead(item) : undefined;
}

async function batchWriteAll(store: ReplicaStoreRef, requests: Record<string, unknown>[]): Promise<void> {
  for (let i = 0; i < requests.length; i += 25) {
    let pending: Record<string, unknown>[] | undefined = requests.slice(i, i + 25);
    for (let attempt = 0; pending && pending.length > 0; attempt++) {
      if (attempt > 8) throw new Error(`BatchWriteItem on ${store.replicaTable} left ${pending.length} items unprocessed`);
      if (attempt > 0) await new Promise((r) => setTimeout(r, 20 * 2 ** attempt));
      const out = await client(store).send(new BatchWriteCommand({ RequestItems: { [store.replicaTable]: pending } }));
      pending = out.UnprocessedItems?.[store.replicaTable] as Record<string, unknown>[] | undefined;
    }
  }
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
 * Writes a snapshot's batches and producer states into a replica that a full sync claimed, in
 * transactions that each check the claim: once another sync took the replica over, a stale one
 * (paused, or slow) cannot write a single item into it.
 * Condition: the head's `snapshotting` is `claimedAt`. Errors: `ConditionFailed`.
 */
export async function fillClaimed(
  store: ReplicaStoreRef, tp: string, claimedAt: number,
  batches: readonly BatchRecord[], producers: readonly Omit<StoredProducerState, 'ver'>[],
): Promise<void> {
  const items = [
    ...batches.map((b) => ({ tp, off: b.lastOffset, ...b })),
    ...producers.map((st) => ({ tp: producersKey(tp), off: st.producerId, ...st, ver: Date.now() })),
  ];
  const check = { ConditionCheck: { TableName: store.replicaTable, Key: { tp, off: HEAD_OFFSET }, ConditionExpression: 'snapshotting = :t', ExpressionAttributeValues: { ':t': claimedAt } } };
  for (let i = 0; i < items.length;) {
    // Up to 99 items and well under the 4 MB a transaction may carry.
    let bytes = 0;
    let j = i;
    while (j < items.length && j - i < MAX_TRANSACTION_ITEMS - 1 && bytes < 2_000_000) bytes += approxBytes(items[j++]);
    await transactWrite(client(store), [check, ...items.slice(i, j).map((Item) => ({ Put: { TableName: store.replicaTable, Item } }))]);
    i = j;
  }
}

const approxBytes = (item: Record<string, unknown> | undefined): number => {
  const data = item?.data;
  return 200 + (data instanceof Uint8Array ? data.length : 0);
};

/**
 * Claims a replica for a full sync without touching its log: the head gets `snapshotting` (and
 * `snapshotRenewedAt`) = `at`, and from then on no copy step or truncation writes to it.
 * Condition: without `prior`, the head exists and is not claimed; with `prior`, it is still the
 * claim that was read as stale (same `snapshotting` and `snapshotRenewedAt`: one renewed since
 * is not taken over). Returns false when the condition failed.
 */
export async function claimHead(
  store: ReplicaStoreRef, tp: string, at: number, prior?: { readonly snapshotting: number; readonly snapshotRenewedAt?: number },
): Promise<boolean> {
  const renewed = prior?.snapshotRenewedAt;
  try {
    await client(store).send(new UpdateCommand({
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: 'SET snapshotting = :at, snapshotRenewedAt = :at',
      ConditionExpression: !prior
        ? 'attribute_exists(tp) AND attribute_not_exists(snapshotting)'
        : `snapshotting = :p AND ${renewed === undefined ? 'attribute_not_exists(snapshotRenewedAt)' : 'snapshotRenewedAt = :r'}`,
      ExpressionAttributeValues: { ':at': at, ...(prior ? { ':p': prior.snapshotting } : {}), ...(renewed === undefined ? {} : { ':r': renewed }) },
    }));
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}

/**
 * Shows a full sync's claim is alive (`at` = now), or gives it up (`at` = 0: stale at once).
 * Condition: the head's `snapshotting` is `claimedAt`. Returns false when it failed.
 */
export async function renewClaim(store: ReplicaStoreRef, tp: string, claimedAt: number, at: number): Promise<boolean> {
  try {
    await client(store).send(new UpdateCommand({
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: 'SET snapshotRenewedAt = :at',
      ConditionExpression: 'snapshotting = :t',
      ExpressionAttributeValues: { ':t': claimedAt, ':at': at },
    }));
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}

/**
 * Ends a full sync's claim of a replica whose log it never touched: the head is left as it was
 * before the claim (and any role pushed meanwhile).
 * Condition: the head's `snapshotting` is `claimedAt`. Effect: `snapshotting` and
 * `snapshotRenewedAt` removed. Returns false when the condition failed.
 */
export async function releaseClaim(store: ReplicaStoreRef, tp: string, claimedAt: number): Promise<boolean> {
  try {
    await client(store).send(new UpdateCommand({
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: 'REMOVE snapshotting, snapshotRenewedAt',
      ConditionExpression: 'snapshotting = :t',
      ExpressionAttributeValues: { ':t': claimedAt },
    }));
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}

/**
 * Sets a replica's role and leader epoch (what the controller pushes after an election), and for
 * a leader the ISR its high watermark counts (the partition state's ISR at the election).
 * Condition: the head exists and its leader epoch is not newer than `leaderEpoch` — epochs never
 * go backwards. Errors: `ConditionFailed` (index 0 carries the current head).
 */
export async function setRole(store: ReplicaStoreRef, tp: string, role: ReplicaRole, leaderEpoch: number, isr?: readonly number[]): Promise<void> {
  await transactWrite(client(store), [{
    Update: {
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: `SET #role = :role, leaderEpoch = :epoch${isr ? ', isr = :isr, joining = :none, leaving = :none, isrVersion = if_not_exists(isrVersion, :zero) + :one' : ''}`,
      ConditionExpression: 'attribute_exists(tp) AND leaderEpoch <= :epoch',
      ExpressionAttributeNames: { '#role': 'role' },
      ExpressionAttributeValues: { ':role': role, ':epoch': leaderEpoch, ...(isr ? { ':isr': [...isr], ':none': [], ':zero': 0, ':one': 1 } : {}) },
    },
  }]);
}

/** Condition on a head's `isrVersion` (`:v`); a head written before it existed is at version 0. */
const isrVersionIs = (v: number) => (v === 0 ? '(attribute_not_exists(isrVersion) OR isrVersion = :v)' : 'isrVersion = :v');

/** A leader's ISR count (see `ReplicaHead`): what `min.insync.replicas` counts, and who is on the way in or out. */
export interface IsrCount {
  readonly isr: readonly number[];
  readonly joining: readonly number[];
  readonly leaving: readonly number[];
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
      UpdateExpression: 'SET isr = :isr, joining = :joining, leaving = :leaving, isrVersion = :next',
      ConditionExpression: `leaderEpoch = :epoch AND #role = :leader AND ${isrVersionIs(expectVersion)}`,
      ExpressionAttributeNames: { '#role': 'role' },
      ExpressionAttributeValues: {
        ':isr': [...next.isr], ':joining': [...next.joining], ':leaving': [...next.leaving], ':next': expectVersion + 1, ':v': expectVersion, ':epoch': leaderEpoch, ':leader': 'leader',
      },
    }));
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}

/** A producer state to write with an append or copy: `expectVer` null means it must not exist yet. */
export interface ProducerStateWrite {
  readonly state: Omit<StoredProducerState, 'ver'>;
  readonly expectVer: number | null;
}

function producerPut(store: ReplicaStoreRef, tp: string, w: ProducerStateWrite) {
  return {
    Put: {
      TableName: store.replicaTable,
      Item: { tp: producersKey(tp), off: w.state.producerId, ...w.state, ver: (w.expectVer ?? 0) + 1 },
      ConditionExpression: w.expectVer === null ? 'attribute_not_exists(tp)' : 'ver = :v',
      ...(w.expectVer === null ? {} : { ExpressionAttributeValues: { ':v': w.expectVer } }),
    },
  };
}

function producerDelete(store: ReplicaStoreRef, tp: string, producerId: number, expectVer: number) {
  return { Delete: { TableName: store.replicaTable, Key: { tp: producersKey(tp), off: producerId }, ConditionExpression: 'ver = :v', ExpressionAttributeValues: { ':v': expectVer } } };
}

const toProducerState = (item: Record<string, unknown>): StoredProducerState => ({
  producerId: item.off as number,
  producerEpoch: item.producerEpoch as number,
  batches: (item.batches as StoredProducerState['batches'] | undefined) ?? [],
  ver: item.ver as number,
});

/** Reads some producers' states of a partition (BatchGetItem, strongly consistent). */
export async function readProducerStates(store: ReplicaStoreRef, tp: string, producerIds: readonly number[]): Promise<Map<number, StoredProducerState>> {
  const out = new Map<number, StoredProducerState>();
  const ids = [...new Set(producerIds)];
  for (let i = 0; i < ids.length; i += 100) {
    let keys: Record<string, unknown>[] | undefined = ids.slice(i, i + 100).map((id) => ({ tp: producersKey(tp), off: id }));
    for (let attempt = 0; keys && keys.length > 0; attempt++) {
      if (attempt > 8) throw new Error(`BatchGetItem on ${store.replicaTable} left ${keys.length} keys unprocessed`);
      if (attempt > 0) await new Promise((r) => setTimeout(r, 20 * 2 ** attempt));
      const res = await client(store).send(new BatchGetCommand({ RequestItems: { [store.replicaTable]: { Keys: keys, ConsistentRead: true } } }));
      for (const item of res.Responses?.[store.replicaTable] ?? []) out.set(item.off as number, toProducerState(item));
      keys = res.UnprocessedKeys?.[store.replicaTable]?.Keys as Record<string, unknown>[] | undefined;
    }
  }
  return out;
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

export interface AppendWrite {
  /** The head must still say this log end offset... */
  readonly expectLeo: number;
  /** ...and this leader epoch, with role `leader`. */
  readonly leaderEpoch: number;
  /** Batches with offsets assigned, contiguous from `expectLeo`. */
  readonly batches: readonly BatchRecord[];
  /** High watermark to set with the append, if it moves. */
  readonly hw?: number;
  /** Leader-epoch cache entry to add, when this is the epoch's first append. */
  readonly epochEntry?: readonly [number, number];
  /** Idempotent producers' states after these batches. */
  readonly producers?: readonly ProducerStateWrite[];
  /**
   * The lag flag (lib/log/lag-index.ts): `expect` — the head must still say `lagMarkedEpoch =
   * leaderEpoch` (no sweep cleared it since it was read); `set` — the caller has just written the
   * lag mark, so set the flag, on condition that the head's `lagClears` is still `clears` (no sweep
   * cleared the index after the head was read, which could have deleted that very mark).
   */
  readonly lag?: { readonly expect: true } | { readonly set: true; readonly clears: number | undefined };
  /** The head's ISR count must have at least this many members (acks=all's min.insync.replicas). */
  readonly minIsr?: number;
}

/** What an append or a copy adds to the head's roll trigger: the table tail's bytes and age. */
const TAIL_GROWS = ['tailBytes = if_not_exists(tailBytes, :zeroBytes) + :addedBytes', 'tailSince = if_not_exists(tailSince, :appendedAt)'];
const tailGrowth = (batches: readonly BatchRecord[]) => ({
  ':zeroBytes': 0, ':addedBytes': batches.reduce((n, b) => n + b.sizeBytes, 0), ':appendedAt': Date.now(),
});

/** The condition and effect of setting the lag flag on a head read with `clears` sweep clears. */
function lagFlagSet(clears: number | undefined, values: Record<string, unknown>): string {
  if (clears === undefined) return 'attribute_not_exists(lagClears)';
  values[':clears'] = clears;
  return 'lagClears = :clears';
}

/**
 * Appends batches to a leader replica in one transaction.
 *
 *   appender A: read head (leo=L) ── encode ── transact(leo: L → L+n) ✓
 *   appender B: read head (leo=L) ── encode ─────── transact(leo: L → L+m) ✗ condition: leo = L
 *                                                  └─ ALL_OLD returns leo=L+n; B retries at L+n
 *
 * Condition: head `leo = expectLeo AND leaderEpoch = leaderEpoch AND role = leader` (and the lag
 * flag condition of `lag`, and `size(isr) >= minIsr` when given), and no item at each batch's key. Effects: head `leo` = last batch's
 * lastOffset + 1 (and `hw`, epoch cache entry, `lagMarkedEpoch` when given); one item per batch.
 * Errors: `ConditionFailed` (index 0 carries the current head when it exists).
 */
export async function appendBatches(store: ReplicaStoreRef, tp: string, write: AppendWrite): Promise<void> {
  const last = write.batches[write.batches.length - 1];
  if (!last) throw new Error('appendBatches needs at least one batch');
  const sets = ['leo = :newLeo', ...TAIL_GROWS];
  const values: Record<string, unknown> = {
    ':leo': write.expectLeo, ':epoch': write.leaderEpoch, ':leader': 'leader', ':newLeo': last.lastOffset + 1,
    ...tailGrowth(write.batches),
  };
  if (write.hw !== undefined) {
    sets.push('hw = :hw');
    values[':hw'] = write.hw;
  }
  if (write.epochEntry) {
    sets.push('epochs = list_append(epochs, :entry)');
    values[':entry'] = [[...write.epochEntry]];
  }
  let condition = 'leo = :leo AND leaderEpoch = :epoch AND #role = :leader';
  if (write.lag && 'expect' in write.lag) condition += ' AND lagMarkedEpoch = :epoch';
  if (write.lag && 'set' in write.lag) {
    sets.push('lagMarkedEpoch = :epoch');
    condition += ` AND ${lagFlagSet(write.lag.clears, values)}`;
  }
  if (write.minIsr !== undefined) {
    condition += ' AND size(isr) >= :minIsr';
    values[':minIsr'] = write.minIsr;
  }
  await transactWrite(client(store), [
    {
      Update: {
        TableName: store.replicaTable,
        Key: { tp, off: HEAD_OFFSET },
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: condition,
        ExpressionAttributeNames: { '#role': 'role' },
        ExpressionAttributeValues: values,
      },
    },
    ...write.batches.map((b) => ({
      Put: {
        TableName: store.replicaTable,
        Item: { tp, off: b.lastOffset, ...b },
        ConditionExpression: 'attribute_not_exists(off)',
      },
    })),
    ...(write.producers ?? []).map((w) => producerPut(store, tp, w)),
  ]);
}

export interface CopyWrite {
  /** The follower head must still say this log end offset, this leader epoch, role follower, and be reconciled with it. */
  readonly expectLeo: number;
  readonly leaderEpoch: number;
  /** The leader's batches, in order, contiguous from `expectLeo`. */
  readonly batches: readonly BatchRecord[];
  /** The follower's high watermark after the copy. */
  readonly hw: number;
  /** Leader-epoch cache entries the copied batches start. */
  readonly epochEntries: readonly (readonly [number, number])[];
  /** The follower's idempotent producer states after these batches. */
  readonly producers?: readonly ProducerStateWrite[];
  /**
   * Producer states after these batches taken from the leader's append (the fast commit): written
   * whatever version the follower's items have — the head's condition proves the follower's log is
   * the leader's up to `expectLeo`, so its states are the leader's states before these batches.
   */
  readonly leaderProducers?: readonly Omit<StoredProducerState, 'ver'>[];
}

/**
 * Copies batches to a follower in one transaction (the replicator's copy step:
 * docs/architecture.md, "Replication").
 *
 *   copier A: read follower (leo=F) ── read leader batches ── transact(F → F+n) ✓
 *   copier B: read follower (leo=F) ── read leader batches ─────── transact(F → F+n) ✗ leo = F fails: B is a no-op
 *
 * Condition: head `leo = expectLeo AND leaderEpoch = :e AND syncEpoch = :e AND role = follower`:
 * a zombie leader of an older epoch can make no follower accept its batches.
 * Effects: the batches, head `leo`, `hw`, epoch cache entries.
 * Errors: `ConditionFailed` (index 0 carries the current head).
 */
export async function copyBatches(store: ReplicaStoreRef, tp: string, write: CopyWrite): Promise<void> {
  const last = write.batches[write.batches.length - 1];
  if (!last) throw new Error('copyBatches needs at least one batch');
  const entries = write.epochEntries.length > 0;
  await transactWrite(client(store), [
    {
      Update: {
        TableName: store.replicaTable,
        Key: { tp, off: HEAD_OFFSET },
        UpdateExpression: `SET leo = :newLeo, hw = :hw, ${TAIL_GROWS.join(', ')}${entries ? ', epochs = list_append(epochs, :entries)' : ''}`,
        ConditionExpression: 'leo = :leo AND leaderEpoch = :epoch AND syncEpoch = :epoch AND #role = :follower AND attribute_not_exists(snapshotting)',
        ExpressionAttributeNames: { '#role': 'role' },
        ExpressionAttributeValues: {
          ':leo': write.expectLeo, ':epoch': write.leaderEpoch, ':follower': 'follower', ':newLeo': last.lastOffset + 1, ':hw': write.hw,
          ...tailGrowth(write.batches),
          ...(entries ? { ':entries': write.epochEntries.map((e) => [...e]) } : {}),
        },
      },
    },
    // No item condition: the head's condition makes this copier the only writer, and an item left
    // above the log end (by a superseded full sync of the same leader log) holds these same bytes.
    ...write.batches.map((b) => ({ Put: { TableName: store.replicaTable, Item: { tp, off: b.lastOffset, ...b } } })),
    ...(write.producers ?? []).map((w) => producerPut(store, tp, w)),
    ...(write.leaderProducers ?? []).map((st) => ({
      Update: {
        TableName: store.replicaTable,
        Key: { tp: producersKey(tp), off: st.producerId },
        UpdateExpression: 'SET producerEpoch = :pe, batches = :pb, ver = if_not_exists(ver, :zero) + :one',
        ExpressionAttributeValues: { ':pe': st.producerEpoch, ':pb': st.batches, ':zero': 0, ':one': 1 },
      },
    })),
  ]);
}

/**
 * The fast commit's last step (lib/log/fast-commit.ts): the leader's high watermark moves to `hw`
 * and the followers it copied to record their progress, each under its own map key (the others'
 * entries stay as they are).
 * Condition: as `advanceHighWatermark` — still the leader under `leaderEpoch`, `hw` not behind the
 * stored one, within the log end, and the ISR count still at `isrVersion`.
 * Returns the head after the write, or, when the condition failed, `{ current }`: the head as
 * stored (undefined when gone).
 */
export async function recordCommit(
  store: ReplicaStoreRef, tp: string, w: { leaderEpoch: number; hw: number; isrVersion: number; followers: Readonly<Record<string, FollowerProgress>> },
): Promise<{ head: ReplicaHead } | { current: ReplicaHead | undefined }> {
  const names: Record<string, string> = { '#role': 'role' };
  const values: Record<string, unknown> = { ':hw': w.hw, ':epoch': w.leaderEpoch, ':leader': 'leader', ':v': w.isrVersion };
  const sets = ['hw = :hw'];
  Object.entries(w.followers).forEach(([b, progress], i) => {
    names[`#f${i}`] = b;
    values[`:f${i}`] = progress;
    sets.push(`followers.#f${i} = :f${i}`);
  });
  try {
    const out = await client(store).send(new UpdateCommand({
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: `SET ${sets.join(', ')}`,
      ConditionExpression: `leaderEpoch = :epoch AND #role = :leader AND hw <= :hw AND leo >= :hw AND ${isrVersionIs(w.isrVersion)}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ReturnValues: 'ALL_NEW',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    }));
    return { head: toHead(out.Attributes as Record<string, unknown>) };
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') {
      // (the document client leaves the error's item in DynamoDB's attribute-value form)
      const item = (err as { Item?: Record<string, AttributeValue> }).Item;
      return { current: item ? toHead(unmarshall(item)) : undefined };
    }
    throw err;
  }
}

/**
 * Advances a leader's high watermark and records its followers' progress.
 * Condition: still the leader under `leaderEpoch`, `hw` does not move backwards, and the head's
 * ISR is still the one `hw` was computed over; with `lagMark`, also no sweep cleared the lag flag
 * since the head was read (`lagClears` unchanged: the caller has just written the mark, which such
 * a clear may have deleted).
 * Effects: `hw`, `followers`; with `lagMark`, `lagMarkedEpoch = leaderEpoch`.
 * Returns false when the condition failed (another copier got further, leadership moved, a clear).
 */
export async function advanceHighWatermark(
  store: ReplicaStoreRef, tp: string, leaderEpoch: number, hw: number, followers: Readonly<Record<string, { leo: number; caughtUpAt: number }>>,
  isrVersion: number, lagMark?: { readonly clears: number | undefined },
): Promise<boolean> {
  // A single-item write outside a transaction: half the write units of a one-item transaction.
  const values: Record<string, unknown> = { ':hw': hw, ':f': followers, ':epoch': leaderEpoch, ':leader': 'leader', ':v': isrVersion };
  const lagCondition = lagMark ? ` AND ${lagFlagSet(lagMark.clears, values)}` : '';
  try {
    await client(store).send(new UpdateCommand({
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: `SET hw = :hw, followers = :f${lagMark ? ', lagMarkedEpoch = :epoch' : ''}`,
      // Computed over the ISR of this version: if a follower joined meanwhile, the minimum may be wrong.
      ConditionExpression: `leaderEpoch = :epoch AND #role = :leader AND hw <= :hw AND leo >= :hw AND ${isrVersionIs(isrVersion)}${lagCondition}`,
      ExpressionAttributeNames: { '#role': 'role' },
      ExpressionAttributeValues: values,
    }));
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}

/**
 * A roll's last step on one replica (or retention dropping batches wholly below the log start):
 * the table stops holding [tailStart, end), which is now in live S3 segments (or deleted).
 *
 *   1. the head: `tailStart = end`, `tailBytes` less the bytes of the batches below `end`,
 *      `tailSince` now
 *   2. every batch item below `end`, deleted (unconditionally: what is below a raised tailStart is
 *      in S3 or gone; a reader that read the head before 1 and misses them falls back to segments)
 *
 * Condition (1): the replica holds everything below `end` (`leo >= end`), its tailStart is below
 * `end` (never moves back), and no full sync fills it. A replica that fails it is skipped (false):
 * a lagging one gets the leader's segment list through a full sync, a later pass retries the rest.
 * `end` must be a batch boundary; `known`: the batches below it, when the caller read them (else a
 * Query finds them). Returns whether the head moved (the deletes run either way when
 * the head already says `end` or more, so a crash between 1 and 2 is finished by the next call).
 */
export async function advanceTailStart(
  store: ReplicaStoreRef, tp: string, end: number, now = Date.now(), known?: readonly { readonly off: number; readonly sizeBytes: number }[],
): Promise<boolean> {
  // (batch items have the same keys on every replica: a roller that read the leader's passes them, saving a Query per replica)
  const below = known ?? await batchKeysBelow(store, tp, end);
  const dropped = below.reduce((n, b) => n + b.sizeBytes, 0);
  let moved = true;
  try {
    await client(store).send(new UpdateCommand({
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: 'SET tailStart = :end, tailBytes = if_not_exists(tailBytes, :dropped) - :dropped, tailSince = :now',
      ConditionExpression: 'leo >= :end AND (attribute_not_exists(tailStart) OR tailStart < :end) AND attribute_not_exists(snapshotting)',
      ExpressionAttributeValues: { ':end': end, ':dropped': dropped, ':now': now },
    }));
  } catch (err) {
    if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
    moved = false;
    const head = await readHead(store, tp);
    if (!head || (head.tailStart ?? 0) < end) return false;
  }
  // (a 16 MiB tail of 1 KiB batches is ~650 BatchWriteItem calls: a few at once)
  const deletes = below.map((b) => ({ DeleteRequest: { Key: { tp, off: b.off } } }));
  const CHUNK = 25 * 40;
  const chunks = Array.from({ length: Math.ceil(deletes.length / CHUNK) }, (_, i) => deletes.slice(i * CHUNK, (i + 1) * CHUNK));
  for (let i = 0; i < chunks.length; i += 4) await Promise.all(chunks.slice(i, i + 4).map((c) => batchWriteAll(store, c)));
  return moved;
}

/** The keys and sizes of every batch item wholly below `end` (keyed by last offset: `off < end`). */
async function batchKeysBelow(store: ReplicaStoreRef, tp: string, end: number): Promise<{ off: number; sizeBytes: number }[]> {
  const out: { off: number; sizeBytes: number }[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const res = await client(store).send(new QueryCommand({
      TableName: store.replicaTable,
      KeyConditionExpression: 'tp = :tp AND off BETWEEN :zero AND :last',
      ExpressionAttributeValues: { ':tp': tp, ':zero': 0, ':last': end - 1 },
      ProjectionExpression: 'off, sizeBytes',
      ConsistentRead: true,
      ExclusiveStartKey: start,
    }));
    out.push(...(res.Items ?? []).map((i) => ({ off: i.off as number, sizeBytes: (i.sizeBytes as number | undefined) ?? 0 })));
    start = res.LastEvaluatedKey;
  } while (start);
  return out;
}

/**
 * Corrects a head's `tailBytes` (a roll trigger that drifted: a truncation or a full sync does not
 * keep it exact) by `delta`, relative to the value the caller read: appends since add their own.
 * Condition: the head exists. Errors: store failures only.
 */
export async function correctTailBytes(store: ReplicaStoreRef, tp: string, delta: number): Promise<void> {
  try {
    await client(store).send(new UpdateCommand({
      TableName: store.replicaTable, Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: 'ADD tailBytes :d', ConditionExpression: 'attribute_exists(tp)', ExpressionAttributeValues: { ':d': delta },
    }));
  } catch (err) {
    if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
  }
}

/**
 * Raises a replica's log start offset (retention, DeleteRecords); never moves it back. A head
 * without `tailStart` gets its old log start as `tailStart` in the same write: the table still
 * holds the batches from there, and a roller must start at a batch boundary, not at an offset
 * DeleteRecords chose inside a batch.
 * Condition: `logStartOffset < offset` and the replica holds the offset (`leo >= offset`; one that
 * does not will take the leader's log start with a full sync). Returns false when it failed.
 */
export async function raiseLogStart(store: ReplicaStoreRef, tp: string, offset: number): Promise<boolean> {
  try {
    await client(store).send(new UpdateCommand({
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: 'SET tailStart = if_not_exists(tailStart, logStartOffset), logStartOffset = :o',
      ConditionExpression: 'logStartOffset < :o AND leo >= :o',
      ExpressionAttributeValues: { ':o': offset },
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

/** A producer's state after a truncation (none: delete it), written only if its version is still `expectVer`. */
export interface ProducerStateTruncation {
  readonly producerId: number;
  readonly state?: Omit<StoredProducerState, 'ver'>;
  readonly expectVer: number;
}

/**
 * Truncates a follower's log to `toOffset` and marks it reconciled with its leader epoch (KIP-101).
 * Whole batches only, as Kafka truncates: when `toOffset` falls inside a batch, the log ends at
 * that batch's base offset (batch items are keyed by their last offset, so the batch holding
 * `toOffset` is one of those deleted; a log end inside it would leave a hole).
 *
 *   1. delete every batch item from the truncation point up, in transactions that each check the
 *      head is still the one `head` was read as
 *   2. one transaction: the head (leo, hw, epoch cache, `syncEpoch`, a new `logId`) on the same
 *      condition, with the producers' states on condition of their versions
 *
 * Condition (both steps): the head has `head`'s leo, leader epoch and `logId`, no full sync, and
 * is not yet reconciled with its leader epoch (`syncEpoch` ≠ `leaderEpoch`): a follower's log never
 * shrinks within one leader epoch — only a new epoch truncates, once. So a truncator that read the
 * head before another one truncated it (and copied the leader's batches in) deletes nothing; one
 * that stops between 1 and 2 leaves the head unreconciled (no copier writes to it) over a tail
 * the next attempt deletes again.
 * Returns the log end it set. Errors: `ConditionFailed` (that transaction wrote nothing).
 */
export async function truncateLog(store: ReplicaStoreRef, tp: string, head: ReplicaHead, toOffset: number, producers: readonly ProducerStateTruncation[] = []): Promise<number> {
  const check = headUnchanged(head);
  const leo = toOffset < head.leo ? await batchStartAt(store, tp, toOffset) : head.leo;
  if (leo < head.leo) await deleteBatchesFrom(store, tp, leo, check);
  const stateWrites = producers.map((p) => p.state
    ? producerPut(store, tp, { state: p.state, expectVer: p.expectVer })
    : producerDelete(store, tp, p.producerId, p.expectVer));
  const room = MAX_TRANSACTION_ITEMS - 1;
  // (more producers than one transaction holds: the rest first, each still conditioned on its version)
  for (let i = room; i < stateWrites.length; i += MAX_TRANSACTION_ITEMS - 1) await transactWrite(client(store), [headCheck(store, tp, check), ...stateWrites.slice(i, i + MAX_TRANSACTION_ITEMS - 1)]);
  await transactWrite(client(store), [{
    Update: {
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: 'SET leo = :leo, hw = :hw, epochs = :epochs, syncEpoch = :epoch, logId = :newLogId',
      ConditionExpression: check.expression,
      ExpressionAttributeValues: {
        ...check.values,
        ':leo': leo, ':hw': Math.min(head.hw, leo), ':epochs': head.epochs.filter(([, start]) => start < leo).map((e) => [...e]),
        ':newLogId': randomUUID(),
      },
    },
  }, ...stateWrites.slice(0, room)]);
  return leo;
}

/** A condition that a head is still the one `head` was read as, and still to be reconciled with its epoch. */
interface HeadCondition {
  readonly expression: string;
  readonly values: Record<string, unknown>;
}

function headUnchanged(head: ReplicaHead): HeadCondition {
  return {
    expression: 'leo = :expect AND leaderEpoch = :epoch AND (attribute_not_exists(syncEpoch) OR syncEpoch <> :epoch) AND attribute_not_exists(snapshotting) AND '
      + (head.logId === undefined ? 'attribute_not_exists(logId)' : 'logId = :logId'),
    values: { ':expect': head.leo, ':epoch': head.leaderEpoch, ...(head.logId === undefined ? {} : { ':logId': head.logId }) },
  };
}

const headCheck = (store: ReplicaStoreRef, tp: string, c: HeadCondition) => ({
  ConditionCheck: { TableName: store.replicaTable, Key: { tp, off: HEAD_OFFSET }, ConditionExpression: c.expression, ExpressionAttributeValues: c.values },
});

/**
 * Where a log truncated at `offset` must end so that it holds whole batches: the base offset of
 * the batch holding `offset`, or `offset` itself when a batch starts there (or none holds it).
 */
export async function batchStartAt(store: ReplicaStoreRef, tp: string, offset: number): Promise<number> {
  const out = await client(store).send(new QueryCommand({
    TableName: store.replicaTable,
    KeyConditionExpression: 'tp = :tp AND off >= :from',
    ExpressionAttributeValues: { ':tp': tp, ':from': offset },
    ProjectionExpression: 'baseOffset',
    ConsistentRead: true,
    Limit: 1,
  }));
  const base = out.Items?.[0]?.baseOffset as number | undefined;
  return base !== undefined && base < offset ? base : offset;
}

/**
 * Deletes every batch item at or above `fromOffset` (the key is the batch's last offset), up to
 * 99 per transaction, each transaction on `check` of the head: once the head moved, nothing more
 * is deleted. Errors: `ConditionFailed`.
 */
async function deleteBatchesFrom(store: ReplicaStoreRef, tp: string, fromOffset: number, check: HeadCondition): Promise<void> {
  for (;;) {
    const out = await client(store).send(new QueryCommand({
      TableName: store.replicaTable,
      KeyConditionExpression: 'tp = :tp AND off >= :from',
      ExpressionAttributeValues: { ':tp': tp, ':from': fromOffset },
      ProjectionExpression: 'tp, off',
      ConsistentRead: true,
      Limit: MAX_TRANSACTION_ITEMS - 1,
    }));
    const keys = out.Items ?? [];
    if (keys.length === 0) return;
    await transactWrite(client(store), [
      headCheck(store, tp, check),
      ...keys.map((k) => ({ Delete: { TableName: store.replicaTable, Key: { tp: k.tp, off: k.off } } })),
    ]);
  }
}

export interface BatchQuery {
  /** First offset wanted: the batch holding it comes first. */
  readonly fromOffset: number;
  /** Last offset wanted (inclusive), e.g. the high watermark minus one. */
  readonly toOffset: number;
  /** Stop once this many bytes of batches were read (at least one batch is always returned). */
  readonly maxBytes: number;
}

/** Reads batches in offset order, strongly consistent, paging until `maxBytes` or `toOffset`. */
export async function queryBatches(store: ReplicaStoreRef, tp: string, q: BatchQuery): Promise<BatchRecord[]> {
  const batches: BatchRecord[] = [];
  let bytes = 0;
  let start: Record<string, unknown> | undefined;
  if (q.toOffset < q.fromOffset) return batches;
  do {
    const out = await client(store).send(new QueryCommand({
      TableName: store.replicaTable,
      KeyConditionExpression: 'tp = :tp AND off BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':tp': tp, ':from': q.fromOffset, ':to': q.toOffset },
      ConsistentRead: true,
      ExclusiveStartKey: start,
    }));
    for (const item of out.Items ?? []) {
      if (batches.length > 0 && bytes + (item.sizeBytes as number) > q.maxBytes) return batches;
      batches.push(toBatch(item));
      bytes += item.sizeBytes as number;
    }
    start = out.LastEvaluatedKey;
  } while (start && bytes < q.maxBytes);
  return batches;
}

/** The first batch in `[fromOffset, toOffset]` holding a record with timestamp ≥ `timestamp` (ListOffsets by time). */
export async function firstBatchAtOrAfter(store: ReplicaStoreRef, tp: string, fromOffset: number, toOffset: number, timestamp: number): Promise<BatchRecord | undefined> {
  let start: Record<string, unknown> | undefined;
  if (toOffset < fromOffset) return undefined;
  do {
    const out = await client(store).send(new QueryCommand({
      TableName: store.replicaTable,
      KeyConditionExpression: 'tp = :tp AND off BETWEEN :from AND :to',
      FilterExpression: 'maxTimestamp >= :ts',
      ExpressionAttributeValues: { ':tp': tp, ':from': fromOffset, ':to': toOffset, ':ts': timestamp },
      ConsistentRead: true,
      ExclusiveStartKey: start,
    }));
    const first = out.Items?.[0];
    if (first) return toBatch(first);
    start = out.LastEvaluatedKey;
  } while (start);
  return undefined;
}

/** Deletes a partition from a replica table: its head, every batch, every producer state. */
export async function deletePartition(store: ReplicaStoreRef, tp: string): Promise<void> {
  for (const key of [tp, producersKey(tp)]) await deleteAll(store, key);
}

/**
 * Deletes a partition's batches and producer states, keeping its head, for the full sync that
 * holds the claim `claimedAt`: each transaction of deletes checks the claim, so a claimant that
 * lost it (paused, then taken over) deletes nothing of what its successor wrote.
 * Condition: the head's `snapshotting` is `claimedAt`. Errors: `ConditionFailed`.
 */
export async function deleteLog(store: ReplicaStoreRef, tp: string, claimedAt: number): Promise<void> {
  const check = { ConditionCheck: { TableName: store.replicaTable, Key: { tp, off: HEAD_OFFSET }, ConditionExpression: 'snapshotting = :t', ExpressionAttributeValues: { ':t': claimedAt } } };
  const remove = async (keys: Record<string, unknown>[]) => {
    for (let i = 0; i < keys.length; i += MAX_TRANSACTION_ITEMS - 1) {
      await transactWrite(client(store), [check, ...keys.slice(i, i + MAX_TRANSACTION_ITEMS - 1).map((Key) => ({ Delete: { TableName: store.replicaTable, Key } }))]);
    }
  };
  await deleteAll(store, tp, 0, remove);
  await deleteAll(store, producersKey(tp), undefined, remove);
}

/** Deletes every item under `key` (from offset `fromOff` on), a page of keys at a time (`remove`: unconditional batch deletes by default). */
async function deleteAll(
  store: ReplicaStoreRef, key: string, fromOff?: number,
  remove: (keys: Record<string, unknown>[]) => Promise<void> = (keys) => batchWriteAll(store, keys.map((Key) => ({ DeleteRequest: { Key } }))),
): Promise<void> {
  let start: Record<string, unknown> | undefined;
  do {
    const out = await client(store).send(new QueryCommand({
      TableName: store.replicaTable,
      KeyConditionExpression: fromOff === undefined ? 'tp = :tp' : 'tp = :tp AND off >= :from',
      ExpressionAttributeValues: { ':tp': key, ...(fromOff === undefined ? {} : { ':from': fromOff }) },
      ProjectionExpression: 'tp, off',
      // (what a failed sync wrote just before it gave its claim up must be seen)
      ConsistentRead: true,
      ExclusiveStartKey: start,
    }));
    await remove((out.Items ?? []).map((k) => ({ tp: k.tp, off: k.off })));
    start = out.LastEvaluatedKey;
  } while (start);
}

/**
 * The `data/` objects a replica's table points to for a partition (large batches kept in S3):
 * a paged, strongly consistent Query of the batch items projecting `s3` (the garbage pass keeps
 * every object named here). Reads every batch item of the table tail (billed by item size).
 */
export async function batchPointerKeys(store: ReplicaStoreRef, tp: string): Promise<Set<string>> {
  const keys = new Set<string>();
  let start: Record<string, unknown> | undefined;
  do {
    const out = await client(store).send(new QueryCommand({
      TableName: store.replicaTable,
      KeyConditionExpression: 'tp = :tp AND off >= :zero',
      FilterExpression: 'attribute_exists(s3)',
      ExpressionAttributeNames: { '#s3': 's3' },
      ExpressionAttributeValues: { ':tp': tp, ':zero': 0 },
      ProjectionExpression: '#s3',
      ConsistentRead: true,
      ExclusiveStartKey: start,
    }));
    for (const item of out.Items ?? []) {
      const key = (item.s3 as { key?: unknown } | undefined)?.key;
      if (typeof key === 'string') keys.add(key);
    }
    start = out.LastEvaluatedKey;
  } while (start);
  return keys;
}

/** A batch's offsets and size, without its bytes. */
export interface BatchBounds {
  readonly baseOffset: number;
  readonly lastOffset: number;
  readonly sizeBytes: number;
}

/**
 * The batches a replica's table holds whose last offset is in [fromOffset, below) — the batches
 * wholly below `below` (DeleteRecords drops them) — in offset order, without their bytes.
 */
export async function batchBoundsBelow(store: ReplicaStoreRef, tp: string, fromOffset: number, below: number): Promise<BatchBounds[]> {
  const out: BatchBounds[] = [];
  if (below <= fromOffset) return out;
  let start: Record<string, unknown> | undefined;
  do {
    const res = await client(store).send(new QueryCommand({
      TableName: store.replicaTable,
      KeyConditionExpression: 'tp = :tp AND off BETWEEN :from AND :last',
      ExpressionAttributeValues: { ':tp': tp, ':from': Math.max(0, fromOffset), ':last': below - 1 },
      ProjectionExpression: 'baseOffset, lastOffset, sizeBytes',
      ConsistentRead: true,
      ExclusiveStartKey: start,
    }));
    for (const item of res.Items ?? []) out.push({ baseOffset: item.baseOffset as number, lastOffset: item.lastOffset as number, sizeBytes: item.sizeBytes as number });
    start = res.LastEvaluatedKey;
  } while (start);
  return out;
}

/**
 * Deletes every item of a broker's replica table (a removed broker's, once nothing refers to it), a
 * page of keys at a time. Returns the items deleted.
 */
export async function emptyStore(store: ReplicaStoreRef): Promise<number> {
  let deleted = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const out = await client(store).send(new ScanCommand({ TableName: store.replicaTable, ProjectionExpression: 'tp, #o', ExpressionAttributeNames: { '#o': 'off' }, ExclusiveStartKey: start }));
    const keys = out.Items ?? [];
    await batchWriteAll(store, keys.map((Key) => ({ DeleteRequest: { Key } })));
    deleted += keys.length;
    start = out.LastEvaluatedKey;
  } while (start);
  return deleted;
}
