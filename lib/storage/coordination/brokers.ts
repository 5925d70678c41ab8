/**
 * Broker registrations, `brokers`/`<id>`: where each broker's replica table lives, its state (the
 * controller fences and unfences it), the data path's suspicion reports (a function that cannot
 * reach a broker's store says so; the controller probes it), and decommissioning
 * (lib/cluster/brokers.ts).
 *
 * Conditional writes:
 * - `registerBroker(b)`: one transaction [bumpVersion, Update].
 *   Condition: the cluster exists; none on the broker item (registering again updates it).
 *   Effect: `brokerId`, `replicaTable`, `rack` and `endpoint` set (`endpoint` removed when not
 *   given); `state` set to alive, and `incarnation` to the one given, only when it has none
 *   (`if_not_exists`); bumps metadataVersion.
 *   Fails: `ConditionFailed` when the cluster does not exist.
 * - `setBrokerState(lease, brokerId, state, incarnation?)`: one transaction
 *   [leaseCheck, bumpVersion, Update].
 *   Condition: the lease is the caller's (`holder = :h AND epoch = :e`), and the broker is
 *   registered (`attribute_exists(pk)`).
 *   Effect: `state` and `stateChangedAt` set, `suspectAt` removed; with `incarnation`, it is set
 *   and `pendingIncarnations` removed; bumps metadataVersion.
 *   Fails: `LeaseLost`; `ConditionFailed` for a broker that is not registered.
 * - `addPendingIncarnation(lease, brokerId, incarnation)`: one transaction [leaseCheck, Update].
 *   Condition: the lease is the caller's, and the broker is registered (`attribute_exists(pk)`).
 *   Effect: `incarnation` appended to `pendingIncarnations`. No metadataVersion bump.
 *   Fails: `LeaseLost`; `ConditionFailed` for a broker that is not registered.
 * - `markBrokerSuspect(brokerId, now)`: one UpdateItem.
 *   Condition: the broker is registered and no report younger than SUSPECT_REPORT_MS stands
 *   (`attribute_exists(pk) AND (attribute_not_exists(suspectAt) OR suspectAt < :stale)`).
 *   Effect: `suspectAt` = now (the write wakes the controller). No metadataVersion bump.
 *   Fails: returns false (on any error: it never throws).
 * - `markDecommissioning(brokerId)`: one transaction [bumpVersion, Update].
 *   Condition: the broker is registered (`attribute_exists(pk)`).
 *   Effect: `decommissioning` = true (idempotent); bumps metadataVersion.
 *   Fails: `UnknownBroker`.
 * - `deregisterBroker(lease, brokerId)`: one transaction [leaseCheck, bumpVersion, Delete].
 *   Condition: the lease is the caller's, and the broker is being decommissioned
 *   (`decommissioning = :t`).
 *   Effect: the broker's item deleted; bumps metadataVersion.
 *   Fails: `LeaseLost`; returns false when the broker is gone already or not decommissioning.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { BrokerRecord, Lease } from '../model.js';
import { ConditionFailed, transactWrite } from '../transact.js';
import { leaseCheck, LeaseLost } from './lease.js';
import { bumpVersion, db, queryAll, strip, table } from './table.js';

/**
 * Registers a broker or updates where its replica table lives; keeps its state, and the
 * incarnation recorded for its store, if it has them. `incarnation`: what its store holds now
 * (lib/cluster/bootstrap.ts `registerBrokers` stamps it first).
 * Effect: `brokers`/`<id>` holds the table, endpoint and rack; the metadata version is bumped.
 */
export async function registerBroker(b: Pick<BrokerRecord, 'brokerId' | 'replicaTable' | 'endpoint' | 'rack'> & { readonly incarnation?: string }): Promise<void> {
  const set = ['brokerId = :id', 'replicaTable = :t', 'rack = :r', '#s = if_not_exists(#s, :alive)'];
  if (b.endpoint) set.push('endpoint = :e');
  if (b.incarnation) set.push('incarnation = if_not_exists(incarnation, :inc)');
  await transactWrite(db(), [
    bumpVersion(),
    {
      Update: {
        TableName: table(),
        Key: { pk: 'brokers', sk: String(b.brokerId) },
        UpdateExpression: `SET ${set.join(', ')}${b.endpoint ? '' : ' REMOVE endpoint'}`,
        ExpressionAttributeNames: { '#s': 'state' },
        ExpressionAttributeValues: {
          ':id': b.brokerId, ':t': b.replicaTable, ':r': b.rack, ':alive': 'alive',
          ...(b.endpoint ? { ':e': b.endpoint } : {}), ...(b.incarnation ? { ':inc': b.incarnation } : {}),
        },
      },
    },
  ]);
}

