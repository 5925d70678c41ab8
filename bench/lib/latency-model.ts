/**
 * The cost benchmark's latency model: the store calls a request made on the local stack, as the
 * gateway's request observer saw them, turned into the latency the same calls would take in AWS
 * with the published per-call figures (bench/lib/prices.ts LATENCY); and one row per request path of
 * the modelled p50, the pessimistic figure, the critical path, and what the requests took here.
 */
import './env.js';
import { sequentialRoundTrips } from '../../lib/storage/metering.js';
import { LATENCY, latencyKind } from './prices.js';
import { storeTime, type ObservedRequest } from './load.js';

/** What the model needs of a served request: its store calls and its handler time here. */
export type ServedRequest = Pick<ObservedRequest, 'calls' | 'ms'>;

/**
 * One request's modelled AWS latency: each store call takes its published latency, and starts once
 * every call that had answered before it was sent (here) has answered (in the model) — calls in
 * flight together overlap, calls made one after another add up. Plus the gateway and the warm invoke.
 */
function modelled(calls: ServedRequest['calls'], which: 'p50Ms' | 'highMs'): { ms: number; chain: string[] } {
  const sorted = [...calls].sort((a, b) => a.start - b.start);
  const end: number[] = [];
  const pred: number[] = [];
  sorted.forEach((c, i) => {
    let at = 0;
    let from = -1;
    for (let j = 0; j < i; j++) {
      if (sorted[j]!.end <= c.start && end[j]! > at) {
        at = end[j]!;
        from = j;
      }
    }
    end[i] = at + LATENCY[latencyKind(c.service, c.op)][which];
    pred[i] = from;
  });
  let last = end.reduce((best, e, i) => (e > (end[best] ?? -1) ? i : best), -1);
  const chain: string[] = [];
  for (; last >= 0; last = pred[last]!) chain.unshift(`${sorted[last]!.service === 's3' ? 'S3 ' : ''}${sorted[last]!.op}`);
  return { ms: Math.max(0, ...end) + LATENCY.apiGateway[which] + LATENCY.lambdaWarmInvoke[which], chain };
}

/** Handler time here outside any store call: JSON, base64, the codec (this machine, shared cores). */
const computeMs = (s: ServedRequest): number => Math.max(0, s.ms - storeTime(s.calls));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const mostCommon = (xs: string[]) => {
  const n = new Map<string, number>();
  for (const x of xs) n.set(x, (n.get(x) ?? 0) + 1);
  return [...n.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? '';
};

/** One request path's row: medians over its requests of the model and of what was measured here. */
export function pathRow(name: string, reqs: readonly ServedRequest[]) {
  const p50 = reqs.map((s) => modelled(s.calls, 'p50Ms'));
  const high = reqs.map((s) => modelled(s.calls, 'highMs'));
  const compute = median(reqs.map(computeMs));
  return {
    name,
    roundTrips: median(reqs.map((s) => sequentialRoundTrips(s.calls))),
    calls: median(reqs.map((s) => s.calls.length)),
    chain: mostCommon(p50.map((m) => m.chain.join(' → '))),
    model: median(p50.map((m) => m.ms)),
    high: median(high.map((m) => m.ms)),
    compute,
    local: median(reqs.map((s) => s.ms)),
  };
}

type PathRow = ReturnType<typeof pathRow>;

/**
 * Produce (acks=all) → a long-polling consumer's answer, modelled: a waiting consumer sees a record
 * once its long poll next reads the head (on average half the steady re-read interval `gapMs`),
 * then reads the batches (a Query); the produce's own response leg overlaps.
 */
export function longPollEndToEnd(acksAll: PathRow, gapMs: number): { model: number; high: number } {
  return {
    model: acksAll.model + gapMs / 2 + LATENCY.dynamodbRead.p50Ms + LATENCY.apiGateway.p50Ms,
    high: acksAll.high + gapMs / 2 + LATENCY.dynamodbRead.highMs + LATENCY.apiGateway.highMs,
  };
}

/**
 * Produce (acks=all) → a WebSocket subscriber's frame, modelled with the same figures: the
 * produce's store calls up to its high-watermark move (its path without the gateway and the
 * invoke), the wake (an asynchronous invoke of the websocket function to a warm environment, with
 * the high watermark), then the delivery's calls — the partition's subscriptions (a Query), then
 * the records read as a fetch at the tail reads them (that path's store calls) beside the lease
 * (an UpdateItem; the wake's high watermark says there is something to deliver) — and the post
 * through API Gateway's connection API to the socket.
 */
export function websocketEndToEnd(acksAll: PathRow, tailFetch: PathRow): { model: number; high: number } {
  const calls = (row: PathRow, which: 'model' | 'high') => row[which] - LATENCY.apiGateway[which === 'model' ? 'p50Ms' : 'highMs'] - LATENCY.lambdaWarmInvoke[which === 'model' ? 'p50Ms' : 'highMs'];
  const f = (which: 'model' | 'high', k: 'p50Ms' | 'highMs') => calls(acksAll, which) + LATENCY.lambdaAsyncInvoke[k]
    + LATENCY.dynamodbRead[k] + Math.max(calls(tailFetch, which), LATENCY.dynamodbWrite[k]) + LATENCY.apiGateway[k];
  return { model: f('model', 'p50Ms'), high: f('high', 'highMs') };
}
