/**
 * Creating the tables themselves — what the local stack does at start and what CloudFormation does
 * in AWS, from the same table definitions (the local S3 server creates its bucket at start).
 */
import { CreateTableCommand, DeleteTableCommand, DescribeTableCommand, UpdateTableCommand, ResourceInUseException, ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import { dynamo } from './clients.js';
import type { TableSpec } from './tables.js';

/**
 * How long table creation keeps retrying requests that time out. A DynamoDB Local JVM just started
 * answers its first request slowly (measured on two busy cores: 4–10 s for the first CreateTable of
 * four JVMs started at once), far past the store timeout that fault tests set to 2 s for paused stores.
 */
const COLD_STORE_GRACE_MS = 60_000;

async function patiently<T>(send: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + COLD_STORE_GRACE_MS;
  for (;;) {
    try {
      return await send();
    } catch (err) {
      if ((err as Error).name !== 'TimeoutError' || Date.now() > deadline) throw err;
    }
  }
}

/** Creates a table if it does not exist and waits until it is active; request timeouts are retried for a while (a cold store). */
export async function ensureTable(spec: TableSpec, endpoint?: string): Promise<void> {
  const client = dynamo(endpoint);
  try {
    await patiently(() => client.send(new CreateTableCommand({
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
    })));
  } catch (err) {
    if (!(err instanceof ResourceInUseException)) throw err;
  }
  for (let i = 0; i < 100; i++) {
    const out = await patiently(() => client.send(new DescribeTableCommand({ TableName: spec.name })));
    if (out.Table?.TableStatus === 'ACTIVE') {
      // A table made by an older version, before it had a stream: turn the stream on.
      if (spec.stream && !out.Table.StreamSpecification?.StreamEnabled) {
        await patiently(() => client.send(new UpdateTableCommand({ TableName: spec.name, StreamSpecification: { StreamEnabled: true, StreamViewType: spec.stream } })));
        continue;
      }
      return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`table ${spec.name} did not become active`);
}

/** Deletes tables (those already gone are fine): a local stack's own tables in a store it borrowed. */
export async function dropTables(endpoint: string, specs: readonly TableSpec[]): Promise<void> {
  const client = dynamo(endpoint);
  await Promise.all(specs.map(async (spec) => {
    try {
      await client.send(new DeleteTableCommand({ TableName: spec.name }));
    } catch (err) {
      if (!(err instanceof ResourceNotFoundException)) throw err;
    }
  }));
}

