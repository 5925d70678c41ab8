/**
 * The group commit's rounds on a leader replica (lib/log/staged-commit.ts; the protocol is
 * spec/rounds.qnt's): writers stage their batches as objects (lib/storage/stage.ts), and each
 * commit of the committer lease's holder is a round — the head's `round` counts them — recorded in
 * a round item: which staged object got which offsets, or which refusal. A writer learns its
 * outcome from the round items committed since the head it read before it staged.
 *
 * A round's number counts within its leader epoch from `firstRound(epoch)`, so a replica that leads
 * again — after a full sync reset its head, or a purge and a return — never writes a number an
 * item of an earlier leadership still holds. Round `n` sits at `off = n - ROUND_BASE` under the
 * partition's key (lib/storage/tables.ts), so one Query from a round up to the head returns every
 * round since, the committer lease and the head. Round items carry `stage` = `round` (the
 * replicator's stream filter passes them by) and expire by the table's TTL three days after their
 * commit — long after every object they name is past its writer's deadline.
 *
 * The head's `clean` is the last round whose staged objects are all deleted: a holder deletes the
 * objects of the rounds after it before it lists the stage, and its commit moves `clean` to the
 * round it read on the head.
 *
 * Conditional writes:
 * - the round's commit — `appendBatches` with `round` (lib/storage/replica/batches.ts) when it
 *   appends, `settleRound` when it appends nothing (retries answered from producer state,
 *   refusals): condition: the head is the leader's as read (`leo`, `leaderEpoch`, `role`) and
 *   still at the round read (`round`); with a lease to renew, `renewCommitter`'s. Effect: the
 *   head's `round` and `clean`, the round item. Failure: `ConditionFailed`, nothing written.
 */
import { DeleteCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException, TransactionConflictException } from '@aws-sdk/client-dynamodb';
import type { ReplicaHead } from '../model.js';
import { COMMITTER_OFFSET, HEAD_OFFSET, ROUND_BASE } from '../tables.js';
import { transactWrite } from '../transact.js';
import { client, toHead, type ReplicaStoreRef } from './store.js';

/** What a commit gave one staged batch: its offsets, or the error that refused it. */
export type StagedOutcome =
  | { readonly base: number; readonly last: number }
  | { readonly error: string; readonly message: string };

/** The committer lease: who holds it, until when (epoch ms). */
export interface CommitterLease {
  readonly holder: string;
  readonly until: number;
}

/** When DynamoDB's TTL may delete a lease that runs until `until` (an hour after). */
const leaseExpiry = (until: number): number => Math.ceil(until / 1000) + 3600;

/** Takes the committer lease until `until` when nobody holds it (or its holder's ran out before `now`). Returns whether it did. */
export async function claimCommitter(store: ReplicaStoreRef, tp: string, holder: string, until: number, now: number): Promise<boolean> {
  try {
    await client(store).send(new PutCommand({
      TableName: store.replicaTable,
      Item: { tp, off: COMMITTER_OFFSET, stage: 'lease', holder, until, expiresAt: leaseExpiry(until) },
      ConditionExpression: 'attribute_not_exists(off) OR #until < :now',
      ExpressionAttributeNames: { '#until': 'until' },
      ExpressionAttributeValues: { ':now': now },
    }));
    return true;
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException) return false;
    throw err;
  }
}

/** The transaction item that renews the committer lease until `until`, on condition `holder` still holds it. */
export function renewCommitter(store: ReplicaStoreRef, tp: string, lease: CommitterLease) {
  return {
    Update: {
      TableName: store.replicaTable,
      Key: { tp, off: COMMITTER_OFFSET },
      UpdateExpression: 'SET #until = :until, expiresAt = :expiresAt',
      ConditionExpression: 'holder = :h',
      ExpressionAttributeNames: { '#until': 'until' },
      ExpressionAttributeValues: { ':until': lease.until, ':expiresAt': leaseExpiry(lease.until), ':h': lease.holder },
    },
  };
}

/** Gives the committer lease back, if `holder` still holds it. */
export async function releaseCommitter(store: ReplicaStoreRef, tp: string, holder: string): Promise<void> {
  try {
    await client(store).send(new DeleteCommand({
      TableName: store.replicaTable,
      Key: { tp, off: COMMITTER_OFFSET },
      ConditionExpression: 'holder = :h',
      ExpressionAttributeValues: { ':h': holder },
    }));
  } catch (err) {
    if (!(err instanceof ConditionalCheckFailedException)) throw err;
  }
}

/** Marks the head as combining writers at `at` (see the file comment), if it is still the leader's under `leaderEpoch`. */
export async function markCombining(store: ReplicaStoreRef, tp: string, leaderEpoch: number, at: number): Promise<void> {
  try {
    await client(store).send(new UpdateCommand({
      TableName: store.replicaTable,
      Key: { tp, off: HEAD_OFFSET },
      UpdateExpression: 'SET combinedAt = :at',
      ConditionExpression: 'leaderEpoch = :epoch AND #role = :leader',
      ExpressionAttributeNames: { '#role': 'role' },
      ExpressionAttributeValues: { ':at': at, ':epoch': leaderEpoch, ':leader': 'leader' },
    }));
  } catch (err) {
    if (!(err instanceof ConditionalCheckFailedException) && !(err instanceof TransactionConflictException)) throw err;
  }
}

