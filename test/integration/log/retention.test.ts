/**
 * Retention and DeleteRecords on the tiered log: the log start moves forward on every replica, segments
 * wholly below it are tombstoned, the table tail never expires, fetch below the log start is
 * OFFSET_OUT_OF_RANGE, and every lost race (two passes at once, a roll or a compaction in
 * between) leaves the log as one pass would.
 *
 * A private quiet stack (no replicator, no controllers): segments are rolled step by step here
 * (test/integration/log/fake-roll.ts) and time moves through the injectable clock.
 */
import { describe, expect, it } from 'vitest';
import { applyRetention, deleteRecords } from '../../../lib/log/retention.js';
import { raiseLogStart } from '../../../lib/storage/replica/tail.js';
import { readHead, tailStartOf } from '../../../lib/storage/replica/head.js';
import { listSegments, replaceSegments, segmentObjectKey, tombstoneSegments } from '../../../lib/storage/coordination/segments.js';
import { replicaLog, useQuietCluster } from '../../support/cluster.js';
import { heads, partitionWith, produceBatch, rollTo, type Partition } from './fake-roll.js';

const cluster = useQuietCluster();
const HOUR = 3_600_000;

const live = async (p: Partition) => (await listSegments(p.topicId, 0)).map((s) => [s.baseOffset, s.endOffset]);
const allStates = async (p: Partition) => (await listSegments(p.topicId, 0, { states: ['pending', 'live', 'deleted'] })).map((s) => [s.baseOffset, s.state]);
const logStarts = async (p: Partition) => (await heads(p)).map((h) => h.logStartOffset);
// (the table's log: from the tail start; below it the items are rolled and wait for their expiry)
const tableOffsets = async (p: Partition, store = p.leader) => (await replicaLog(store, p.tp)).map((b) => b.baseOffset);

/** Four batches of 5 records: [0,5) [5,10) rolled into segment A, [10,15) into B, [15,20) in the table. */
async function fourBatches(configs: Record<string, string>, ts: { a?: number; b?: number; tail?: number } = {}) {
  const p = await partitionWith('retain', configs);
  await produceBatch(p, 5, { timestamp: ts.a });
  await produceBatch(p, 5, { timestamp: ts.a });
  await produceBatch(p, 5, { timestamp: ts.b });
  await produceBatch(p, 5, { timestamp: ts.tail });
  const a = await rollTo(p, 10);
  const b = await rollTo(p, 15);
  return { p, a, b };
}

