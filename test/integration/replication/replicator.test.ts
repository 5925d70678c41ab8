/**
 * The replicator Lambda (lambdas/replicator.ts, lib/log/replicator.ts) against the real store: a
 * DynamoDB Streams event of replica-table changes replicates every partition it names, and its
 * answer is Lambda's partial batch response — `batchItemFailures` names, for each partition whose
 * replication failed, the SequenceNumber of that partition's first change (Lambda retries the
 * batch from there), while the partition is put in the lag index so the controller's sweep covers
 * it whatever becomes of the retries. Heads, producer states and deletes are not log data.
 *
 * A private quiet stack (no stream poller, no controllers): only this file replicates, and the
 * stream events are built by hand in Lambda's record shape.
 */
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { handler } from '../../../lambdas/replicator.js';
import { lambdaContext } from '../../../local/gateway.js';
import { changesOf, handOffToSweep } from '../../../lib/log/replicator.js';
import { invalidateMetadata, replicaStore } from '../../../lib/cluster/metadata.js';
import { createTopic } from '../../../lib/cluster/topics.js';
import { produce } from '../../../lib/log/produce.js';
import { replicateChanges } from '../../../lib/log/replicator.js';
import * as brokerStore from '../../../lib/storage/coordination/brokers.js';
import * as lagIndex from '../../../lib/storage/coordination/lag-index.js';
import * as topicStore from '../../../lib/storage/coordination/topics.js';
import { producersKey } from '../../../lib/storage/tables.js';
import { topicPartitionKey, type PartitionRecord } from '../../../lib/storage/model.js';
import { queryBatches } from '../../../lib/storage/replica/reads.js';
import { readHead } from '../../../lib/storage/replica/head.js';
import { useQuietCluster } from '../../support/cluster.js';

useQuietCluster();

let n = 0;
let seq = 1000;
/** Stream positions grow through the file, as a shard's sequence numbers do. */
const nextSeq = () => String(seq++).padStart(21, '0');

/** One stream record in the shape Lambda delivers from a replica table's stream. */
function record(table: string, tp: string, off: number, eventName: 'INSERT' | 'MODIFY' | 'REMOVE' = 'INSERT', sequence = nextSeq()): DynamoDBRecord {
  return {
    eventID: `e-${sequence}`, eventName, eventVersion: '1.1', eventSource: 'aws:dynamodb', awsRegion: 'us-east-1',
    eventSourceARN: `arn:aws:dynamodb:us-east-1:000000000000:table/${table}/stream/x`,
    dynamodb: {
      ApproximateCreationDateTime: Math.floor(Date.now() / 1000), Keys: { tp: { S: tp }, off: { N: String(off) } },
      SequenceNumber: sequence, SizeBytes: 100, StreamViewType: 'KEYS_ONLY',
    },
  };
}

const invoke = (Records: DynamoDBRecord[]) => handler({ Records } satisfies DynamoDBStreamEvent, lambdaContext('replicator'));

/** A partition with `count` one-record batches on its leader (acks=1: no follower has them). */
async function partitionWithData(name: string, p: PartitionRecord, count: number) {
  for (let i = 0; i < count; i++) {
    await produce(name, [{ partition: p.partition, key: null, value: Buffer.from(`v${i}`), headers: [] }], { acks: 1 });
  }
  const tp = topicPartitionKey(p.topicId, p.partition);
  const leader = await replicaStore(p.leader);
  const head = (await readHead(leader, tp))!;
  const batches = head.leo > 0 ? await queryBatches(leader, tp, { fromOffset: 0, toOffset: head.leo - 1, maxBytes: 10_000_000 }) : [];
  /** The stream records the leader's appends made (one per batch item). */
  const changes = () => batches.map((b) => record(leader.replicaTable, tp, b.baseOffset));
  /** The leader's and every follower's log end and high watermark. */
  const state = async () => {
    const heads = await Promise.all(p.replicas.map(async (b) => [b, (await readHead(await replicaStore(b), tp))!] as const));
    return Object.fromEntries(heads.map(([b, h]) => [b, { leo: h.leo, hw: h.hw }]));
  };
  return { tp, leader, leo: head.leo, changes, state };
}

const lagMarks = async () => (await lagIndex.listLagging()).map((m) => `${m.topicId}#${m.partition}`);
/** Takes the marks the appends left (the first append to a caught-up partition marks it; only the sweep clears). */
const unmark = async (...tps: string[]) => {
  for (const m of await lagIndex.listLagging()) if (tps.includes(`${m.topicId}#${m.partition}`)) await lagIndex.clearLagging(m.topicId, m.partition, m.markedAt);
};

