/**
 * `tributary consume <topic>`: prints records as `raw` (each value alone on a line), `json` (one
 * object per line) or a template (`'%k %v'`). Without `--follow` it exits once every partition is
 * read up to the high watermark it found at start. Without `--group` it reads every partition
 * itself; with one it joins the group (commits as it goes) and stops when the group's committed
 * offsets reach those high watermarks.
 */
import type { KafkaMessage, Tributary } from '../client/index.js';
import { UsageError } from './output.js';

export interface ConsumeOptions {
  group?: string;
  fromBeginning?: boolean;
  offset?: string;
  timestamp?: string;
  follow?: boolean;
  format: string;
  partition?: string;
  maxMessages?: string;
  json?: boolean;
}

const decoder = new TextDecoder();
const str = (b: Uint8Array | null) => (b === null ? null : decoder.decode(b));

function formatter(format: string, topic: string): (partition: number, m: KafkaMessage) => string {
  if (format === 'raw') return (_p, m) => str(m.value) ?? '';
  if (format === 'json') {
    return (partition, m) => JSON.stringify({
      topic, partition, offset: Number(m.offset), timestamp: new Date(Number(m.timestamp)).toISOString(), key: str(m.key), value: str(m.value),
      headers: Object.fromEntries(Object.entries(m.headers).map(([k, v]) => [k, str(v)])),
    });
  }
  if (!format.includes('%')) throw new UsageError(`--format must be json, raw or a template such as '%k %v', got '${format}'.`);
  return (partition, m) => format.replace(/%([tpokvTh%])/g, (_, c: string) => {
    switch (c) {
      case 't': return topic;
      case 'p': return String(partition);
      case 'o': return m.offset;
      case 'k': return str(m.key) ?? 'null';
      case 'v': return str(m.value) ?? 'null';
      case 'T': return m.timestamp;
      case 'h': return Object.entries(m.headers).map(([k, v]) => `${k}:${str(v)}`).join(',');
      default: return '%';
    }
  });
}

/** Writes without piling up: waits for the pipe to drain (a `| head` reader closing ends the run). */
function write(line: string): Promise<void> | undefined {
  if (process.stdout.write(`${line}\n`)) return undefined;
  return new Promise((r) => process.stdout.once('drain', () => r()));
}

export async function consumeCommand(t: Tributary, topic: string, o: ConsumeOptions): Promise<void> {
  const starts = [o.fromBeginning, o.offset !== undefined, o.timestamp !== undefined].filter(Boolean).length;
  if (starts > 1) throw new UsageError('Use one of --from-beginning, --offset and --timestamp.');
  const format = formatter(o.json ? 'json' : o.format, topic);
  const max = o.maxMessages !== undefined ? Number(o.maxMessages) : Infinity;
  const count = await t.connection.partitionCount(topic, true);
  const partitions = o.partition !== undefined ? [Number(o.partition)] : Array.from({ length: count }, (_, i) => i);
  for (const p of partitions) if (!Number.isInteger(p) || p < 0 || p >= count) throw new UsageError(`UNKNOWN_TOPIC_OR_PARTITION: topic ${topic} has no partition ${p}.`);
  const ends = new Map(await Promise.all(partitions.map(async (p) => [p, (await t.connection.listOffset(topic, p, 'latest')).high] as const)));
  let printed = 0;
  if (o.group) {
    if (o.offset !== undefined || o.timestamp !== undefined) throw new UsageError('--offset and --timestamp need no --group (reset the group\'s offsets with `tributary groups reset`).');
    await consumeWithGroup(t, topic, o, ends, async (p, m) => {
      if (printed++ < max) await write(format(p, m));
      return printed >= max;
    });
    return;
  }
  const stop = new AbortController();
  await Promise.all(partitions.map(async (p) => {
    const end = ends.get(p) as number;
    let offset: number;
    if (o.fromBeginning) offset = (await t.connection.listOffset(topic, p, 'earliest')).low;
    else if (o.offset !== undefined) offset = Number(o.offset);
    else if (o.timestamp !== undefined) {
      const ts = /^\d+$/.test(o.timestamp) ? Number(o.timestamp) : Date.parse(o.timestamp);
      if (Number.isNaN(ts)) throw new UsageError(`INVALID_TIMESTAMP: --timestamp must be epoch milliseconds or ISO 8601, got '${o.timestamp}'.`);
      const found = await t.connection.listOffset(topic, p, ts);
      offset = found.offset ?? found.high;
    } else offset = end;
    while (!stop.signal.aborted && (o.follow || offset < end)) {
      let r;
      try {
        r = await t.connection.fetch(topic, p, offset, { maxWaitMs: o.follow ? 20_000 : 0, signal: stop.signal });
      } catch (e) {
        if (stop.signal.aborted) return;
        throw e;
      }
      for (const m of r.messages) {
        if (Number(m.offset) < offset || (!o.follow && Number(m.offset) >= end)) continue;
        if (printed++ >= max) {
          stop.abort();
          return;
        }
        await write(format(p, m));
      }
      offset = Math.max(offset, r.nextOffset);
      if (printed >= max) stop.abort();
    }
  }));
}

async function consumeWithGroup(t: Tributary, topic: string, o: ConsumeOptions, ends: Map<number, number>, print: (p: number, m: KafkaMessage) => Promise<boolean>): Promise<void> {
  const consumer = t.consumer({ groupId: o.group as string, maxWaitTimeInMs: 1000 });
  await consumer.subscribe({ topics: [topic], fromBeginning: o.fromBeginning ?? false });
  let enough = false;
  let crashed: unknown;
  consumer.on('consumer.crash', (e) => {
    const p = (e as { payload: { error: unknown; restart: boolean } }).payload;
    if (!p.restart) crashed = p.error;
  });
  await consumer.run({
    autoCommitInterval: 500,
    eachMessage: async ({ partition, message }) => {
      if (!enough && (o.follow || Number(message.offset) < (ends.get(partition) ?? 0))) enough = await print(partition, message);
    },
  });
  const admin = t.admin();
  // Done when the group's committed offsets reach the high watermarks found at start (whoever read them).
  while (!enough && !crashed) {
    await new Promise((r) => setTimeout(r, 500));
    if (o.follow) continue;
    const committed = new Map((await admin.fetchOffsets({ groupId: o.group as string, topics: [topic] }))[0]?.partitions.map((x) => [x.partition, Number(x.offset)]) ?? []);
    if ([...ends].every(([p, end]) => end === 0 || (committed.get(p) ?? -1) >= end)) break;
  }
  await consumer.disconnect();
  if (crashed) throw crashed;
}
