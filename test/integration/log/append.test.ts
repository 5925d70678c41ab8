/**
 * The append and read paths against real DynamoDB Local and s3rver: concurrent appenders get
 * unique contiguous offsets, lost races retry from the head the failed condition returned, stale
 * leaders are fenced, and reads see exactly what was acknowledged.
 */
import { describe, expect, it } from 'vitest';
import { appendToLeader, type AppendTarget } from '../../../lib/log/append.js';
import { fetchRecords, listOffset } from '../../../lib/log/read.js';
import { replicate } from '../../../lib/log/commit.js';
import { decodeBatch } from '../../../lib/protocol/record-batch.js';
import { appendBatches } from '../../../lib/storage/replica/batches.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { readHead, setRole } from '../../../lib/storage/replica/head.js';
import { ConditionFailed } from '../../../lib/storage/transact.js';
import { batchOf } from '../../support/batches.js';
import { useQuietCluster } from '../../support/cluster.js';
import { newAppendTarget } from '../../support/partition.js';

// A quiet private stack (no stream poller, no controllers): the high watermarks asserted here are
// the ones these tests move, never one the shared stack's background replicator moved first.
useQuietCluster();

const newPartition = () => newAppendTarget('append');

/** Commits what was appended (the high watermark moves to the end of the single replica's log), then reads. */
const values = async (t: AppendTarget & { name: string }, offset = 0) => {
  await replicate(t.name, t.topicId, 0, { deadline: Date.now() + 5000, shrinkOnFailure: false, lagTimeMaxMs: 30_000 });
  return (await fetchRecords(t, { offset, maxBytes: 10_000_000, maxWaitMs: 0 })).records.map((r) => [r.offset, r.value?.toString()]);
};

describe('Function: appendToLeader', () => {
  it('where 20 appenders race on one partition, every batch gets its own contiguous offsets and nothing is lost', async () => {
    const t = await newPartition();
    const ranges = await Promise.all(Array.from({ length: 20 }, (_, i) => appendToLeader(t, batchOf(`a${i}`, `b${i}`, `c${i}`))));
    const bases = ranges.map((r) => r[0]?.baseOffset as number).sort((a, b) => a - b);
    expect(bases).toEqual(Array.from({ length: 20 }, (_, i) => i * 3));
    const read = await values(t);
    expect(read).toHaveLength(60);
    ranges.forEach((r, i) => {
      const base = r[0]?.baseOffset as number;
      expect(read.slice(base, base + 3)).toEqual([[base, `a${i}`], [base + 1, `b${i}`], [base + 2, `c${i}`]]);
    });
    expect(await readHead(t.leader, t.tp)).toMatchObject({ leo: 60, hw: 60, epochs: [[0, 0]] });
  });

  it('where a leader was demoted or its epoch moved on, the append is fenced and writes nothing', async () => {
    const t = await newPartition();
    await appendToLeader(t, batchOf('before'));
    await setRole(t.leader, t.tp, 'leader', 1);
    await expect(appendToLeader(t, batchOf('stale'))).rejects.toMatchObject({ kafkaName: 'FENCED_LEADER_EPOCH' });
    await expect(appendToLeader({ ...t, leaderEpoch: 2 }, batchOf('future'))).rejects.toMatchObject({ kafkaName: 'UNKNOWN_LEADER_EPOCH' });
    await setRole(t.leader, t.tp, 'follower', 2);
    await expect(appendToLeader({ ...t, leaderEpoch: 2 }, batchOf('follower'))).rejects.toMatchObject({ kafkaName: 'NOT_LEADER_OR_FOLLOWER' });
    await expect(fetchRecords(t, { offset: 0, maxBytes: 100, maxWaitMs: 0 })).rejects.toMatchObject({ kafkaName: 'NOT_LEADER_OR_FOLLOWER' });
    await setRole(t.leader, t.tp, 'leader', 3);
    expect(await fetchRecords(t, { offset: 0, maxBytes: 100, maxWaitMs: 0 }).then((r) => r.records.map((x) => x.value?.toString()))).toEqual([]);
    // The partition state still says epoch 0, so replicate refuses; the head alone is the leader's view.
    expect((await readHead(t.leader, t.tp))?.leo).toBe(1);
    // Epochs never go backwards.
    await expect(setRole(t.leader, t.tp, 'leader', 1)).rejects.toBeInstanceOf(ConditionFailed);
  });

  it('records a new leader epoch in the epoch cache at its first append', async () => {
    const t = await newPartition();
    await appendToLeader(t, batchOf('e0'));
    await setRole(t.leader, t.tp, 'leader', 3);
    await appendToLeader({ ...t, leaderEpoch: 3 }, batchOf('e3', 'e3b'));
    const head = await readHead(t.leader, t.tp);
    expect(head?.epochs).toEqual([[0, 0], [3, 1]]);
    const [, second] = await queryBatches(t.leader, t.tp, { fromOffset: 0, toOffset: 10, maxBytes: 1e6 });
    expect(decodeBatch(Buffer.from(second?.data as Uint8Array)).partitionLeaderEpoch).toBe(3);
  });

  it('puts batches above inline.max.bytes in S3 and splits requests beyond one transaction', async () => {
    const t = { ...(await newPartition()), inlineMaxBytes: 100 };
    const many = Array.from({ length: 150 }, (_, i) => batchOf(`v${i}`.repeat(i % 3 === 0 ? 40 : 1))[0]!);
    await appendToLeader(t, many);
    const read = await values(t);
    expect(read.map(([o]) => o)).toEqual(Array.from({ length: 150 }, (_, i) => i));
    expect(read[3]?.[1]).toBe('v3'.repeat(40));
    const stored = await queryBatches(t.leader, t.tp, { fromOffset: 0, toOffset: 149, maxBytes: 1e9 });
    expect(stored.filter((b) => b.s3).length).toBe(50);
  });
});

