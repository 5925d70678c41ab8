/**
 * The write-unit counter bills as DynamoDB does: the larger of the item before and after each write
 * (1 unit per started KB, 2 per item in a transaction), against DynamoDB Local through the real SDK,
 * and the lookups it makes for that are neither counted, traced, nor visible to the caller.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchWriteCommand, DeleteCommand, GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { config } from '../../../lib/config.js';
import { dynamo } from '../../../lib/storage/clients.js';
import { takeCapacity, trackCapacity, traceCalls } from '../../../lib/storage/metering.js';

const KB = 1024;
let n = 0;
const key = () => ({ pk: `capacity-test#${process.pid}#${n++}`, sk: 'item' });
/** An item of about `kb` KiB (a little under, so that it bills exactly `kb` units). */
const item = (k: Record<string, string>, kb: number) => ({ ...k, filler: 'x'.repeat(kb * KB - 100) });
const TableName = () => config().coordinationTable;
const db = () => dynamo();

/** Runs `fn` with tracking on and returns what was counted. */
async function counted(fn: () => Promise<unknown>) {
  takeCapacity();
  await fn();
  return takeCapacity();
}

beforeAll(() => trackCapacity(true));
afterAll(() => trackCapacity(false));

describe('Function: countCapacity (billed write units)', () => {
  it('bills a put that replaces a larger item by the item it replaced, and the caller sees no old values', async () => {
    const k = key();
    expect((await counted(() => db().send(new PutCommand({ TableName: TableName(), Item: item(k, 3) })))).billedWriteUnits).toBe(3);
    let answer: Record<string, unknown> = {};
    const c = await counted(async () => {
      answer = await db().send(new PutCommand({ TableName: TableName(), Item: item(k, 1) }));
    });
    expect(c.billedWriteUnits).toBe(3);
    expect(answer.Attributes).toBeUndefined();
    expect(c.requests).toEqual({ PutItem: 1 });
  });

  it('bills an update that sets one small attribute of a 5 KB item 5 units, not 1', async () => {
    const k = key();
    await db().send(new PutCommand({ TableName: TableName(), Item: item(k, 5) }));
    let answer: Record<string, unknown> = {};
    const c = await counted(async () => {
      answer = await db().send(new UpdateCommand({ TableName: TableName(), Key: k, UpdateExpression: 'SET n = :n', ExpressionAttributeValues: { ':n': 1 } }));
    });
    expect(c.billedWriteUnits).toBe(5);
    expect(answer.Attributes).toBeUndefined();
    // The lookups the counter made are not counted as the caller's requests.
    expect(c.requests).toEqual({ UpdateItem: 1 });
  });

  it('bills an update that grows an item by the item after it', async () => {
    const k = key();
    await db().send(new PutCommand({ TableName: TableName(), Item: item(k, 1) }));
    const c = await counted(() => db().send(new UpdateCommand({
      TableName: TableName(), Key: k, UpdateExpression: 'SET more = :m', ExpressionAttributeValues: { ':m': 'y'.repeat(3 * KB) },
    })));
    expect(c.billedWriteUnits).toBe(4);
  });

  it('keeps the values an update asked for (ALL_NEW, UPDATED_NEW) and bills the larger item', async () => {
    const k = key();
    await db().send(new PutCommand({ TableName: TableName(), Item: item(k, 2) }));
    let allNew: Record<string, unknown> = {};
    expect((await counted(async () => {
      allNew = await db().send(new UpdateCommand({ TableName: TableName(), Key: k, UpdateExpression: 'REMOVE #f', ExpressionAttributeNames: { '#f': 'filler' }, ReturnValues: 'ALL_NEW' }));
    })).billedWriteUnits).toBe(2);
    expect(allNew.Attributes).toEqual(k);
    let updated: Record<string, unknown> = {};
    expect((await counted(async () => {
      updated = await db().send(new UpdateCommand({ TableName: TableName(), Key: k, UpdateExpression: 'ADD c :one', ExpressionAttributeValues: { ':one': 1 }, ReturnValues: 'UPDATED_NEW' }));
    })).billedWriteUnits).toBe(1);
    expect(updated.Attributes).toEqual({ c: 1 });
  });

  it('bills a delete by the item it deleted', async () => {
    const k = key();
    await db().send(new PutCommand({ TableName: TableName(), Item: item(k, 2) }));
    expect((await counted(() => db().send(new DeleteCommand({ TableName: TableName(), Key: k })))).billedWriteUnits).toBe(2);
  });

  it('bills a write whose condition failed by the existing item, and the caller still gets the failure', async () => {
    const k = key();
    await db().send(new PutCommand({ TableName: TableName(), Item: item(k, 2) }));
    const c = await counted(() => db().send(new UpdateCommand({
      TableName: TableName(), Key: k, UpdateExpression: 'SET n = :n', ConditionExpression: 'attribute_not_exists(pk)', ExpressionAttributeValues: { ':n': 1 },
    })).then(() => expect.fail('the condition should fail'), (err: Error) => expect(err.name).toBe('ConditionalCheckFailedException')));
    expect(c.billedWriteUnits).toBe(2);
    expect(c.requests).toEqual({ UpdateItem: 1 });
  });

  it('bills every item of a transaction twice by its larger size, a condition check included', async () => {
    const [updated, put, checked] = [key(), key(), key()];
    await db().send(new PutCommand({ TableName: TableName(), Item: item(updated, 3) }));
    await db().send(new PutCommand({ TableName: TableName(), Item: item(checked, 2) }));
    const c = await counted(() => db().send(new TransactWriteCommand({
      TransactItems: [
        { Update: { TableName: TableName(), Key: updated, UpdateExpression: 'SET n = :n', ExpressionAttributeValues: { ':n': 1 } } },
        { Put: { TableName: TableName(), Item: item(put, 1) } },
        { ConditionCheck: { TableName: TableName(), Key: checked, ConditionExpression: 'attribute_exists(pk)' } },
      ],
    })));
    expect(c.billedWriteUnits).toBe(2 * 3 + 2 * 1 + 2 * 2);
    expect(c.requests).toEqual({ TransactWriteItems: 1 });
  });

  it('bills a batch write by each item it replaced, wrote or deleted', async () => {
    const [fresh, replaced, deleted] = [key(), key(), key()];
    await db().send(new PutCommand({ TableName: TableName(), Item: item(replaced, 4) }));
    await db().send(new PutCommand({ TableName: TableName(), Item: item(deleted, 3) }));
    const c = await counted(() => db().send(new BatchWriteCommand({
      RequestItems: {
        [TableName()]: [
          { PutRequest: { Item: item(fresh, 2) } },
          { PutRequest: { Item: item(replaced, 1) } },
          { DeleteRequest: { Key: deleted } },
        ],
      },
    })));
    expect(c.billedWriteUnits).toBe(2 + 4 + 3);
    expect((await db().send(new GetCommand({ TableName: TableName(), Key: deleted }))).Item).toBeUndefined();
  });

  it('leaves its lookups out of the traced calls', async () => {
    const k = key();
    await db().send(new PutCommand({ TableName: TableName(), Item: item(k, 1) }));
    const { calls } = await traceCalls(() => db().send(new UpdateCommand({ TableName: TableName(), Key: k, UpdateExpression: 'SET n = :n', ExpressionAttributeValues: { ':n': 2 }, ReturnValues: 'UPDATED_NEW' })));
    expect(calls.map((x) => x.op)).toEqual(['UpdateItem']);
  });
});
