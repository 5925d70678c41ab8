/**
 * The fast commit of acks=all (lib/log/fast-commit.ts) and the one-round-trip fetch, on a private
 * quiet stack (no background replicator): the round trips they make, counted from the SDK calls
 * (`traceCalls`), and every way the fast path can be wrong about a follower or the ISR — each must
 * end in a correct commit (from a learnt log end, or by falling back to `replicate`) or in an
 * error, never in an acknowledgement the replicas do not hold.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { resetConfig } from '../../../lib/config.js';
import { metadataCheckDue } from '../../../lib/cluster/metadata.js';
import { initProducer } from '../../../lib/cluster/producers.js';
import { produce, type ProduceRecord } from '../../../lib/log/produce.js';
import { fetchRecords } from '../../../lib/log/read.js';
import { replicate } from '../../../lib/log/commit.js';
import { sequentialRoundTrips, traceCalls, type StoreCall } from '../../../lib/storage/metering.js';
import { dynamo } from '../../../lib/storage/clients.js';
import { readHead, setHeadIsr, setRole } from '../../../lib/storage/replica/head.js';
import { readProducerStates } from '../../../lib/storage/replica/producer-states.js';
import { useQuietCluster } from '../../support/cluster.js';
import { electLeader, rf3Partition } from '../../support/partition.js';

useQuietCluster();
// The metadata cache checks its version once a `metadataMaxAgeMs` (1 s by default): a test that
// counts round trips must not depend on whether a second has passed since the last check, so the
// check happens only where a test asks for it (`metadataCheckDue`). (The quiet cluster restores the
// environment and the configuration when it stops.)
beforeAll(() => {
  process.env.TRIBUTARY_METADATA_MAX_AGE_MS = '3600000';
  resetConfig();
});

/** The calls in the order they were sent, for a failure message. */
const ops = (calls: readonly StoreCall[]): string => calls.map((c) => c.op).join(' → ');

const setup = (o: { minIsr?: number } = {}) => rf3Partition('fast', o);

