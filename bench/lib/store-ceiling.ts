/**
 * The stores' own ceiling for a produce path: concurrent workers issue, straight through the AWS
 * SDK against a replica table and the bucket of a running local stack, the DynamoDB and S3
 * operations each record of the path needs and nothing else (no HTTP, no functions, no waiting
 * for a commit: every operation is sent as soon as the last one answered). The records per second
 * they reach bound what the path can do on those stores, however the writers are paced.
 *
 * Two paths, as lib/log/append.ts and lib/log/staged-commit.ts write:
 * - direct (one writer): a transaction of the head and the batch; acks=all adds a transaction of
 *   the head and the batch on each of two followers, then the high watermark's update;
 * - staged (a group-commit round of `round` records): each record a PUT of its stage object and
 *   one read of the rounds, the lease and the head (a Query); each round the holder's read of the
 *   rounds, a DELETE of the last round's objects, a LIST, a GET of each object, a PUT of the round
 *   object and a transaction of the head, one item of `round` pointers and the round item; acks=all
 *   adds the two follower transactions of the head and the pointers' item, then the high
 *   watermark's update.
 * Rounds here run side by side on keys of their own, where a partition's rounds follow one another
 * on its head: the figure is an upper bound.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';

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
/** Round items sit below a partition's head, as lib/storage/replica/rounds.ts keeps them. */
const ROUND_BASE = 2 ** 45;

/** Records per second the store takes on the path `run` describes. */
export async function storeCeiling(run: StoreCeilingRun): Promise<number> {
  const { env } = run;
  const db = DynamoDBDocumentClient.from(new DynamoDBClient({
    endpoint: env.AWS_ENDPOINT_URL_DYNAMODB, region: env.AWS_REGION,
    credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID as string, secretAccessKey: env.AWS_SECRET_ACCESS_KEY as string },
  }));
  const s3 = new S3Client({
    endpoint: env.AWS_ENDPOINT_URL_S3, region: env.AWS_REGION, forcePathStyle: env.TRIBUTARY_S3_FORCE_PATH_STYLE === 'true',
    credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID as string, secretAccessKey: env.AWS_SECRET_ACCESS_KEY as string },
  });
  const Bucket = env.TRIBUTARY_STAGE_BUCKET ?? env.TRIBUTARY_BUCKET;
  /** A transaction of the head and `n` batches: one item each, or (`round`) one item of pointers and the round item. */
  const tx = (tp: string, off: number, n: number, round: boolean) => db.send(new TransactWriteCommand({
    TransactItems: [
      { Update: { TableName: run.table, Key: { tp, off: -1 }, UpdateExpression: 'SET leo = :end', ExpressionAttributeValues: { ':end': off + n } } },
      ...(n > 1
        ? [{ Put: { TableName: run.table, Item: { tp, off: off + n - 1, lastOffset: off + n - 1, parts: Array.from({ length: n }, (_, i) => [off + i, 0, i * 120, 120]), s3: 'data/ceiling.round' } } }]
        : [{ Put: { TableName: run.table, Item: { tp, off, lastOffset: off, data: BYTES } } }]),
      ...(round ? [{ Put: { TableName: run.table, Item: { tp, off: off - ROUND_BASE, stage: 'round', outcomes: Object.fromEntries(Array.from({ length: n }, (_, i) => [String(1e15 + i), [{ base: off + i, last: off + i }]])) } } }] : []),
    ],
  }));
  const stagePrefix = (w: number) => `stage/ceiling/${w}/`;
  const commit = async (w: number, off: number) => {
    const n = run.round;
    const tp = `ceiling/${w}/leader`;
    if (n > 1) {
      await db.send(new QueryCommand({
        TableName: run.table, KeyConditionExpression: 'tp = :tp AND off BETWEEN :from AND :head', ConsistentRead: true,
        ExpressionAttributeValues: { ':tp': tp, ':from': off - n - ROUND_BASE, ':head': -1 },
      }));
      const listed = await s3.send(new ListObjectsV2Command({ Bucket, Prefix: stagePrefix(w) }));
      const keys = (listed.Contents ?? []).flatMap((o) => (o.Key ? [o.Key] : []));
      const bodies: Buffer[] = [];
      for (let i = 0; i < keys.length; i += 16) {
        bodies.push(...await Promise.all(keys.slice(i, i + 16).map(async (Key) => Buffer.from(await (await s3.send(new GetObjectCommand({ Bucket, Key }))).Body?.transformToByteArray() ?? []))));
      }
      await s3.send(new PutObjectCommand({ Bucket, Key: `data/ceiling/${w}/${off}.round`, Body: Buffer.concat(bodies) }));
      // (the next round's holder deletes this round's objects before it lists)
      if (keys.length > 0) await s3.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } }));
    }
    await tx(tp, off, n, n > 1);
    if (run.acks !== 'all') return;
    await Promise.all([1, 2].map((f) => tx(`ceiling/${w}/follower-${f}`, off, n, false)));
    await db.send(new UpdateCommand({ TableName: run.table, Key: { tp, off: -1 }, UpdateExpression: 'SET hw = :hw', ExpressionAttributeValues: { ':hw': off + n } }));
  };
  let records = 0;
  const started = performance.now();
  const end = started + run.seconds * 1000;
  await Promise.all(Array.from({ length: run.workers }, async (_, w) => {
    for (let i = 0; performance.now() < end; i++) {
      if (run.round > 1) {
        await s3.send(new PutObjectCommand({ Bucket, Key: `${stagePrefix(w)}${i}`, Body: BYTES }));
        // (a waiting writer reads the rounds since, the lease and the head)
        const tp = `ceiling/${w}/leader`;
        await db.send(new QueryCommand({
          TableName: run.table, KeyConditionExpression: 'tp = :tp AND off BETWEEN :from AND :head', ConsistentRead: true,
          ExpressionAttributeValues: { ':tp': tp, ':from': i - ROUND_BASE, ':head': -1 },
        }));
      }
      // (each worker commits a round after every `round` of its records: one round per `round` records in all)
      if ((i + 1) % run.round === 0) await commit(w, i + 1 - run.round);
      records++;
    }
  }));
  db.destroy();
  s3.destroy();
  return records / ((performance.now() - started) / 1000);
}
