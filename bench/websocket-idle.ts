/**
 * Idle WebSocket subscribers in Lambda-fidelity mode: SUBSCRIBERS connections to `/ws`, each
 * subscribed to one of PARTITIONS partitions at `latest`, wait IDLE_S seconds with nothing to
 * read while `/local/lambda` is sampled twice a second — the websocket function's environments
 * busy, and its invocations, during the wait (the target: none; a long-polling consumer holds a
 * fetch environment for its whole wait). Then one record is produced to each partition and the
 * time until every subscriber has its partition's record is measured (the fan-out). The baseline
 * is what the same wait costs over HTTP: one fetch environment per waiting consumer.
 * Run: `npm run bench -- websocket-idle [--quick]`.
 */
import { WebSocket } from 'ws';
import { startLocalStack } from '../local/stack.js';
import { fmt, isQuick, percentile, writeResult } from './lib/report.js';

const SUBSCRIBERS = isQuick() ? 50 : 1000;
const PARTITIONS = 10;
const IDLE_S = isQuick() ? 3 : 60;
/** Connections opened at once (each `$connect` and `subscribe` is an invocation; the stack runs up to 40 environments at once). */
const WAVE = 20;
const SUBSCRIBE_TIMEOUT_MS = 10_000;

interface LambdaStats { environments: { fn: string; state: string; invocations: number }[] }

