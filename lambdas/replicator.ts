/** Lambda: DynamoDB Streams on every replica table → replicate the partitions that changed. */
import middy from '@middy/core';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { changesOf, replicateChanges } from '../lib/log/replicator.js';

export const handler = middy<DynamoDBStreamEvent, DynamoDBBatchResponse>().handler(async (event) => {
  const failed = await replicateChanges(changesOf(event.Records));
  return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
});
