/**
 * The S3 bucket: batches too large to keep inline (`data/`), and later segments and snapshots.
 * The only module that builds S3 commands.
 */
import { DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { config } from '../config.js';
import { s3Client } from './clients.js';

const bucket = (): string => config().bucket;

/** Writes an object. Effect: `key` holds `body` (keys are unique per write, so no condition). */
export async function putObject(key: string, body: Uint8Array): Promise<void> {
  await s3Client().send(new PutObjectCommand({ Bucket: bucket(), Key: key, Body: body, ContentLength: body.length }));
}

/** Reads `length` bytes at `position` of an object with a ranged GET. */
export async function readRange(key: string, position: number, length: number): Promise<Buffer> {
  const out = await s3Client().send(new GetObjectCommand({
    Bucket: bucket(), Key: key, Range: `bytes=${position}-${position + length - 1}`,
  }));
  if (!out.Body) throw new Error(`s3://${bucket()}/${key} returned no body`);
  const bytes = Buffer.from(await out.Body.transformToByteArray());
  if (bytes.length !== length) throw new Error(`s3://${bucket()}/${key} returned ${bytes.length} bytes, expected ${length}`);
  return bytes;
}

/** Reads a whole object. */
export async function readObject(key: string): Promise<Buffer> {
  const out = await s3Client().send(new GetObjectCommand({ Bucket: bucket(), Key: key }));
  if (!out.Body) throw new Error(`s3://${bucket()}/${key} returned no body`);
  return Buffer.from(await out.Body.transformToByteArray());
}

/** Every key under a prefix. */
export async function listKeys(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const out = await s3Client().send(new ListObjectsV2Command({ Bucket: bucket(), Prefix: prefix, ContinuationToken: token }));
    keys.push(...(out.Contents ?? []).flatMap((o) => (o.Key ? [o.Key] : [])));
    token = out.IsTruncated ? out.NextContinuationToken : undefined;
  } while (token);
  return keys;
}

/** Deletes every object under a prefix. */
export async function deletePrefix(prefix: string): Promise<void> {
  let token: string | undefined;
  do {
    const out = await s3Client().send(new ListObjectsV2Command({ Bucket: bucket(), Prefix: prefix, ContinuationToken: token }));
    const keys = (out.Contents ?? []).flatMap((o) => (o.Key ? [{ Key: o.Key }] : []));
    if (keys.length > 0) {
      await s3Client().send(new DeleteObjectsCommand({ Bucket: bucket(), Delete: { Objects: keys, Quiet: true } }));
    }
    token = out.IsTruncated ? out.NextContinuationToken : undefined;
  } while (token);
}
