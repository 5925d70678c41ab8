/**
 * The balancer's status, `cluster`/`balancer`: what the controller's balancer is doing and how far
 * its current plan got (lib/cluster/balancer.ts).
 *
 * Conditional writes:
 * - `writeBalancerStatus(lease, status)`: one transaction [leaseCheck, Put].
 *   Condition: the lease is the caller's (`holder = :h AND epoch = :e`).
 *   Effect: the status replaced. No metadataVersion bump.
 *   Fails: `LeaseLost`.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Lease } from '../model.js';
import { BALANCER_KEY } from '../tables.js';
import { ConditionFailed, transactWrite } from '../transact.js';
import { leaseCheck, LeaseLost } from './lease.js';
import { db, strip, table } from './table.js';

export interface BalancerStatus {
  readonly status: 'IDLE' | 'PLANNING' | 'MOVING';
  /** Replica moves completed since the current plan began. */
  readonly movesDone: number;
  /** Replica moves the current plan holds (done and to do). */
  readonly movesTotal: number;
  /** When the balancer last planned (ms since epoch). */
  readonly lastPlanAt?: number;
}

/** The balancer's status as last written (IDLE, nothing planned, when never). */
export async function readBalancerStatus(): Promise<BalancerStatus> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: BALANCER_KEY, ConsistentRead: true }));
  return out.Item ? strip<BalancerStatus>(out.Item) : { status: 'IDLE', movesDone: 0, movesTotal: 0 };
}

/** Writes the balancer's status. Condition: the lease is the caller's. Errors: `LeaseLost`. */
export async function writeBalancerStatus(lease: Lease, status: BalancerStatus): Promise<void> {
  try {
    await transactWrite(db(), [leaseCheck(lease), { Put: { TableName: table(), Item: { ...BALANCER_KEY, ...status } } }]);
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(0)?.code === 'ConditionalCheckFailed') throw new LeaseLost('the controller lease was lost');
    throw err;
  }
}
