/**
 * Idempotent producer state across a follower's truncation (KIP-101), on a quiet private stack
 * whose copy steps this test drives: the truncated replica keeps the producer's epoch and last
 * sequence while older batches stay in its log, so when it leads again an older producer epoch
 * is still fenced and the producer's retry of what was truncated goes in. And the append path's
 * cache of producer states never outlives the leader epoch it was written under.
 */
import { describe, expect, it } from 'vitest';
import { replicaStore } from '../../../lib/cluster/metadata.js';
import { initProducer } from '../../../lib/cluster/producers.js';
import { appendToLeader } from '../../../lib/log/append.js';
import { prepareBatches } from '../../../lib/log/batches.js';
import { produce } from '../../../lib/log/produce.js';
import { copyStep } from '../../../lib/log/copy.js';
import { readHead, setRole } from '../../../lib/storage/replica/head.js';
import { readProducerStates } from '../../../lib/storage/replica/producer-states.js';
import { truncateLog } from '../../../lib/storage/replica/truncation.js';
import { BATCH_OPTIONS } from '../../support/batches.js';
import { useQuietCluster } from '../../support/cluster.js';
import { electLeader, rf3Partition } from '../../support/partition.js';

useQuietCluster();

const values = (from: number, count: number) => Array.from({ length: count }, (_, i) => ({ key: null, value: Buffer.from(`s${from + i}`), headers: [] }));
const records = (from: number, count: number) => values(from, count).map((r, i) => ({ ...r, partition: 0, sequence: from + i }));
const offsets = (out: Awaited<ReturnType<typeof produce>>) => out.map((o) => (o.ok ? o.offset : o.error.kafkaName));

