/**
 * Producer ids (Kafka's InitProducerId): `producers`/`next` counts the ids handed out;
 * `producers`/`<id>` holds each id's current epoch.
 *
 * Conditional writes:
 * - `initProducerId(existing)`, for an id handed out before: one UpdateItem of `producers`/`<id>`.
 *   Condition: the id was handed out (`attribute_exists(pk)`).
 *   Effect: `epoch` + 1 (`ADD epoch :one`), returned.
 *   Fails: `UnknownProducer`.
 * A new id (`initProducerId()`) takes no condition: an atomic `ADD nextId :one` gives each caller
 * its own id, then an unconditional Put writes the id's item at epoch 0.
 */
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, table } from './table.js';

/**
 * Kafka's InitProducerId: a new producer id (epoch 0), or the next epoch of an existing one.
 * Effects: `producers`/`next` counts ids; `producers`/`<id>` holds the current epoch.
 * Errors: `UnknownProducer` for an id that was never handed out.
 */
export async function initProducerId(existing?: number): Promise<{ producerId: number; producerEpoch: number }> {
  if (existing === undefined) {
    const out = await db().send(new UpdateCommand({
      TableName: table(), Key: { pk: 'producers', sk: 'next' }, UpdateExpression: 'ADD nextId :one',
      ExpressionAttributeValues: { ':one': 1 }, ReturnValues: 'UPDATED_NEW',
    }));
    const producerId = (out.Attributes?.nextId as number) - 1;
    await db().send(new PutCommand({ TableName: table(), Item: { pk: 'producers', sk: String(producerId), epoch: 0 } }));
    return { producerId, producerEpoch: 0 };
  }
  try {
    const out = await db().send(new UpdateCommand({
      TableName: table(), Key: { pk: 'producers', sk: String(existing) }, UpdateExpression: 'ADD epoch :one',
      ConditionExpression: 'attribute_exists(pk)', ExpressionAttributeValues: { ':one': 1 }, ReturnValues: 'UPDATED_NEW',
    }));
    return { producerId: existing, producerEpoch: out.Attributes?.epoch as number };
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') throw new UnknownProducer(existing);
    throw err;
  }
}

export class UnknownProducer extends Error {
  override readonly name = 'UnknownProducer';
  constructor(readonly producerId: number) {
    super(`producer id ${producerId} was never handed out`);
  }
}
