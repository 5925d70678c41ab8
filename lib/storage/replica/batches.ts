/**
 * Growing a log: the leader's append, a follower's copy, and the high watermark writes that commit
 * what they added (with the lag flag an append or a commit may set).
 *
 * Conditional writes:
 * - `appendBatches` — condition: the head is the leader's as read (`leo = :leo AND leaderEpoch =
 *   :epoch AND role = leader`); with `lag.expect`, still flagged (`lagMarkedEpoch = :epoch`); with
 *   `lag.set`, no sweep clear since the read (`lagClears = :clears`, or no `lagClears`); with
 *   `minIsr`, ISR large enough (`size(isr) >= :minIsr`); no item at any of the
 *   batch items' keys (batches packed into items: lib/storage/replica/items.ts)
 *   (`attribute_not_exists(off)`); each producer state at its expected version; with `round`,
 *   the head still at the round read (lib/storage/replica/rounds.ts); with `lease`, still its
 *   holder's. Effect: head `leo`, tail bytes and age, and `hw`, an epoch cache entry,
 *   `lagMarkedEpoch` when given; the batch items; the producer states; with `round`, the head's
 *   `round` and `clean` and the round item; the lease renewed. Failure: throws `AppendConditionFailed`
 *   (a `ConditionFailed`), nothing written (index 0 carries the current head when it exists; items
 *   follow in that order: the batches' items, producer states, a round item, the lease — its
 *   `entries` says where each kind starts).
 * - `copyBatches` — condition: the follower's head as read, reconciled with the leader epoch and
 *   not being filled by a full sync (`leo = :leo AND leaderEpoch = :epoch AND syncEpoch = :epoch
 *   AND role = follower AND attribute_not_exists(snapshotting)`); each of `producers` at its
 *   expected version. Effect: head `leo`, `hw`, tail bytes and age, epoch cache entries; the batch
 *   items (no item condition); the producer states (`leaderProducers` whatever their version).
 *   Failure: throws `ConditionFailed`, nothing written (index 0 carries the current head).
 * - `recordCommit` — condition: still the leader under `leaderEpoch`, `hw` neither behind the
 *   stored one nor past the log end, the ISR count unchanged (`leaderEpoch = :epoch AND role =
 *   leader AND hw <= :hw AND leo >= :hw AND isrVersion = :v`). Effect: `hw`, and each given
 *   follower's entry in `followers`. Returns `{ head }`, the head after the write; on failure
 *   `{ current }`, the head as stored (undefined when gone).
 * - `advanceHighWatermark` — condition: as `recordCommit`, and with `lagMark` no sweep clear since
 *   the read (`lagClears = :clears`, or no `lagClears`). Effect: `hw`, the whole `followers` map,
 *   and with `lagMark` `lagMarkedEpoch = leaderEpoch`. Failure: returns false.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { BatchRecord, FollowerProgress, ReplicaHead, StoredProducerState } from '../model.js';
import { HEAD_OFFSET, producersKey } from '../tables.js';
import { ConditionFailed, transactWrite } from '../transact.js';
import { toItems } from './items.js';
import { producerPut, type ProducerStateWrite } from './producer-states.js';

import { client, isrVersionIs, toHead, type ReplicaStoreRef } from './store.js';
import { renewCommitter, roundOnHead, roundPut, type CommitterLease, type RoundWrite } from './rounds.js';

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
  /** A group commit of more than one writer's batches: when (the head's `combinedAt`). */
  readonly combinedAt?: number;
  /**
   * An append that could go to the stage instead: the head must show no commit that combined
   * writers since this time (`combinedAt`), else it loses and its writer joins them.
   */
  readonly notCombinedSince?: number;
  /** A group commit: the committer lease renewed with it (its holder must still hold it). */
  readonly lease?: CommitterLease;
  /** A group commit's round (lib/storage/replica/rounds.ts): the head must still be at the round read. */
  readonly round?: RoundWrite;
  /** A group commit retries nothing itself: a conflict sends it back to read the rounds and the stage. */
  readonly once?: boolean;
  /** The head's open transactions after these batches, when they change (the whole map). */
  readonly openTxns?: Readonly<Record<string, number>>;
  /** Small batches share items (lib/storage/replica/items.ts; the cluster's log format allows it). */
  readonly pack?: boolean;
}

/**
 * Where each kind of entry starts in `appendBatches`' transaction (the index a `ConditionFailed`
 * names): the head at 0, then the batches' items (fewer than the batches when packed), the
 * producer states, a round item, the lease.
 */
export interface AppendEntries {
  readonly producers: number;
  readonly round: number;
  readonly lease: number;
}