describe('Feature: acks=all commits in three round trips', () => {
  it('where the instance appended the records, the commit writes every ISR follower from memory and the high watermark, with no reads', async () => {
    const { p0, tp, store, followers, send, logsEqual } = await setup();
    expect((await send(['warm-up']))[0]).toMatchObject({ ok: true, offset: 0 });

    const { result, calls } = await traceCalls(() => send(['a', 'b']));
    expect(result.map((o) => o.ok && o.offset)).toEqual([1, 2]);
    expect(sequentialRoundTrips(calls), ops(calls)).toBe(3);
    expect(calls.map((c) => c.op).sort()).toEqual(['TransactWriteItems', 'TransactWriteItems', 'TransactWriteItems', 'UpdateItem']);
    for (const b of followers) expect((await readHead(store(b), tp))?.leo).toBe(3);
    const leader = (await readHead(store(p0.leader), tp))!;
    expect(leader.hw).toBe(3);
    expect(Object.fromEntries(followers.map((b) => [b, leader.followers[String(b)]?.leo]))).toEqual(Object.fromEntries(followers.map((b) => [b, 3])));
    expect(await logsEqual()).toBe(true);
  });

  it('where another copier moved a follower first, the copy learns its log end from the failed condition and commits', async () => {
    const { name, topic, p0, tp, store, followers, send, logsEqual } = await setup();
    await send(['a']);
    // acks=1 appends (remembered in memory) that a replicate run copies to the followers behind the instance's back.
    await send(['b', 'c'], { acks: 1 });
    await replicate(name, topic.topicId, 0, { deadline: Date.now() + 10_000, shrinkOnFailure: false, lagTimeMaxMs: 60_000 });
    for (const b of followers) expect((await readHead(store(b), tp))?.leo).toBe(3);

    const out = await send(['d']);
    expect(out[0]).toMatchObject({ ok: true, offset: 3 });
    expect((await readHead(store(p0.leader), tp))?.hw).toBe(4);
    expect(await logsEqual()).toBe(true);
  });

  it('where the ISR count changed after the head was cached, the commit falls back to replicate and is still right', async () => {
    const { p0, tp, store, send, logsEqual } = await setup();
    await send(['a']);
    // Someone bumps the count's version (same members): the cached version no longer holds.
    const head = (await readHead(store(p0.leader), tp))!;
    expect(await setHeadIsr(store(p0.leader), tp, p0.leaderEpoch, head.isrVersion, { isr: head.isr, joining: [], leaving: [] })).toBe(true);

    const out = await send(['b']);
    expect(out[0]).toMatchObject({ ok: true, offset: 1 });
    expect((await readHead(store(p0.leader), tp))?.hw).toBe(2);
    expect(await logsEqual()).toBe(true);
    // The next commit is fast again: the fallback refreshed what the instance knows.
    const { calls } = await traceCalls(() => send(['c']));
    expect(sequentialRoundTrips(calls), ops(calls)).toBe(3);
    expect(calls.map((c) => c.op).sort(), ops(calls)).toEqual(['TransactWriteItems', 'TransactWriteItems', 'TransactWriteItems', 'UpdateItem']);
    expect((await readHead(store(p0.leader), tp))?.hw).toBe(3);
  });

  it('where the cached metadata is due for its check, the commit adds one read of the metadata version and nothing else', async () => {
    const { send } = await setup();
    // (the first check after the topic was created sees a new version and reads the metadata again)
    metadataCheckDue();
    await send(['a']);
    metadataCheckDue();
    const { calls } = await traceCalls(() => send(['b']));
    expect(sequentialRoundTrips(calls), ops(calls)).toBe(4);
    expect(calls[0]?.op, ops(calls)).toBe('GetItem');
    expect(calls.map((c) => c.op).sort(), ops(calls)).toEqual(['GetItem', 'TransactWriteItems', 'TransactWriteItems', 'TransactWriteItems', 'UpdateItem']);
  });

  it('where a follower was told a newer leader epoch, the old leader acknowledges nothing: its copy fails its condition, replicate finds it stale, and the produce goes to the new leader', async () => {
    const { name, p0, tp, store, followers, send, logsEqual } = await setup();
    await send(['a']);
    // A new leader is elected (the follower learns it) while this instance still appends under the old epoch.
    const next = followers[0]!;
    const state = await electLeader(name, 0, next);
    await setRole(store(next), tp, 'leader', state.leaderEpoch, state.isr);
    await setRole(store(followers[1]!), tp, 'follower', state.leaderEpoch);

    // The append under the old epoch lands on the old leader, its commit cannot prove anything,
    // and the produce goes on to the new leader (a stale route is retried), where it is acknowledged.
    const out = await send(['stale'], { deadlineMs: 5_000 });
    expect(out[0]).toMatchObject({ ok: true, offset: 1 });
    expect((await readHead(store(next), tp))?.hw).toBe(2);
    // The old leader's own copy of 'stale' was never committed: it followed the new leader, was
    // truncated, and every replica now holds the new leader's log, 'stale' once.
    expect((await readHead(store(p0.leader), tp))).toMatchObject({ role: 'follower', leaderEpoch: state.leaderEpoch, leo: 2 });
    expect(await logsEqual()).toBe(true);
  });

  it('where a follower is in a full sync, the fast copy does not write to it', async () => {
    const { p0, tp, store, followers, send } = await setup();
    await send(['a']);
    const f = followers[0]!;
    // (a full sync in progress: its head carries `snapshotting`)
    await dynamo(store(f).endpoint).send(new UpdateCommand({
      TableName: store(f).replicaTable, Key: { tp, off: -1 }, UpdateExpression: 'SET snapshotting = :t', ExpressionAttributeValues: { ':t': Date.now() },
    }));

    const out = await send(['b'], { deadlineMs: 5_000 });
    // The follower lost its log for this leader: replicate takes it out of the ISR, and the record
    // is acknowledged over the members that hold it.
    expect(out[0]).toMatchObject({ ok: true, offset: 1 });
    expect((await readHead(store(f), tp))?.leo).toBe(1);
    const leader = (await readHead(store(p0.leader), tp))!;
    expect(leader.isr).not.toContain(f);
    expect(leader.hw).toBe(2);
  });
});