describe('Function: applyRetention', () => {
  it('by time: removes the segments whose largest timestamp is older than retention.ms, raises the log start on every replica, and never touches the table tail', async () => {
    const now = Date.now();
    const { p } = await fourBatches({ 'retention.ms': String(HOUR) }, { a: now - 3 * HOUR, b: now - HOUR / 2, tail: now - 5 * HOUR });
    const before = await readHead(p.leader, p.tp);

    const r = await applyRetention(p.name, 0, { now });
    expect(r).toEqual({ logStartOffset: 10, tombstoned: [{ baseOffset: 0, endOffset: 10, reason: 'retention.ms' }] });
    expect(await logStarts(p)).toEqual([10, 10, 10]);
    expect(await live(p)).toEqual([[10, 15]]);
    expect(await allStates(p)).toEqual([[0, 'deleted'], [10, 'live']]);

    // A day later segment B goes too; the tail (older timestamps than either!) stays, and so does
    // everything the head says about it.
    const later = await applyRetention(p.name, 0, { now: now + 24 * HOUR });
    expect(later.tombstoned.map((t) => t.baseOffset)).toEqual([10]);
    expect(await logStarts(p)).toEqual([15, 15, 15]);
    const after = await readHead(p.leader, p.tp);
    expect({ leo: after?.leo, hw: after?.hw, tailStart: tailStartOf(after!), tailBytes: after?.tailBytes })
      .toEqual({ leo: before?.leo, hw: before?.hw, tailStart: tailStartOf(before!), tailBytes: before?.tailBytes });
    for (const s of p.stores) expect(await tableOffsets(p, s)).toEqual([15]);
    // Nothing left to expire: a third pass changes nothing.
    expect(await applyRetention(p.name, 0, { now: now + 48 * HOUR })).toEqual({ logStartOffset: 15, tombstoned: [] });
  });

  it('moves a log start that no live segment serves up to the first record there is (a leader that missed an earlier raise), so earliest is readable', async () => {
    const { p, a } = await fourBatches({});
    // Segment A left the log (a pass on another leader tombstoned it) without this leader's log start moving.
    await tombstoneSegments([a]);
    expect((await readHead(p.leader, p.tp))!.logStartOffset).toBe(0);
    const r = await applyRetention(p.name, 0);
    expect(r.logStartOffset).toBe(10);
    expect(await logStarts(p)).toEqual([10, 10, 10]);
  });

  it('by size: removes the oldest segments while the partition (segments + table tail) minus the segment is at least retention.bytes', async () => {
    const { p, a, b } = await fourBatches({});
    const tail = (await readHead(p.leader, p.tp))!.tailBytes!;
    const total = a.sizeBytes! + b.sizeBytes! + tail;
    // Exactly at the limit after removing A: A goes (Kafka's rule is ≥), B stays.
    await cluster().call('PUT', cluster().v3(`/topics/${p.name}/configs/retention.bytes`), { value: String(total - a.sizeBytes!) });
    const r = await applyRetention(p.name, 0);
    expect(r.tombstoned).toEqual([{ baseOffset: 0, endOffset: 10, reason: 'retention.bytes' }]);
    expect(await logStarts(p)).toEqual([10, 10, 10]);
    // retention.bytes 0: every segment goes, the tail stays.
    await cluster().call('PUT', cluster().v3(`/topics/${p.name}/configs/retention.bytes`), { value: '0' });
    expect((await applyRetention(p.name, 0)).tombstoned).toEqual([{ baseOffset: 10, endOffset: 15, reason: 'retention.bytes' }]);
    expect(await logStarts(p)).toEqual([15, 15, 15]);
    expect(await tableOffsets(p)).toEqual([15]);
  });

  it('expires nothing for a topic whose cleanup.policy has no delete, but removes segments already below the log start', async () => {
    const { p } = await fourBatches({ 'cleanup.policy': 'compact', 'retention.ms': '1', 'retention.bytes': '0' }, { a: 1, b: 1 });
    expect(await applyRetention(p.name, 0)).toEqual({ logStartOffset: 0, tombstoned: [], skipped: 'cleanup.policy' });
    expect(await live(p)).toEqual([[0, 10], [10, 15]]);
    // (as a DeleteRecords that lost a race with a roll leaves it)
    for (const s of p.stores) await raiseLogStart(s, p.tp, 10);
    expect(await applyRetention(p.name, 0)).toEqual({ logStartOffset: 10, tombstoned: [{ baseOffset: 0, endOffset: 10, reason: 'log-start' }], skipped: 'cleanup.policy' });
    expect(await live(p)).toEqual([[10, 15]]);
  });

  it('shows the new log start on GET partition, and answers a fetch below it with OFFSET_OUT_OF_RANGE and the valid range', async () => {
    const { p } = await fourBatches({ 'retention.ms': String(HOUR) }, { a: 1 });
    await applyRetention(p.name, 0);
    const part = await cluster().call('GET', cluster().v3(`/topics/${p.name}/partitions/0`));
    expect(part.body).toMatchObject({ log_start_offset: 10, log_end_offset: 20, high_watermark: 20 });
    for (const r of part.body.replica_states) expect(r.log_start_offset).toBe(10);
    const fetched = await cluster().call('GET', cluster().v3(`/topics/${p.name}/partitions/0/records?offset=9`));
    expect(fetched.status).toBe(416);
    expect(fetched.body.error_code).toBe(41601);
    expect(fetched.body.message).toMatch(/OFFSET_OUT_OF_RANGE.*\[10, 20\]/);
  });

  it('where two passes run at once, each segment is tombstoned once and both report the same log start', async () => {
    const { p } = await fourBatches({ 'retention.ms': String(HOUR) }, { a: 1, b: 1 });
    const [r1, r2] = await Promise.all([applyRetention(p.name, 0), applyRetention(p.name, 0)]);
    expect([r1.logStartOffset, r2.logStartOffset]).toEqual([15, 15]);
    expect([...r1.tombstoned, ...r2.tombstoned].map((t) => t.baseOffset).sort((x, y) => x - y)).toEqual([0, 10]);
    expect(await allStates(p)).toEqual([[0, 'deleted'], [10, 'deleted']]);
    expect(await logStarts(p)).toEqual([15, 15, 15]);
  });

  it('where a roll commits between the head read and the segment list, the new segment stays live even if it is expired: the log start stops at the tailStart read', async () => {
    const { p } = await fourBatches({ 'retention.bytes': '0' });
    const r = await applyRetention(p.name, 0, { onStep: async (step) => { if (step === 'head-read') await rollTo(p, 20); } });
    expect(r.logStartOffset).toBe(15);
    expect(r.tombstoned.map((t) => t.baseOffset)).toEqual([0, 10]);
    expect(await live(p)).toEqual([[15, 20]]);
    // The next pass takes it (the table is empty now: tailStart = leo = 20).
    expect((await applyRetention(p.name, 0)).tombstoned.map((t) => t.baseOffset)).toEqual([15]);
    expect(await logStarts(p)).toEqual([20, 20, 20]);
  });

  it('where a compaction replaces a segment between the raise and the tombstone, the tombstone is lost, and the next pass removes the replacement below the log start', async () => {
    const { p, a } = await fourBatches({ 'retention.ms': String(HOUR) }, { a: 1 });
    const r = await applyRetention(p.name, 0, {
      onStep: async (step) => {
        if (step !== 'raised') return;
        const replacement = { ...a, generation: 1, key: segmentObjectKey(p.topicId, 0, 0, 1), createdAt: Date.now() };
        expect(await replaceSegments([a], replacement)).toBe(true);
      },
    });
    expect(r).toEqual({ logStartOffset: 10, tombstoned: [] });
    expect(await live(p)).toEqual([[0, 10], [10, 15]]);
    const next = await applyRetention(p.name, 0);
    expect(next.tombstoned).toEqual([{ baseOffset: 0, endOffset: 10, reason: 'log-start' }]);
    expect(await live(p)).toEqual([[10, 15]]);
  });

  it('brings a follower that was behind up to the leader\'s log start on a later pass', async () => {
    const { p } = await fourBatches({ 'retention.ms': String(HOUR) }, { a: 1 });
    await applyRetention(p.name, 0);
    // A follower whose log start is behind (say it was mid full sync when the log start moved).
    const { UpdateCommand } = await import('@aws-sdk/lib-dynamodb');
    const { dynamo } = await import('../../../lib/storage/clients.js');
    const f = p.followers[0]!;
    await dynamo(f.endpoint).send(new UpdateCommand({ TableName: f.replicaTable, Key: { tp: p.tp, off: -1 }, UpdateExpression: 'SET logStartOffset = :z', ExpressionAttributeValues: { ':z': 0 } }));
    expect(await applyRetention(p.name, 0)).toEqual({ logStartOffset: 10, tombstoned: [] });
    expect(await logStarts(p)).toEqual([10, 10, 10]);
  });
});