describe('Storage: appendBatches', () => {
  it('where two appenders expect the same log end offset, the loser is told the current head and writes nothing', async () => {
    const t = await newPartition();
    const [batch] = batchOf('x');
    const item = { baseOffset: 0, lastOffset: 0, leaderEpoch: 0, maxTimestamp: 0, recordCount: 1, sizeBytes: batch!.bytes.length, data: batch!.bytes };
    await appendBatches(t.leader, t.tp, { expectLeo: 0, leaderEpoch: 0, batches: [item], hw: 1 });
    const lost = await appendBatches(t.leader, t.tp, { expectLeo: 0, leaderEpoch: 0, batches: [item], hw: 1 }).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(ConditionFailed);
    expect((lost as ConditionFailed).at(0)).toMatchObject({ code: 'ConditionalCheckFailed', current: { leo: 1, hw: 1 } });
    expect((await readHead(t.leader, t.tp))?.leo).toBe(1);
  });
});

describe('Function: fetchRecords', () => {
  it('reads from inside a batch, pages by max_bytes, and rejects offsets outside the log with the valid range', async () => {
    const t = await newPartition();
    await appendToLeader(t, batchOf('a', 'b', 'c'));
    await appendToLeader(t, batchOf('d', 'e'));
    expect(await values(t, 1)).toEqual([[1, 'b'], [2, 'c'], [3, 'd'], [4, 'e']]);
    const page = await fetchRecords(t, { offset: 0, maxBytes: 1, maxWaitMs: 0 });
    expect(page.records.map((r) => r.offset)).toEqual([0, 1, 2]);
    expect(page.nextOffset).toBe(3);
    expect((await fetchRecords(t, { offset: 5, maxBytes: 100, maxWaitMs: 0 })).records).toEqual([]);
    await expect(fetchRecords(t, { offset: 6, maxBytes: 100, maxWaitMs: 0 })).rejects.toMatchObject({
      kafkaName: 'OFFSET_OUT_OF_RANGE', message: expect.stringContaining('[0, 5]'),
    });
    expect(await listOffset(t, 'latest')).toEqual({ offset: 5, timestamp: null, lastStableOffset: 5, logEndOffset: 5 });
  });
});
