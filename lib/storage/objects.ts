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

/** An object as a listing shows it. */
export interface ListedObject {
  readonly key: string;
  /** When it was last written (ms since epoch, S3's clock). */
  readonly lastModified: number;
  readonly size: number;
}

/** Every object under a prefix, with its last write time and size (the garbage pass judges age by it). */
export async function listObjects(prefix: string): Promise<ListedObject[]> {
  const objects: ListedObject[] = [];
  let token: string | undefined;
  do {
    const out = await s3Client().send(new ListObjectsV2Command({ Bucket: bucket(), Prefix: prefix, ContinuationToken: token }));
    for (const o of out.Contents ?? []) {
      if (o.Key) objects.push({ key: o.Key, lastModified: o.LastModified?.getTime() ?? 0, size: o.Size ?? 0 });
    }
    token = out.IsTruncated ? out.NextContinuationToken : undefined;
  } while (token);
  return objects;
}

/**
 * Deletes objects by key (up to 1,000 per request). No condition: deleting a missing key is not
 * an error, so a pass that crashed after some deletes repeats them harmlessly.
 * Errors: the first key S3 refused to delete.
 */
export async function deleteObjects(keys: readonly string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 1000) {
    const out = await s3Client().send(new DeleteObjectsCommand({
      Bucket: bucket(), Delete: { Objects: keys.slice(i, i + 1000).map((Key) => ({ Key })), Quiet: true },
    }));
    const failed = out.Errors?.[0];
    if (failed) throw new Error(`s3://${bucket()}/${failed.Key ?? '?'} was not deleted: ${failed.Code ?? ''} ${failed.Message ?? ''}`);
  }
}