describe('Function: deleteRecords', () => {
  it('with -1 deletes up to the high watermark: low watermark = HW on every replica, every segment tombstoned, every table emptied below it', async () => {
    const { p } = await fourBatches({});
    expect(await deleteRecords(p.name, 0, -1)).toEqual({ lowWatermark: 20 });
    expect(await logStarts(p)).toEqual([20, 20, 20]);
    expect(await live(p)).toEqual([]);
    expect(await allStates(p)).toEqual([[0, 'deleted'], [10, 'deleted']]);
    for (const s of p.stores) {
      expect(await tableOffsets(p, s)).toEqual([]);
      const h = (await readHead(s, p.tp))!;
      expect([tailStartOf(h), h.tailBytes]).toEqual([20, 0]);
    }
  });

  it('at a batch boundary inside the segments: tombstones the segments wholly below, keeps the one that straddles, and leaves the table', async () => {
    const { p } = await fourBatches({});
    expect(await deleteRecords(p.name, 0, 5)).toEqual({ lowWatermark: 5 });
    expect(await live(p)).toEqual([[0, 10], [10, 15]]);
    expect(await deleteRecords(p.name, 0, 10)).toEqual({ lowWatermark: 10 });
    expect(await live(p)).toEqual([[10, 15]]);
    expect(await tableOffsets(p)).toEqual([15]);
    expect(await logStarts(p)).toEqual([10, 10, 10]);
  });

  it('in the middle of a table batch: the log starts at the offset, the straddling batch stays in the table, the batches wholly below leave it', async () => {
    const p = await partitionWith('retain-mid');
    for (let i = 0; i < 4; i++) await produceBatch(p, 5);
    expect(await deleteRecords(p.name, 0, 12)).toEqual({ lowWatermark: 12 });
    for (const s of p.stores) {
      expect(await tableOffsets(p, s)).toEqual([10, 15]);
      expect(tailStartOf((await readHead(s, p.tp))!)).toBe(10);
    }
    expect(await logStarts(p)).toEqual([12, 12, 12]);
    const fetched = await cluster().call('GET', cluster().v3(`/topics/${p.name}/partitions/0/records?offset=12`));
    expect(fetched.status).toBe(200);
    const below = await cluster().call('GET', cluster().v3(`/topics/${p.name}/partitions/0/records?offset=11`));
    expect(below.status).toBe(416);
  });

  it('above the high watermark, or below -1, is OFFSET_OUT_OF_RANGE with the valid range, and changes nothing', async () => {
    const p = await partitionWith('retain-oor');
    await produceBatch(p, 5);
    await expect(deleteRecords(p.name, 0, 6)).rejects.toMatchObject({ kafkaName: 'OFFSET_OUT_OF_RANGE', message: expect.stringContaining('[0, 5]') });
    await expect(deleteRecords(p.name, 0, -2)).rejects.toMatchObject({ kafkaName: 'OFFSET_OUT_OF_RANGE' });
    expect(await logStarts(p)).toEqual([0, 0, 0]);
  });

  it('is idempotent and never moves the log start back; two at once end at the larger offset', async () => {
    const { p } = await fourBatches({});
    expect(await deleteRecords(p.name, 0, 17)).toEqual({ lowWatermark: 17 });
    expect(await deleteRecords(p.name, 0, 17)).toEqual({ lowWatermark: 17 });
    expect(await deleteRecords(p.name, 0, 3)).toEqual({ lowWatermark: 17 });
    expect(await logStarts(p)).toEqual([17, 17, 17]);

    const q = (await fourBatches({})).p;
    const results = await Promise.all([deleteRecords(q.name, 0, 12), deleteRecords(q.name, 0, 16), deleteRecords(q.name, 0, 12)]);
    expect(results.map((r) => r.lowWatermark).every((w) => w >= 12)).toBe(true);
    expect(await logStarts(q)).toEqual([16, 16, 16]);
    expect(await live(q)).toEqual([]);
    expect(await tableOffsets(q)).toEqual([15]);
  });

  it('unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION', async () => {
    await expect(deleteRecords('no-such-topic-retain', 0, 0)).rejects.toMatchObject({ kafkaName: 'UNKNOWN_TOPIC_OR_PARTITION' });
    const p = await partitionWith('retain-unknown');
    await expect(deleteRecords(p.name, 3, 0)).rejects.toMatchObject({ kafkaName: 'UNKNOWN_TOPIC_OR_PARTITION' });
  });
});