describe('Feature: min.insync.replicas is checked in the append itself', () => {
  it('where the leader\'s stored count is below min.insync.replicas but its cached head is not, acks=all gets NOT_ENOUGH_REPLICAS and nothing is written', async () => {
    const { p0, tp, store, followers, send } = await setup({ minIsr: 3 });
    expect((await send(['a']))[0]).toMatchObject({ ok: true, offset: 0 });
    const head = (await readHead(store(p0.leader), tp))!;
    expect(await setHeadIsr(store(p0.leader), tp, p0.leaderEpoch, head.isrVersion, { isr: [p0.leader, followers[0]!], joining: [], leaving: [] })).toBe(true);

    const out = await send(['b']);
    expect(out[0]).toMatchObject({ ok: false, error: { kafkaName: 'NOT_ENOUGH_REPLICAS' } });
    expect((await readHead(store(p0.leader), tp))?.leo).toBe(1);
    // acks=1 is not held to it.
    expect((await send(['c'], { acks: 1 }))[0]).toMatchObject({ ok: true, offset: 1 });
  });
});

describe('Feature: idempotent producers through the fast commit', () => {
  it('where the fast commit wrote the followers, a follower that becomes leader answers a retry with the original offsets', async () => {
    const { name, p0, tp, store, followers } = await setup();
    const { producerId, producerEpoch } = await initProducer();
    const rec = (seq: number, v: string): ProduceRecord => ({ partition: 0, key: null, value: Buffer.from(v), headers: [], sequence: seq });
    const first = await produce(name, [rec(0, 'a'), rec(1, 'b')], { acks: 'all', producer: { producerId, producerEpoch } });
    expect(first.map((o) => o.ok && o.offset)).toEqual([0, 1]);
    const second = await produce(name, [rec(2, 'c')], { acks: 'all', producer: { producerId, producerEpoch } });
    expect(second[0]).toMatchObject({ ok: true, offset: 2 });
    const f = followers[0]!;
    expect((await readProducerStates(store(f), tp, [producerId])).get(producerId)?.batches.at(-1)).toMatchObject({ lastSeq: 2, lastOffset: 2 });

    // Fail over to the follower; the retry of sequence 2 is a duplicate there, with its offset.
    const state = await electLeader(name, 0, f);
    await setRole(store(f), tp, 'leader', state.leaderEpoch, state.isr);
    for (const b of p0.replicas.filter((x) => x !== f)) await setRole(store(b), tp, 'follower', state.leaderEpoch);
    const retry = await produce(name, [rec(2, 'c')], { acks: 1, producer: { producerId, producerEpoch } });
    expect(retry[0]).toMatchObject({ ok: true, offset: 2 });
    expect((await readHead(store(f), tp))?.leo).toBe(3);
  });
});

describe('Feature: a fetch of committed records is one round trip', () => {
  it('reads the head and the batches together, and returns only what is below the high watermark', async () => {
    const { p0, tp, store, send } = await setup();
    await send(['a', 'b', 'c']);
    await send(['d'], { acks: 1 }); // appended, not committed
    const t = { leader: store(p0.leader), tp, partition: 0 };
    const { result, calls } = await traceCalls(() => fetchRecords(t, { offset: 1, maxBytes: 1_000_000, maxWaitMs: 0 }));
    expect(result.records.map((r) => r.value?.toString())).toEqual(['b', 'c']);
    expect(result.highWatermark).toBe(3);
    expect(sequentialRoundTrips(calls)).toBe(1);

    // At the end of the log (a consumer caught up), an empty poll reads the head only.
    const end = await traceCalls(() => fetchRecords(t, { offset: 3, maxBytes: 1_000_000, maxWaitMs: 0 }));
    expect(end.result.records).toEqual([]);
    expect(end.calls.map((c) => c.op)).toEqual(['GetItem']);
  });
});
