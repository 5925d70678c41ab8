/**
 * The garbage pass: deletes S3 objects of the log that nothing refers to any more —
 * found by reference, never by age alone, and only once they are older than a grace period, so a
 * fetch or a full sync that read a segment list or a table pointer just before can still read them.
 *
 * For each partition (of a known topic, or named by an object's key):
 *   (a) `deleted` registry items tombstoned longer ago than the grace: the object goes (unless an
 *       item still in use names the same key), then the item;
 *   (b) `pending` items older than `pendingMaxAgeMs` (their roller died before committing) become
 *       `deleted` — their object goes with (a), a grace later;
 *   (c) `segments/` objects older than the grace that no item names (a write whose registration
 *       was lost): registered as `deleted` first, so no roller can write the key again meanwhile,
 *       then deleted, then unregistered;
 *   (d) `data/` objects older than the grace that no batch item on any replica of the partition
 *       points to and no item in use lists in `externalKeys`.
 * A deleted topic's objects and items (its id is unknown) go the same way: its live items are
 * tombstoned, and everything else follows the rules above.
 * The grace of a topic is `file.delete.delay.ms`, but at least `graceMs` (the floor; default
 * 10 minutes: docs/architecture.md says why).
 */
import { numericConfig } from '../cluster/topic-configs.js';
import { logger } from '../logger.js';
import { mapLimit } from '../map-limit.js';
import { listBrokers } from '../storage/coordination/brokers.js';
import { forgetDeletedTopic, listDeletedTopics, listTopicNames, readTopic } from '../storage/coordination/topics.js';
import { topicPartitionKey, type PartitionRecord, type TopicRecord } from '../storage/model.js';
import { deleteObjects, listObjects, type ListedObject } from '../storage/objects.js';
import { batchPointerKeys } from '../storage/replica/deletion.js';
import { type ReplicaStoreRef } from '../storage/replica/store.js';
import { abandonPending, claimOrphan, listSegments, removeSegmentItem, tombstoneSegments, type SegmentRecord } from '../storage/coordination/segments.js';

/** The least time between an object leaving the log and its deletion, whatever a topic sets. */
export const GARBAGE_GRACE_FLOOR_MS = 10 * 60_000;
/** A pending segment this old was abandoned by its roller (a roll takes seconds). */
export const PENDING_MAX_AGE_MS = 60 * 60_000;

export interface GarbageOptions {
  /** The clock (tests move it forward). @default Date.now() */
  readonly now?: number;
  /** The grace floor. @default GARBAGE_GRACE_FLOOR_MS */
  readonly graceMs?: number;
  /** Age after which a pending item is abandoned. @default PENDING_MAX_AGE_MS */
  readonly pendingMaxAgeMs?: number;
  /** Partitions worked on at once. @default 8 */
  readonly concurrency?: number;
  /** Start no partition after this time (ms since epoch, real clock): the rest wait for the next pass. */
  readonly deadline?: number;
  /** Tests: runs after a partition's registry items were read, to interleave a writer deterministically. */
  readonly onPartitionRead?: (topicId: string, partition: number) => Promise<void> | void;
}

export interface GarbageResult {
  /** Objects deleted, by key. */
  readonly deletedObjects: string[];
  /** Registry items removed for good. */
  removedItems: number;
  /** Pending items abandoned (now `deleted`). */
  abandonedPending: number;
  /** Deleted topics whose last trace went, and whose record the pass removed. */
  forgottenTopics: number;
  /** Live items of deleted topics tombstoned. */
  tombstonedOrphans: number;
  /** Partitions skipped after an error (retried by the next pass). */
  failedPartitions: number;
  /** Partitions not started before the deadline. */
  skippedPartitions: number;
}

const SEGMENT_NAME = /^(\d{20})(?:\.g(\d+))?\.seg$/;
/** How many topics the pass reads at once (a Query each). */
const TOPIC_READS_IN_FLIGHT = 16;

/** `<prefix>/<topicId>/<partition>/<name>` → its parts, or undefined for a key of another shape (left alone). */
function parseKey(key: string): { topicId: string; partition: number; name: string } | undefined {
  const m = /^(?:segments|data)\/([^/]+)\/(\d{1,9})\/([^/]+)$/.exec(key);
  return m ? { topicId: m[1] as string, partition: Number(m[2]), name: m[3] as string } : undefined;
}

interface KnownTopic {
  readonly topic: TopicRecord;
  readonly partitions: readonly PartitionRecord[];
}

