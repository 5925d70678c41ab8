/**
 * The TypeScript SDK (lib/client) against the shared local stack: round trips, idempotent retries
 * when an answer is lost after the server wrote, two consumers of one group rebalancing, seek,
 * pause/resume, admin, and SigV4 signing compared with the AWS SDK's own signer.
 */
import { describe, expect, it } from 'vitest';
import { SignatureV4 } from '@smithy/signature-v4';
import { Sha256 } from '@aws-crypto/sha256-js';
import { baseUrl, call, createTopic, uniqueTopic, v3 } from '../support/api.js';
import { until } from '../support/cluster.js';
import { Tributary, TributaryProtocolError, partitionForKey, signV4, type FetchLike, type KafkaMessage } from '../../client/index.js';

const client = (extra: Partial<ConstructorParameters<typeof Tributary>[0]> = {}) => new Tributary({ url: baseUrl(), ...extra });
const text = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How `until` waits here: on what the test has seen so far, checked every 50 ms; a check that throws ends the wait. */
const IN_MEMORY = { everyMs: 50, retry: false } as const;

/** Every record of a topic, partition by partition, read with the SDK's fetch. */
async function readAll(t: Tributary, topic: string): Promise<{ partition: number; message: KafkaMessage }[]> {
  const n = await t.connection.partitionCount(topic, true);
  const out: { partition: number; message: KafkaMessage }[] = [];
  for (let partition = 0; partition < n; partition++) {
    const { high } = await t.connection.listOffset(topic, partition, 'latest');
    for (let offset = 0; offset < high;) {
      const r = await t.connection.fetch(topic, partition, offset);
      for (const message of r.messages) out.push({ partition, message });
      offset = r.nextOffset;
    }
  }
  return out;
}

describe('Producer and consumer round trip', () => {
  it('sends keyed records where Kafka\'s partitioner puts them and a group consumer reads every one back, with headers', async () => {
    const topic = uniqueTopic('sdk-rt');
    await createTopic(topic, 3, 3);
    const t = client();
    const producer = t.producer();
    await producer.connect();
    const keys = Array.from({ length: 60 }, (_, i) => `key-${i}`);
    const meta = await producer.send({ topic, messages: keys.map((k, i) => ({ key: k, value: `value-${i}`, headers: { source: 'sdk' } })) });
    expect(meta.reduce((n, m) => n + m.offsets.length, 0)).toBe(60);
    await producer.disconnect();
    const stored = await readAll(t, topic);
    expect(stored).toHaveLength(60);
    for (const { partition, message } of stored) {
      expect(partition).toBe(partitionForKey(message.key as Uint8Array, 3));
      expect(text(message.headers.source ?? null)).toBe('sdk');
    }

    const seen: string[] = [];
    const consumer = t.consumer({ groupId: uniqueTopic('sdk-rt-group'), sessionTimeout: 10_000 });
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => { seen.push(text(message.value) as string); } });
    await until('60 records', () => seen.length >= 60, IN_MEMORY);
    await consumer.disconnect();
    expect(seen.sort()).toEqual(keys.map((_, i) => `value-${i}`).sort());
  });

  it('gathers many small sends within linger.ms into one request per topic', async () => {
    const topic = uniqueTopic('sdk-linger');
    await createTopic(topic, 4, 1);
    const t = client();
    const producer = t.producer({ lingerMs: 50 });
    await producer.connect();
    const before = t.requestCount;
    await Promise.all(Array.from({ length: 200 }, (_, i) => producer.send({ topic, messages: [{ key: `k${i}`, value: `v${i}` }] })));
    expect(t.requestCount - before).toBeLessThanOrEqual(2);
    expect(await readAll(t, topic)).toHaveLength(200);
  });

  it('fails a send to a topic that does not exist with UNKNOWN_TOPIC_OR_PARTITION, writing nothing', async () => {
    const producer = client().producer();
    const err = await producer.send({ topic: uniqueTopic('sdk-missing'), messages: [{ value: 'x' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TributaryProtocolError);
    expect((err as TributaryProtocolError).type).toBe('UNKNOWN_TOPIC_OR_PARTITION');
  });
});

describe('Idempotent retries', () => {
  it('where the answer to a produce is lost after the server wrote, the retry writes every record once and returns the same offsets', async () => {
    const topic = uniqueTopic('sdk-idem');
    await createTopic(topic, 3, 3);
    let dropped = 0;
    // Performs the request, then throws as if the connection broke before the answer came.
    const lossy: FetchLike = async (url, init) => {
      const res = await fetch(url, init);
      if (url.includes('records:batch') && dropped < 2) {
        dropped++;
        await res.text();
        throw new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } });
      }
      return res;
    };
    const t = client({ fetch: lossy, retry: { initialRetryTime: 20 } });
    const producer = t.producer();
    const meta = await producer.send({ topic, messages: Array.from({ length: 30 }, (_, i) => ({ key: `k${i}`, value: `once-${i}` })) });
    expect(dropped).toBe(2);
    const stored = await readAll(client(), topic);
    expect(stored.map((s) => text(s.message.value)).sort()).toEqual(Array.from({ length: 30 }, (_, i) => `once-${i}`).sort());
    // The offsets send reported are the records' offsets.
    for (const m of meta) expect(m.offsets).toEqual(stored.filter((s) => s.partition === m.partition).map((s) => s.message.offset));
  });

  it('without idempotence the same lost answer writes the records twice (why idempotence is on by default)', async () => {
    const topic = uniqueTopic('sdk-dup');
    await createTopic(topic, 1, 3);
    let dropped = 0;
    const lossy: FetchLike = async (url, init) => {
      const res = await fetch(url, init);
      if (url.includes('records:batch') && dropped++ === 0) throw new TypeError('fetch failed');
      return res;
    };
    const producer = client({ fetch: lossy, retry: { initialRetryTime: 20 } }).producer({ idempotent: false });
    await producer.send({ topic, messages: [{ value: 'twice' }] });
    expect(await readAll(client(), topic)).toHaveLength(2);
  });
});

