/**
 * The S3 bucket: batches too large to keep inline (`data/`), and later segments and snapshots;
 * and the stage bucket (`stage/`: lib/storage/stage.ts). The only module that builds S3 commands.
 */
import { DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { config } from '../config.js';
import { s3Client, s3ClientSingleAttempt } from './clients.js';
import { STAGE_ROOT } from './model.js';

const bucket = (): string => config().bucket;

/** Writes an object. Effect: `key` holds `body` (keys are unique per write, so no condition). */
export async function putObject(key: string, body: Uint8Array): Promise<void> {
  await putIn(s3Client(), bucket(), key, body);
}

async function putIn(s3: ReturnType<typeof s3Client>, b: string, key: string, body: Uint8Array): Promise<void> {
  await s3.send(new PutObjectCommand({ Bucket: b, Key: key, Body: body, ContentLength: body.length }));
}

/**
 * The object does not exist (S3 `NoSuchKey`, or a 404 without a body): never written, or deleted
 * (retention and compaction remove objects after a grace period). Readers refresh what told them
 * the key before they call it an error.
 */
export class ObjectMissing extends Error {
  override readonly name = 'ObjectMissing';
  constructor(readonly key: string) {
    super(`s3://${bucket()}/${key} does not exist`);
  }
}

const isMissing = (err: unknown): boolean => {
  const e = err as { name?: string; Code?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || e.Code === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
};

/** A GET whose missing object is an ObjectMissing; returns the body and the Content-Range header. */
async function get(key: string, range?: string): Promise<{ bytes: Buffer; contentRange?: string }> {
  try {
    const out = await s3Client().send(new GetObjectCommand({ Bucket: bucket(), Key: key, ...(range ? { Range: range } : {}) }));
    if (!out.Body) throw new Error(`s3://${bucket()}/${key} returned no body`);
    return { bytes: Buffer.from(await out.Body.transformToByteArray()), ...(out.ContentRange ? { contentRange: out.ContentRange } : {}) };
  } catch (err) {
    if (isMissing(err)) throw new ObjectMissing(key);
    throw err;
  }
}

/** Reads `length` bytes at `position` of an object with a ranged GET. Errors: ObjectMissing. */
export async function readRange(key: string, position: number, length: number): Promise<Buffer> {
  const { bytes } = await get(key, `bytes=${position}-${position + length - 1}`);
  if (bytes.length !== length) throw new Error(`s3://${bucket()}/${key} returned ${bytes.length} bytes, expected ${length}`);
  return bytes;
}

/**
 * Reads the last `n` bytes of an object (the whole object when it is smaller) with a suffix-range
 * GET, and the object's size (from Content-Range). One GET on S3; s3rver ignores suffix ranges
 * (it answers from byte 0), which Content-Range shows, so there a second ranged GET reads the tail.
 * Errors: ObjectMissing.
 */
export async function readTail(key: string, n: number): Promise<{ bytes: Buffer; objectBytes: number }> {
  const first = await get(key, `bytes=-${n}`);
  const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(first.contentRange ?? '');
  // No Content-Range: a 200 with the whole object.
  if (!m) return { bytes: first.bytes.subarray(Math.max(0, first.bytes.length - n)), objectBytes: first.bytes.length };
  const [end, objectBytes] = [Number(m[2]), Number(m[3])];
  const want = Math.min(n, objectBytes);
  if (end === objectBytes - 1 && first.bytes.length >= want) return { bytes: first.bytes.subarray(first.bytes.length - want), objectBytes };
  return { bytes: await readRange(key, objectBytes - want, want), objectBytes };
}

/** Reads a whole object. Errors: ObjectMissing. */
export async function readObject(key: string): Promise<Buffer> {
  return (await get(key)).bytes;
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
  return listIn(bucket(), prefix);
}

async function listIn(b: string, prefix: string): Promise<ListedObject[]> {
  const objects: ListedObject[] = [];
  let token: string | undefined;
  do {
    const out = await s3Client().send(new ListObjectsV2Command({ Bucket: b, Prefix: prefix, ContinuationToken: token }));
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
  await deleteIn(bucket(), keys);
}

async function deleteIn(b: string, keys: readonly string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 1000) {
    const out = await s3Client().send(new DeleteObjectsCommand({
      Bucket: b, Delete: { Objects: keys.slice(i, i + 1000).map((Key) => ({ Key })), Quiet: true },
    }));
    const failed = out.Errors?.[0];
    if (failed) throw new Error(`s3://${b}/${failed.Key ?? '?'} was not deleted: ${failed.Code ?? ''} ${failed.Message ?? ''}`);
  }
}

/*
 * The stage bucket (`config().stageBucket`: an S3 Express One Zone directory bucket in AWS, where
 * the SDK opens the session itself). Its objects are written once under unique keys and deleted.
 */

const stageBucket = (): string => config().stageBucket;

/** Writes a staged object, with one request: the SDK never sends it again (s3ClientSingleAttempt). */
export async function putStageObject(key: string, body: Uint8Array): Promise<void> {
  await putIn(s3ClientSingleAttempt(), stageBucket(), key, body);
}

/** Every staged object under a prefix, with its last write time (one LIST per 1,000). */
export async function listStageObjects(prefix: string): Promise<ListedObject[]> {
  return listIn(stageBucket(), prefix);
}

/** Reads a staged object; undefined when it is gone (deleted since it was listed). */
export async function readStageObject(key: string): Promise<Buffer | undefined> {
  try {
    const out = await s3Client().send(new GetObjectCommand({ Bucket: stageBucket(), Key: key }));
    if (!out.Body) throw new Error(`s3://${stageBucket()}/${key} returned no body`);
    return Buffer.from(await out.Body.transformToByteArray());
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
}

/**
 * Deletes every staged object under `prefix` written before `before` (epoch ms), as the stage
 * bucket's lifecycle rule does in AWS (STAGE_EXPIRATION_DAYS): the objects of writers that died
 * under a leader epoch no round of which will list them again. Returns how many it deleted.
 */
export async function expireStageObjects(before: number, prefix = STAGE_ROOT): Promise<number> {
  const old = (await listIn(stageBucket(), prefix)).filter((o) => o.lastModified < before).map((o) => o.key);
  await deleteIn(stageBucket(), old);
  return old.length;
}

/** Deletes staged objects by key (a missing key is not an error). Errors: the first key S3 refused to delete. */
export async function deleteStageObjects(keys: readonly string[]): Promise<void> {
  await deleteIn(stageBucket(), keys);
}
