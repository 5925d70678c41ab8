/**
 * Creating the stores themselves (tables and bucket) — what the local stack does at start and
 * what CloudFormation does in AWS, from the same table definitions.
 */
import { CreateTableCommand, DescribeTableCommand, ResourceInUseException } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { dynamo, s3Client } from './clients.js';
import type { TableSpec } from './tables.js';

/** Creates a table if it does not exist and waits until it is active. */
export async function ensureTable(spec: TableSpec, endpoint?: string): Promise<void> {
  const client = dynamo(endpoint);
  try {
    await client.send(new CreateTableCommand({
      TableName: spec.name,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [
        { AttributeName: spec.partitionKey.name, AttributeType: spec.partitionKey.type },
        { AttributeName: spec.sortKey.name, AttributeType: spec.sortKey.type },
      ],
      KeySchema: [
        { AttributeName: spec.partitionKey.name, KeyType: 'HASH' },
        { AttributeName: spec.sortKey.name, KeyType: 'RANGE' },
      ],
      ...(spec.stream ? { StreamSpecification: { StreamEnabled: true, StreamViewType: spec.stream } } : {}),
    }));
  } catch (err) {
    if (!(err instanceof ResourceInUseException)) throw err;
  }
  for (let i = 0; i < 100; i++) {
    const out = await client.send(new DescribeTableCommand({ TableName: spec.name }));
    if (out.Table?.TableStatus === 'ACTIVE') return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`table ${spec.name} did not become active`);
}

/** Creates the bucket if it does not exist. */
export async function ensureBucket(name: string): Promise<void> {
  try {
    await s3Client().send(new CreateBucketCommand({ Bucket: name }));
  } catch (err) {
    const n = (err as Error).name;
    if (n !== 'BucketAlreadyOwnedByYou' && n !== 'BucketAlreadyExists') throw err;
  }
}
