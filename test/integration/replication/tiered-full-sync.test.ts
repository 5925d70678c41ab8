/**
 * Full sync with a tiered log, which makes full sync cheap: a wiped follower of a
 * partition with 100,000 records, most of them rolled to S3 segments, rejoins the ISR copying
 * only the leader's table tail — its snapshot is bounded by the tail, not the partition's
 * history — and then reads the same log as the leader: the shared segments below its tail start,
 * its table from there.
 *
 * A private quiet stack (no stream poller, no controllers): each step is driven here. The
 * records are written in large inline batches (inline.max.bytes raised), a few requests in all.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { replicaStore } from '../../../lib/cluster/metadata.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { appendToLeader } from '../../../lib/log/append.js';
import { prepareBatches } from '../../../lib/log/batches.js';
import { replicate } from '../../../lib/log/commit.js';
import { rollPartition } from '../../../lib/log/roll.js';
import { fullSync } from '../../../lib/log/full-sync.js';
import type { SnapshotManifest } from '../../../lib/log/snapshot-parts.js';
import { topicPartitionKey } from '../../../lib/storage/model.js';
import { listKeys, readObject } from '../../../lib/storage/objects.js';
import { deletePartition } from '../../../lib/storage/replica/deletion.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { readHead, tailStartOf } from '../../../lib/storage/replica/head.js';
import { type ReplicaStoreRef } from '../../../lib/storage/replica/store.js';
import { listSegments } from '../../../lib/storage/coordination/segments.js';
import { BATCH_OPTIONS } from '../../support/batches.js';
import { useQuietCluster } from '../../support/cluster.js';
import { readTieredLog } from '../../support/segments.js';

useQuietCluster();

const RECORDS = 100_000;
const PER_BATCH = 1000;
const SEGMENT_BYTES = 128 * 1024;
const INLINE_MAX = 65_536;

/**
 * What a reader of `store` sees: live segments below the replica's tail start, its table from
 * there on. Returns the offsets read, in order, and a digest of (offset, value) in that order.
 */
async function readerView(topicId: string, tp: string, store: ReplicaStoreRef) {
  const offsets: number[] = [];
  const digest = createHash('sha256');
  const head = await readTieredLog(topicId, tp, store, (offset, value) => {
    offsets.push(offset);
    digest.update(`${offset}:`).update(value ?? Buffer.alloc(0));
  });
  return { offsets, digest: digest.digest('hex'), head };
}