/** An append's transaction was refused: `ConditionFailed`, with where each kind of its entries starts. */
export class AppendConditionFailed extends ConditionFailed {
  constructor(cause: ConditionFailed, readonly entries: AppendEntries) {
    super(cause.items);
  }
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
 * flag condition of `lag`, `size(isr) >= minIsr` and no `combinedAt` since `notCombinedSince` when
 * given), and no item at each batch's key. Effects: head `leo` = last batch's
 * lastOffset + 1 (and `hw`, epoch cache entry, `lagMarkedEpoch` when given); the batches'
 * items (`toItems`: runs of small batches packed into one item).
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
  if (write.combinedAt !== undefined) {
    sets.push('combinedAt = :combinedAt');
    values[':combinedAt'] = write.combinedAt;
  }
  if (write.openTxns !== undefined) {
    sets.push('openTxns = :openTxns');
    values[':openTxns'] = write.openTxns;
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
  if (write.notCombinedSince !== undefined) {
    condition += ' AND (attribute_not_exists(combinedAt) OR combinedAt < :combinedSince)';
    values[':combinedSince'] = write.notCombinedSince;
  }
  if (write.round) {
    const r = roundOnHead(write.round, values);
    sets.push(...r.sets);
    condition += ` AND ${r.condition}`;
  }
  if (write.minIsr !== undefined) {
    condition += ' AND size(isr) >= :minIsr';
    values[':minIsr'] = write.minIsr;
  }
  const items = toItems(write.batches, write.pack === true);
  const producers = write.producers ?? [];
  try {
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
      ...items.map((b) => ({
        Put: {
          TableName: store.replicaTable,
          Item: { tp, off: b.lastOffset, ...b },
          ConditionExpression: 'attribute_not_exists(off)',
        },
      })),
      ...producers.map((w) => producerPut(store, tp, w)),
      ...(write.round ? [roundPut(store, tp, write.round.item)] : []),
      ...(write.lease ? [renewCommitter(store, tp, write.lease)] : []),
    ], write.once ? { conflictAttempts: 1 } : {});
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
    const from = 1 + items.length;
    throw new AppendConditionFailed(err, { producers: from, round: from + producers.length, lease: from + producers.length + (write.round ? 1 : 0) });
  }
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
  /** The follower head's open transactions after these batches, when they change (the whole map). */
  readonly openTxns?: Readonly<Record<string, number>>;
  /** Small batches share items (lib/storage/replica/items.ts; the cluster's log format allows it). */
  readonly pack?: boolean;
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
  const txns = write.openTxns !== undefined;
  await transactWrite(client(store), [
    {
      Update: {
        TableName: store.replicaTable,
        Key: { tp, off: HEAD_OFFSET },
        UpdateExpression: `SET leo = :newLeo, hw = :hw, ${TAIL_GROWS.join(', ')}${entries ? ', epochs = list_append(epochs, :entries)' : ''}${txns ? ', openTxns = :openTxns' : ''}`,
        ConditionExpression: 'leo = :leo AND leaderEpoch = :epoch AND syncEpoch = :epoch AND #role = :follower AND attribute_not_exists(snapshotting)',
        ExpressionAttributeNames: { '#role': 'role' },
        ExpressionAttributeValues: {
          ':leo': write.expectLeo, ':epoch': write.leaderEpoch, ':follower': 'follower', ':newLeo': last.lastOffset + 1, ':hw': write.hw,
          ...tailGrowth(write.batches),
          ...(entries ? { ':entries': write.epochEntries.map((e) => [...e]) } : {}),
          ...(txns ? { ':openTxns': write.openTxns } : {}),
        },
      },
    },
    // No item condition: the head's condition makes this copier the only writer, and an item left
    // above the log end (by a superseded full sync of the same leader log) holds these same bytes.
    ...toItems(write.batches, write.pack === true).map((b) => ({ Put: { TableName: store.replicaTable, Item: { tp, off: b.lastOffset, ...b } } })),
    ...(write.producers ?? []).map((w) => producerPut(store, tp, w)),
    ...(write.leaderProducers ?? []).map((st) => {
      const txn = { txnFirst: st.txnFirst, markerEpoch: st.markerEpoch, closed: st.closed };
      const set = Object.entries(txn).filter(([, v]) => v !== undefined);
      const removed = Object.entries(txn).filter(([, v]) => v === undefined).map(([k]) => k);
      return {
        Update: {
          TableName: store.replicaTable,
          Key: { tp: producersKey(tp), off: st.producerId },
          UpdateExpression: `SET producerEpoch = :pe, batches = :pb, ver = if_not_exists(ver, :zero) + :one${set.map(([k]) => `, ${k} = :${k}`).join('')}${removed.length > 0 ? ` REMOVE ${removed.join(', ')}` : ''}`,
          ExpressionAttributeValues: { ':pe': st.producerEpoch, ':pb': st.batches, ':zero': 0, ':one': 1, ...Object.fromEntries(set.map(([k, v]) => [`:${k}`, v])) },
        },
      };
    }),
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
