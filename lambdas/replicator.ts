/** Lambda: DynamoDB Streams on every replica table → replicate the partitions that changed. */
import middy from '@middy/core';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { changesOf, replicateChanges } from '../lib/log/replicator.js';
import { armWebSocketWake, flushWakes } from '../lib/orchestration/websocket-wake.js';

// (a commit that moves a high watermark wakes the WebSocket deliveries of its partition)
armWebSocketWake();

export const handler = middy<DynamoDBStreamEvent, DynamoDBBatchResponse>().handler(async (event, context) => {
  // (a full sync stops 3 s before the function's end: nothing runs once it returns)
  let failed: string[];
  try {
    failed = await replicateChanges(changesOf(event.Records), Date.now() + context.getRemainingTimeInMillis() - 3000);
  } finally {
    await flushWakes();
  }
  return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
});
