/**
 * The controller lease, `controller`/`lease`: which controller acts, under which epoch, until when.
 * Every controller write carries `leaseCheck` in its transaction (./brokers.ts, ./partitions.ts,
 * ./balancer.ts), so a controller that lost the lease while paused writes nothing.
 *
 * Conditional writes:
 * - `acquireLease(holder, leaseMs, now)`: one UpdateItem.
 *   Condition: no lease, or it expired by `now` (`attribute_not_exists(pk) OR expiresAt < :now`).
 *   Effect: `holder`, `epoch` + 1 (from 0), `expiresAt` = now + leaseMs.
 *   Fails: returns undefined (someone else holds a live lease).
 * - `renewLease(lease, leaseMs, now)`: one UpdateItem.
 *   Condition: holder and epoch unchanged, i.e. nobody took it over (`holder = :h AND epoch = :e`).
 *   Effect: `expiresAt` = now + leaseMs.
 *   Fails: returns undefined (the lease was lost).
 * - `leaseCheck(lease)`: a ConditionCheck item for the controller's transactions.
 *   Condition: the lease is still `holder` at `epoch` (`holder = :h AND epoch = :e`).
 *   Effect: none.
 *   Fails: cancels the transaction; each caller turns its failure into `LeaseLost`.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Lease } from '../model.js';
import { LEASE_KEY } from '../tables.js';
import { db, table } from './table.js';

export async function readLease(): Promise<Lease | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: LEASE_KEY, ConsistentRead: true }));
  return out.Item ? { holder: out.Item.holder as string, epoch: out.Item.epoch as number, expiresAt: out.Item.expiresAt as number } : undefined;
}

/**
 * Takes the lease for `holder` under the next epoch.
 *
 *   controller A: holds epoch 7 ── paused ─────────────────────────── wakes: writes with epoch 7 ✗
 *   controller B:        ... lease expired ── acquire (epoch 7 → 8) ✓ ── writes with epoch 8 ✓
 *
 * Condition: no lease, or it expired by `now`. Effect: holder, epoch + 1, expiresAt = now + ms.
 * Returns undefined when someone else holds a live lease.
 */
export async function acquireLease(holder: string, leaseMs: number, now = Date.now()): Promise<Lease | undefined> {
  try {
    const out = await db().send(new UpdateCommand({
      TableName: table(), Key: LEASE_KEY,
      UpdateExpression: 'SET holder = :h, expiresAt = :exp, epoch = if_not_exists(epoch, :zero) + :one',
      ConditionExpression: 'attribute_not_exists(pk) OR expiresAt < :now',
      ExpressionAttributeValues: { ':h': holder, ':exp': now + leaseMs, ':zero': 0, ':one': 1, ':now': now },
      ReturnValues: 'ALL_NEW',
    }));
    return { holder, epoch: out.Attributes?.epoch as number, expiresAt: now + leaseMs };
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return undefined;
    throw err;
  }
}

/**
 * Extends a held lease. Condition: `holder` and `epoch` unchanged (nobody took it over).
 * Returns undefined when the lease was lost.
 */
export async function renewLease(lease: Lease, leaseMs: number, now = Date.now()): Promise<Lease | undefined> {
  try {
    await db().send(new UpdateCommand({
      TableName: table(), Key: LEASE_KEY,
      UpdateExpression: 'SET expiresAt = :exp',
      ConditionExpression: 'holder = :h AND epoch = :e',
      ExpressionAttributeValues: { ':h': lease.holder, ':e': lease.epoch, ':exp': now + leaseMs },
    }));
    return { ...lease, expiresAt: now + leaseMs };
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return undefined;
    throw err;
  }
}

/** Another controller holds the lease: the write that carried this check did nothing. */
export class LeaseLost extends Error {
  override readonly name = 'LeaseLost';
}

/** The transaction item every controller write carries: the lease is still `holder` at `epoch`. */
export const leaseCheck = (lease: Lease) => ({
  ConditionCheck: {
    TableName: table(), Key: LEASE_KEY,
    ConditionExpression: 'holder = :h AND epoch = :e',
    ExpressionAttributeValues: { ':h': lease.holder, ':e': lease.epoch },
  },
});
