/**
 * The tiered log's garbage pass: objects are deleted by reference — never while a live or pending
 * segment, a tombstone within its grace, or a table pointer names them — and only once older
 * than the grace period; every registry write is conditional, so it loses races to rollers safely.
 *
 * A private quiet stack; time moves through the pass's injectable clock (S3 dates objects by its
 * own clock, so "an hour later" is `now: Date.now() + HOUR`).
 */
import { describe, expect, it } from 'vitest';
import { alterTopicConfigs, deleteTopic } from '../../../lib/cluster/topics.js';
import { listDeletedTopics } from '../../../lib/storage/coordination/topics.js';
import { collectGarbage, GARBAGE_GRACE_FLOOR_MS } from '../../../lib/log/garbage.js';
import { applyRetention } from '../../../lib/log/retention.js';
import { rollPartition } from '../../../lib/log/roll.js';
import { listKeys, putObject } from '../../../lib/storage/objects.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { readHead } from '../../../lib/storage/replica/head.js';
import { claimOrphan, commitSegment, listSegments, registerPending, removeSegmentItem, replaceSegments, segmentObjectKey, tombstoneSegments } from '../../../lib/storage/coordination/segments.js';
import { useQuietCluster } from '../../support/cluster.js';
import { partitionWith, produceBatch, rollTo, type Partition } from './fake-roll.js';

useQuietCluster();
const MIN = 60_000;
const HOUR = 60 * MIN;
const YEAR = 365 * 24 * HOUR;

const exists = async (key: string) => (await listKeys(key)).includes(key);
const items = async (p: Partition) => (await listSegments(p.topicId, 0, { states: ['pending', 'live', 'deleted'] })).map((s) => [s.itemSk, s.state]);
const readHeadOf = async (p: Partition) => (await readHead(p.leader, p.tp))!;
const sk = (base: number) => String(base).padStart(20, '0');

