/**
 * cdk-nag's AwsSolutions rules: no unacknowledged finding in any flavour, and a reason for every
 * acknowledgement. Each flavour is also synthesized with CloudFormation's template validation on, as
 * `npm run synth` does: a finding fails the synth.
 */
import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import type { TributaryClusterProps } from '../../cdk/props.js';
import { synth } from './synth.js';

const FLAVOURS: Record<string, TributaryClusterProps> = {
  'the default deployment (HTTP API, IAM, 3 brokers)': {},
  'one broker': { brokers: 1 },
  'an HTTP API with a JWT authorizer (and the WebSocket API\'s Lambda authorizer)': { jwtAuthorizer: { issuer: 'https://id.example.com', audience: ['client'] }, brokers: 1 },
  'a REST API with IAM': { apiType: 'rest', brokers: 1 },
  'an open HTTP API with email alarms, destroyed with the stack': { authorization: 'none', alarmEmail: 'ops@example.com', removalPolicy: RemovalPolicy.DESTROY, brokers: 2 },
  'an open REST API': { apiType: 'rest', authorization: 'none', brokers: 1 },
  'push subscriptions\' Lambda targets (a function ARN and an ARN prefix)': { brokers: 1, pushLambdaTargets: ['arn:aws:lambda:eu-west-1:123456789012:function:audit', 'arn:aws:lambda:eu-west-1:123456789012:function:billing-*'] },
};

function acknowledgements(root: IConstruct): { path: string; id: string; reason: string }[] {
  return root.node.findAll().flatMap((c) => c.node.metadata
    .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
    .flatMap((m) => Object.entries(m.data as Record<string, string>).map(([id, reason]) => ({ path: c.node.path, id, reason }))));
}

describe('cdk-nag AwsSolutionsChecks', () => {
  it.each(Object.entries(FLAVOURS))('finds nothing unacknowledged in %s', (_name, props) => {
    const s = synth(props, { validate: true });
    const report = new AwsSolutionsChecks(s.app).validateScope(s.app);
    expect(report.violations.map((v) => `${v.severity} ${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath).join(', ')}`)).toEqual([]);
    expect(report.success).toBe(true);
  });

  it('gives a reason with every acknowledgement', () => {
    const s = synth({ apiType: 'rest', brokers: 1 });
    const acks = acknowledgements(s.app);
    expect(acks.length).toBeGreaterThan(0);
    for (const a of acks) expect(a.reason.length, `${a.path} ${a.id}`).toBeGreaterThan(40);
  });
});
