/**
 * The store's own ceiling for a produce path: concurrent workers issue, straight through the AWS
 * SDK against a replica table of a running local stack, the DynamoDB operations each record of the
 * path needs and nothing else (no HTTP, no functions, no waiting for a commit: every operation is
 * sent as soon as the last one answered). The records per second they reach bound what the path
 * can do on that store, however the writers are paced.
 *
 * Two paths, as lib/log/append.ts and lib/log/staged-commit.ts write:
 * - direct (one writer): a transaction of the head and the batch; acks=all adds a transaction of
 *   the head and the batch on each of two followers, then the high watermark's update;
 * - staged (group commit of `round` records): each record a stage put and one read of its item,
 *   the lease and the head (a BatchGetItem); each round a read of its `round` staged items and a
 *   transaction of the head, `round` batches and `round` marks; acks=all adds the two
 *   follower transactions of the head and `round` batches, then the high watermark's update.
 * Rounds here run side by side on keys of their own, where a partition's rounds follow one another
 * on its head: the figure is an upper bound.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient, PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';

export interface StoreCeilingRun {
  /** The stack's environment (its DynamoDB endpoint, region and credentials). */
  readonly env: Readonly<Record<string, string>>;
  /** A replica table on the stack's store. */
  readonly table: string;
  readonly workers: number;
  readonly acks: '1' | 'all';
  /** Records per round; 1 is the direct path. */
  readonly round: number;
  readonly seconds: number;
}

const BYTES = Buffer.alloc(120, 7);
/** Stage ids sit far below a partition's offsets, as lib/storage/replica/staging.ts keeps them. */
const STAGE_BASE = 2 ** 52;

/** Records per second the store takes on the path `run` describes. */
export async function storeCeiling(run: StoreCeilingRun): Promise<number> {
  const { env } = run;
  const db = DynamoDBDocumentClient.from(new DynamoDBClient({
    endpoint: env.AWS_ENDPOINT_URL_DYNAMODB, region: env.AWS_REGION,
    credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID as string, secretAccessKey: env.AWS_SECRET_ACCESS_KEY as string },
  }));
  const tx = (tp: string, off: number, n: number, marks: number) => db.send(new TransactWriteCommand({
    TransactItems: [
      { Update: { TableName: run.table, Key: { tp, off: -1 }, UpdateExpression: 'SET leo = :end', ExpressionAttributeValues: { ':end': off + n } } },
      ...Array.from({ length: n }, (_, i) => ({ Put: { TableName: run.table, Item: { tp, off: off + i, lastOffset: off + i, data: BYTES } } })),
      ...Array.from({ length: marks }, (_, i) => ({
        Update: { TableName: run.table, Key: { tp: `${tp}/stage`, off: off + i - STAGE_BASE }, UpdateExpression: 'SET #s = :c, outcomes = :o', ExpressionAttributeNames: { '#s': 'stage' }, ExpressionAttributeValues: { ':c': 'committed', ':o': [{ base: off + i, last: off + i }] } },
      })),
    ],
  }));
  const commit = async (w: number, off: number) => {
    const n = run.round;
    // (the holder reads the round's staged items)
    if (n > 1) {
      await db.send(new QueryCommand({
        TableName: run.table, KeyConditionExpression: 'tp = :tp AND off BETWEEN :from AND :to', ConsistentRead: true,
        ExpressionAttributeValues: { ':tp': `ceiling/${w}/leader/stage`, ':from': off - STAGE_BASE, ':to': off + n - STAGE_BASE },
      }));
    }
    await tx(`ceiling/${w}/leader`, off, n, n > 1 ? n : 0);
    if (run.acks !== 'all') return;
    await Promise.all([1, 2].map((f) => tx(`ceiling/${w}/follower-${f}`, off, n, 0)));
    await db.send(new UpdateCommand({ TableName: run.table, Key: { tp: `ceiling/${w}/leader`, off: -1 }, UpdateExpression: 'SET hw = :hw', ExpressionAttributeValues: { ':hw': off + n } }));
  };
  let records = 0;
  const started = performance.now();
  const end = started + run.seconds * 1000;
  await Promise.all(Array.from({ length: run.workers }, async (_, w) => {
    for (let i = 0; performance.now() < end; i++) {
      if (run.round > 1) {
        const id = i - STAGE_BASE;
        await db.send(new PutCommand({ TableName: run.table, Item: { tp: `ceiling/${w}/leader/stage`, off: id, stage: 'staged', batches: [{ data: BYTES }] } }));
        // (a waiting writer reads its own item, the lease and the head)
        const tp = `ceiling/${w}/leader/stage`;
        await db.send(new BatchGetCommand({ RequestItems: { [run.table]: { Keys: [{ tp, off: id }, { tp, off: -2 }, { tp, off: -1 }], ConsistentRead: true } } }));
      }
      // (each worker commits a round after every `round` of its records: one round per `round` records in all)
      if ((i + 1) % run.round === 0) await commit(w, i + 1 - run.round);
      records++;
    }
  }));
  db.destroy();
  return records / ((performance.now() - started) / 1000);
}
