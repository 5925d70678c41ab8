/**
 * Items that hold several batches (lib/storage/replica/items.ts) against DynamoDB Local: an append
 * of several batches writes one item, and every read — by offset range from inside the item, up to
 * an offset inside it, by byte budget, by timestamp, the truncation point, the fetch path — sees
 * the batches as if each had an item of its own; a follower's truncation inside such an item
 * rewrites it, leaving no hole.
 */
import { describe, expect, it } from 'vitest';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { appendToLeader } from '../../../lib/log/append.js';
import { copyStep } from '../../../lib/log/copy.js';
import { replicate } from '../../../lib/log/commit.js';
import { fetchRecords } from '../../../lib/log/read.js';
import { clusterConfigs, invalidateMetadata } from '../../../lib/cluster/metadata.js';
import { LOG_FORMAT_CONFIG } from '../../../lib/cluster/cluster-configs.js';
import { readClusterConfigs, writeClusterConfigs } from '../../../lib/storage/coordination/cluster-configs.js';
import { putObject } from '../../../lib/storage/objects.js';
import { appendBatches } from '../../../lib/storage/replica/batches.js';
import { batchPointerKeys } from '../../../lib/storage/replica/deletion.js';
import { readHead, setRole } from '../../../lib/storage/replica/head.js';
import { batchStartAt, firstBatchAtOrAfter, queryBatches } from '../../../lib/storage/replica/reads.js';
import { client, type ReplicaStoreRef } from '../../../lib/storage/replica/store.js';
import { truncateLog } from '../../../lib/storage/replica/truncation.js';
import { batchOf } from '../../support/batches.js';
import { logFingerprint, replicaLog, useQuietCluster } from '../../support/cluster.js';
import { rf3Partition } from '../../support/partition.js';

useQuietCluster();

/** The batch items of a partition as stored: key and number of batches each holds. */
async function itemsOf(store: ReplicaStoreRef, tp: string): Promise<[number, number][]> {
  const out = await client(store).send(new QueryCommand({
    TableName: store.replicaTable, KeyConditionExpression: 'tp = :tp AND off >= :z', ExpressionAttributeValues: { ':tp': tp, ':z': 0 }, ConsistentRead: true,
  }));
  return (out.Items ?? []).map((i) => [i.off as number, (i.parts as unknown[] | undefined)?.length ?? 1]);
}

const ranges = (bs: readonly { baseOffset: number; lastOffset: number }[]) => bs.map((b) => `${b.baseOffset}-${b.lastOffset}`);

/** An RF 3 partition whose leader holds batches 0-0, 1-2, 3-3 in one item (one append of three batches). */
async function packed() {
  const p = await rf3Partition('items');
  const leader = p.store(p.p0.leader);
  const target = { leader, topicId: p.topic.topicId, partition: 0, tp: p.tp, leaderEpoch: p.p0.leaderEpoch, inlineMaxBytes: 8192 };
  await appendToLeader(target, [...batchOf('a'), ...batchOf('b', 'c'), ...batchOf('d')]);
  return { ...p, leader, target };
}

describe('The cluster\'s log format (tributary.log.format.version)', () => {
  it('is 2 on a new cluster; at 1 (a cluster made before packing) appends and copies write one item per batch, and set to 2 again they pack', async () => {
    expect((await clusterConfigs())[LOG_FORMAT_CONFIG]).toBe(2);
    const setFormat = async (v: string) => {
      const stored = await readClusterConfigs();
      await writeClusterConfigs({ ...stored.configs, [LOG_FORMAT_CONFIG]: v }, stored.version);
      invalidateMetadata();
    };
    await setFormat('1');
    try {
      const { tp, leader, followers, store, target } = await packed();
      expect(await itemsOf(leader, tp)).toEqual([[0, 1], [2, 1], [3, 1]]);
      expect((await copyStep(leader, store(followers[0]!), tp)).kind).toBe('caught-up');
      expect(await itemsOf(store(followers[0]!), tp)).toEqual([[0, 1], [2, 1], [3, 1]]);
      await setFormat('2');
      await appendToLeader(target, [...batchOf('e'), ...batchOf('f')]);
      expect(await itemsOf(leader, tp)).toEqual([[0, 1], [2, 1], [3, 1], [5, 2]]);
    } finally {
      await setFormat('2');
    }
  });
});

