/**
 * Full sync is bounded and safe to fail (docs/architecture.md, "Replication"): the snapshot is written and installed in
 * parts no larger than a set size, installs byte-identical, and a sync that fails leaves the
 * follower no worse off — untouched when it fails building the snapshot, claimed-and-given-up
 * (so the next sync repairs it at once) when it fails installing.
 *
 * A private quiet stack (no stream poller, no controllers): nothing but this file syncs, so
 * each step is driven here, and S3 is killed and restarted through the stack's supervisor.
 */
import { describe, expect, it } from 'vitest';
import { replicaStore } from '../../../lib/cluster/metadata.js';
import { initProducer } from '../../../lib/cluster/producers.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { appendToLeader } from '../../../lib/log/append.js';
import { prepareBatches } from '../../../lib/log/batches.js';
import { produce } from '../../../lib/log/produce.js';
import { copyStep } from '../../../lib/log/copy.js';
import { replicate } from '../../../lib/log/commit.js';
import { fullSync, type FullSyncStep } from '../../../lib/log/full-sync.js';
import { topicPartitionKey } from '../../../lib/storage/model.js';
import { listKeys, readObject } from '../../../lib/storage/objects.js';
import { listProducerStates } from '../../../lib/storage/replica/producer-states.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { readHead } from '../../../lib/storage/replica/head.js';
import { type ReplicaStoreRef } from '../../../lib/storage/replica/store.js';
import { BATCH_OPTIONS } from '../../support/batches.js';
import { logFingerprint, replicaLog, useQuietCluster } from '../../support/cluster.js';

const cluster = useQuietCluster();

const KiB = 1024;
let n = 0;

/**
 * A partition whose leader holds two idempotent producers' records and then `records` one-record
 * batches of 1 KiB; the follower holds the first `followerHas` of them (copied, as replication
 * would), and has not seen the rest.
 */
async function setup(records: number, followerHas: number) {
  const name = `bounded-${process.pid}-${n++}`;
  const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: 3 });
  const p0 = partitions[0]!;
  const tp = topicPartitionKey(topic.topicId, 0);
  const [leaderId, followerId] = p0.replicas as [number, number, number];
  const leader = (await replicaStore(leaderId))!;
  const follower = (await replicaStore(followerId))!;
  for (const producer of [await initProducer(), await initProducer()]) {
    await produce(name, [0, 1, 2].map((s) => ({ partition: 0, sequence: s, key: null, value: Buffer.from(`p${producer.producerId}-${s}`), headers: [] })), { producer, acks: 1 });
  }
  const target = { leader, topicId: topic.topicId, partition: 0, tp, leaderEpoch: p0.leaderEpoch, inlineMaxBytes: 8192 };
  const append = async (from: number, to: number) => {
    for (let i = from; i < to; i += 25) {
      const chunk = Array.from({ length: Math.min(25, to - i) }, (_, j) => prepareBatches([{ key: null, value: Buffer.alloc(KiB, (i + j) % 251), headers: [] }], BATCH_OPTIONS)).flat();
      await appendToLeader(target, chunk);
    }
  };
  await append(0, followerHas);
  await replicate(name, topic.topicId, 0, { deadline: Date.now() + 30_000, shrinkOnFailure: false, lagTimeMaxMs: 60_000 });
  await append(followerHas, records);
  return { name, tp, leader, follower };
}

/** Everything a replica holds for a partition: head, every batch item (even above the log end), producer states. */
async function replicaState(store: ReplicaStoreRef, tp: string) {
  const head = await readHead(store, tp);
  const items = logFingerprint(await queryBatches(store, tp, { fromOffset: 0, toOffset: 1e12, maxBytes: 1e12 }));
  const producers = (await listProducerStates(store, tp)).map(({ ver: _ver, ...st }) => st).sort((a, b) => a.producerId - b.producerId);
  return { head, items, producers };
}

const snapshotKeys = async (tp: string) => (await listKeys(`snapshots/${tp.replace('#', '/')}/`)).sort();

/** S3 killed through the stack's supervisor (requests are refused at once), and brought back on the same port with its objects. */
const s3Down = () => cluster().stack.supervisor.kill('s3');
const s3Up = () => cluster().stack.restart('s3');

/**
 * A full sync during which S3 dies at the second part of `phase` (and comes back after): it must
 * fail, and S3 must have died.
 */
async function syncLosingS3At(phase: FullSyncStep['phase'], leader: ReplicaStoreRef, follower: ReplicaStoreRef, tp: string): Promise<void> {
  let killed = false;
  try {
    await expect(fullSync(leader, follower, tp, {
      partBytes: 16 * KiB,
      onStep: (s) => {
        if (s.phase === phase && s.part === 2) {
          killed = true;
          s3Down();
        }
      },
    })).rejects.toThrow();
  } finally {
    if (killed) await s3Up();
  }
  expect(killed).toBe(true);
}

