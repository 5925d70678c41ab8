/**
 * A group's target assignment is stored as immutable chunk items the meta item points at. A meta
 * that points at chunks which are gone must not make the group unreadable, and a meta write whose
 * answer was lost (it may have applied) must not delete the chunks the applied meta points at.
 * The lost answer is made by a hook on the real storage client that lets the request through to
 * DynamoDB Local and then fails the response as a socket timeout would — the store itself is real.
 */
import { describe, expect, it } from 'vitest';
import { DeleteCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { createTopic } from '../../../lib/cluster/topics.js';
import { config } from '../../../lib/config.js';
import { heartbeat } from '../../../lib/groups/coordinator.js';
import { dynamo } from '../../../lib/storage/clients.js';
import * as store from '../../../lib/storage/coordination/groups.js';
import { loseTransactResponses } from '../../support/store-hooks.js';

let n = 0;
const unique = (p: string) => `${p}-${process.pid}-${Date.now().toString(36)}-${n++}`;

async function chunkKeys(g: string): Promise<string[]> {
  const out = await dynamo().send(new QueryCommand({
    TableName: config().coordinationTable, KeyConditionExpression: 'pk = :pk AND begins_with(sk, :t)',
    ExpressionAttributeValues: { ':pk': `group#${g}`, ':t': 'target#' }, ConsistentRead: true,
  }));
  return (out.Items ?? []).map((i) => i.sk as string);
}

/** A group of one member owning both partitions of a new topic. */
async function stableGroup(): Promise<{ g: string; topic: string; memberId: string; memberEpoch: number }> {
  const topic = unique('chunks');
  await createTopic({ name: topic, partitions: 2, replicationFactor: 1 });
  const g = unique('g-chunks');
  const a0 = await heartbeat(g, { memberEpoch: 0, subscription: { topics: [topic] }, sessionTimeoutMs: 60_000 });
  const a = await heartbeat(g, { memberId: a0.memberId, memberEpoch: a0.memberEpoch, owned: [] });
  expect(a.assignment).toHaveLength(2);
  return { g, topic, memberId: a.memberId, memberEpoch: a.memberEpoch };
}

/** The next `count` group transactions on `g` reach the store, and their answers are lost. */
const loseGroupTransactResponses = (g: string, count: number) => loseTransactResponses(undefined, `group#${g}`, count);

describe('Group target chunks', () => {
  it('where the meta item points at target chunks that do not exist, a heartbeat succeeds and the group gets a readable target again', async () => {
    // Prepare: a real group whose target chunks are then deleted behind its back.
    const { g, memberId, memberEpoch } = await stableGroup();
    const chunks = await chunkKeys(g);
    expect(chunks.length).toBeGreaterThan(0);
    for (const sk of chunks) await dynamo().send(new DeleteCommand({ TableName: config().coordinationTable, Key: { pk: `group#${g}`, sk } }));

    // Act: the member heartbeats.
    const again = await heartbeat(g, { memberId, memberEpoch, owned: [] });

    // Assess: the heartbeat answered, and the stored target is readable and assigns both partitions.
    expect(again.memberId).toBe(memberId);
    const state = await store.readGroup(g);
    expect(state.meta?.target).toBeDefined();
    expect(Object.values(state.target[memberId] ?? {}).flat()).toHaveLength(2);
    expect((await chunkKeys(g)).length).toBeGreaterThan(0);
  });

  it('where the answer to the meta write that replaced the target was lost once and the SDK sent it again, the chunks the applied meta points at are kept', async () => {
    // Prepare: a stable group; the next group transaction applies and its answer is lost.
    const { g, topic } = await stableGroup();
    const lost = loseGroupTransactResponses(g, 1);

    // Act: a second member joins (a new target); the first answer is lost and the SDK sends the
    // transaction again (with the same ClientRequestToken, so the store answers it as applied).
    const b = await heartbeat(g, { memberEpoch: 0, subscription: { topics: [topic] }, sessionTimeoutMs: 60_000 });

    // Assess: the join took effect once, and the group is readable with a target that knows B.
    expect(lost()).toBe(1);
    const state = await store.readGroup(g);
    expect(state.members.map((m) => m.memberId)).toContain(b.memberId);
    expect(state.meta?.target).toBeDefined();
    expect(Object.keys(state.target)).toContain(b.memberId);
    expect(await chunkKeys(g)).toEqual(Array.from({ length: state.meta!.target!.chunks }, (_, i) => `target#${state.meta!.target!.id}#${String(i).padStart(4, '0')}`));
  });

  it('where every answer to the meta write that replaced the target was lost, the heartbeat fails and the chunks the applied meta points at are kept', async () => {
    // Prepare: a stable group; every attempt of the next group transaction loses its answer.
    const { g, topic } = await stableGroup();
    const lost = loseGroupTransactResponses(g, config().storeMaxAttempts);

    // Act: a second member joins; the caller only sees timeouts.
    await expect(heartbeat(g, { memberEpoch: 0, subscription: { topics: [topic] }, sessionTimeoutMs: 60_000 })).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(lost()).toBe(config().storeMaxAttempts);

    // Assess: the first attempt applied; its meta's target is still readable.
    const state = await store.readGroup(g);
    expect(state.members).toHaveLength(2);
    expect(state.meta?.target).toBeDefined();
    expect(Object.keys(state.target)).toHaveLength(2);
  });
});
