/**
 * A WebSocket group member that leaves, on the shared stack, with a delivery of each of its
 * partitions driven right after the group coordinator has let the member go (the heartbeat with
 * epoch -1 is wrapped: the domain function, not the storage): the leave's partitions must already
 * be unsubscribed then, so the client gets `unsubscribed` for each, never an UNKNOWN_MEMBER_ID
 * error that a delivery checking a member who left would end the subscription with.
 */
import { describe, expect, it, vi } from 'vitest';
import { requireTopic } from '../../../lib/cluster/metadata.js';
import type * as Coordinator from '../../../lib/groups/coordinator.js';
import { deliverPartition } from '../../../lib/orchestration/websocket-delivery.js';
import { leaveGroup } from '../../../lib/orchestration/websocket-groups.js';
import { getConnection, listSubscriptions } from '../../../lib/storage/coordination/connections.js';
import { createTopic, uniqueTopic } from '../../support/api.js';
import { until } from '../../support/cluster.js';
import { Client, produce } from '../../support/websocket.js';

const afterLeave: { run?: () => Promise<void> } = {};

vi.mock('../../../lib/groups/coordinator.js', async (importOriginal) => {
  const original = await importOriginal<typeof Coordinator>();
  return {
    ...original,
    heartbeat: async (...args: Parameters<typeof original.heartbeat>) => {
      const out = await original.heartbeat(...args);
      if (args[1].memberEpoch === -1) await afterLeave.run?.();
      return out;
    },
  };
});

describe('WebSocket group leave', () => {
  it('unsubscribes every partition before the member leaves: a delivery right after the leave finds nothing to end with UNKNOWN_MEMBER_ID', async () => {
    const topic = uniqueTopic('wsg-leave');
    const group = `g-${topic}`;
    await createTopic(topic, 2, 1);
    await produce(topic, ['a'], 0);
    await produce(topic, ['b'], 1);
    const client = await Client.open();
    client.send({ action: 'subscribe', topic, group_id: group, offset: 'earliest' });
    await until('both partitions read', () => client.values(topic, 0).length === 1 && client.values(topic, 1).length === 1);
    const { topicId } = (await requireTopic(topic)).topic;
    const [sub] = await listSubscriptions(topicId, 0);
    const connection = await getConnection(sub!.connectionId);
    expect(connection?.group?.groupId).toBe(group);
    afterLeave.run = async () => {
      for (const p of [0, 1]) await deliverPartition(topicId, p, Date.now() + 10_000);
    };
    try {
      await leaveGroup(connection!);
    } finally {
      afterLeave.run = undefined;
    }
    await client.frame('left', (f) => f.type === 'unsubscribed' && f.group_id === group && f.topic === undefined);
    expect(client.frames.filter((f) => f.type === 'unsubscribed' && f.partition !== undefined).map((f) => f.partition).sort()).toEqual([0, 1]);
    expect(client.frames.filter((f) => f.type === 'error')).toEqual([]);
    expect(await listSubscriptions(topicId, 0)).toEqual([]);
    expect(await listSubscriptions(topicId, 1)).toEqual([]);
  });
});
