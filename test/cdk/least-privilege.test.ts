/**
 * Least privilege on the coordination table and the bucket: each function writes items only under
 * the partition keys its catalog entry names (`dynamodb:LeadingKeys`), the keys the storage code
 * writes are all named, and the data path cannot touch the controller lease or partition states.
 * And on Lambda: the function that delivers push subscriptions invokes only what the deployment's
 * allow-list names, the same list the functions check.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { ITEM_WRITE_ACTIONS } from '../../cdk/access.js';
import { ENVIRONMENT } from '../../lib/config.js';
import { COORDINATION_KEYS } from '../../lib/storage/tables.js';
import { FUNCTIONS, functionSpec, type FunctionName } from '../../lib/functions/catalog.js';
import { permissionsOf } from './iam.js';
import { ROOT, logicalId, synth, type Synthesized } from './synth.js';

/** IAM's StringLike: `*` any run of characters, `?` one. */
const like = (pattern: string, value: string): boolean =>
  new RegExp(`^${pattern.split('').map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&'))).join('')}$`).test(value);

let s: Synthesized;
beforeAll(() => {
  s = synth({ brokers: 2, tablePrefix: 'lp' });
});

const fnId = (name: FunctionName) => logicalId(s, s.stack.cluster.functions[name] as never);
const coordinationArn = () => ({ 'Fn::GetAtt': [logicalId(s, s.stack.cluster.coordinationTable), 'Arn'] });
const list = <T>(v: T | T[]): T[] => (Array.isArray(v) ? v : [v]);

/** The statements that allow item writes on the coordination table. */
function coordinationWrites(name: FunctionName): any[] {
  return permissionsOf(s, fnId(name)).statements.filter((st) => st.Effect === 'Allow'
    && list(st.Action).some((a: string) => (ITEM_WRITE_ACTIONS as readonly string[]).includes(a))
    && list(st.Resource).some((r: unknown) => JSON.stringify(r) === JSON.stringify(coordinationArn())));
}

/** May this function write an item with this partition key? */
function mayWrite(name: FunctionName, pk: string): boolean {
  return coordinationWrites(name).some((st) => {
    const patterns = st.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'];
    return patterns === undefined ? st.Condition === undefined : list<string>(patterns).some((p) => like(p, pk));
  });
}

