/** Lambda: DynamoDB Streams on every replica table → replicate the partitions that changed. */
import middy from '@middy/core';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { replicateChanges } from '../lib/log/replicator.js';

/** `arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>` → `<name>`. */
const tableOf = (arn: string | undefined): string => /:table\/([^/]+)\//.exec(arn ?? '')?.[1] ?? '';

export const handler = middy<DynamoDBStreamEvent, DynamoDBBatchResponse>().handler(async (event) => {
  const changes = event.Records.flatMap((r) => {
    const tp = r.dynamodb?.Keys?.tp?.S;
    const off = r.dynamodb?.Keys?.off?.N;
    const position = r.dynamodb?.SequenceNumber;
    return tp && off !== undefined && position && r.eventName !== 'REMOVE'
      ? [{ table: tableOf(r.eventSourceARN), tp, off: Number(off), position }] : [];
  });
  const failed = await replicateChanges(changes);
  return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
});