describe('Replicator (DynamoDB Streams → partial batch response)', () => {
  it('replicates both partitions of an event and reports no failures', async () => {
    const name = `repl-${process.pid}-${n++}`;
    const { partitions } = await createTopic({ name, partitions: 2, replicationFactor: 3 });
    const a = await partitionWithData(name, partitions[0]!, 3);
    const b = await partitionWithData(name, partitions[1]!, 2);
    expect(a.leo).toBe(3);
    expect(b.leo).toBe(2);
    // The two partitions' changes interleave, as one shard's records of one table would (or two tables' batches).
    const [a0, a1, a2] = a.changes() as [DynamoDBRecord, DynamoDBRecord, DynamoDBRecord];
    const [b0, b1] = b.changes() as [DynamoDBRecord, DynamoDBRecord];

    expect(await invoke([a0, b0, a1, b1, a2])).toEqual({ batchItemFailures: [] });

    for (const [x, leo] of [[a, 3], [b, 2]] as const) {
      const s = await x.state();
      // Every follower holds the leader's whole log; the high watermark is at its end everywhere it was told.
      for (const replica of Object.values(s)) expect(replica.leo).toBe(leo);
      expect((await readHead(x.leader, x.tp))!.hw).toBe(leo);
    }
  });

  it('ignores heads, producer states and deletes: no failures, nothing replicated', async () => {
    const name = `repl-${process.pid}-${n++}`;
    const { partitions } = await createTopic({ name, partitions: 1, replicationFactor: 3 });
    const x = await partitionWithData(name, partitions[0]!, 2);
    const before = await x.state();
    const table = x.leader.replicaTable;
    const [first, second] = x.changes() as [DynamoDBRecord, DynamoDBRecord];
    const removed = (r: DynamoDBRecord): DynamoDBRecord => ({ ...r, eventName: 'REMOVE' });
    const records = [
      record(table, x.tp, -1, 'MODIFY'), // the head
      record(table, producersKey(x.tp), 7), // a producer's state (its tp has a suffix)
      record(table, '__incarnation__', -1), // the store's incarnation
      removed(first), removed(second), // retention's and truncation's echoes
    ];

    expect(await invoke(records)).toEqual({ batchItemFailures: [] });
    // (`replicateChanges` itself, given the non-log changes the handler passes through)
    expect(await replicateChanges([
      { table, tp: x.tp, off: -1, position: nextSeq() },
      { table, tp: producersKey(x.tp), off: 7, position: nextSeq() },
      { table, tp: '__incarnation__', off: -1, position: nextSeq() },
    ])).toEqual([]);

    // Nothing moved: the followers are still empty and the high watermark where it was.
    expect(await x.state()).toEqual(before);
    for (const [b, s] of Object.entries(before)) if (Number(b) !== partitions[0]!.leader) expect(s.leo).toBe(0);
    expect(before[partitions[0]!.leader]).toEqual({ leo: 2, hw: 0 });
  });

  it('handOffToSweep puts every partition of a given-up batch in the lag index', async () => {
    const name = `repl-${process.pid}-${n++}`;
    const { partitions } = await createTopic({ name, partitions: 2, replicationFactor: 3 });
    const a = await partitionWithData(name, partitions[0]!, 2);
    const b = await partitionWithData(name, partitions[1]!, 1);
    await unmark(a.tp, b.tp);
    expect(await lagMarks()).not.toContain(a.tp);

    await handOffToSweep(changesOf([...a.changes(), ...b.changes(), record(a.leader.replicaTable, a.tp, -1, 'MODIFY')]));

    const marks = (await lagIndex.listLagging()).filter((m) => m.topic === name);
    expect(marks.map((m) => m.partition).sort()).toEqual([0, 1]);
    expect(new Set(marks.map((m) => m.topicId))).toEqual(new Set([partitions[0]!.topicId]));
  });

  // Last in the file: it registers a broker whose replica table does not exist, which later
  // topic creations would place replicas on.
  it('where one partition fails with a store error, names its first change only, replicates the other, and marks the failing one for the sweep', async () => {
    const name = `repl-${process.pid}-${n++}`;
    const { partitions } = await createTopic({ name, partitions: 1, replicationFactor: 3 });
    const good = await partitionWithData(name, partitions[0]!, 3);
    await unmark(good.tp);

    // A partition led by a broker whose replica table is unreachable: every read of its leader's
    // store fails (ResourceNotFoundException, a store failure as the code classifies it).
    const missingTable = `tributary-missing-${process.pid}`;
    await brokerStore.registerBroker({ brokerId: 99, replicaTable: missingTable, rack: 'r-missing' });
    const badName = `repl-bad-${process.pid}-${n++}`;
    const badTopic = {
      name: badName, topicId: `bad-${process.pid}-${Date.now()}`, partitions: 1, replicationFactor: 1, configs: {},
      createdAt: new Date().toISOString(), state: 'active' as const,
    };
    await topicStore.createTopic(badTopic, [{ topicId: badTopic.topicId, partition: 0, leader: 99, leaderEpoch: 0, replicas: [99], isr: [99], partitionEpoch: 0 }], badName);
    invalidateMetadata();
    const badTp = topicPartitionKey(badTopic.topicId, 0);
    const bad0 = record(missingTable, badTp, 0);
    const bad1 = record(missingTable, badTp, 1);
    const bad2 = record(missingTable, badTp, 2);
    const [g0, g1, g2] = good.changes() as [DynamoDBRecord, DynamoDBRecord, DynamoDBRecord];
    // The failing partition's first change comes after the good one's first: the retry starts there.
    expect(await lagMarks()).not.toContain(badTp);

    const answer = await invoke([g0, bad0, g1, bad1, g2, bad2]);

    expect(answer).toEqual({ batchItemFailures: [{ itemIdentifier: bad0.dynamodb!.SequenceNumber }] });
    for (const replica of Object.values(await good.state())) expect(replica.leo).toBe(3);
    expect((await readHead(good.leader, good.tp))!.hw).toBe(3);
    const marks = await lagMarks();
    expect(marks).toContain(badTp);
    expect(marks).not.toContain(good.tp);
    expect((await lagIndex.listLagging()).find((m) => m.topicId === badTopic.topicId)).toMatchObject({ topic: badName, partition: 0 });
  });
});
