/**
 * `tributary produce <topic>`: lines from stdin or a file become records (raw lines, `key<sep>value`
 * lines, or JSON objects), sent through the SDK's batching producer; a progress bar with the rate
 * when stdout is a terminal and the input is long.
 */
import { createReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import cliProgress from 'cli-progress';
import type { Acks, Message, Tributary } from '../client/index.js';
import { printJson, UsageError } from './output.js';

export interface ProduceOptions {
  file?: string;
  keySeparator?: string;
  acks: string;
  partition?: string;
  format: string;
  lingerMs?: string;
  json?: boolean;
  progress?: boolean;
}

function parseAcks(raw: string): Acks {
  if (raw === 'all' || raw === '-1') return -1;
  if (raw === '0' || raw === '1') return Number(raw) as Acks;
  throw new UsageError(`INVALID_REQUIRED_ACKS: --acks must be 0, 1, all or -1, got '${raw}'.`);
}

function lineToMessage(line: string, o: ProduceOptions, partition: number | undefined, n: number): Message {
  if (o.format === 'json') {
    let v: { key?: unknown; value?: unknown; headers?: Record<string, string>; partition?: number; timestamp?: number | string };
    try {
      v = JSON.parse(line);
    } catch {
      throw new UsageError(`INVALID_RECORD: line ${n} is not JSON.`);
    }
    const text = (x: unknown) => (x === undefined || x === null ? null : typeof x === 'string' ? x : JSON.stringify(x));
    return {
      key: text(v.key), value: text(v.value),
      ...(v.headers ? { headers: v.headers } : {}),
      ...(v.partition !== undefined ? { partition: v.partition } : partition !== undefined ? { partition } : {}),
      ...(v.timestamp !== undefined ? { timestamp: typeof v.timestamp === 'string' && !/^\d+$/.test(v.timestamp) ? Date.parse(v.timestamp) : Number(v.timestamp) } : {}),
    };
  }
  if (o.keySeparator !== undefined) {
    const at = line.indexOf(o.keySeparator);
    if (at < 0) throw new UsageError(`INVALID_RECORD: line ${n} has no key separator '${o.keySeparator}'.`);
    return { key: line.slice(0, at), value: line.slice(at + o.keySeparator.length), ...(partition !== undefined ? { partition } : {}) };
  }
  return { value: line, ...(partition !== undefined ? { partition } : {}) };
}

export async function produceCommand(t: Tributary, topic: string, o: ProduceOptions): Promise<void> {
  if (o.format !== 'raw' && o.format !== 'json') throw new UsageError(`--format must be raw or json, got '${o.format}'.`);
  const acks = parseAcks(o.acks);
  const partition = o.partition !== undefined ? Number(o.partition) : undefined;
  if (partition !== undefined && (!Number.isInteger(partition) || partition < 0)) throw new UsageError(`--partition must be a partition number, got '${o.partition}'.`);
  const producer = t.producer({ acks, ...(o.lingerMs !== undefined ? { lingerMs: Number(o.lingerMs) } : {}) });
  await producer.connect();
  const input = o.file ? createReadStream(o.file) : process.stdin;
  const totalBytes = o.file ? statSync(o.file).size : undefined;
  const showBar = (o.progress ?? process.stdout.isTTY) && !o.json;
  const bar = showBar ? new cliProgress.SingleBar({
    format: totalBytes ? '{bar} {percentage}% | {records} records | {rate} records/s' : '{records} records | {rate} records/s',
    hideCursor: true,
  }, cliProgress.Presets.shades_classic) : undefined;
  bar?.start(totalBytes ?? 0, 0, { records: 0, rate: 0 });
  const started = Date.now();
  const perPartition = new Map<number, number>();
  let sent = 0;
  let readBytes = 0;
  let n = 0;
  let chunk: Message[] = [];
  const pending = new Set<Promise<void>>();
  let failure: unknown;
  const flushChunk = () => {
    if (chunk.length === 0) return;
    const messages = chunk;
    chunk = [];
    const p = producer.send({ topic, messages }).then((meta) => {
      for (const m of meta) perPartition.set(m.partition, (perPartition.get(m.partition) ?? 0) + m.offsets.length);
      sent += messages.length;
      bar?.update(readBytes, { records: sent, rate: Math.round(sent / Math.max(0.001, (Date.now() - started) / 1000)) });
    }, (e: unknown) => { failure ??= e; });
    pending.add(p);
    void p.finally(() => pending.delete(p));
  };
  for await (const line of createInterface({ input, crlfDelay: Infinity })) {
    n++;
    readBytes += Buffer.byteLength(line) + 1;
    if (line === '') continue;
    chunk.push(lineToMessage(line, o, partition, n));
    if (chunk.length >= 1000) flushChunk();
    // Bounded memory: wait while many records are on their way.
    while (pending.size >= 20) await Promise.race(pending);
    if (failure) break;
  }
  flushChunk();
  await Promise.allSettled([...pending]);
  await producer.disconnect();
  bar?.update(totalBytes ?? readBytes, { records: sent, rate: Math.round(sent / Math.max(0.001, (Date.now() - started) / 1000)) });
  bar?.stop();
  if (failure) throw failure;
  const seconds = (Date.now() - started) / 1000;
  if (o.json) printJson({ topic, records: sent, partitions: Object.fromEntries([...perPartition].sort(([a], [b]) => a - b)), seconds, requests: t.requestCount });
  else process.stderr.write(`${sent} records to ${topic} in ${seconds.toFixed(1)} s\n`);
}
