/**
 * `brokers` as a list of ids: exactly the listed brokers get a replica table, a place in the
 * deployment's broker list, table grants and a stream event source; a count is the list 1..N, so
 * upgrading from a count replaces nothing, and dropping an id removes only that broker's resources
 * (its table is retained by CloudFormation, not deleted).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { DEPLOYED_BROKERS_ITEM } from '../../lib/storage/tables.js';
import { deployedFunctions } from '../../cdk/cluster.js';
import { replicaTableSpec } from '../../lib/storage/tables.js';
import { permissionsOf } from './iam.js';
import { logicalId, resourcesOf, synth, type Synthesized } from './synth.js';

const prefix = 'ids';

/** Replica table name → its logical id (the coordination table left out). */
function replicaTables(s: Synthesized): Map<string, string> {
  return new Map(resourcesOf(s, 'AWS::DynamoDB::Table')
    .filter(([, t]) => t.TableName !== `${prefix}-coordination`)
    .map(([id, t]) => [t.TableName as string, id]));
}

/** The broker list the deployment's custom resource puts into the coordination table. */
function deployedBrokers(s: Synthesized): { brokerId: number; replicaTable: string; rack: string | null }[] {
  const [[, props]] = resourcesOf(s, 'Custom::AWS') as [[string, any]];
  const item = JSON.parse(props.Create).parameters.Item;
  expect({ pk: item.pk.S, sk: item.sk.S }).toEqual(DEPLOYED_BROKERS_ITEM);
  return JSON.parse(item.brokers.S);
}

const fnId = (s: Synthesized, name: string) => logicalId(s, (s.stack.cluster.functions as Record<string, any>)[name]);

describe('TributaryCluster: brokers as a list of ids', () => {
  let s: Synthesized;
  beforeAll(() => {
    s = synth({ brokers: [1, 2, 4], racks: ['a', 'b', 'c'], tablePrefix: prefix });
  });

  it('creates a replica table for each listed id only, under the construct id Broker<id>Table', () => {
    const tables = replicaTables(s);
    expect([...tables.keys()].sort()).toEqual([1, 2, 4].map((id) => replicaTableSpec(id, prefix).name));
    expect(s.stack.cluster.settings.brokerIds).toEqual([1, 2, 4]);
    expect(s.stack.cluster.replicaTables.map((t) => t.node.id)).toEqual(['Broker1Table', 'Broker2Table', 'Broker4Table']);
    // replicaTables[i] is broker brokerIds[i]'s.
    expect(s.stack.cluster.replicaTables.map((t) => logicalId(s, t))).toEqual([1, 2, 4].map((id) => tables.get(replicaTableSpec(id, prefix).name)));
  });

  it('writes exactly the listed brokers, with their tables and racks, into the deployment\'s broker list', () => {
    expect(deployedBrokers(s)).toEqual([
      { brokerId: 1, replicaTable: `${prefix}-broker-1`, rack: 'a' },
      { brokerId: 2, replicaTable: `${prefix}-broker-2`, rack: 'b' },
      { brokerId: 4, replicaTable: `${prefix}-broker-4`, rack: 'c' },
    ]);
  });

  it('grants each function its catalog access on exactly the listed brokers\' tables, and streams them to the replicator', () => {
    const listed = [...replicaTables(s).values()].sort();
    for (const spec of deployedFunctions(s.stack.cluster.settings)) {
      const p = permissionsOf(s, fnId(s, spec.name));
      const replicaGrants = [...p.tables.keys()].filter((id) => id !== logicalId(s, s.stack.cluster.coordinationTable)).sort();
      expect(replicaGrants, spec.name).toEqual(spec.replicas === 'none' ? [] : listed);
      if (spec.trigger === 'streams') {
        expect([...p.streams].sort(), spec.name).toEqual(listed);
        const sources = resourcesOf(s, 'AWS::Lambda::EventSourceMapping').filter(([, m]) => m.FunctionName.Ref === fnId(s, spec.name));
        expect(sources.map(([, m]) => m.EventSourceArn['Fn::GetAtt'][0]).sort()).toEqual(listed);
      }
    }
  });

  it('synthesizes the same template for a count and the equivalent list, in any order (racks follow their broker)', () => {
    const count = synth({ brokers: 3, racks: ['a', 'b', 'c'], tablePrefix: prefix });
    const list = synth({ brokers: [1, 2, 3], racks: ['a', 'b', 'c'], tablePrefix: prefix });
    const shuffled = synth({ brokers: [3, 1, 2], racks: ['c', 'a', 'b'], tablePrefix: prefix });
    expect(list.json).toEqual(count.json);
    expect(shuffled.json).toEqual(count.json);
    expect(shuffled.stack.cluster.settings).toMatchObject({ brokers: 3, brokerIds: [1, 2, 3], racks: ['a', 'b', 'c'] });
  });

  it('keeps every remaining resource as it was when an id is added or dropped, so a deployment replaces nothing', () => {
    const three = synth({ brokers: 3, tablePrefix: prefix });
    const grown = synth({ brokers: [1, 2, 3, 4], tablePrefix: prefix });
    const shrunk = synth({ brokers: [1, 3], tablePrefix: prefix });
    const tablesOf = (x: Synthesized) => Object.fromEntries(resourcesOf(x, 'AWS::DynamoDB::Table').map(([id]) => [id, x.json.Resources[id]]));
    const before = tablesOf(three);
    const after = tablesOf(grown);
    for (const [id, table] of Object.entries(before)) expect(after[id], id).toEqual(table);
    expect(Object.keys(after)).toHaveLength(Object.keys(before).length + 1);
    // Dropping broker 2 drops its table and its event source mapping, nothing else that is a table.
    const left = tablesOf(shrunk);
    const dropped = replicaTables(three).get(`${prefix}-broker-2`) as string;
    expect(Object.keys(left).sort()).toEqual(Object.keys(before).filter((id) => id !== dropped).sort());
    for (const [id, table] of Object.entries(left)) expect(table, id).toEqual(before[id]);
    const mappings = (x: Synthesized) => resourcesOf(x, 'AWS::Lambda::EventSourceMapping').length;
    expect(mappings(three) - mappings(shrunk)).toBe(1);
    // The dropped table's resource goes, but CloudFormation keeps the table itself (RetainExceptOnCreate).
    expect(before[dropped]).toMatchObject({ DeletionPolicy: 'RetainExceptOnCreate', UpdateReplacePolicy: 'Retain' });
  });
});