/** A round item lives three days (DynamoDB's TTL deletes it); a writer waits seconds. */
const ROUND_TTL_S = 3 * 24 * 3600;
/** Rounds a leader epoch may number (about 4.5 years of 30 rounds a second). */
const ROUNDS_AN_EPOCH = 2 ** 32;

/** The number before the first round of a leader epoch. */
export const firstRound = (leaderEpoch: number): number => leaderEpoch * ROUNDS_AN_EPOCH;

/** One committed round: the staged objects it took (by stage id) and each one's outcomes, one per batch. */
export interface Round {
  readonly round: number;
  /** The leader epoch it committed under (its objects are staged under that epoch). */
  readonly leaderEpoch: number;
  readonly outcomes: Readonly<Record<string, readonly StagedOutcome[]>>;
}

/** A round's commit: the head's round as read, the new `clean`, and the round item. */
export interface RoundWrite {
  readonly expectRound: number;
  readonly clean: number;
  readonly item: Round;
}

/** The head's update and condition for a round's commit (appendBatches and settleRound add them to theirs). */
export function roundOnHead(w: RoundWrite, values: Record<string, unknown>): { sets: string[]; condition: string } {
  values[':round'] = w.item.round;
  values[':clean'] = w.clean;
  values[':expectRound'] = w.expectRound;
  return {
    sets: ['round = :round', 'clean = :clean'],
    condition: w.expectRound === 0 ? '(attribute_not_exists(round) OR round = :expectRound)' : 'round = :expectRound',
  };
}

/** The transaction item that puts a round item (unconditional: the head's condition makes its number unique). */
export function roundPut(store: ReplicaStoreRef, tp: string, r: Round) {
  return {
    Put: {
      TableName: store.replicaTable,
      Item: { tp, off: r.round - ROUND_BASE, stage: 'round', ...r, expiresAt: Math.ceil(Date.now() / 1000) + ROUND_TTL_S },
    },
  };
}

/** One read of the rounds since a round, with the committer lease and the head. */
export interface RoundsRead {
  readonly head: ReplicaHead | undefined;
  readonly lease?: CommitterLease;
  /** Oldest first. */
  readonly rounds: Round[];
}

/** Reads the rounds from `fromRound` on, the lease and the head: one strongly consistent Query. */
export async function readRounds(store: ReplicaStoreRef, tp: string, fromRound: number): Promise<RoundsRead> {
  const rounds: Round[] = [];
  let head: ReplicaHead | undefined;
  let lease: CommitterLease | undefined;
  let start: Record<string, unknown> | undefined;
  do {
    const res = await client(store).send(new QueryCommand({
      TableName: store.replicaTable,
      KeyConditionExpression: 'tp = :tp AND off BETWEEN :from AND :head',
      ExpressionAttributeValues: { ':tp': tp, ':from': Math.max(1, fromRound) - ROUND_BASE, ':head': HEAD_OFFSET },
      ConsistentRead: true,
      ...(start ? { ExclusiveStartKey: start } : {}),
    }));
    for (const item of res.Items ?? []) {
      if (item.off === HEAD_OFFSET) head = toHead(item);
      else if (item.off === COMMITTER_OFFSET) lease = { holder: item.holder as string, until: item.until as number };
      else if (item.stage === 'round') rounds.push({ round: item.round as number, leaderEpoch: item.leaderEpoch as number, outcomes: item.outcomes as Round['outcomes'] });
    }
    start = res.LastEvaluatedKey;
  } while (start);
  return { head, rounds, ...(lease ? { lease } : {}) };
}

/** Commits a round that appends nothing, on condition the head is still as read (see the file comment). */
export async function settleRound(
  store: ReplicaStoreRef, tp: string, head: { readonly expectLeo: number; readonly leaderEpoch: number }, w: RoundWrite, lease?: CommitterLease,
): Promise<void> {
  const values: Record<string, unknown> = { ':leo': head.expectLeo, ':epoch': head.leaderEpoch, ':leader': 'leader' };
  const { sets, condition } = roundOnHead(w, values);
  await transactWrite(client(store), [
    {
      Update: {
        TableName: store.replicaTable,
        Key: { tp, off: HEAD_OFFSET },
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: `leo = :leo AND leaderEpoch = :epoch AND #role = :leader AND ${condition}`,
        ExpressionAttributeNames: { '#role': 'role' },
        ExpressionAttributeValues: values,
      },
    },
    roundPut(store, tp, w.item),
    ...(lease ? [renewCommitter(store, tp, lease)] : []),
  ], { conflictAttempts: 1 });
}