describe('Items holding several batches', () => {
  it('are written as one item by an append of several batches, and read by offset as the batches they hold', async () => {
    const { tp, leader } = await packed();
    expect(await itemsOf(leader, tp)).toEqual([[3, 3]]);
    const q = (fromOffset: number, toOffset: number, maxBytes = 1e9) => queryBatches(leader, tp, { fromOffset, toOffset, maxBytes }).then(ranges);
    expect(await q(0, 3)).toEqual(['0-0', '1-2', '3-3']);
    expect(await q(2, 3)).toEqual(['1-2', '3-3']);
    expect(await q(3, 3)).toEqual(['3-3']);
    // Up to an offset inside the item: its key (3) is past the range, its batches are not.
    expect(await q(0, 2)).toEqual(['0-0', '1-2']);
    // (as from items of their own: a batch that ends past the range is not read)
    expect(await q(1, 1)).toEqual([]);
    expect(await q(0, 3, 1)).toEqual(['0-0']);
    expect(await batchStartAt(leader, tp, 2)).toBe(1);
    expect(await batchStartAt(leader, tp, 3)).toBe(3);
    expect(await batchStartAt(leader, tp, 1)).toBe(1);
    const at = async (from: number, to: number) => (await firstBatchAtOrAfter(leader, tp, from, to, 0))?.baseOffset;
    expect(await at(0, 3)).toBe(0);
    expect(await at(2, 3)).toBe(1);
    expect(await at(2, 2)).toBe(1);
    expect(await firstBatchAtOrAfter(leader, tp, 0, 3, Date.now() + 60_000)).toBeUndefined();
  });

  it('are fetched record by record from any offset, and copied to followers whose logs equal the leader\'s', async () => {
    const { name, topic, tp, leader, target, followers, store } = await packed();
    const r = await replicate(name, topic.topicId, 0, { deadline: Date.now() + 10_000, shrinkOnFailure: false, lagTimeMaxMs: 60_000 });
    expect(r.highWatermark).toBe(4);
    const values = async (offset: number) => (await fetchRecords(target, { offset, maxBytes: 1e6, maxWaitMs: 0 })).records.map((x) => [x.offset, x.value?.toString()]);
    expect(await values(0)).toEqual([[0, 'a'], [1, 'b'], [2, 'c'], [3, 'd']]);
    expect(await values(2)).toEqual([[2, 'c'], [3, 'd']]);
    for (const f of followers) expect(logFingerprint(await replicaLog(store(f), tp))).toEqual(logFingerprint(await replicaLog(leader, tp)));
  });

  it('hold batches whose bytes follow each other in one S3 object behind one pointer: fetched record by record, the object kept by the garbage pass', async () => {
    const p = await rf3Partition('items-s3');
    const leader = p.store(p.p0.leader);
    const target = { leader, topicId: p.topic.topicId, partition: 0, tp: p.tp, leaderEpoch: p.p0.leaderEpoch, inlineMaxBytes: 8192 };
    const parts = [batchOf('a'), batchOf('b', 'c'), batchOf('d')].map(([b]) => b!.bytes);
    const key = `data/test-${p.tp}-round`;
    await putObject(key, Buffer.concat(parts));
    let position = 0;
    let base = 0;
    const batches = [1, 2, 1].map((count, i) => {
      const b = {
        baseOffset: base, lastOffset: base + count - 1, leaderEpoch: p.p0.leaderEpoch, maxTimestamp: Date.now(), recordCount: count,
        sizeBytes: parts[i]!.length, s3: { key, position, length: parts[i]!.length }, expiresAt: Math.ceil(Date.now() / 1000) + 86_400,
      };
      position += parts[i]!.length;
      base += count;
      return b;
    });
    await appendBatches(leader, p.tp, { expectLeo: 0, leaderEpoch: p.p0.leaderEpoch, batches, hw: 0, pack: true });
    expect(await itemsOf(leader, p.tp)).toEqual([[3, 3]]);
    const r = await replicate(p.name, p.topic.topicId, 0, { deadline: Date.now() + 10_000, shrinkOnFailure: false, lagTimeMaxMs: 60_000 });
    expect(r.highWatermark).toBe(4);
    const values = async (offset: number) => (await fetchRecords(target, { offset, maxBytes: 1e6, maxWaitMs: 0 })).records.map((x) => [x.offset, x.value?.toString()]);
    expect(await values(0)).toEqual([[0, 'a'], [1, 'b'], [2, 'c'], [3, 'd']]);
    expect(await values(2)).toEqual([[2, 'c'], [3, 'd']]);
    expect([...await batchPointerKeys(leader, p.tp)]).toEqual([key]);
    for (const f of p.followers) expect(logFingerprint(await replicaLog(p.store(f), p.tp))).toEqual(logFingerprint(await replicaLog(leader, p.tp)));
  });

  it('are rewritten by a follower\'s truncation that falls inside them: the batches below the new end stay, in an item of their own, with no hole', async () => {
    const { p0, tp, leader, followers, store } = await packed();
    const f = store(followers[0]!);
    expect((await copyStep(leader, f, tp)).kind).toBe('caught-up');
    expect(await itemsOf(f, tp)).toEqual([[3, 3]]);
    await setRole(f, tp, 'follower', p0.leaderEpoch + 1);
    expect(await truncateLog(f, tp, (await readHead(f, tp))!, 2)).toBe(1);
    expect((await readHead(f, tp))?.leo).toBe(1);
    expect(await itemsOf(f, tp)).toEqual([[0, 1]]);
    expect(ranges(await replicaLog(f, tp))).toEqual(['0-0']);
  });
});
