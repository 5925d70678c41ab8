/**
 * REST Proxy v2 metadata reads (`GET /topics`, `/topics/{t}`, `/topics/{t}/partitions[/{p}]`,
 * `/brokers`) in v2's shapes and error codes, and v2 consumer configs validated as the REST Proxy
 * does (42204).
 */
import { describe, expect, it } from 'vitest';
import { call, createTopic, uniqueTopic } from '../support/api.js';

const V2 = { accept: 'application/vnd.kafka.v2+json', 'content-type': 'application/vnd.kafka.v2+json' };
const get = (path: string) => call('GET', path, undefined, { accept: V2.accept });

describe('REST Proxy v2: metadata reads', () => {
  it('lists topics by name, and describes one with its configs and partitions (broker, leader, in_sync)', async () => {
    const t = uniqueTopic('v2meta');
    await createTopic(t, 2, 3, [{ name: 'retention.ms', value: '3600000' }]);
    const names = await get('/topics');
    expect(names.status).toBe(200);
    expect(names.headers.get('content-type')).toBe('application/vnd.kafka.v2+json');
    expect(names.body).toContain(t);
    expect(names.body.every((n: unknown) => typeof n === 'string')).toBe(true);

    const topic = await get(`/topics/${t}`);
    expect(topic.status).toBe(200);
    expect(topic.body.name).toBe(t);
    expect(topic.body.configs).toMatchObject({ 'retention.ms': '3600000', 'cleanup.policy': 'delete' });
    expect(topic.body.partitions.map((p: any) => p.partition)).toEqual([0, 1]);
    for (const p of topic.body.partitions) {
      expect(p.replicas.map((r: any) => r.broker).sort()).toEqual([1, 2, 3]);
      expect(p.replicas.filter((r: any) => r.leader)).toEqual([{ broker: p.leader, leader: true, in_sync: true }]);
    }

    const parts = await get(`/topics/${t}/partitions`);
    expect(parts.status).toBe(200);
    expect(parts.body).toEqual(topic.body.partitions);
    const one = await get(`/topics/${t}/partitions/1`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual(topic.body.partitions[1]);
  });

  it('answers a missing topic with 404/40401 and a missing partition with 404/40402', async () => {
    const t = uniqueTopic('v2meta-missing');
    await createTopic(t, 1, 1);
    for (const path of ['/topics/no-such-topic', '/topics/no-such-topic/partitions', '/topics/no-such-topic/partitions/0']) {
      const r = await get(path);
      expect(r.status, path).toBe(404);
      expect(r.body).toEqual({ error_code: 40401, message: expect.any(String) });
    }
    for (const p of ['1', '99', 'x']) {
      const r = await get(`/topics/${t}/partitions/${p}`);
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ error_code: 40402, message: expect.any(String) });
    }
  });

  it('lists the broker ids', async () => {
    const r = await get('/brokers');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ brokers: [1, 2, 3] });
  });
});

describe('REST Proxy v2: consumer configs', () => {
  it('refuses a negative or non-integer fetch.min.bytes with 422/42204 and creates no instance', async () => {
    const group = uniqueTopic('v2cfg');
    for (const bad of ['-1', -5, '1.5', 'lots', '99999999999']) {
      const r = await call('POST', `/consumers/${group}`, { name: 'c1', 'fetch.min.bytes': bad }, V2);
      expect(r.status, String(bad)).toBe(422);
      expect(r.body).toEqual({ error_code: 42204, message: expect.stringMatching(/fetch\.min\.bytes/) });
    }
    // None was created: the name is still free.
    const ok = await call('POST', `/consumers/${group}`, { name: 'c1', 'fetch.min.bytes': '0' }, V2);
    expect(ok.status, ok.text).toBe(200);
    expect((await call('DELETE', `/consumers/${group}/instances/c1`, undefined, V2)).status).toBe(204);
  });
});
