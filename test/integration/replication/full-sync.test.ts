/**
 * Full sync against the real stores: a follower that lost its log gets the leader's back through
 * a snapshot in S3; two syncs of one follower never both run; a sync that fails gives its claim
 * up; a stale sync that was taken over can write nothing; and a role pushed to the follower
 * during a sync survives it.
 *
 * A private quiet stack (no stream poller, no controllers): nothing but this file syncs the
 * follower, so no test waits for a background replicator to settle.
 */
import { describe, expect, it } from 'vitest';
import { replicaStore } from '../../../lib/cluster/metadata.js';
import { electLeader } from '../../support/partition.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { appendToLeader } from '../../../lib/log/append.js';
import { prepareBatches } from '../../../lib/log/batches.js';
import { copyStep } from '../../../lib/log/copy.js';
import { replicate } from '../../../lib/log/commit.js';
import { FULL_SYNC_STALE_MS, fullSync } from '../../../lib/log/full-sync.js';
import { ConditionFailed } from '../../../lib/storage/transact.js';
import { topicPartitionKey, type BatchRecord } from '../../../lib/storage/model.js';
import { deleteLog, deletePartition } from '../../../lib/storage/replica/deletion.js';
import { emptyHead, putHead, readHead, setRole } from '../../../lib/storage/replica/head.js';
import { fillClaimed, renewClaim } from '../../../lib/storage/replica/claims.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { type ReplicaStoreRef } from '../../../lib/storage/replica/store.js';
import { BATCH_OPTIONS } from '../../support/batches.js';
import { useQuietCluster } from '../../support/cluster.js';

useQuietCluster();

let n = 0;

/** A partition whose leader holds `batches` one-record batches and whose follower lost its log. */
async function setup(batches: number) {
  const name = `sync-${process.pid}-${n++}`;
  const { topic, partitions } = await createTopic({ name, partitions: 1, replicationFactor: 3 });
  const p0 = partitions[0]!;
  const tp = topicPartitionKey(topic.topicId, 0);
  const [leaderId, followerId, otherId] = p0.replicas as [number, number, number];
  const [leader, follower, other] = await Promise.all([leaderId, followerId, otherId].map((b) => replicaStore(b)));
  const target = { leader: leader!, topicId: topic.topicId, partition: 0, tp, leaderEpoch: p0.leaderEpoch, inlineMaxBytes: 8192 };
  for (let i = 0; i < batches; i += 25) {
    const chunk = Array.from({ length: Math.min(25, batches - i) }, (_, j) => prepareBatches([{ key: null, value: Buffer.from(`v${i + j}`), headers: [] }], BATCH_OPTIONS)).flat();
    await appendToLeader(target, chunk);
  }
  // Every follower gets the log (the last test elects `other`), then `follower` loses it; no
  // replicator runs on this stack, so nothing but these tests syncs it from here.
  await replicate(name, topic.topicId, 0, { deadline: Date.now() + 30_000, shrinkOnFailure: false, lagTimeMaxMs: 60_000 });
  await deletePartition(follower!, tp);
  return { name, p0, tp, leader: leader!, follower: follower!, other: other! };
}

const logOf = async (store: ReplicaStoreRef, tp: string) => {
  const head = await readHead(store, tp);
  return (await queryBatches(store, tp, { fromOffset: 0, toOffset: 1e9, maxBytes: 1e9 })).filter((b) => b.lastOffset < (head?.leo ?? 0)).map((b) => `${b.baseOffset}-${b.lastOffset}`);
};