describe('Consumer groups', () => {
  it('two consumers of one group split the partitions when the second joins, and together read every record, none twice', async () => {
    const topic = uniqueTopic('sdk-rebalance');
    await createTopic(topic, 4, 1);
    const t = client();
    const producer = t.producer();
    const total = 400;
    await producer.send({ topic, messages: Array.from({ length: total / 2 }, (_, i) => ({ key: `k${i}`, value: `r${i}` })) });
    const groupId = uniqueTopic('sdk-rebalance-group');
    const seen = new Map<string, number>();
    const by = { a: 0, b: 0 };
    const revoked: unknown[] = [];
    const make = () => t.consumer({
      groupId, sessionTimeout: 6000,
      rebalanceListener: { onPartitionsRevoked: (tps) => { revoked.push(...tps); } },
    });
    const a = make();
    await a.subscribe({ topics: [topic], fromBeginning: true });
    const handler = (name: 'a' | 'b') => async ({ message }: { message: KafkaMessage }) => {
      const v = text(message.value) as string;
      seen.set(v, (seen.get(v) ?? 0) + 1);
      by[name]++;
      await sleep(2);
    };
    await a.run({ eachMessage: handler('a'), autoCommitInterval: 200 });
    await until('a reads some', () => by.a > 20, IN_MEMORY);
    const b = make();
    await b.subscribe({ topics: [topic], fromBeginning: true });
    await b.run({ eachMessage: handler('b'), autoCommitInterval: 200 });
    await until('both own partitions', () => a.assignment().length > 0 && b.assignment().length > 0 && a.assignment().length + b.assignment().length === 4, IN_MEMORY);
    await producer.send({ topic, messages: Array.from({ length: total / 2 }, (_, i) => ({ key: `k${i + total / 2}`, value: `r${i + total / 2}` })) });
    await until('every record', () => seen.size >= total, { ...IN_MEMORY, ms: 45_000 });
    await a.disconnect();
    await b.disconnect();
    expect(seen.size).toBe(total);
    expect(revoked.length).toBeGreaterThan(0);
    expect(by.b).toBeGreaterThan(0);
    const twice = [...seen].filter(([, n]) => n > 1);
    expect(twice).toEqual([]);
  });

  it('seek re-reads a partition from the offset given; pause stops a partition until resume', async () => {
    const topic = uniqueTopic('sdk-seek');
    await createTopic(topic, 1, 1);
    const t = client();
    await t.producer().send({ topic, messages: Array.from({ length: 10 }, (_, i) => ({ value: `s${i}` })) });
    const offsets: number[] = [];
    const consumer = t.consumer({ groupId: uniqueTopic('sdk-seek-group'), maxWaitTimeInMs: 500 });
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    let sought = false;
    await consumer.run({
      eachMessage: async ({ message }) => {
        offsets.push(Number(message.offset));
        if (message.offset === '9' && !sought) {
          sought = true;
          consumer.seek({ topic, partition: 0, offset: '5' });
        }
      },
    });
    await until('the re-read', () => offsets.length >= 15, IN_MEMORY);
    expect(offsets).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 5, 6, 7, 8, 9]);

    consumer.pause([{ topic }]);
    expect(consumer.paused()).toEqual([{ topic, partitions: [0] }]);
    await t.producer().send({ topic, messages: [{ value: 'after-pause' }] });
    await sleep(1000);
    expect(offsets).toHaveLength(15);
    consumer.resume([{ topic }]);
    await until('the record sent while paused', () => offsets.length === 16, IN_MEMORY);
    await consumer.disconnect();
  });

  it('commits what eachMessage finished, so the group\'s lag reaches 0 and a reset moves the offsets back', async () => {
    const topic = uniqueTopic('sdk-commit');
    await createTopic(topic, 2, 1);
    const t = client();
    await t.producer().send({ topic, messages: Array.from({ length: 20 }, (_, i) => ({ key: `k${i}`, value: `c${i}` })) });
    const groupId = uniqueTopic('sdk-commit-group');
    let n = 0;
    const consumer = t.consumer({ groupId });
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({ eachMessage: async () => { n++; } });
    await until('20 records', () => n >= 20, IN_MEMORY);
    await consumer.disconnect();
    const admin = t.admin();
    const lag = await admin.fetchGroupLag(groupId);
    expect(lag.map((l) => l.lag)).toEqual([0, 0]);
    expect((await admin.fetchOffsets({ groupId, topics: [topic] }))[0]?.partitions.reduce((s, p) => s + Number(p.offset), 0)).toBe(20);
    await admin.resetOffsets({ groupId, topic, earliest: true });
    expect((await admin.fetchGroupLag(groupId)).reduce((s, l) => s + l.lag, 0)).toBe(20);
  });
});

