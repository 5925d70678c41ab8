/**
 * End to end (the target: p50 and p99 ≤ 2 × the acks=all produce p50): one producer sends
 * 1 KiB records with acks=all, one after another; one consumer long-polls for them as a client
 * would, and each record's latency runs from the start of its produce request to the moment the
 * consumer has its response. Two consumers, one at a time:
 *   v3 fetch     GET .../partitions/0/records?offset=N&timeout=5000 (the long poll of lib/log/read.ts)
 *   v2 consumer  a REST Proxy v2 consumer instance with the partition assigned,
 *                GET /consumers/.../records?timeout=5000 (lib/groups/rest-consumer.ts poll)
 *   WebSocket    a subscriber of the partition on /ws: the produce's commit wakes the websocket
 *                function, which posts the records (lib/orchestration/websocket-delivery.ts)
 * Each twice: in one process (the in-process gateway, as the other benches), and in Lambda-fidelity
 * mode (every function its own worker process, frozen between invocations, as AWS runs them: a
 * commit in a produce instance cannot wake a long poll waiting in a fetch instance, which sees the
 * records at its next re-read of the head; the WebSocket's wake is an asynchronous invocation).
 * Run: `npm run bench -- end-to-end [--quick]`.
 */
import './lib/env.js';
import { isQuick, writeResult, type Table } from './lib/report.js';
import { RequestRecorder, STACK_NOTE, formatCalls, http, pct, startBenchStack, summarize } from './lib/load.js';
import { WebSocket } from 'ws';
import { startLocalStack, type LocalStack } from '../local/stack.js';

const quick = isQuick();
const SECONDS = quick ? 2 : 30;
const WAIT_MS = 5000;
const PAD = 'x'.repeat(1024 - 16);

let U = '';
let C = '';
const recorder = new RequestRecorder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Phase { consumer: string; produce: number[]; e2e: number[]; sent: number; received: number; polls: number }

type Consume = (stopped: () => boolean, seen: (value: string, at: number) => void, poll: () => void) => Promise<void>;
/** One consumer of a topic: `consume(stop, seen, poll)` calls `seen(value, at)` for every record it gets and returns once `stop()` is true and it has caught up. */
interface Lane { readonly consumer: string; readonly topic: string; readonly consume: Consume }

/**
 * Produces for SECONDS while the lanes' consumers run, one record at a time to each lane's topic
 * in turn (lanes measured side by side share whatever load the machine has).
 */
async function measure(lanes: readonly Lane[]): Promise<Phase[]> {
  const runs = lanes.map((lane) => {
    const sentAt = new Map<number, number>();
    const p: Phase = { consumer: lane.consumer, produce: [], e2e: [], sent: 0, received: 0, polls: 0 };
    const seen = (value: string, at: number) => {
      const i = Number(/^e2e:(\d+):/.exec(value)?.[1]);
      const t = sentAt.get(i);
      if (t === undefined) return;
      sentAt.delete(i);
      p.e2e.push(at - t);
      p.received++;
    };
    return { lane, p, sentAt, seen };
  });
  let stop = false;
  let abandoned = false;
  const consuming = runs.map((r) => recorder.during(`consume ${r.lane.consumer}`, () => r.lane.consume(() => abandoned || (stop && r.sentAt.size === 0), r.seen, () => r.p.polls++)));
  // Warm-up (not measured; the consumers skip these): the first requests of a topic fill caches.
  for (let i = 0; i < 5; i++) for (const r of runs) await http(`${C}/topics/${r.lane.topic}/records?acks=all`, 'POST', { partition_id: 0, value: { type: 'STRING', data: `warm-up ${i}` } });
  await sleep(300); // the consumers are waiting before the first record is sent
  const end = performance.now() + SECONDS * 1000;
  for (let i = 0; performance.now() < end; i++) {
    for (const r of runs) {
      const t = performance.now();
      r.sentAt.set(i, t);
      const res = await http(`${C}/topics/${r.lane.topic}/records?acks=all`, 'POST', { partition_id: 0, value: { type: 'STRING', data: `e2e:${String(i).padStart(8, '0')}:${PAD}` } });
      if (res.error_code !== 200) throw new Error(`produce failed: ${JSON.stringify(res)}`);
      r.p.produce.push(performance.now() - t);
      r.p.sent++;
      await sleep(i % 4 * 5); // a little irregular, so that records do not always land just after a poll
    }
  }
  stop = true;
  await Promise.race([Promise.all(consuming), sleep(WAIT_MS + 2000)]);
  abandoned = true; // records never delivered by now stay missing (received < sent)
  await Promise.all(consuming.map((c, i) => c.catch((err: unknown) => process.stderr.write(`consumer ${runs[i]?.lane.consumer} failed: ${(err as Error).message}\n`))));
  return runs.map((r) => r.p);
}

