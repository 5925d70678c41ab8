/**
 * The deployment's broker list: `deployment`/`brokers` (DEPLOYED_BROKERS_ITEM), which the CDK
 * construct writes and this module only reads; and `deployment`/`registered`, the version of it
 * the controller registered (lib/orchestration/controller-loop.ts).
 *
 * Conditional writes: none. `writeRegisteredDeployment` is an unconditional Put (idempotent: the
 * same list gives the same record).
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { BrokerRecord } from '../model.js';
import { DEPLOYED_BROKERS_ITEM, REGISTERED_KEY } from '../tables.js';
import { db, strip, table } from './table.js';

/** The brokers a deployment names (DEPLOYED_BROKERS_ITEM in lib/storage/tables.ts). */
export interface DeployedBrokers {
  /** Changes whenever the list does. */
  readonly version: string;
  readonly brokers: readonly Pick<BrokerRecord, 'brokerId' | 'replicaTable' | 'rack'>[];
}

/**
 * Reads the broker list the deployment wrote (the CDK construct writes it on every create and
 * update); undefined when there is none (the local stack registers its brokers itself).
 * Strongly consistent, one GetItem. Errors: store failures; a `brokers` attribute that is not JSON.
 */
export async function readDeployedBrokers(): Promise<DeployedBrokers | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: DEPLOYED_BROKERS_ITEM, ConsistentRead: true }));
  if (!out.Item) return undefined;
  return { version: String(out.Item.version), brokers: JSON.parse(String(out.Item.brokers)) as DeployedBrokers['brokers'] };
}

/** Which version of the deployment's broker list the controller registered, and the ids it held (`deployment`/`registered`). */
export interface RegisteredDeployment {
  readonly version: string;
  readonly brokerIds: readonly number[];
}

export async function readRegisteredDeployment(): Promise<RegisteredDeployment | undefined> {
  const out = await db().send(new GetCommand({ TableName: table(), Key: REGISTERED_KEY, ConsistentRead: true }));
  return out.Item ? strip<RegisteredDeployment>(out.Item) : undefined;
}

/** Records the registered version of the broker list. Unconditional (idempotent: the same list gives the same record). */
export async function writeRegisteredDeployment(r: RegisteredDeployment): Promise<void> {
  await db().send(new PutCommand({ TableName: table(), Item: { ...REGISTERED_KEY, version: r.version, brokerIds: [...r.brokerIds] } }));
}
