/**
 * Nothing grows past a Lambda limit with the broker count: the worst case the props allow (64
 * brokers with the longest ids, a 200-character table prefix) synthesizes with CloudFormation's
 * template validation on, passes cdk-nag, and keeps every function's environment under Lambda's
 * 4 KB (keys and values together, as Lambda counts them).
 */
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_BROKER_ID, MAX_BROKERS } from '../../cdk/props.js';
import { resourcesOf, synth, type Synthesized } from './synth.js';

const LAMBDA_ENVIRONMENT_LIMIT = 4096;
/** The longest S3 bucket name: what a `Ref` to the bucket can resolve to. */
const MAX_BUCKET_NAME = 63;
/** The longest Lambda function name: what a `Ref` to a function can resolve to. */
const MAX_FUNCTION_NAME = 64;
/** An API Gateway API id (`Ref` to the WebSocket API). */
const API_ID = 10;
/** Pseudo parameters' longest values (`ap-southeast-7`, `amazonaws.com.cn`), with room to spare. */
const PSEUDO_PARAMETERS: Record<string, number> = { 'AWS::Region': 20, 'AWS::URLSuffix': 20 };

/** The deployed size of one environment value: literal, a `Ref` whose value the template tells, or a join of those. */
function deployedLength(s: Synthesized, value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value);
  const join = (value as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  if (join) return join[1].reduce<number>((n, part) => n + deployedLength(s, part), Buffer.byteLength(join[0]) * (join[1].length - 1));
  const ref = (value as { Ref?: string }).Ref;
  if (ref && PSEUDO_PARAMETERS[ref] !== undefined) return PSEUDO_PARAMETERS[ref];
  const target = ref ? s.json.Resources[ref] : undefined;
  if (target?.Type === 'AWS::DynamoDB::Table' && typeof target.Properties?.TableName === 'string') return Buffer.byteLength(target.Properties.TableName);
  if (target?.Type === 'AWS::S3::Bucket' && target.Properties?.BucketName === undefined) return MAX_BUCKET_NAME;
  // (the stage's name: test/cdk/cluster.test.ts checks that it fits S3's 63 characters)
  if (target?.Type === 'AWS::S3Express::DirectoryBucket') return MAX_BUCKET_NAME;
  if (target?.Type === 'AWS::Lambda::Function' && target.Properties?.FunctionName === undefined) return MAX_FUNCTION_NAME;
  if (target?.Type === 'AWS::ApiGatewayV2::Api') return API_ID;
  throw new Error(`cannot size environment value ${JSON.stringify(value)}`);
}

function environmentBytes(s: Synthesized, fn: any): number {
  const vars: Record<string, unknown> = fn.Environment?.Variables ?? {};
  return Object.entries(vars).reduce((n, [k, v]) => n + Buffer.byteLength(k) + deployedLength(s, v), 0);
}

describe('TributaryCluster: the worst case of the props', () => {
  let s: Synthesized;
  beforeAll(() => {
    // The largest ids make the longest table names (`<prefix>-broker-2147483647`): a count's 1..64 are shorter.
    const brokers = Array.from({ length: MAX_BROKERS }, (_, i) => MAX_BROKER_ID - i);
    s = synth({ brokers, tablePrefix: 'p'.repeat(200), racks: Array.from({ length: MAX_BROKERS }, (_, i) => `rack-${i % 3}`) }, { validate: true });
  });

  it('keeps every function\'s environment under 4 KB with 64 brokers and a 200-character table prefix', () => {
    const functions = resourcesOf(s, 'AWS::Lambda::Function');
    expect(functions.length).toBeGreaterThan(0);
    for (const [id, fn] of functions) {
      const bytes = environmentBytes(s, fn);
      expect(bytes, id).toBeLessThan(LAMBDA_ENVIRONMENT_LIMIT);
      // Room to spare: nothing in it grows with the broker count.
      expect(bytes, id).toBeLessThan(1024);
    }
  });

  it('writes all 64 brokers into the coordination table in one item well under DynamoDB\'s 400 KB', () => {
    const [[, props]] = resourcesOf(s, 'Custom::AWS') as [[string, any]];
    const item = JSON.parse(props.Create).parameters.Item;
    expect(JSON.parse(item.brokers.S)).toHaveLength(MAX_BROKERS);
    expect(Buffer.byteLength(JSON.stringify(item))).toBeLessThan(100 * 1024);
  });

  it('passes cdk-nag', () => {
    const report = new AwsSolutionsChecks(s.app).validateScope(s.app);
    expect(report.violations.map((v) => `${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath).join(', ')}`)).toEqual([]);
  });

  it('keeps the template under CloudFormation\'s 1 MB and 500 resources', () => {
    expect(Buffer.byteLength(JSON.stringify(s.json))).toBeLessThan(1024 * 1024);
    expect(Object.keys(s.json.Resources).length).toBeLessThan(500);
  });
});
