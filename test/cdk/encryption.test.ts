/**
 * Encryption at rest with the construct's `encryptionKey` (a customer-managed KMS key): every table,
 * the bucket and the stage bucket (with Bucket Keys), the failure queue and the alarm topic use it,
 * every function may use it, and cdk-nag finds nothing; without it, AWS-owned and S3-managed keys.
 */
import { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { TributaryStack } from '../../cdk/stack.js';
import { synth, testApp } from './synth.js';

function withKey() {
  const app = testApp();
  const keys = new Stack(app, 'Keys');
  const key = new kms.Key(keys, 'ClusterKey', { enableKeyRotation: true });
  const stack = new TributaryStack(app, 'Encrypted', { cluster: { encryptionKey: key, alarmEmail: 'ops@example.com', brokers: 2 } });
  return { app, key, template: Template.fromStack(stack), keyTemplate: Template.fromStack(keys) };
}

describe('encryptionKey', () => {
  it('encrypts the tables, both buckets, the queue and the alarm topic with the key, and lets every function use it', () => {
    const { template, keyTemplate } = withKey();
    // (a cross-stack reference to the key's ARN)
    const keyArn = Match.objectLike({ 'Fn::GetStackOutput': Match.objectLike({ OutputName: Match.stringLikeRegexp('ClusterKey') }) });
    const tables = template.findResources('AWS::DynamoDB::Table');
    expect(Object.keys(tables)).toHaveLength(3);
    template.allResourcesProperties('AWS::DynamoDB::Table', { SSESpecification: { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: keyArn } });
    template.hasResourceProperties('AWS::S3::Bucket', {
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ BucketKeyEnabled: true, ServerSideEncryptionByDefault: { SSEAlgorithm: 'aws:kms', KMSMasterKeyID: keyArn } }] },
    });
    template.hasResourceProperties('AWS::S3Express::DirectoryBucket', {
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ BucketKeyEnabled: true, ServerSideEncryptionByDefault: { SSEAlgorithm: 'aws:kms', KMSMasterKeyID: keyArn } }] },
    });
    template.hasResourceProperties('AWS::SQS::Queue', { KmsMasterKeyId: keyArn });
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: keyArn });
    // Each function's role may encrypt and decrypt with the key.
    // (but the console's, which touches no table, queue or bucket: test/cdk/console.test.ts)
    const functions = template.findResources('AWS::Lambda::Function', { Properties: { Handler: 'index.handler', Description: Match.not(Match.stringLikeRegexp('^Tributary console:')) } });
    const roles = Object.values(functions).map((f) => (f as { Properties: { Role: { 'Fn::GetAtt': string[] } } }).Properties.Role['Fn::GetAtt'][0]);
    expect(roles.length).toBeGreaterThanOrEqual(6);
    const policies = Object.values(template.findResources('AWS::IAM::Policy')) as { Properties: { Roles: { Ref: string }[]; PolicyDocument: { Statement: { Action: string | string[]; Resource: unknown }[] } } }[];
    for (const role of roles) {
      const statements = policies.filter((p) => p.Properties.Roles.some((r) => r.Ref === role)).flatMap((p) => p.Properties.PolicyDocument.Statement);
      const kmsActions = statements.filter((s) => JSON.stringify(s.Resource).includes('ClusterKey')).flatMap((s) => [s.Action].flat());
      expect(kmsActions, role).toEqual(expect.arrayContaining(['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey']));
    }
    // CloudWatch alarms may publish to the encrypted topic.
    keyTemplate.hasResourceProperties('AWS::KMS::Key', {
      KeyPolicy: { Statement: Match.arrayWith([Match.objectLike({ Principal: { Service: 'cloudwatch.amazonaws.com' }, Action: ['kms:Decrypt', 'kms:GenerateDataKey*'] })]) },
    });
  });

  it('passes cdk-nag AwsSolutions with nothing unacknowledged', () => {
    const { app } = withKey();
    const report = new AwsSolutionsChecks(app).validateScope(app);
    expect(report.violations.map((v) => `${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath).join(', ')}`)).toEqual([]);
  });

  it('without it: AWS-owned keys for the tables, S3-managed for both buckets, SQS-managed for the queue', () => {
    const { template } = synth({});
    template.allResourcesProperties('AWS::DynamoDB::Table', { SSESpecification: { SSEEnabled: true } });
    for (const t of Object.values(template.findResources('AWS::DynamoDB::Table'))) expect((t as { Properties: { SSESpecification: Record<string, unknown> } }).Properties.SSESpecification.KMSMasterKeyId).toBeUndefined();
    template.hasResourceProperties('AWS::S3::Bucket', { BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] } });
    template.hasResourceProperties('AWS::S3Express::DirectoryBucket', { BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] } });
    template.hasResourceProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true });
  });
});