/** One consumer measured alone. */
const phase = async (consumer: string, topic: string, consume: Consume): Promise<Phase> => (await measure([{ consumer, topic, consume }]))[0] as Phase;

/** 1. v3 fetch with a wait. */
async function v3Lane(mode: string): Promise<Lane> {
  const topic = `e2e-v3-${mode.replace(/\W+/g, '-')}`;
  await newTopic(topic);
  return { consumer: `v3 fetch (long poll), ${mode}`, topic, consume: async (stopped, seen, poll) => {
    let offset = 0;
    while (!stopped()) {
      poll();
      const r = await http(`${C}/topics/${topic}/partitions/0/records?offset=${offset}&timeout=${WAIT_MS}&max_bytes=1048576&format=string`);
      const at = performance.now();
      for (const rec of r.records as { value: { data: string } }[]) seen(rec.value.data, at);
      offset = r.next_offset as number;
    }
  } };
}

/** 3. A WebSocket subscriber (no request while it waits: "consumer requests" counts the frames it got). */
async function wsLane(mode: string): Promise<Lane> {
  const topic = `e2e-ws-${mode.replace(/\W+/g, '-')}`;
  await newTopic(topic);
  return { consumer: `WebSocket subscriber, ${mode}`, topic, consume: async (stopped, seen, frame) => {
    const socket = new WebSocket(`${U.replace(/^http/, 'ws')}/ws`);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    const subscribed = new Promise<void>((resolve) => socket.on('message', (data) => {
      const f = JSON.parse(String(data)) as { type: string; records?: { value: string }[] };
      if (f.type === 'subscribed') resolve();
      if (f.type !== 'records') return;
      frame();
      const at = performance.now();
      for (const r of f.records ?? []) seen(Buffer.from(r.value, 'base64').toString('utf8'), at);
    }));
    socket.send(JSON.stringify({ action: 'subscribe', topic, partition: 0, offset: 'latest' }));
    await subscribed;
    while (!stopped()) await sleep(20);
    socket.close();
  } };
}

const useStack = (s: LocalStack): LocalStack => {
  U = s.url;
  C = `${U}/v3/clusters/${s.clusterId}`;
  return s;
};
/** A topic of one RF 3 partition, created through the gateway (the stack of the moment). */
const newTopic = (name: string) => http(`${C}/topics`, 'POST', { topic_name: name, partitions_count: 1, replication_factor: 3 });

const inProcess = useStack(await startBenchStack());
const v3 = await measure([await v3Lane('one process')]).then(([p]) => p as Phase);

// 2. A REST Proxy v2 consumer instance with the partition assigned.
await newTopic('e2e-v2');
const instance = await http(`${U}/consumers/e2e`, 'POST', { name: 'e2e-1', format: 'binary', 'auto.offset.reset': 'earliest' });
await http(`${instance.base_uri as string}/assignments`, 'POST', { partitions: [{ topic: 'e2e-v2', partition: 0 }] });
const v2 = await phase('v2 consumer instance, one process', 'e2e-v2', async (stopped, seen, poll) => {
  while (!stopped()) {
    poll();
    const r = await fetch(`${instance.base_uri as string}/records?timeout=${WAIT_MS}&max_bytes=1048576`, { headers: { accept: 'application/vnd.kafka.binary.v2+json' } });
    const body = await r.json() as { value: string }[];
    if (r.status !== 200) throw new Error(`v2 poll: ${r.status} ${JSON.stringify(body)}`);
    const at = performance.now();
    for (const rec of body) seen(Buffer.from(rec.value, 'base64').toString('utf8'), at);
  }
});
const ws = await measure([await wsLane('one process')]).then(([p]) => p as Phase);
recorder.stop();
await inProcess.stop();
// The same in Lambda-fidelity mode (stores as above; acks=all replicates inline, no controller).
const fidelity = useStack(await startLocalStack({
  port: 0, brokers: 3, ...(quick ? { isolatedBrokers: false, inMemory: true } : { isolatedBrokers: true, inMemory: false }),
  controllers: 0, controllerScheduleMs: 0, replicator: false, lambda: { concurrency: 16 },
}));
// (side by side: records to the two topics in turn, so both see the same load)
const [v3Lambda, wsLambda] = await measure([await v3Lane('Lambda'), await wsLane('Lambda')]) as [Phase, Phase];
await fidelity.stop();

