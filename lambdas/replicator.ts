/** Lambda: DynamoDB Streams on every replica table → replicate the partitions that changed. */
import middy from '@middy/core';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { handOffToSweep, replicateChanges, type ReplicaChange } from '../lib/log/replicator.js';

/** `arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>` → `<name>`. */
const tableOf = (arn: string | undefined): string => /:table\/([^/]+)\//.exec(arn ?? '')?.[1] ?? '';

/** The log changes a stream event holds (deletes are truncations' and retention's echoes). */
function changesOf(event: DynamoDBStreamEvent): ReplicaChange[] {
  return event.Records.flatMap((r) => {
    const tp = r.dynamodb?.Keys?.tp?.S;
    const off = r.dynamodb?.Keys?.off?.N;
    const position = r.dynamodb?.SequenceNumber;
    return tp && off !== undefined && position && r.eventName !== 'REMOVE'
      ? [{ table: tableOf(r.eventSourceARN), tp, off: Number(off), position }] : [];
  });
}

export const handler = middy<DynamoDBStreamEvent, DynamoDBBatchResponse>().handler(async (event) => {
  const failed = await replicateChanges(changesOf(event));
  return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
});

/**
 * The local stack's on-failure destination for a batch the stream poller gives up on: its
 * partitions go to the lag index, which the controller's sweep re-drives. (In AWS the event source
 * mapping sends the batch's description to the on-failure queue; the failing invocations have
 * marked the partitions already.)
 */
export const onFailure = (event: DynamoDBStreamEvent): Promise<void> => handOffToSweep(changesOf(event));