describe('Joining', () => {
  it('retries a join that got a 5xx (a function that timed out in its init, say) and joins', async () => {
    const topic = uniqueTopic('sdk-join');
    await createTopic(topic, 1, 1);
    let failed = 0;
    const flaky: FetchLike = async (url, init) => {
      if (url.includes('/heartbeat') && failed < 2) {
        failed++;
        return new Response(JSON.stringify({ message: 'Internal Server Error' }), { status: 500, headers: { 'content-type': 'application/json' } });
      }
      return fetch(url, init);
    };
    const consumer = client({ fetch: flaky, retry: { initialRetryTime: 20 } }).consumer({ groupId: uniqueTopic('sdk-join-group') });
    await consumer.subscribe({ topics: [topic] });
    await consumer.run({ eachMessage: async () => {} });
    expect(failed).toBe(2);
    expect(consumer.assignment()).toEqual([{ topic, partition: 0 }]);
    await consumer.disconnect();
  });
});

describe('A commit racing a heartbeat', () => {
  it('where the server moved the member epoch on and the heartbeat\'s answer is still on its way, the commit is answered STALE_MEMBER_EPOCH and sent again with the new epoch: committed, no crash', async () => {
    const topic = uniqueTopic('sdk-stale');
    await createTopic(topic, 2, 1);
    const groupId = uniqueTopic('sdk-stale-group');
    let epoch = 0;
    let kept: number | undefined;
    let held = false;
    let release!: () => void;
    const gate = new Promise<void>((r) => { release = r; });
    const commits: string[] = [];
    // Holds back the first heartbeat answer that moves the epoch on: the server has moved it, the client has not heard.
    const gated: FetchLike = async (url, init) => {
      const res = await fetch(url, init);
      if (url.includes('/heartbeat') && res.ok) {
        const body = await res.clone().json() as { member_epoch: number; assignment: { partition: number }[] };
        if (epoch > 0 && body.member_epoch > epoch && !held) {
          held = true;
          kept = body.assignment[0]?.partition;
          await gate;
        }
        epoch = Math.max(epoch, body.member_epoch);
      }
      if (url.includes('offsets:commit')) commits.push(`${res.status} ${res.ok ? '' : (await res.clone().json() as { message: string }).message.split(':')[0]}`.trim());
      return res;
    };
    const a = client({ fetch: gated }).consumer({ groupId });
    const crashes: unknown[] = [];
    a.on('consumer.crash', (e) => crashes.push(e));
    await a.subscribe({ topics: [topic], fromBeginning: true });
    await a.run({ eachMessage: async () => {}, autoCommit: false });
    await until('a owns both partitions', () => a.assignment().length === 2, IN_MEMORY);
    // A second member joins: a is told to give a partition up, and the heartbeat after that moves its epoch on.
    expect((await call('POST', v3(`/consumer-groups/${groupId}/heartbeat`), { member_epoch: 0, subscribed_topic_names: [topic], session_timeout_ms: 60_000 })).status).toBe(200);
    await until('the epoch-moving answer held back', () => held, { ...IN_MEMORY, ms: 20_000 });
    setTimeout(release, 150);
    await a.commitOffsets([{ topic, partition: kept as number, offset: '1' }]);
    await a.disconnect();
    expect(commits[0]).toBe('409 STALE_MEMBER_EPOCH');
    expect(commits.at(-1)).toBe('200');
    expect(crashes).toEqual([]);
    const offsets = (await call('GET', v3(`/consumer-groups/${groupId}/offsets`))).body.data as { partition_id: number; offset: number }[];
    expect(offsets.map((o) => [o.partition_id, o.offset])).toEqual([[kept, 1]]);
  });
});