describe('Function: collectGarbage', () => {
  it('deletes a segment object no item names once it is older than the grace, not before, and leaves no item behind', async () => {
    const p = await partitionWith('gc-orphan');
    const key = segmentObjectKey(p.topicId, 0, 500);
    await putObject(key, Buffer.from('orphan'));
    await collectGarbage({ now: Date.now() + GARBAGE_GRACE_FLOOR_MS / 2 });
    expect(await exists(key)).toBe(true);
    const r = await collectGarbage({ now: Date.now() + GARBAGE_GRACE_FLOOR_MS + MIN });
    expect(r.deletedObjects).toContain(key);
    expect(await exists(key)).toBe(false);
    expect(await items(p)).toEqual([]);
  });

  it('deletes a tombstoned segment\'s object only after the topic\'s file.delete.delay.ms (and never before the floor), then its item', async () => {
    const p = await partitionWith('gc-tomb', { 'file.delete.delay.ms': String(30 * MIN) });
    await produceBatch(p, 5);
    const seg = await rollTo(p, 5);
    const at = Date.now();
    expect(await tombstoneSegments([seg], at)).toBe(1);
    await collectGarbage({ now: at + 20 * MIN });
    expect(await exists(seg.key)).toBe(true);
    expect(await items(p)).toEqual([[sk(0), 'deleted']]);
    await collectGarbage({ now: at + 31 * MIN });
    expect(await exists(seg.key)).toBe(false);
    expect(await items(p)).toEqual([]);

    // The default delay (60 s) is below the floor: the floor holds.
    const q = await partitionWith('gc-floor');
    await produceBatch(q, 5);
    const s2 = await rollTo(q, 5);
    await tombstoneSegments([s2], at);
    await collectGarbage({ now: at + 2 * MIN });
    expect(await exists(s2.key)).toBe(true);
    await collectGarbage({ now: at + GARBAGE_GRACE_FLOOR_MS + MIN });
    expect(await exists(s2.key)).toBe(false);
  });

  it('never deletes a live segment\'s object, however old', async () => {
    const p = await partitionWith('gc-live');
    await produceBatch(p, 5);
    const seg = await rollTo(p, 5);
    await collectGarbage({ now: Date.now() + YEAR });
    expect(await exists(seg.key)).toBe(true);
    expect(await items(p)).toEqual([[sk(0), 'live']]);
  });

  it('keeps a data/ object while a table batch points to it or a segment lists it in externalKeys; deletes an old one nothing refers to', async () => {
    const p = await partitionWith('gc-data', { 'inline.max.bytes': '100' });
    await produceBatch(p, 1, { valueBytes: 1000 });
    await produceBatch(p, 1, { valueBytes: 10 });
    const pointer = (await queryBatches(p.leader, p.tp, { fromOffset: 0, toOffset: 0, maxBytes: 1e9 }))[0]?.s3?.key;
    expect(pointer).toMatch(new RegExp(`^data/${p.topicId}/0/`));
    const orphan = `data/${p.topicId}/0/orphan.batch`;
    await putObject(orphan, Buffer.from('never appended'));

    // Young: nothing goes. Old: the orphan goes, the pointed-to object stays.
    await collectGarbage();
    expect(await exists(orphan)).toBe(true);
    const r = await collectGarbage({ now: Date.now() + YEAR });
    expect(r.deletedObjects).toContain(orphan);
    expect(await exists(orphan)).toBe(false);
    expect(await exists(pointer!)).toBe(true);

    // Rolled: the table no longer points to it, the live segment lists it.
    const seg = await rollTo(p, 2);
    expect(seg.externalKeys).toEqual([pointer]);
    await collectGarbage({ now: Date.now() + YEAR });
    expect(await exists(pointer!)).toBe(true);

    // Expired by retention: kept for the grace, then it goes with the segment.
    await alterTopicConfigs(p.name, [{ name: 'retention.ms', value: String(MIN) }]);
    const at = Date.now() + HOUR;
    expect((await applyRetention(p.name, 0, { now: at })).tombstoned.map((t) => t.baseOffset)).toEqual([0]);
    // (tombstoned at `at`; the segment object and the data object stay within the grace)
    await collectGarbage({ now: at + MIN });
    expect([await exists(pointer!), await exists(seg.key)]).toEqual([true, true]);
    await collectGarbage({ now: at + GARBAGE_GRACE_FLOOR_MS + MIN });
    expect([await exists(pointer!), await exists(seg.key)]).toEqual([false, false]);
    expect(await items(p)).toEqual([]);
  });

  it('abandons a pending item older than an hour: a late commit of its roller fails, no roller registers the range meanwhile, and its object goes a grace later', async () => {
    const p = await partitionWith('gc-pending');
    const now = Date.now();
    const stale = { topicId: p.topicId, partition: 0, baseOffset: 0, endOffset: 5, key: segmentObjectKey(p.topicId, 0, 0), createdAt: now - 2 * HOUR };
    expect(await registerPending(stale)).toBe(true);
    await putObject(stale.key, Buffer.from('half a roll'));
    const young = { ...stale, baseOffset: 5, endOffset: 10, key: segmentObjectKey(p.topicId, 0, 5), createdAt: now };
    expect(await registerPending(young)).toBe(true);

    const r = await collectGarbage({ now });
    expect(r.abandonedPending).toBe(1);
    expect(await items(p)).toEqual([[sk(0), 'deleted'], [sk(5), 'pending']]);
    expect(await exists(stale.key)).toBe(true);
    const details = { sizeBytes: 1, recordCount: 5, batchCount: 1, minTimestamp: 0, maxTimestamp: 0 };
    expect(await commitSegment(stale, details)).toBe(false);
    expect(await registerPending({ ...stale, createdAt: now })).toBe(false);

    await collectGarbage({ now: now + GARBAGE_GRACE_FLOOR_MS + MIN });
    expect(await exists(stale.key)).toBe(false);
    expect(await items(p)).toEqual([[sk(5), 'pending']]);
    // Now a roller may claim the range again.
    expect(await registerPending({ ...stale, createdAt: Date.now() })).toBe(true);
  });

  it('where a late roller commits its stale pending segment after the pass read the registry, the abandon fails and the segment stays live with its object', async () => {
    const p = await partitionWith('gc-late-commit');
    const stale = { topicId: p.topicId, partition: 0, baseOffset: 0, endOffset: 5, key: segmentObjectKey(p.topicId, 0, 0), createdAt: Date.now() - 2 * HOUR };
    expect(await registerPending(stale)).toBe(true);
    await putObject(stale.key, Buffer.from('a slow roll'));
    const details = { sizeBytes: 1, recordCount: 5, batchCount: 1, minTimestamp: 0, maxTimestamp: 0 };
    const r = await collectGarbage({
      now: Date.now() + HOUR,
      onPartitionRead: async (topicId) => { if (topicId === p.topicId) expect(await commitSegment(stale, details)).toBe(true); },
    });
    expect(r.deletedObjects).not.toContain(stale.key);
    expect(await items(p)).toEqual([[sk(0), 'live']]);
    expect(await exists(stale.key)).toBe(true);
  });

  it('where a roller registers an orphan\'s base offset after the pass read the registry, the pass\'s claim fails and the object stays; a claimed base cannot be registered', async () => {
    const p = await partitionWith('gc-claim');
    const key = segmentObjectKey(p.topicId, 0, 0);
    await putObject(key, Buffer.from('the same bytes a roller writes'));
    const r = await collectGarbage({
      now: Date.now() + HOUR,
      onPartitionRead: async (topicId) => {
        if (topicId === p.topicId) expect(await registerPending({ topicId, partition: 0, baseOffset: 0, endOffset: 5, key, createdAt: Date.now() })).toBe(true);
      },
    });
    expect(r.deletedObjects).not.toContain(key);
    expect(await exists(key)).toBe(true);
    expect(await items(p)).toEqual([[sk(0), 'pending']]);

    const q = await partitionWith('gc-claim2');
    const claim = await claimOrphan({ topicId: q.topicId, partition: 0, baseOffset: 0, key: segmentObjectKey(q.topicId, 0, 0), generation: 0 });
    expect(claim?.state).toBe('deleted');
    expect(await registerPending({ topicId: q.topicId, partition: 0, baseOffset: 0, endOffset: 5, key: segmentObjectKey(q.topicId, 0, 0), createdAt: Date.now() })).toBe(false);
    expect(await claimOrphan({ topicId: q.topicId, partition: 0, baseOffset: 0, key: 'x', generation: 0 })).toBeUndefined();
  });

  it('deletes an old uncommitted compaction rewrite behind a fence that fails its swap; where the swap commits first, the fence fails and the object stays', async () => {
    const p = await partitionWith('gc-gen');
    await produceBatch(p, 5);
    const seg = await rollTo(p, 5);
    const rewrite = (generation: number) => ({ ...seg, generation, key: segmentObjectKey(p.topicId, 0, 0, generation), createdAt: Date.now() });

    // The fence alone: while it stands, a compaction cannot swap its rewrite in.
    const fence = await claimOrphan({ topicId: p.topicId, partition: 0, baseOffset: 0, key: rewrite(7).key, generation: 7 }, Date.now(), 0);
    expect(fence?.itemSk).toBe(`${sk(0)}.g0`);
    expect(await replaceSegments([seg], rewrite(7))).toBe(false);
    expect(await removeSegmentItem(fence!)).toBe(true);

    // An old rewrite nothing committed: deleted, and its fence removed.
    await putObject(rewrite(5).key, Buffer.from('a dead compaction\'s rewrite'));
    const r = await collectGarbage({ now: Date.now() + HOUR });
    expect(r.deletedObjects).toContain(rewrite(5).key);
    expect(await items(p)).toEqual([[sk(0), 'live']]);
    expect(await exists(seg.key)).toBe(true);

    // A compaction that commits after the pass read the registry: the fence fails, its object stays.
    await putObject(rewrite(9).key, Buffer.from('a slow compaction\'s rewrite'));
    const r2 = await collectGarbage({
      now: Date.now() + HOUR,
      onPartitionRead: async (topicId) => { if (topicId === p.topicId) expect(await replaceSegments([seg], rewrite(9))).toBe(true); },
    });
    expect(r2.deletedObjects).not.toContain(rewrite(9).key);
    expect(await exists(rewrite(9).key)).toBe(true);
    expect((await listSegments(p.topicId, 0))[0]?.key).toBe(rewrite(9).key);
  });

  it('removes a deleted topic\'s segments: its live items are tombstoned, their objects and items go a grace later, stray objects at once', async () => {
    const p = await partitionWith('gc-deleted-topic');
    await produceBatch(p, 5);
    const seg = await rollTo(p, 5);
    await deleteTopic(p.name);
    const stray = `data/${p.topicId}/0/late.batch`;
    await putObject(stray, Buffer.from('written after the delete'));
    const t = Date.now() + GARBAGE_GRACE_FLOOR_MS + MIN;
    const r = await collectGarbage({ now: t });
    expect(r.tombstonedOrphans).toBe(1);
    expect(r.deletedObjects).toContain(stray);
    expect(await exists(seg.key)).toBe(true);
    await collectGarbage({ now: t + GARBAGE_GRACE_FLOOR_MS + MIN });
    expect(await exists(seg.key)).toBe(false);
    expect(await items(p)).toEqual([]);
  });

  it('removes a deleted topic\'s registry items that no object names (a roller that died before its put), then forgets the topic', async () => {
    const p = await partitionWith('gc-deleted-claim');
    expect(await registerPending({ topicId: p.topicId, partition: 0, baseOffset: 0, endOffset: 5, key: segmentObjectKey(p.topicId, 0, 0), createdAt: Date.now() - 2 * HOUR })).toBe(true);
    await deleteTopic(p.name);
    const t = Date.now() + GARBAGE_GRACE_FLOOR_MS + MIN;
    expect((await collectGarbage({ now: t })).abandonedPending).toBe(1);
    const r = await collectGarbage({ now: t + GARBAGE_GRACE_FLOOR_MS + MIN });
    expect(await items(p)).toEqual([]);
    expect(r.forgottenTopics).toBeGreaterThanOrEqual(1);
    expect((await listDeletedTopics()).map((d) => d.topicId)).not.toContain(p.topicId);
  });

  it('where two passes run at once, each object is deleted and each item removed, with no error', async () => {
    const p = await partitionWith('gc-twice');
    for (let i = 0; i < 3; i++) await produceBatch(p, 5);
    const segs = [await rollTo(p, 5), await rollTo(p, 10), await rollTo(p, 15)];
    const at = Date.now();
    expect(await tombstoneSegments(segs, at)).toBe(3);
    const orphan = segmentObjectKey(p.topicId, 0, 900);
    await putObject(orphan, Buffer.from('x'));
    const now = at + GARBAGE_GRACE_FLOOR_MS + MIN;
    const [a, b] = await Promise.all([collectGarbage({ now }), collectGarbage({ now })]);
    expect(a.failedPartitions + b.failedPartitions).toBe(0);
    for (const s of segs) expect(await exists(s.key)).toBe(false);
    expect(await exists(orphan)).toBe(false);
    expect(await items(p)).toEqual([]);
  });

  it('end to end with rollPartition: segments expired by retention.bytes lose their objects and their adopted data/ objects a grace later; the rest stay', async () => {
    const p = await partitionWith('gc-e2e', { 'segment.bytes': '4096', 'inline.max.bytes': '1000' });
    for (let i = 0; i < 12; i++) await produceBatch(p, 1, { valueBytes: i % 3 === 0 ? 1500 : 600 });
    const rolled = await rollPartition(p.name, 0, { force: true });
    expect(rolled.rolled).toBeGreaterThanOrEqual(3);
    const segs = await listSegments(p.topicId, 0);
    const last = segs[segs.length - 1]!;
    // Keep only the newest segment.
    await alterTopicConfigs(p.name, [{ name: 'retention.bytes', value: String(last.sizeBytes! + ((await readHeadOf(p)).tailBytes ?? 0)) }]);
    const r = await applyRetention(p.name, 0);
    expect(r.tombstoned.map((t) => t.baseOffset)).toEqual(segs.slice(0, -1).map((s) => s.baseOffset));
    expect(r.logStartOffset).toBe(last.baseOffset);
    const gone = segs.slice(0, -1);
    const goneData = gone.flatMap((s) => s.externalKeys ?? []);
    expect(goneData.length).toBeGreaterThan(0);

    await collectGarbage({ now: Date.now() + GARBAGE_GRACE_FLOOR_MS / 2 });
    for (const k of [...gone.map((s) => s.key), ...goneData]) expect(await exists(k)).toBe(true);
    await collectGarbage({ now: Date.now() + GARBAGE_GRACE_FLOOR_MS + MIN });
    for (const k of [...gone.map((s) => s.key), ...goneData]) expect(await exists(k), k).toBe(false);
    for (const k of [last.key, ...(last.externalKeys ?? [])]) expect(await exists(k), k).toBe(true);
    expect(await items(p)).toEqual([[sk(last.baseOffset), 'live']]);
  });
});