export async function listBrokers(): Promise<BrokerRecord[]> {
  const items = await queryAll({ KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': 'brokers' } });
  return items.map((i) => strip<BrokerRecord>(i)).sort((a, b) => a.brokerId - b.brokerId);
}

/**
 * Sets a broker's state (the controller fencing or unfencing it), and with `incarnation` the
 * incarnation its store now holds (the pending ones are cleared: see `addPendingIncarnation`).
 * Condition: the lease is still the caller's. Effects: state, and the metadata version bumped.
 * Errors: `LeaseLost`.
 */
export async function setBrokerState(lease: Lease, brokerId: number, state: BrokerRecord['state'], incarnation?: string): Promise<void> {
  try {
    await transactWrite(db(), [
      leaseCheck(lease),
      bumpVersion(),
      {
        Update: {
          TableName: table(), Key: { pk: 'brokers', sk: String(brokerId) },
          // A judged broker is no longer suspect: the report is cleared, so this write (and later
          // ones) do not match the controller's wake filter (CONTROLLER_WAKE_PATTERN) again.
          UpdateExpression: `SET #s = :s, stateChangedAt = :now${incarnation ? ', incarnation = :inc' : ''} REMOVE suspectAt${incarnation ? ', pendingIncarnations' : ''}`, ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#s': 'state' },
          ExpressionAttributeValues: { ':s': state, ':now': Date.now(), ...(incarnation ? { ':inc': incarnation } : {}) },
        },
      },
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(0)?.code === 'ConditionalCheckFailed') throw new LeaseLost('the controller lease was lost');
    throw err;
  }
}

/**
 * Records that the caller is about to write `incarnation` to the broker's store, before it does
 * (the store is in another table, beyond the lease's transaction). A controller that stalls and
 * writes it late, after losing the lease, then leaves a value the record knows: the probe takes
 * it for what it is, the contents the cluster accounted for, not a wiped store.
 * Condition: the lease is still the caller's. Effect: `incarnation` appended to
 * `pendingIncarnations`. Errors: `LeaseLost`.
 */
export async function addPendingIncarnation(lease: Lease, brokerId: number, incarnation: string): Promise<void> {
  try {
    await transactWrite(db(), [
      leaseCheck(lease),
      {
        Update: {
          TableName: table(), Key: { pk: 'brokers', sk: String(brokerId) },
          UpdateExpression: 'SET pendingIncarnations = list_append(if_not_exists(pendingIncarnations, :none), :inc)',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':none': [], ':inc': [incarnation] },
        },
      },
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(0)?.code === 'ConditionalCheckFailed') throw new LeaseLost('the controller lease was lost');
    throw err;
  }
}

/** A broker is reported suspect at most once in this long: each report wakes the controller (CONTROLLER_WAKE_PATTERN). */
export const SUSPECT_REPORT_MS = 10_000;

/**
 * A data path's report that broker `brokerId`'s store failed: sets `suspectAt` unless a report
 * less than SUSPECT_REPORT_MS old stands (the write is what wakes the controller, so many
 * failing requests wake it once). True when this call wrote it. Never throws.
 */
export async function markBrokerSuspect(brokerId: number, now = Date.now()): Promise<boolean> {
  try {
    await db().send(new UpdateCommand({
      TableName: table(), Key: { pk: 'brokers', sk: String(brokerId) },
      UpdateExpression: 'SET suspectAt = :now',
      ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(suspectAt) OR suspectAt < :stale)',
      ExpressionAttributeValues: { ':now': now, ':stale': now - SUSPECT_REPORT_MS },
    }));
    return true;
  } catch {
    return false;
  }
}

/** The broker is not registered (or no longer): the write did nothing. */
export class UnknownBroker extends Error {
  override readonly name = 'UnknownBroker';
}

/**
 * Marks a broker for removal (the balancer drains it, then the controller deregisters it).
 * Condition: the broker is registered. Effects: `decommissioning` set; the metadata version
 * bumped. Idempotent. Errors: `UnknownBroker`.
 */
export async function markDecommissioning(brokerId: number): Promise<void> {
  try {
    await transactWrite(db(), [
      bumpVersion(),
      {
        Update: {
          TableName: table(), Key: { pk: 'brokers', sk: String(brokerId) },
          UpdateExpression: 'SET decommissioning = :t', ConditionExpression: 'attribute_exists(pk)', ExpressionAttributeValues: { ':t': true },
        },
      },
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(1)?.code === 'ConditionalCheckFailed') throw new UnknownBroker(`broker ${brokerId} is not registered`);
    throw err;
  }
}

/**
 * Deregisters a drained broker. Condition: the lease is the caller's, and the broker is still
 * being decommissioned. Effects: its item deleted; the metadata version bumped. Returns false when
 * the broker is gone already or not decommissioning. Errors: `LeaseLost`.
 */
export async function deregisterBroker(lease: Lease, brokerId: number): Promise<boolean> {
  try {
    await transactWrite(db(), [
      leaseCheck(lease),
      bumpVersion(),
      {
        Delete: {
          TableName: table(), Key: { pk: 'brokers', sk: String(brokerId) },
          ConditionExpression: 'decommissioning = :t', ExpressionAttributeValues: { ':t': true },
        },
      },
    ]);
    return true;
  } catch (err) {
    if (err instanceof ConditionFailed && err.at(0)?.code === 'ConditionalCheckFailed') throw new LeaseLost('the controller lease was lost');
    if (err instanceof ConditionFailed && err.at(2)?.code === 'ConditionalCheckFailed') return false;
    throw err;
  }
}