describe('Function: fullSync', () => {
  it('gives a follower that lost its log the leader\'s log, and only one of two concurrent syncs runs', async () => {
    const { tp, leader, follower } = await setup(60);
    const results = await Promise.all([fullSync(leader, follower, tp), fullSync(leader, follower, tp)]);
    expect(results.filter(Boolean)).toHaveLength(1);
    const head = await readHead(follower, tp);
    expect(head).toMatchObject({ leo: 60, role: 'follower' });
    expect(head?.snapshotting).toBeUndefined();
    expect(await logOf(follower, tp)).toEqual(await logOf(leader, tp));
  });

  it('gives its claim up when it fails, so the next sync need not wait for it to go stale', async () => {
    const { tp, leader, follower, other } = await setup(10);
    // `other` is a follower: snapshotting "from" it fails after the claim, before the install.
    await expect(fullSync(other, follower, tp)).rejects.toThrow(/does not lead/);
    // The claim is released, not left to go stale (the head the claim created stays, empty).
    expect(await readHead(follower, tp)).toMatchObject({ leo: 0, role: 'follower' });
    expect((await readHead(follower, tp))?.snapshotting).toBeUndefined();
    expect(await fullSync(leader, follower, tp)).toBe(true);
    expect((await readHead(follower, tp))?.leo).toBe(10);
  });

  it('where a stale sync was taken over, the stale one can write or delete nothing in the follower, and the new one clears what it left', async () => {
    const { tp, leader, follower } = await setup(30);
    // A sync claimed the follower and wrote a stray batch, then went silent past the stale time.
    const stale = Date.now() - FULL_SYNC_STALE_MS - 1000;
    await putHead(follower, { ...emptyHead(tp, 'follower', 0), snapshotting: stale }, 'ifAbsent');
    const stray = { baseOffset: 1000, lastOffset: 1000, leaderEpoch: 0, recordCount: 1, bytes: 10, maxTimestamp: 0, data: Buffer.from('stray') } as unknown as BatchRecord;
    await fillClaimed(follower, tp, stale, [stray], []);
    expect(await fullSync(leader, follower, tp)).toBe(true);
    // The woken-up stale sync is refused (it can neither write nor delete), and its stray batch is gone.
    await expect(fillClaimed(follower, tp, stale, [stray], [])).rejects.toBeInstanceOf(ConditionFailed);
    await expect(deleteLog(follower, tp, stale)).rejects.toBeInstanceOf(ConditionFailed);
    const offsets = (await queryBatches(follower, tp, { fromOffset: 0, toOffset: 1e9, maxBytes: 1e9 })).map((b) => b.lastOffset);
    expect(offsets).not.toContain(1000);
    expect(await logOf(follower, tp)).toEqual(await logOf(leader, tp));
  });

  it('does not take over a sync whose claim is renewed', async () => {
    const { tp, leader, follower } = await setup(5);
    const old = Date.now() - FULL_SYNC_STALE_MS - 1000;
    await putHead(follower, { ...emptyHead(tp, 'follower', 0), snapshotting: old }, 'ifAbsent');
    expect(await renewClaim(follower, tp, old, Date.now())).toBe(true);
    expect(await fullSync(leader, follower, tp)).toBe(false);
    expect(await renewClaim(follower, tp, old, 0)).toBe(true); // given up
    expect(await fullSync(leader, follower, tp)).toBe(true);
    expect(await renewClaim(follower, tp, old, Date.now())).toBe(false); // a claim that is gone
  });

  it('keeps a role pushed during the sync: the follower ends at the new epoch, reconciled with the old one, and follows the new leader', async () => {
    const { name, p0, tp, leader, follower, other } = await setup(400);
    const sync = fullSync(leader, follower, tp);
    // Once the follower is claimed, the controller elects `other` and tells the follower.
    for (let i = 0; i < 2000 && (await readHead(follower, tp))?.snapshotting === undefined; i++) await new Promise((r) => setTimeout(r, 2));
    const state = await electLeader(name, 0, other.brokerId);
    await setRole(other, tp, 'leader', state.leaderEpoch);
    await setRole(follower, tp, 'follower', state.leaderEpoch);
    expect(await sync).toBe(true);
    const head = await readHead(follower, tp);
    expect(head).toMatchObject({ leaderEpoch: state.leaderEpoch, syncEpoch: p0.leaderEpoch, role: 'follower', leo: 400 });
    // The new leader (which holds the same log) reconciles it with the new epoch: nothing to truncate.
    const out = await copyStep(other, follower, tp);
    expect(out.kind).toBe('caught-up');
    expect(await readHead(follower, tp)).toMatchObject({ leaderEpoch: state.leaderEpoch, syncEpoch: state.leaderEpoch, leo: 400 });
    expect(await logOf(follower, tp)).toEqual(await logOf(other, tp));
  });
});