const phases = [v3, v2, ws, v3Lambda, wsLambda];
const row = (p: Phase) => {
  const produceP50 = pct(p.produce, 0.5);
  const e50 = pct(p.e2e, 0.5);
  const e99 = pct(p.e2e, 0.99);
  return [p.consumer, p.sent, p.received, produceP50, pct(p.produce, 0.99), e50, e99, `${(e50 / produceP50).toFixed(2)} ×`, `${(e99 / produceP50).toFixed(2)} ×`, p.polls];
};
const table: Table = {
  title: 'Produce (acks=all) to delivery, ms',
  columns: ['consumer', 'records sent', 'received', 'produce p50', 'produce p99', 'end-to-end p50', 'end-to-end p99', 'e2e p50 / produce p50', 'e2e p99 / produce p50', 'consumer requests'],
  rows: phases.map(row),
  notes: [
    'Target: end-to-end p50 and p99 ≤ 2 × the acks=all produce p50 of the same run; over the WebSocket, end to end no worse than the long poll.',
    'In one process a commit wakes a long poll of the same process at once; in Lambda-fidelity mode (as in AWS) the produce and fetch instances are apart, and the long poll sees the records at its next re-read of the head.',
    'WebSocket: "consumer requests" are the records frames it received; it sends nothing while it waits.',
  ],
};
const consumerCalls: Table = {
  title: 'Store calls per consumer request (the gateway\'s request observer)',
  columns: ['consumer', 'requests', 'round trips p50', 'round trips max', 'store calls per request, by op'],
  rows: [v3, v2].map((p) => {
    const s = summarize(recorder.byLabel.get(`consume ${p.consumer}`)?.filter((r) => r.route.startsWith('GET')) ?? []);
    return [p.consumer, s.requests, s.p50, s.max, formatCalls(s.callsByOp)];
  }),
  notes: ['Only the consumer\'s GETs are counted. A long poll that waits re-reads the head while it waits, so its calls grow with the wait. The WebSocket subscriber sends no request: the websocket function reads for it when a commit wakes it.'],
};
const cdf = phases.flatMap((p) => [...p.e2e].sort((a, b) => a - b).map((ms, i, all) => ({ consumer: p.consumer, ms, quantile: (i + 1) / all.length })));
await writeResult({
  scenario: 'end-to-end',
  title: 'End to end: produce (acks=all) to a long-polling consumer and to a WebSocket subscriber',
  description: `${STACK_NOTE} One partition, RF 3, 1 KiB records, one producer sending one record per request (acks=all) for ${SECONDS} s with 0–15 ms between requests; `
    + `one consumer long-polling (wait ${WAIT_MS} ms), or one WebSocket subscriber; in Lambda-fidelity mode the two side by side, the producer sending to their topics in turn. End to end = from the start of the produce request to the consumer having the response (or frame) that holds the record.`,
  tables: [table, consumerCalls],
  charts: [{
    title: 'End-to-end latency, cumulative distribution',
    spec: {
      width: 480, height: 280, data: { values: cdf }, mark: 'line',
      encoding: {
        x: { field: 'ms', type: 'quantitative', title: 'produce start → record received (ms)' },
        y: { field: 'quantile', type: 'quantitative' },
        color: { field: 'consumer', type: 'nominal' },
      },
    },
  }],
  data: phases.map((p) => ({ ...p, produce: undefined, e2e: undefined, produceP50: pct(p.produce, 0.5), e2eP50: pct(p.e2e, 0.5), e2eP99: pct(p.e2e, 0.99) })),
});