describe('Function: fullSync (bounded, in parts)', () => {
  it('writes a partition larger than a part as several parts, none above the bound, and installs it byte-identical: batches, producer states, head', async () => {
    const { tp, leader, follower } = await setup(120, 0);
    const partBytes = 16 * KiB;
    const steps: FullSyncStep[] = [];
    expect(await fullSync(leader, follower, tp, { partBytes, onStep: (s) => { steps.push(s); } })).toBe(true);

    // Every object of the snapshot but its manifest is a part, and no part exceeds the bound.
    const keys = await snapshotKeys(tp);
    const manifests = keys.filter((k) => k.endsWith('/manifest.json'));
    expect(manifests).toHaveLength(1);
    const parts = keys.filter((k) => !k.endsWith('/manifest.json'));
    const sizes = await Promise.all(parts.map(async (k) => (await readObject(k)).length));
    const logBytes = (await replicaLog(leader, tp)).reduce((s, b) => s + (b.data?.length ?? 0), 0);
    expect(logBytes).toBeGreaterThan(120 * KiB);
    expect(parts.length).toBeGreaterThanOrEqual(Math.ceil(logBytes / partBytes));
    for (const size of sizes) expect(size).toBeLessThanOrEqual(partBytes);
    // Built part by part, then installed part by part.
    expect(steps.filter((s) => s.phase === 'build')).toHaveLength(parts.length);
    expect(steps.filter((s) => s.phase === 'install')).toHaveLength(parts.length);

    const l = await replicaState(leader, tp);
    const f = await replicaState(follower, tp);
    expect(f.items).toEqual(l.items);
    expect(f.producers).toEqual(l.producers);
    expect(f.producers.length).toBe(2);
    expect(f.head).toMatchObject({
      leo: l.head!.leo, hw: l.head!.hw, logStartOffset: l.head!.logStartOffset, epochs: l.head!.epochs,
      leaderEpoch: l.head!.leaderEpoch, syncEpoch: l.head!.leaderEpoch, role: 'follower',
    });
    expect(f.head?.snapshotting).toBeUndefined();
    // And it is a follower the copy step takes from here.
    expect((await copyStep(leader, follower, tp)).kind).toBe('caught-up');
  });

  it('where S3 is down before the snapshot is written, the follower keeps its log and head exactly as they were, and its claim is released', async () => {
    const { tp, leader, follower } = await setup(60, 30);
    const before = await replicaState(follower, tp);
    expect(before.head?.leo).toBe(36);
    s3Down();
    try {
      await expect(fullSync(leader, follower, tp, { partBytes: 16 * KiB })).rejects.toThrow();
    } finally {
      await s3Up();
    }
    expect(await replicaState(follower, tp)).toEqual(before);
    // No claim to wait out: the next sync runs at once.
    expect(await fullSync(leader, follower, tp, { partBytes: 16 * KiB })).toBe(true);
    expect((await replicaState(follower, tp)).items).toEqual((await replicaState(leader, tp)).items);
  });

  it('where S3 dies between two parts of the snapshot, the follower keeps its log and head exactly as they were, and its claim is released', async () => {
    const { tp, leader, follower } = await setup(80, 30);
    const before = await replicaState(follower, tp);
    await syncLosingS3At('build', leader, follower, tp);
    expect(await replicaState(follower, tp)).toEqual(before);
    expect(await fullSync(leader, follower, tp, { partBytes: 16 * KiB })).toBe(true);
    expect((await replicaState(follower, tp)).items).toEqual((await replicaState(leader, tp)).items);
  });

  it('where S3 dies while the snapshot is installed, the follower is left claimed and given up: nothing copies into the half-installed log, and the next sync repairs it', async () => {
    const { tp, leader, follower } = await setup(80, 30);
    await syncLosingS3At('install', leader, follower, tp);
    const half = await replicaState(follower, tp);
    // Claimed and given up (renewed at 0: stale at once), its head an empty log.
    expect(half.head).toMatchObject({ leo: 0, hw: 0, snapshotRenewedAt: 0 });
    expect(half.head?.snapshotting).toBeDefined();
    expect(half.items.length).toBeGreaterThan(0);
    expect((await copyStep(leader, follower, tp)).kind).toBe('needs-snapshot');
    // The next sync takes the given-up claim over at once and ends with exactly the leader's log.
    expect(await fullSync(leader, follower, tp, { partBytes: 16 * KiB })).toBe(true);
    const l = await replicaState(leader, tp);
    const f = await replicaState(follower, tp);
    expect(f.items).toEqual(l.items);
    expect(f.producers).toEqual(l.producers);
    expect(f.head).toMatchObject({ leo: l.head!.leo, role: 'follower' });
    expect(f.head?.snapshotting).toBeUndefined();
  });
});