describe('Admin', () => {
  it('creates, describes, grows, configures and deletes a topic; describes the cluster', async () => {
    const admin = client().admin();
    const topic = uniqueTopic('sdk-admin');
    expect(await admin.createTopics({ topics: [{ topic, numPartitions: 2, replicationFactor: 2, configEntries: [{ name: 'retention.ms', value: '3600000' }] }] })).toBe(true);
    expect(await admin.createTopics({ topics: [{ topic }] })).toBe(false);
    expect(await admin.listTopics()).toContain(topic);
    const meta = await admin.fetchTopicMetadata({ topics: [topic] });
    expect(meta.topics[0]?.partitions.map((p) => p.partitionId)).toEqual([0, 1]);
    for (const p of meta.topics[0]?.partitions ?? []) {
      expect(p.leader).toBeGreaterThan(0);
      expect(p.isr.length).toBeGreaterThan(0);
    }
    await admin.createPartitions({ topicPartitions: [{ topic, count: 3 }] });
    expect(await admin.fetchTopicOffsets(topic)).toHaveLength(3);
    await admin.alterConfigs({ resources: [{ type: 2, name: topic, configEntries: [{ name: 'max.message.bytes', value: '2000000' }] }] });
    const configs = await admin.describeConfigs({ resources: [{ type: 2, name: topic, configNames: ['retention.ms', 'max.message.bytes'] }] });
    expect(Object.fromEntries(configs.resources[0]?.configEntries.map((c) => [c.configName, c.configValue]) ?? [])).toEqual({ 'retention.ms': '3600000', 'max.message.bytes': '2000000' });
    const bad = await admin.createTopics({ topics: [{ topic: uniqueTopic('sdk-bad'), numPartitions: 0 }] }).catch((e: unknown) => e);
    expect((bad as TributaryProtocolError).type).toBe('INVALID_PARTITIONS');
    await admin.deleteTopics({ topics: [topic] });
    expect(await admin.listTopics()).not.toContain(topic);

    const cluster = await admin.describeCluster();
    expect(cluster.brokers.map((b) => b.nodeId).sort()).toEqual([1, 2, 3]);
    expect(typeof cluster.clusterId).toBe('string');
  });
});

describe('Auth', () => {
  const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', sessionToken: 'session' };
  const signingDate = new Date('2026-12-01T12:00:00Z');

  it('signs a request as the AWS SDK\'s SignatureV4 signs the same request for the same credentials and time', async () => {
    const url = new URL('https://abc123.execute-api.eu-west-1.amazonaws.com/v3/clusters/c1/topics/orders/records:batch?acks=all&producer_id=7');
    const body = JSON.stringify({ entries: [{ id: 0, value: { type: 'STRING', data: 'x' } }] });
    const ours = await signV4({ method: 'POST', url, headers: { 'content-type': 'application/json' }, body }, { region: 'eu-west-1', service: 'execute-api', credentials, signingDate });
    const reference = await new SignatureV4({ service: 'execute-api', region: 'eu-west-1', credentials, sha256: Sha256 }).sign({
      method: 'POST', protocol: 'https:', hostname: url.hostname, path: url.pathname, query: { acks: 'all', producer_id: '7' },
      headers: { 'content-type': 'application/json', host: url.hostname }, body,
    }, { signingDate });
    expect(ours.authorization).toBe(reference.headers.authorization);
    expect(ours.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20261201\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature=[0-9a-f]{64}$/);
    expect(ours['x-amz-security-token']).toBe('session');
  });

  it('sends the signature (iam) or the bearer token (token) with every request, and the cluster still answers', async () => {
    const seen: Record<string, string>[] = [];
    const spy: FetchLike = (url, init) => {
      seen.push(init.headers as Record<string, string>);
      return fetch(url, init);
    };
    await client({ fetch: spy, auth: { type: 'iam', region: 'us-east-1', credentials: async () => credentials } }).admin().listTopics();
    expect(seen.at(-1)?.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/execute-api\/aws4_request/);
    await client({ fetch: spy, auth: { type: 'token', token: async () => 't0ken' } }).admin().listTopics();
    expect(seen.at(-1)?.authorization).toBe('Bearer t0ken');
  });
});
