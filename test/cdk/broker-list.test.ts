/**
 * The deployment's broker list reaches the cluster through the coordination table, not the
 * Lambda environment: the item the construct's custom resource puts (its exact PutItem, taken
 * from the synthesized template) is what the controller registers, once per version. Runs against
 * a coordination table of its own in the shared stack's DynamoDB Local.
 */
import { randomUUID } from 'node:crypto';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resetConfig } from '../../lib/config.js';
import { registerDeployedBrokers } from '../../lib/orchestration/controller-loop.js';
import { ensureTable } from '../../lib/storage/admin.js';
import { dynamo } from '../../lib/storage/clients.js';
import { acquireLease } from '../../lib/storage/coordination/lease.js';
import { deregisterBroker, listBrokers, markDecommissioning } from '../../lib/storage/coordination/brokers.js';
import { readCluster, readMetadataVersion } from '../../lib/storage/coordination/cluster.js';
import { coordinationTableSpec } from '../../lib/storage/tables.js';
import { resourcesOf, synth } from './synth.js';

const prefix = `broker-list-${randomUUID().slice(0, 8)}`;
const previousTable = process.env.TRIBUTARY_COORDINATION_TABLE;

/** Does what the deployed custom resource does: its PutItem, as synthesized. */
async function deploy(brokers: number | number[], racks: string[]): Promise<void> {
  const [[, props]] = resourcesOf(synth({ brokers, racks, tablePrefix: prefix }), 'Custom::AWS') as [[string, any]];
  const call = JSON.parse(props.Create) as { parameters: ConstructorParameters<typeof PutItemCommand>[0] };
  await dynamo().send(new PutItemCommand(call.parameters));
}

beforeAll(async () => {
  process.env.TRIBUTARY_COORDINATION_TABLE = coordinationTableSpec(prefix).name;
  resetConfig();
  await ensureTable(coordinationTableSpec(prefix));
});

afterAll(() => {
  process.env.TRIBUTARY_COORDINATION_TABLE = previousTable;
  resetConfig();
});

describe('Function: registerDeployedBrokers', () => {
  it('does nothing when no deployment wrote a list (the local stack bootstraps itself)', async () => {
    await registerDeployedBrokers();
    expect(await readCluster()).toBeUndefined();
  });

  it('creates the cluster and registers the brokers the deployment wrote, with their tables and racks', async () => {
    await deploy(3, ['a', 'b', 'c']);
    await registerDeployedBrokers();
    expect((await readCluster())?.clusterId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect((await listBrokers()).map((b) => [b.brokerId, b.replicaTable, b.rack])).toEqual([
      [1, `${prefix}-broker-1`, 'a'], [2, `${prefix}-broker-2`, 'b'], [3, `${prefix}-broker-3`, 'c'],
    ]);
  });

  it('registers nothing again while the list is unchanged (one read per run)', async () => {
    const before = await readMetadataVersion();
    await registerDeployedBrokers();
    expect(await readMetadataVersion()).toBe(before);
  });

  it('registers again after a deployment changed the list', async () => {
    await deploy(4, ['a', 'b', 'c', 'd']);
    await registerDeployedBrokers();
    expect((await listBrokers()).map((b) => b.brokerId)).toEqual([1, 2, 3, 4]);
  });

  it('registers a listed id with its table, and deregisters none that left the list (DELETE .../brokers/{id} removes a broker)', async () => {
    await deploy([1, 2, 4, 6], ['a', 'b', 'd', 'f']);
    await registerDeployedBrokers();
    const brokers = await listBrokers();
    expect(brokers.map((b) => b.brokerId)).toEqual([1, 2, 3, 4, 6]);
    expect(brokers.find((b) => b.brokerId === 6)).toMatchObject({ replicaTable: `${prefix}-broker-6`, rack: 'f' });
  });

  it('does not bring back a broker removed through the API while its id is still listed; registers the ids a new list adds', async () => {
    await markDecommissioning(2);
    const lease = (await acquireLease('broker-list-test', 3000, Date.now() + 3_600_000))!;
    expect(await deregisterBroker(lease, 2)).toBe(true);
    await deploy([1, 2, 4, 6, 7], ['a', 'b', 'd', 'f', 'g']);
    await registerDeployedBrokers();
    expect((await listBrokers()).map((b) => b.brokerId)).toEqual([1, 3, 4, 6, 7]);
  });
});