/**
 * One garbage pass over the whole bucket. Safe to run concurrently with itself and with rolls,
 * retention, compaction, fetches and full syncs: every registry write is conditional, every
 * delete is of something no reader can reach any more. A partition whose references cannot all
 * be read (a store down) is skipped, never guessed.
 */
export async function collectGarbage(o: GarbageOptions = {}): Promise<GarbageResult> {
  const now = o.now ?? Date.now();
  const floor = o.graceMs ?? GARBAGE_GRACE_FLOOR_MS;
  const pendingMaxAge = o.pendingMaxAgeMs ?? PENDING_MAX_AGE_MS;
  const result: GarbageResult = { deletedObjects: [], removedItems: 0, abandonedPending: 0, tombstonedOrphans: 0, forgottenTopics: 0, failedPartitions: 0, skippedPartitions: 0 };

  // Objects first: one written after this listing is younger than any grace, so never a candidate.
  const [segmentObjects, dataObjects] = await Promise.all([listObjects('segments/'), listObjects('data/')]);
  const topics = new Map<string, KnownTopic>();
  for (const view of await mapLimit(await listTopicNames(), TOPIC_READS_IN_FLIGHT, (n) => readTopic(n))) {
    if (view) topics.set(view.topic.topicId, view);
  }
  const stores = new Map((await listBrokers()).map((b) => [b.brokerId, b as ReplicaStoreRef]));

  const partitions = new Map<string, { topicId: string; partition: number; segments: ListedObject[]; data: ListedObject[] }>();
  const entry = (topicId: string, partition: number) => {
    const k = topicPartitionKey(topicId, partition);
    let e = partitions.get(k);
    if (!e) partitions.set(k, e = { topicId, partition, segments: [], data: [] });
    return e;
  };
  for (const t of topics.values()) for (let p = 0; p < t.topic.partitions; p++) entry(t.topic.topicId, p);
  // A deleted topic's registry items are found by its id, kept for this (an item whose object is
  // already gone would otherwise never be visited again).
  const deleted = await listDeletedTopics();
  for (const d of deleted) for (let p = 0; p < d.partitions; p++) entry(d.topicId, p);
  for (const obj of segmentObjects) {
    const k = parseKey(obj.key);
    if (k) entry(k.topicId, k.partition).segments.push(obj);
  }
  for (const obj of dataObjects) {
    const k = parseKey(obj.key);
    if (k) entry(k.topicId, k.partition).data.push(obj);
  }

  const queue = [...partitions.values()];
  const worker = async () => {
    for (let p = queue.shift(); p; p = queue.shift()) {
      if (o.deadline !== undefined && Date.now() >= o.deadline) {
        result.skippedPartitions++;
        continue;
      }
      const known = topics.get(p.topicId);
      const grace = Math.max(floor, known ? numericConfig(known.topic.configs, 'file.delete.delay.ms') : 0);
      const replicas = known?.partitions[p.partition]?.replicas ?? [];
      try {
        await collectPartition({ ...p, known: known !== undefined, grace, now, pendingMaxAge, replicas: replicas.map((id) => stores.get(id)), onRead: o.onPartitionRead }, result);
      } catch (err) {
        result.failedPartitions++;
        logger.warn({ event: 'garbage-partition-failed', topicId: p.topicId, partition: p.partition, err: String(err) }, 'garbage pass skipped a partition');
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, o.concurrency ?? 8) }, worker));
  // A deleted topic with nothing left — no registry item, no object — is forgotten.
  for (const d of deleted) {
    if (o.deadline !== undefined && Date.now() >= o.deadline) break;
    const items = await Promise.all(Array.from({ length: d.partitions }, (_, p) => listSegments(d.topicId, p, { states: ['pending', 'live', 'deleted'] })));
    if (items.some((i) => i.length > 0)) continue;
    const objects = await Promise.all([listObjects(`segments/${d.topicId}/`), listObjects(`data/${d.topicId}/`)]);
    if (objects.some((l) => l.length > 0)) continue;
    await forgetDeletedTopic(d.topicId);
    result.forgottenTopics++;
  }
  return result;
}

interface PartitionWork {
  readonly topicId: string;
  readonly partition: number;
  readonly known: boolean;
  readonly grace: number;
  readonly now: number;
  readonly pendingMaxAge: number;
  /** The stores of the partition's replicas (undefined: a broker that is not registered). */
  readonly replicas: readonly (ReplicaStoreRef | undefined)[];
  readonly segments: readonly ListedObject[];
  readonly data: readonly ListedObject[];
  readonly onRead?: GarbageOptions['onPartitionRead'];
}