describe('Route: POST /v3/clusters/{c}/topics/{t}/partitions/{p}/records:delete', () => {
  const raw = async (path: string, body: string) => {
    const r = await fetch(`${cluster().url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    return { status: r.status, body: await r.json() as any };
  };

  it('answers 200 with the partition id and the low watermark', async () => {
    const { p } = await fourBatches({});
    const path = cluster().v3(`/topics/${p.name}/partitions/0/records:delete`);
    expect(await cluster().call('POST', path, { offset: 12 })).toEqual({ status: 200, body: { partition_id: 0, low_watermark: 12 } });
    expect(await cluster().call('POST', path, { offset: -1 })).toEqual({ status: 200, body: { partition_id: 0, low_watermark: 20 } });
    expect((await cluster().call('GET', cluster().v3(`/topics/${p.name}/partitions/0`))).body.log_start_offset).toBe(20);
  });

  it('answers bad input with a Kafka-style error and changes nothing', async () => {
    const p = await partitionWith('retain-http');
    await produceBatch(p, 5);
    const path = cluster().v3(`/topics/${p.name}/partitions/0/records:delete`);
    expect(await raw(path, '{"offset":')).toMatchObject({ status: 400, body: { error_code: 40002 } });
    expect(await raw(path, '')).toMatchObject({ status: 400, body: { error_code: 40002 } });
    expect(await raw(path, '{}')).toMatchObject({ status: 422, body: { error_code: 42206 } });
    expect(await raw(path, '{"offset":1.5}')).toMatchObject({ status: 422, body: { error_code: 42206 } });
    expect(await raw(path, '{"offset":"3"}')).toMatchObject({ status: 422, body: { error_code: 42206 } });
    expect(await raw(path, '{"offset":3,"extra":1}')).toMatchObject({ status: 422, body: { error_code: 42206 } });
    const above = await cluster().call('POST', path, { offset: 6 });
    expect(above).toMatchObject({ status: 416, body: { error_code: 41601 } });
    expect(above.body.message).toMatch(/OFFSET_OUT_OF_RANGE.*\[0, 5\]/);
    expect(await cluster().call('POST', cluster().v3('/topics/no-such-topic-retain/partitions/0/records:delete'), { offset: 0 }))
      .toMatchObject({ status: 404, body: { error_code: 40401 } });
    expect(await cluster().call('POST', cluster().v3(`/topics/${p.name}/partitions/7/records:delete`), { offset: 0 }))
      .toMatchObject({ status: 404, body: { error_code: 40402 } });
    expect(await cluster().call('POST', cluster().v3(`/topics/${p.name}/partitions/x/records:delete`), { offset: 0 }))
      .toMatchObject({ status: 404, body: { error_code: 40402 } });
    expect(await cluster().call('POST', '/v3/clusters/nope/topics/x/partitions/0/records:delete', { offset: 0 })).toMatchObject({ status: 404 });
    expect(await logStarts(p)).toEqual([0, 0, 0]);
  });
});