describe('full sync of a tiered partition', () => {
  it('a wiped follower of a 100,000-record partition rejoins the ISR copying only the table tail, and reads the leader\'s log', async () => {
    const name = `tiered-sync-${process.pid}`;
    const { topic, partitions } = await createTopic({
      name, partitions: 1, replicationFactor: 3,
      configs: [{ name: 'segment.bytes', value: String(SEGMENT_BYTES) }, { name: 'inline.max.bytes', value: String(INLINE_MAX) }],
    });
    const p0 = partitions[0]!;
    const tp = topicPartitionKey(topic.topicId, 0);
    const leader = await replicaStore(p0.leader);
    const follower = await replicaStore(p0.replicas.find((b) => b !== p0.leader)!);
    const target = { topic: name, leader, topicId: topic.topicId, partition: 0, tp, leaderEpoch: p0.leaderEpoch, inlineMaxBytes: INLINE_MAX };
    const base = { deadline: Date.now() + 120_000, lagTimeMaxMs: 120_000 };
    let historyBytes = 0;
    const append = async (from: number, to: number) => {
      for (let i = from; i < to; i += PER_BATCH * 25) {
        const group = Array.from({ length: Math.min(25, (to - i) / PER_BATCH) }, (_, j) => prepareBatches(
          Array.from({ length: PER_BATCH }, (_, k) => ({ key: null, value: Buffer.from(`v${i + j * PER_BATCH + k}`.padEnd(20, '.')), headers: [] })), BATCH_OPTIONS)[0]!);
        historyBytes += group.reduce((n, b) => n + b.bytes.length, 0);
        await appendToLeader(target, group);
      }
      const r = await replicate(name, topic.topicId, 0, { ...base, shrinkOnFailure: false });
      expect(r).toMatchObject({ highWatermark: to, isr: expect.arrayContaining([...p0.replicas]) });
    };

    // History: rolled into segments while due, as the replicator rolls it; then one batch more, so the tail is not empty.
    await append(0, RECORDS - PER_BATCH);
    for (;;) if ((await rollPartition(name, 0, { maxSegments: 100 })).rolled === 0) break;
    await append(RECORDS - PER_BATCH, RECORDS);
    const segments = await listSegments(topic.topicId, 0, { states: ['live'] });
    expect(segments.length).toBeGreaterThan(3);
    const leaderHead = (await readHead(leader, tp))!;
    const tailStart = tailStartOf(leaderHead);
    expect(tailStart).toBe(segments[segments.length - 1]!.endOffset);
    expect(leaderHead.leo).toBe(RECORDS);
    const tail = await queryBatches(leader, tp, { fromOffset: tailStart, toOffset: RECORDS - 1, maxBytes: Number.MAX_SAFE_INTEGER });
    const tailBytes = tail.reduce((n, b) => n + b.sizeBytes, 0);
    expect(tail.length).toBeGreaterThan(0);
    expect(tailBytes).toBeLessThan(SEGMENT_BYTES + INLINE_MAX);
    const leaderView = await readerView(topic.topicId, tp, leader);
    expect(leaderView.offsets).toEqual(Array.from({ length: RECORDS }, (_, i) => i));

    // Wiped: a replication run drops it from the ISR; one with full sync brings it back.
    await deletePartition(follower, tp);
    let r = await replicate(name, topic.topicId, 0, { ...base, shrinkOnFailure: true });
    expect(r.isr).not.toContain(follower.brokerId);
    for (let run = 0; run < 5 && !r.isr.includes(follower.brokerId); run++) {
      r = await replicate(name, topic.topicId, 0, { ...base, shrinkOnFailure: false, fullSync: (l, f, t) => fullSync(l, f, t) });
    }
    expect(r.isr).toContain(follower.brokerId);

    // The snapshot held the table tail only: its batches, and bytes bounded by the tail's (plus
    // each entry's header), not by the partition's history.
    const keys = await listKeys(`snapshots/${tp.replace('#', '/')}/`);
    const manifests = keys.filter((k) => k.endsWith('/manifest.json'));
    expect(manifests).toHaveLength(1);
    const manifest = JSON.parse((await readObject(manifests[0]!)).toString('utf8')) as SnapshotManifest;
    expect(tailStartOf(manifest.head)).toBe(tailStart);
    expect(manifest.endOffset).toBe(RECORDS);
    expect(manifest.batches).toBe(tail.length);
    const objectBytes = (await Promise.all(keys.filter((k) => !k.endsWith('/manifest.json')).map(async (k) => (await readObject(k)).length))).reduce((a, b) => a + b, 0);
    expect(objectBytes).toBe(manifest.bytes);
    expect(manifest.bytes).toBeGreaterThanOrEqual(tailBytes);
    expect(manifest.bytes).toBeLessThanOrEqual(tailBytes + 1024 * (tail.length + 1));
    expect(manifest.bytes * 10).toBeLessThan(historyBytes);

    // The follower's head has the leader's tail start and log end; its log reads as the leader's.
    const followerView = await readerView(topic.topicId, tp, follower);
    expect(followerView.head).toMatchObject({ leo: RECORDS, hw: RECORDS, tailStart, logStartOffset: leaderHead.logStartOffset, role: 'follower' });
    expect(followerView.head.snapshotting).toBeUndefined();
    expect(followerView.offsets.length).toBe(RECORDS);
    expect(followerView.offsets).toEqual(leaderView.offsets);
    expect(followerView.digest).toBe(leaderView.digest);
    // Its table holds the tail and nothing below it.
    const followerItems = await queryBatches(follower, tp, { fromOffset: 0, toOffset: RECORDS - 1, maxBytes: Number.MAX_SAFE_INTEGER });
    expect(followerItems.map((b) => b.baseOffset)).toEqual(tail.map((b) => b.baseOffset));
  }, 300_000);
});