/** The keys an item still in use names: live and pending items, and tombstones within their grace. */
function keysInUse(items: readonly SegmentRecord[], expired: (s: SegmentRecord) => boolean): Set<string> {
  const inUse = new Set<string>();
  for (const s of items) {
    if (expired(s)) continue;
    inUse.add(s.key);
    for (const k of s.externalKeys ?? []) inUse.add(k);
  }
  return inUse;
}

async function collectPartition(w: PartitionWork, result: GarbageResult): Promise<void> {
  const old = (obj: ListedObject) => obj.lastModified + w.grace < w.now;
  const all = () => listSegments(w.topicId, w.partition, { states: ['pending', 'live', 'deleted'] });
  let items = await all();

  // A deleted topic: its live segments leave the log now, their objects a grace later.
  if (!w.known) {
    const live = items.filter((s) => s.state === 'live');
    if (live.length > 0) {
      result.tombstonedOrphans += await tombstoneSegments(live, w.now);
      items = await all();
    }
  }
  await w.onRead?.(w.topicId, w.partition);

  // (b) abandoned pending claims
  for (const s of items) {
    if (s.state === 'pending' && s.createdAt + w.pendingMaxAge < w.now && await abandonPending(s, w.now)) result.abandonedPending++;
  }

  const expired = (s: SegmentRecord) => s.state === 'deleted' && (s.deletedAt ?? 0) + w.grace < w.now;
  const inUse = keysInUse(items, expired);

  // (a) tombstones past their grace: the object, then the item (a crash between repeats the delete).
  for (const s of items.filter(expired)) {
    if (!inUse.has(s.key)) await deleteAndRecord([s.key], result);
    if (await removeSegmentItem(s)) result.removedItems++;
  }

  // (c) segment objects no item names
  const named = new Set(items.map((s) => s.key));
  const atBase = new Map(items.map((s) => [s.itemSk ?? '', s]));
  for (const obj of w.segments.filter(old)) {
    if (named.has(obj.key)) continue;
    const m = SEGMENT_NAME.exec(obj.key.slice(obj.key.lastIndexOf('/') + 1));
    if (!m) continue;
    const baseOffset = Number(m[1]);
    const generation = m[2] === undefined ? 0 : Number(m[2]);
    // First a `deleted` item that keeps the key out of the log while it is deleted (claimOrphan):
    // at the base offset when none is there (no roller registers it, no compaction swaps there);
    // else, for a rewrite, where a compaction replacing the item there writes its tombstone (the
    // swap of a rewrite still in flight fails). A generation-0 object needs no claim beside an
    // item: no roller registers a base that has one. A failed claim: someone got there first.
    const holder = atBase.get(m[1] as string);
    const orphan = { topicId: w.topicId, partition: w.partition, baseOffset, key: obj.key, generation };
    const claim = !holder ? await claimOrphan(orphan, w.now)
      : generation > 0 ? await claimOrphan(orphan, w.now, holder.generation)
        : undefined;
    if (!claim && (!holder || generation > 0)) continue;
    await deleteAndRecord([obj.key], result);
    if (claim && await removeSegmentItem(claim)) result.removedItems++;
  }

  // (d) data/ objects nothing points to. Candidates are the old ones no segment in use lists (most
  // old data/ objects are adopted by live segments: no table is read for those). Then the table
  // pointers, then the registry again: a roll commits its segment's externalKeys before it deletes
  // the table batches, so a pointer gone from the tables is in the registry read after them.
  const candidates = w.data.filter((obj) => old(obj) && !inUse.has(obj.key));
  if (candidates.length === 0) return;
  const pointed = new Set<string>();
  if (w.known) {
    if (w.replicas.length === 0 || w.replicas.some((s) => s === undefined)) throw new Error('the partition\'s replicas are not all known');
    for (const store of w.replicas as ReplicaStoreRef[]) for (const k of await batchPointerKeys(store, topicPartitionKey(w.topicId, w.partition))) pointed.add(k);
  }
  const stillInUse = keysInUse(await all(), expired);
  const unreferenced = candidates.filter((obj) => !pointed.has(obj.key) && !stillInUse.has(obj.key)).map((obj) => obj.key);
  if (unreferenced.length > 0) await deleteAndRecord(unreferenced, result);
}

async function deleteAndRecord(keys: readonly string[], result: GarbageResult): Promise<void> {
  await deleteObjects(keys);
  result.deletedObjects.push(...keys);
}
