/**
 * Committed offsets and topic deletion, over HTTP against the shared stack: as Kafka drops a
 * deleted topic's offsets, a topic deleted and created again under the same name starts with none
 * — a group does not resume the new topic at the old topic's offset (skipping its records), and a
 * commit below the old offset is taken, not kept back.
 */
import { describe, expect, it } from 'vitest';
import { call, createTopic, uniqueTopic, v3 } from '../support/api.js';
import { until } from '../support/cluster.js';

const commit = (group: string, topic: string, offset: number) =>
  call('POST', v3(`/consumer-groups/${group}/offsets:commit`), { offsets: [{ topic, partition: 0, offset }] });
const offsetsOf = async (group: string) => (await call('GET', v3(`/consumer-groups/${group}/offsets`))).body.data as { topic_name: string; partition_id: number; offset: number }[];

describe('Committed offsets of a topic deleted and created again', () => {
  it('are absent for the new topic, and a lower commit to it is taken', async () => {
    const topic = uniqueTopic('recreated');
    const group = uniqueTopic('g-recreated');
    await createTopic(topic, 1, 3);
    const first = await commit(group, topic, 50);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect((await offsetsOf(group)).map((o) => o.offset)).toEqual([50]);

    expect((await call('DELETE', v3(`/topics/${topic}`))).status).toBe(204);
    await createTopic(topic, 1, 3);
    // (each function instance learns of the new topic within its metadata cache's age: 1 s)
    await until('the old topic\'s offset is gone', async () => (await offsetsOf(group)).length === 0, 10_000);

    const again = await commit(group, topic, 3);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.kept).toEqual([]);
    expect((await offsetsOf(group)).map((o) => [o.topic_name, o.partition_id, o.offset])).toEqual([[topic, 0, 3]]);
  });

  it('keep moving forward only, within one topic', async () => {
    const topic = uniqueTopic('kept');
    const group = uniqueTopic('g-kept');
    await createTopic(topic, 1, 3);
    expect((await commit(group, topic, 10)).status).toBe(200);
    const lower = await commit(group, topic, 4);
    expect(lower.status).toBe(200);
    expect(lower.body.kept).toEqual([{ topic, partition: 0, offset: 4 }]);
    expect((await offsetsOf(group)).map((o) => o.offset)).toEqual([10]);
  });
});
