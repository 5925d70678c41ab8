/**
 * The stage of the group commit's rounds (lib/log/staged-commit.ts): a writer that lost the head's
 * race puts its batches as one object of its own, under
 * `stage/<topic id>/<partition>/<leader epoch>/<stage id>` in the stage bucket, and writes nothing
 * else. A stage id is `<deadline>-<random>`: when its writer gives up (epoch ms), so a holder
 * passes over an object it could not commit in time without reading it, and a random tail. The holder of the committer lease lists the prefix, reads the objects, commits them in a
 * round, and deletes them in its next round; a writer that gives up deletes its own.
 *
 * An object is a 4-byte big-endian header length, the header (JSON: what a commit needs besides
 * the bytes) and the inline batches' bytes back to back.
 */
import { randomUUID } from 'node:crypto';
import { deleteStageObjects, listStageObjects, putStageObject, readStageObject } from './objects.js';
import { STAGE_ROOT, type S3Pointer } from './model.js';

/** One batch as staged: its bytes (base offset 0) or where in S3 they are, and its header fields. */
export interface StagedBatchItem {
  readonly data?: Uint8Array;
  readonly s3?: S3Pointer;
  readonly recordCount: number;
  readonly maxTimestamp: number;
  readonly sizeBytes: number;
  readonly producerId?: number;
  readonly producerEpoch?: number;
  readonly baseSequence?: number;
  readonly transactional?: boolean;
  readonly control?: 'commit' | 'abort';
}

/** What a staged object holds besides its batches' bytes. */
export interface StagedObject {
  /** Its stage id (`<deadline>-<random>`: newStageId). */
  readonly id: string;
  /** acks=all: its writer waits for the high watermark. */
  readonly acksAll?: boolean;
  /** acks=all: the ISR count a commit must have (min.insync.replicas). */
  readonly minIsr?: number;
  /** When its writer gives up waiting (epoch ms). */
  readonly deadline: number;
  readonly batches: readonly StagedBatchItem[];
}

/** A listed object: its stage id, its writer's deadline and when it landed (S3's clock). */
export interface ListedStaged {
  readonly id: string;
  readonly key: string;
  readonly deadline: number;
  readonly lastModified: number;
}

/** The prefix of a partition's stage under one leader epoch. */
export const stagePrefix = (topicId: string, partition: number, leaderEpoch: number): string => `${STAGE_ROOT}${topicId}/${partition}/${leaderEpoch}/`;

/** Where a round's bytes go: an object of the log (`data/`, the bucket's), named by its partition and a random id. */
export const roundObjectKey = (topicId: string, partition: number): string => `data/${topicId}/${partition}/${randomUUID()}.round`;
/** Whether an object holds a round's bytes (many small batches back to back: a roll copies them into its segment). */
export const isRoundObject = (key: string): boolean => key.endsWith('.round');

/** A new stage id for a writer that gives up at `deadline` (writers never coordinate one: the tail is random, 2^53 values). */
export const newStageId = (deadline: number): string => `${deadline}-${Math.floor(Math.random() * 2 ** 53)}`;
/** The deadline a stage id carries. */
export const deadlineOf = (id: string): number => Number(id.slice(0, id.indexOf('-')));

type Header = Omit<StagedObject, 'batches'> & { readonly batches: readonly (Omit<StagedBatchItem, 'data'> & { readonly inline?: number })[] };

/** An object's body. */
export function encodeStaged(o: StagedObject): Buffer {
  const header: Header = { ...o, batches: o.batches.map(({ data, ...b }) => ({ ...b, ...(data ? { inline: data.length } : {}) })) };
  const json = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(4);
  len.writeUInt32BE(json.length);
  return Buffer.concat([len, json, ...o.batches.flatMap((b) => (b.data ? [b.data] : []))]);
}

/** An object's contents from its body (its inline batches' bytes are views of it). */
export function decodeStaged(body: Buffer): StagedObject {
  const len = body.readUInt32BE(0);
  const header = JSON.parse(body.subarray(4, 4 + len).toString('utf8')) as Header;
  let at = 4 + len;
  const batches = header.batches.map(({ inline, ...b }) => {
    if (inline === undefined) return b;
    const data = body.subarray(at, at + inline);
    at += inline;
    return { ...b, data };
  });
  return { ...header, batches };
}

/** Puts a writer's object. */
export async function putStaged(prefix: string, o: StagedObject): Promise<void> {
  await putStageObject(`${prefix}${o.id}`, encodeStaged(o));
}

/** The objects staged under a prefix. */
export async function listStaged(prefix: string): Promise<ListedStaged[]> {
  return (await listStageObjects(prefix)).map((o) => {
    const id = o.key.slice(prefix.length);
    return { id, key: o.key, deadline: deadlineOf(id), lastModified: o.lastModified };
  });
}

/** Reads a staged object; undefined when it is gone (its writer gave up, or a round deleted it), 'unreadable' when it does not decode. */
export async function readStaged(key: string): Promise<StagedObject | 'unreadable' | undefined> {
  const body = await readStageObject(key);
  if (!body) return undefined;
  try {
    return decodeStaged(body);
  } catch {
    return 'unreadable';
  }
}

/** Deletes staged objects by stage id (deleting one already gone does nothing). */
export async function deleteStaged(prefix: string, ids: readonly string[]): Promise<void> {
  if (ids.length > 0) await deleteStageObjects(ids.map((id) => `${prefix}${id}`));
}