describe('TributaryCluster: coordination table writes by partition key', () => {
  it('limits every function but the controller to the partition keys its catalog entry names', () => {
    for (const spec of FUNCTIONS.filter((f) => f.coordination === 'write')) {
      const statements = coordinationWrites(spec.name);
      if (spec.coordinationWrites === 'any') {
        expect(statements.some((st) => st.Condition === undefined), spec.name).toBe(true);
        continue;
      }
      expect(statements, spec.name).toHaveLength(1);
      expect(statements[0].Condition, spec.name).toEqual({
        'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': spec.coordinationWrites.map((k) => COORDINATION_KEYS[k]) },
        Null: { 'dynamodb:LeadingKeys': 'false' },
      });
      expect([...list(statements[0].Action)].sort(), spec.name).toEqual([...ITEM_WRITE_ACTIONS].sort());
    }
  });

  it('keeps fetch and groups from writing the controller lease, partition states and topic metadata', () => {
    for (const name of ['fetch', 'groups'] as const) {
      for (const pk of ['controller', 'topic#orders', 'topics', 'cluster', 'seg#abc#0', 'producers']) expect(mayWrite(name, pk), `${name} writes ${pk}`).toBe(false);
      expect(mayWrite(name, 'brokers'), `${name} reports suspects`).toBe(true);
    }
    expect(mayWrite('groups', 'group#billing')).toBe(true);
    expect(mayWrite('groups', 'offsets#billing')).toBe(true);
  });

  it('keeps the websocket function to connections, subscriptions, its connections\' groups, push deliveries (their states, their groups\' offsets, an acks=all produce to a dead-letter topic), suspect reports and quota usage', () => {
    for (const pk of ['ws#conn#c-1', 'ws#tp#topic-id#0', 'group#g', 'groups', 'brokers', 'quota#User:alice', 'push', 'push#s', 'offsets#g', 'topic#orders', 'cluster', 'lagging']) expect(mayWrite('websocket', pk), pk).toBe(true);
    for (const pk of ['controller', 'topics', 'topic-keys', 'seg#abc#0', 'producers', 'txn', 'acls']) {
      expect(mayWrite('websocket', pk), `websocket writes ${pk}`).toBe(false);
    }
  });

  it('lets only the controller write the lease', () => {
    for (const spec of FUNCTIONS.filter((f) => f.coordination === 'write')) expect(mayWrite(spec.name, 'controller'), spec.name).toBe(spec.name === 'controller');
  });

  it('names every partition key the storage code writes', () => {
    const keys: string[] = [];
    const families = fs.readdirSync(path.join(ROOT, 'lib', 'storage', 'coordination')).map((f) => path.join('coordination', f));
    for (const file of ['tables.ts', ...families]) {
      const src = fs.readFileSync(path.join(ROOT, 'lib', 'storage', file), 'utf8');
      // Literal keys (`pk: 'brokers'`, `const LAG_PK = 'lagging'`) and built ones (`const groupPk = (g) => \`group#${g}\``).
      for (const m of src.matchAll(/\bpk: '([^']+)'|_PK = '([^']+)'|Pk = \([^)]*\)[^`]*`([a-z-]+#)\$\{/g)) keys.push(m[1] ?? m[2] ?? `${m[3]}x`);
    }
    expect(keys.length).toBeGreaterThan(8);
    const patterns = Object.values(COORDINATION_KEYS) as string[];
    for (const pk of new Set(keys)) expect(patterns.some((p) => like(p, pk)), `${pk} is in COORDINATION_KEYS (lib/storage/tables.ts)`).toBe(true);
  });
});

describe('TributaryCluster: bucket access by what the code runs', () => {
  it('gives produce no snapshots/ access (it appends large batches under data/ and reads none)', () => {
    const p = permissionsOf(s, fnId('produce'));
    expect([...p.objectsRead]).toEqual([]);
    expect([...p.objectsWritten]).toEqual(['data/']);
    expect([...p.listed]).toEqual(['data/']);
    expect(functionSpec('produce').bucketRead).not.toContain('snapshots/');
  });

  it('gives admin only data/ (a deleted topic\'s large batches) and the keys of topic metadata and DeleteRecords', () => {
    const p = permissionsOf(s, fnId('admin'));
    expect([...p.objectsRead]).toEqual([]);
    expect([...p.objectsWritten]).toEqual(['data/']);
    for (const pk of ['controller', 'producers', 'lagging', 'groups', 'group#g', 'offsets#g', 'deployment']) expect(mayWrite('admin', pk), pk).toBe(false);
    for (const pk of ['topics', 'topic#orders', 'topic-keys', 'topic-ids', 'cluster', 'seg#t#0']) expect(mayWrite('admin', pk), pk).toBe(true);
  });
});

describe('TributaryCluster: push subscriptions\' Lambda targets', () => {
  const arn = (fn: string) => `arn:aws:lambda:eu-west-1:123456789012:function:${fn}`;
  const invokes = (t: Synthesized, name: FunctionName) => permissionsOf(t, logicalId(t, t.stack.cluster.functions[name] as never)).statements
    .filter((st) => st.Effect === 'Allow' && list<string>(st.Action).some((a) => a.startsWith('lambda:')));
  const envOf = (t: Synthesized, name: FunctionName) => t.json.Resources[logicalId(t, t.stack.cluster.functions[name] as never)]?.Properties.Environment.Variables ?? {};

  it('lets the deliverer invoke no function by default, and tells the functions that check an empty allow-list', () => {
    expect(invokes(s, 'websocket')).toEqual([]);
    for (const name of ['groups', 'websocket'] as const) expect(envOf(s, name)[ENVIRONMENT.pushLambdaTargets], name).toBe('');
    for (const name of ['produce', 'fetch', 'admin', 'controller'] as const) expect(envOf(s, name)[ENVIRONMENT.pushLambdaTargets], name).toBeUndefined();
  });

  it('lets the deliverer invoke exactly the ARNs and prefixes pushLambdaTargets names, and grantPushTarget\'s function, the same entries the functions check', () => {
    const t = synth({ brokers: 1, tablePrefix: 'lp2', pushLambdaTargets: [arn('audit'), arn('billing-*')] }, { extend: (stack) => {
      const target = new lambda.Function(stack, 'Receiver', { runtime: lambda.Runtime.NODEJS_20_X, handler: 'index.handler', code: lambda.Code.fromInline('exports.handler = async () => {}') });
      stack.cluster.grantPushTarget(target);
    } });
    const receiver = Object.keys(t.json.Resources).find((id) => id.startsWith('Receiver') && t.json.Resources[id]?.Type === 'AWS::Lambda::Function') as string;
    const resources = invokes(t, 'websocket').flatMap((st) => {
      expect(list(st.Action)).toEqual(['lambda:InvokeFunction']);
      return list(st.Resource);
    });
    expect(resources).toEqual(expect.arrayContaining([arn('audit'), arn('billing-*'), { 'Fn::GetAtt': [receiver, 'Arn'] }]));
    expect(resources).toHaveLength(3);
    for (const name of ['groups', 'websocket'] as const) {
      expect(envOf(t, name)[ENVIRONMENT.pushLambdaTargets], name).toEqual({ 'Fn::Join': ['', [`${arn('audit')},${arn('billing-*')},`, { 'Fn::GetAtt': [receiver, 'Arn'] }]] });
    }
    for (const name of ['produce', 'fetch', 'admin', 'groups', 'controller', 'replicator'] as const) expect(invokes(t, name).some((st) => JSON.stringify(st.Resource).includes(receiver)), name).toBe(false);
  });

  it('refuses an entry that is not a function ARN or an ARN prefix naming the account and region', () => {
    for (const bad of ['*', 'arn:aws:lambda:*', 'arn:aws:lambda:eu-west-1:123456789012:*', 'billing']) {
      expect(() => synth({ brokers: 1, pushLambdaTargets: [bad] }), bad).toThrow(/pushLambdaTargets\[0\] must be a Lambda function ARN/);
    }
  });
});