const s = await startLocalStack({ port: 0, inMemory: true, controllers: 0, controllerScheduleMs: 0, lambda: { concurrency: 40 } });
const v3 = `${s.url}/v3/clusters/${s.clusterId}`;
const post = (p: string, b: unknown) => fetch(`${v3}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(b) }).then(async (r) => ({ status: r.status, text: await r.text() }));
const lambdaStats = async (): Promise<LambdaStats> => (await fetch(`${s.url}/local/lambda`)).json() as Promise<LambdaStats>;
const websocketInvocations = (st: LambdaStats) => st.environments.filter((e) => e.fn === 'websocket').reduce((n, e) => n + e.invocations, 0);
const busyWebsocket = (st: LambdaStats) => st.environments.filter((e) => e.fn === 'websocket' && e.state === 'busy').length;

const topic = 'idle-subscribers';
const created = await post('/topics', { topic_name: topic, partitions_count: PARTITIONS, replication_factor: 3 });
if (created.status !== 201) throw new Error(`create topic: ${created.status} ${created.text}`);

// (warm-up: the produce function's environments the fan-out uses, started before anyone subscribes)
await Promise.all(Array.from({ length: PARTITIONS }, (_, p) => post(`/topics/${topic}/records`, { partition_id: p, value: { type: 'STRING', data: `warm-${p}` } })));

interface Subscriber { ws: WebSocket; partition: number; got?: number }
const subscribers: Subscriber[] = [];
let refused = 0;
const rssBefore = process.memoryUsage().rss;
const subscribeStarted = performance.now();
// (in waves, as clients arrive: each subscribe is one invocation of the websocket function)
for (let wave = 0; wave < SUBSCRIBERS; wave += WAVE) {
  await Promise.all(Array.from({ length: Math.min(WAVE, SUBSCRIBERS - wave) }, async (_, i) => {
    const partition = (wave + i) % PARTITIONS;
    // (a $connect the stack's concurrency limit throttles is refused with 500, as API Gateway refuses
    // one whose function is throttled, and a throttled subscribe is never answered: the client connects again)
    for (let attempt = 0; ; attempt++) {
      const sub: Subscriber = { ws: new WebSocket(`${s.url.replace(/^http/, 'ws')}/ws`), partition };
      const ok = await new Promise<boolean>((resolve) => {
        // (a subscribe whose invocation was throttled is answered by nothing: after a while the client tries again)
        const timer = setTimeout(() => {
          sub.ws.terminate();
          resolve(false);
        }, SUBSCRIBE_TIMEOUT_MS);
        sub.ws.once('error', () => {
          clearTimeout(timer);
          resolve(false);
        });
        sub.ws.on('message', (d) => {
          const f = JSON.parse(String(d)) as { type: string };
          if (f.type === 'subscribed') {
            clearTimeout(timer);
            resolve(true);
          }
          if (f.type === 'records' && sub.got === undefined) sub.got = performance.now();
        });
        sub.ws.once('open', () => sub.ws.send(JSON.stringify({ action: 'subscribe', topic, partition: sub.partition, offset: 'latest' })));
      });
      if (ok) {
        subscribers.push(sub);
        break;
      }
      refused++;
      if (attempt >= 10) throw new Error('a subscriber could not connect in 10 attempts');
      await new Promise((r) => setTimeout(r, 200 * 2 ** Math.min(attempt, 4)));
    }
  }));
}
const subscribeMs = performance.now() - subscribeStarted;

// The wait: nothing to read (from when the subscribes' own invocations have ended).
const settleStarted = performance.now();
while (busyWebsocket(await lambdaStats()) > 0 && performance.now() - settleStarted < 10_000) await new Promise((r) => setTimeout(r, 100));
const settleMs = performance.now() - settleStarted;
const before = await lambdaStats();
let maxBusy = 0;
const idleEnd = Date.now() + IDLE_S * 1000;
while (Date.now() < idleEnd) {
  maxBusy = Math.max(maxBusy, busyWebsocket(await lambdaStats()));
  await new Promise((r) => setTimeout(r, 500));
}
const after = await lambdaStats();
const idleInvocations = websocketInvocations(after) - websocketInvocations(before);
const rssIdle = process.memoryUsage().rss;

// The fan-out: one record per partition.
const producedAt = performance.now();
const produceMs: number[] = [];
await Promise.all(Array.from({ length: PARTITIONS }, async (_, p) => {
  await post(`/topics/${topic}/records`, { partition_id: p, value: { type: 'STRING', data: `wake-${p}` } });
  produceMs.push(performance.now() - producedAt);
}));
const deadline = Date.now() + 60_000;
while (subscribers.some((x) => x.got === undefined) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
const latencies = subscribers.filter((x) => x.got !== undefined).map((x) => (x.got as number) - producedAt);
const received = latencies.length;
const deliveryInvocations = websocketInvocations(await lambdaStats()) - websocketInvocations(after);

for (const x of subscribers) x.ws.close();
await s.stop();

const ms = (n: number) => `${fmt(n)} ms`;
await writeResult({
  scenario: 'websocket-idle',
  title: `${fmt(SUBSCRIBERS)} idle WebSocket subscribers`,
  description: `Lambda-fidelity local stack, one topic of ${PARTITIONS} RF 3 partitions; ${fmt(SUBSCRIBERS)} connections to /ws, each subscribed to one partition at latest, wait ${IDLE_S} s with nothing to read while /local/lambda is sampled every 500 ms; then one record is produced to each partition. The baseline: over HTTP each of those consumers would hold a fetch environment for its whole long poll.`,
  tables: [
    {
      title: 'While they wait',
      columns: ['subscribers', 'subscribe all', 'connects or subscribes throttled (retried)', 'until their invocations ended', 'wait', 'websocket environments busy (max)', 'websocket invocations during the wait', 'fetch environments the same wait holds over HTTP', 'RSS growth of this process (the gateway and the clients)'],
      rows: [[fmt(SUBSCRIBERS), ms(subscribeMs), fmt(refused), ms(settleMs), `${IDLE_S} s`, String(maxBusy), String(idleInvocations), fmt(SUBSCRIBERS), `${fmt((rssIdle - rssBefore) / 1048576)} MiB`]],
    },
    {
      title: 'Fan-out: one record to each partition',
      columns: ['received', 'websocket invocations', 'produce (acks=all) p50', 'delivered p50', 'p99', 'max'],
      rows: [[`${fmt(received)} of ${fmt(SUBSCRIBERS)}`, String(deliveryInvocations), ms(percentile(produceMs, 0.5)), ms(percentile(latencies, 0.5)), ms(percentile(latencies, 0.99)), ms(Math.max(...latencies))]],
      notes: ['Times from the start of the produce requests. Each produce wakes one invocation for its partition, which posts to every subscriber of it; the function runs while it posts, not while they wait.'],
    },
  ],
  data: { refused, subscribers: SUBSCRIBERS, partitions: PARTITIONS, idleSeconds: IDLE_S, subscribeMs, settleMs, produceMs, maxBusy, idleInvocations, received, deliveryInvocations, latencies },
});
if (maxBusy > 0 || idleInvocations > 0 || received < SUBSCRIBERS) {
  process.stderr.write(`idle subscribers held functions or missed records: busy ${maxBusy}, invocations ${idleInvocations}, received ${received}/${SUBSCRIBERS}\n`);
  process.exit(1);
}
process.exit(0);