describe('Producer state across truncation', () => {
  it('where a replica truncates every batch its producer window remembers, it keeps the epoch and last sequence, and leading again it fences the old epoch and takes the retry', async () => {
    const { name, topic, p0, tp } = await rf3Partition('prod-trunc');
    const [old, next, third] = p0.replicas as [number, number, number];
    const store = async (b: number) => replicaStore(b);
    const first = await initProducer();
    const producer = await initProducer(first.producerId); // epoch bumped once: `first` is a zombie

    // Sequences 0..1, on every replica.
    expect(offsets(await produce(name, records(0, 2), { producer, acks: 'all' }))).toEqual([0, 1]);

    // `old` is cut off; the others elect `next`. The zombie leader still appends five requests of
    // the producer (each after another record, so five runs: its whole window) under epoch 0.
    const e1 = await electLeader(name, 0, next);
    await setRole(await store(next), tp, 'leader', e1.leaderEpoch);
    await setRole(await store(third), tp, 'follower', e1.leaderEpoch);
    const zombie = { leader: await store(old), topicId: topic.topicId, partition: 0, tp, leaderEpoch: p0.leaderEpoch, inlineMaxBytes: 8192 };
    for (let seq = 2; seq < 12; seq += 2) {
      await appendToLeader(zombie, prepareBatches(values(100 + seq, 1), BATCH_OPTIONS));
      await appendToLeader(zombie, prepareBatches(values(seq, 2), BATCH_OPTIONS, Date.now(), { ...producer, baseSequence: seq }));
    }
    expect((await readHead(zombie.leader, tp))?.leo).toBe(17);

    // `old` learns the new epoch; its copy step truncates it to 2 — below every remembered run.
    await setRole(zombie.leader, tp, 'follower', e1.leaderEpoch);
    expect((await copyStep(await store(next), zombie.leader, tp)).kind).toBe('caught-up');
    expect((await readHead(zombie.leader, tp))?.leo).toBe(2);
    const kept = (await readProducerStates(zombie.leader, tp, [producer.producerId])).get(producer.producerId);
    expect(kept).toMatchObject({ producerEpoch: producer.producerEpoch, batches: [{ firstSeq: 1, lastSeq: 1, baseOffset: -1, lastOffset: -1 }] });

    // `old` leads again.
    const e2 = await electLeader(name, 0, old);
    await setRole(zombie.leader, tp, 'leader', e2.leaderEpoch, e2.isr);
    for (const f of [next, third]) await setRole(await store(f), tp, 'follower', e2.leaderEpoch);
    // The zombie producer epoch is still fenced; sequences 0..1 (kept in the log, but older than
    // the window) are a duplicate, not a new start; the retry of the truncated sequences goes in
    // after what the log kept.
    expect(offsets(await produce(name, records(0, 1), { producer: first, acks: 1 }))).toEqual(['INVALID_PRODUCER_EPOCH']);
    expect(offsets(await produce(name, records(0, 2), { producer, acks: 1 }))).toEqual(['DUPLICATE_SEQUENCE_NUMBER', 'DUPLICATE_SEQUENCE_NUMBER']);
    expect(offsets(await produce(name, records(2, 2), { producer, acks: 1 }))).toEqual([2, 3]);
    expect(offsets(await produce(name, records(2, 2), { producer, acks: 1 }))).toEqual([2, 3]);
    expect((await readHead(zombie.leader, tp))?.leo).toBe(4);
  });

  it('where a broker leads again under a new epoch, it judges a retry on its stored producer state, not on what it cached under the old epoch', async () => {
    const { name, topic, p0, tp } = await rf3Partition('prod-cache');
    const [a, b, third] = p0.replicas as [number, number, number];
    const target = async (leader: number, leaderEpoch: number) => ({ leader: await replicaStore(leader), topicId: topic.topicId, partition: 0, tp, leaderEpoch, inlineMaxBytes: 8192 });
    const producer = await initProducer();
    const tagged = (seq: number, count: number) => prepareBatches(values(seq, count), BATCH_OPTIONS, Date.now(), { ...producer, baseSequence: seq });

    // `a` leads under epoch 0 and appends sequence 0 (acks=1, not replicated): it caches the state, version 1.
    expect(await appendToLeader(await target(a, p0.leaderEpoch), tagged(0, 1))).toEqual([{ baseOffset: 0, lastOffset: 0 }]);
    // `b` takes over; the producer's retry and its next request land there: sequences 0..2 at 0..2.
    const e1 = await electLeader(name, 0, b);
    await setRole(await replicaStore(b), tp, 'leader', e1.leaderEpoch);
    for (const f of [a, third]) await setRole(await replicaStore(f), tp, 'follower', e1.leaderEpoch);
    await appendToLeader(await target(b, e1.leaderEpoch), tagged(0, 1));
    await appendToLeader(await target(b, e1.leaderEpoch), tagged(1, 2));
    // `a` truncates its epoch-0 batch, dropping the producer's state (as truncations did before
    // they kept it), and copies `b`'s log: the state is written anew — version 1 again.
    const aHead = (await readHead(await replicaStore(a), tp))!;
    const aState = (await readProducerStates(await replicaStore(a), tp, [producer.producerId])).get(producer.producerId)!;
    await truncateLog(await replicaStore(a), tp, aHead, 0, [{ producerId: producer.producerId, expectVer: aState.ver }]);
    expect((await copyStep(await replicaStore(b), await replicaStore(a), tp)).kind).toBe('caught-up');
    expect((await readProducerStates(await replicaStore(a), tp, [producer.producerId])).get(producer.producerId)?.ver).toBe(aState.ver);

    // `a` leads again. The retry of sequences 1..2 is a duplicate, answered with their offsets.
    const e2 = await electLeader(name, 0, a);
    await setRole(await replicaStore(a), tp, 'leader', e2.leaderEpoch, e2.isr);
    for (const f of [b, third]) await setRole(await replicaStore(f), tp, 'follower', e2.leaderEpoch);
    expect(await appendToLeader(await target(a, e2.leaderEpoch), tagged(1, 2))).toEqual([{ baseOffset: 1, lastOffset: 2 }]);
    expect((await readHead(await replicaStore(a), tp))?.leo).toBe(3);
  });
});
