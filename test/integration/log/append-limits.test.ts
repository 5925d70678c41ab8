/**
 * The worst legal appends against DynamoDB Local, which enforces DynamoDB's transaction limits
 * (more than 100 items: "Member must have length less than or equal to 100"; more than 4 MB:
 * "Transaction payload size cannot exceed 4MB"): many idempotent producers in one lane, one
 * idempotent request split into many batches by a small `max.message.bytes`, batches as large as
 * `inline.max.bytes` allows. A hook on the storage client records each append transaction's size.
 */
import { describe, expect, it } from 'vitest';
import { appendToLeader, type AppendTarget } from '../../../lib/log/append.js';
import { prepareBatches, type PreparedBatch } from '../../../lib/log/batches.js';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo } from '../../../lib/storage/clients.js';
import { readHead } from '../../../lib/storage/replica/head.js';
import { producersKey } from '../../../lib/storage/tables.js';
import { readProducerStates } from '../../../lib/storage/replica/producer-states.js';
import { BATCH_OPTIONS } from '../../support/batches.js';
import { newAppendTarget } from '../../support/partition.js';
import { hookStoreClient } from '../../support/store-hooks.js';

const newPartition = (inlineMaxBytes?: number) => newAppendTarget('append-limits', { inlineMaxBytes });

const idempotent = (producerId: number, values: readonly string[], maxMessageBytes = BATCH_OPTIONS.maxMessageBytes, baseSequence = 0): PreparedBatch[] =>
  prepareBatches(values.map((v) => ({ key: null, value: Buffer.from(v), headers: [] })), { ...BATCH_OPTIONS, maxMessageBytes }, Date.now(), { producerId, producerEpoch: 0, baseSequence });

/** Bytes as DynamoDB counts them, about: binary and strings by length, names, 8 per number. */
function payloadBytes(v: unknown): number {
  if (v instanceof Uint8Array) return v.length;
  if (typeof v === 'string') return Buffer.byteLength(v);
  if (typeof v === 'number' || typeof v === 'boolean') return 8;
  if (Array.isArray(v)) return v.reduce((s: number, x) => s + payloadBytes(x), 0);
  if (v && typeof v === 'object') return Object.entries(v).reduce((s, [k, x]) => s + Buffer.byteLength(k) + payloadBytes(x), 0);
  return 0;
}

/** Records the item count and payload bytes of every append transaction on `t`'s partition. */
function recordTransactions(t: AppendTarget): { items: number; bytes: number }[] {
  const seen: { items: number; bytes: number }[] = [];
  hookStoreClient(t.leader.endpoint, 'initialize', (next, context) => async (args) => {
    const items = (args.input as { TransactItems?: unknown[] }).TransactItems;
    if (String(context.commandName).includes('TransactWrite') && items && JSON.stringify(items).includes(t.tp)) {
      seen.push({ items: items.length, bytes: payloadBytes(items) });
    }
    return next(args);
  });
  return seen;
}

describe('Append transactions within DynamoDB\'s limits', () => {
  it('where 99 idempotent producers append to one partition at once, every transaction holds at most 100 items and all are written', async () => {
    const t = await newPartition();
    const seen = recordTransactions(t);
    // One append in flight first, so the 99 queue behind it and go in as one group.
    const plug = appendToLeader(t, prepareBatches([{ key: null, value: Buffer.from('plug'), headers: [] }], BATCH_OPTIONS));
    const producers = Array.from({ length: 99 }, (_, i) => 1_000_000 + i);
    const results = await Promise.all([plug, ...producers.map((p) => appendToLeader(t, idempotent(p, [`p${p}`])))]);
    expect(results.map((r) => r[0]?.baseOffset).sort((a, b) => (a as number) - (b as number))).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect((await readHead(t.leader, t.tp))?.leo).toBe(100);
    expect((await readProducerStates(t.leader, t.tp, producers)).size).toBe(99);
    expect(Math.max(...seen.map((s) => s.items))).toBeLessThanOrEqual(100);
    expect(seen.length).toBeGreaterThan(2);
  });

  it('where a small max.message.bytes splits one idempotent request into 150 batches, it is written and its retry is answered with every original offset', async () => {
    const t = await newPartition();
    const seen = recordTransactions(t);
    const values = Array.from({ length: 150 }, (_, i) => `r${i}`);
    const batches = idempotent(42, values, 100);
    expect(batches).toHaveLength(150);
    const first = await appendToLeader(t, batches);
    expect(first.map((r) => r.baseOffset)).toEqual(Array.from({ length: 150 }, (_, i) => i));
    // The retry (a lost response): more batches than the five-entry window, every one answered.
    const retry = await appendToLeader(t, idempotent(42, values, 100));
    expect(retry).toEqual(first);
    expect((await readHead(t.leader, t.tp))?.leo).toBe(150);
    // (cut as if each batch were an item of its own; packed, each transaction is the head, one item
    // holding its batches (lib/storage/replica/items.ts) and the producer's state)
    expect(seen.map((s) => s.items)).toEqual([3, 3]);
  });

  it('where batches are as large as inline.max.bytes allows, from 12 idempotent producers at once, every transaction stays under 4 MB', async () => {
    const t = await newPartition(350_000);
    const seen = recordTransactions(t);
    const big = (i: number) => idempotent(2_000_000 + i, [`${i}`.padEnd(349_000, 'x')]);
    const plug = appendToLeader(t, prepareBatches([{ key: null, value: Buffer.from('plug'), headers: [] }], BATCH_OPTIONS));
    await Promise.all([plug, ...Array.from({ length: 12 }, (_, i) => appendToLeader(t, big(i)))]);
    expect((await readHead(t.leader, t.tp))?.leo).toBe(13);
    expect(Math.max(...seen.map((s) => s.bytes))).toBeLessThan(4 * 1024 * 1024);
    console.log('append transactions (items, bytes):', JSON.stringify(seen));
  });

  it('where a request of many small batches, packed into few items, meets a producer state changed by another instance, it reads the states again and is written', async () => {
    const t = await newPartition();
    const pid = 3_000_000 + (Date.now() % 1_000_000);
    await appendToLeader(t, idempotent(pid, ['first']));
    // Another instance writes this producer's state (as a marker it appended would): this
    // instance's cached state still passes the sequence check, but its version is behind.
    await dynamo(t.leader.endpoint).send(new UpdateCommand({
      TableName: t.leader.replicaTable, Key: { tp: producersKey(t.tp), off: pid }, UpdateExpression: 'ADD ver :one', ExpressionAttributeValues: { ':one': 1 },
    }));
    // Forty 8 KB batches: too large to stage, so the direct write retries; packed, the producer's
    // entry sits after 5 items, not after 40.
    const batches = idempotent(pid, Array.from({ length: 40 }, (_, i) => `${i}`.padEnd(7_900, 'y')), 8_100, 1);
    expect(batches).toHaveLength(40);
    const written = await appendToLeader(t, batches);
    expect(written.map((r) => r.baseOffset)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect((await readHead(t.leader, t.tp))?.leo).toBe(41);
  });
});
