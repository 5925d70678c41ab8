/**
 * The local stand-in for Lambda's DynamoDB Streams event source mapping, against DynamoDB Local's
 * real streams (the shared stack's store): exactly-once in-order delivery of records written after
 * start, Lambda's record shape (binary as base64), retried and skipped batches, expired iterators,
 * recreated tables, unreachable stores, and a prompt stop. Shard rollover (every 4 h in DynamoDB
 * Local) is exercised with a scripted stream.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { StreamPoller, type PollerLog, type StreamsApi } from '../../../local/stream-poller.js';
import { ensureTable } from '../../../lib/storage/admin.js';
import { dynamo } from '../../../lib/storage/clients.js';
import { resetConfig } from '../../../lib/config.js';
import { getRecords, latestStreamArn, resetStreamClients, shardIterator } from '../../../lib/storage/streams.js';
import type { TableSpec } from '../../../lib/storage/tables.js';
import { until } from '../../support/cluster.js';

const endpoint = process.env.AWS_ENDPOINT_URL_DYNAMODB as string;
let n = 0;
const spec = (): TableSpec => ({
  name: `stream-poller-${process.pid}-${Date.now()}-${n++}`,
  partitionKey: { name: 'tp', type: 'S' },
  sortKey: { name: 'off', type: 'N' },
  stream: 'NEW_IMAGE',
});

async function newTable(): Promise<string> {
  const s = spec();
  await ensureTable(s, endpoint);
  return s.name;
}

const put = (table: string, item: Record<string, unknown>) => dynamo(endpoint).send(new PutCommand({ TableName: table, Item: item }));

/** How `until` waits here: on what the test has recorded so far, checked every 10 ms; a check that throws ends the wait. */
const IN_MEMORY = { everyMs: 10, retry: false } as const;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Entry = { level: string; obj: Record<string, unknown>; msg: string | undefined };
function captureLog(): { log: PollerLog; entries: Entry[] } {
  const entries: Entry[] = [];
  const at = (level: string) => (obj: object, msg?: string) => void entries.push({ level, obj: obj as Record<string, unknown>, msg });
  return { log: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, entries };
}

const keyOf = (r: DynamoDBRecord) => `${r.dynamodb?.NewImage?.tp?.S}#${r.dynamodb?.NewImage?.off?.N}`;
const seqOf = (r: DynamoDBRecord) => BigInt(r.dynamodb?.SequenceNumber ?? '-1');
const timeouts = () => process.getActiveResourcesInfo().filter((t) => t === 'Timeout').length;

/** A collecting `deliver`. */
function collector() {
  const events: DynamoDBStreamEvent[] = [];
  const records: DynamoDBRecord[] = [];
  const at = new Map<string, number>();
  let inFlight = 0;
  let maxInFlight = 0;
  const deliver = async (e: DynamoDBStreamEvent) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      const now = Date.now();
      events.push(e);
      for (const r of e.Records) {
        records.push(r);
        at.set(keyOf(r), now);
      }
      await sleep(1);
    } finally {
      inFlight--;
    }
  };
  return { events, records, at, deliver, maxInFlight: () => maxInFlight };
}

describe('Class: StreamPoller (DynamoDB Local streams)', () => {
  const pollers: StreamPoller[] = [];
  const track = (p: StreamPoller) => (pollers.push(p), p);
  afterAll(async () => {
    await Promise.all(pollers.map((p) => p.stop()));
  });

  it('where 300 items are written across 3 keys after start, each is delivered at least once (once unless a restart is logged), in order per key, in Lambda\'s record shape', async () => {
    const table = await newTable();
    const arn = await latestStreamArn(table, endpoint);
    for (let i = 0; i < 5; i++) await put(table, { tp: 'before', off: i });
    const c = collector();
    const { log, entries } = captureLog();
    const timersBefore = timeouts();
    const poller = track(new StreamPoller({ tables: [{ table, endpoint }], deliver: c.deliver, batchSize: 50, log }));
    await poller.start();

    const written = new Map<string, number>();
    const sent = new Map<string, number>();
    const bin = (k: number, i: number) => Uint8Array.from([k, i & 0xff, i >> 8, 0xff, 0x00]);
    await Promise.all([0, 1, 2].map(async (k) => {
      for (let i = 0; i < 100; i++) {
        sent.set(`k${k}#${i}`, Date.now());
        await put(table, { tp: `k${k}`, off: i, bin: bin(k, i), note: `item ${k}/${i}` });
        written.set(`k${k}#${i}`, Date.now());
      }
    }));
    await until('300 deliveries', () => c.records.length >= 300, { ...IN_MEMORY, ms: 10_000 });
    await sleep(300);

    // The guarantee is Lambda's: at least once, in order, nothing skipped. A restart at
    // TRIM_HORIZON (the only way to read a record twice) must be logged.
    const restarts = entries.filter((e) => e.obj.event === 'stream-poller-trimmed').length;
    const afterStart = c.records.filter((r) => r.dynamodb?.Keys?.tp?.S !== 'before');
    expect(new Set(afterStart.map(keyOf))).toEqual(new Set(written.keys()));
    for (const k of [0, 1, 2]) {
      const offs = c.records.filter((r) => r.dynamodb?.Keys?.tp?.S === `k${k}`).map((r) => Number(r.dynamodb?.Keys?.off?.N));
      // first deliveries in write order; a re-read starts lower, at most once per logged restart
      expect([...new Set(offs)]).toEqual(Array.from({ length: 100 }, (_, i) => i));
      expect(offs.filter((o, i) => i > 0 && o <= (offs[i - 1] as number)).length).toBeLessThanOrEqual(restarts);
    }
    if (restarts === 0) {
      // exactly once, nothing from before start, in stream order overall (one shard)
      expect(c.records).toHaveLength(300);
      const seqs = c.records.map(seqOf);
      expect(seqs.every((s, i) => i === 0 || s > (seqs[i - 1] as bigint))).toBe(true);
    }
    expect(c.events.every((e) => e.Records.length >= 1 && e.Records.length <= 50)).toBe(true);
    expect(c.maxInFlight()).toBe(1);

    // the record, as Lambda delivers it: plain JSON, binary as base64, epoch-seconds timestamp
    const r = c.records.find((x) => keyOf(x) === 'k1#7') as DynamoDBRecord;
    expect(r).toEqual({
      eventID: expect.any(String),
      eventName: 'INSERT',
      eventVersion: expect.any(String),
      eventSource: 'aws:dynamodb',
      awsRegion: expect.any(String),
      dynamodb: {
        ApproximateCreationDateTime: expect.any(Number),
        Keys: { tp: { S: 'k1' }, off: { N: '7' } },
        NewImage: { tp: { S: 'k1' }, off: { N: '7' }, bin: { B: Buffer.from(bin(1, 7)).toString('base64') }, note: { S: 'item 1/7' } },
        SequenceNumber: expect.stringMatching(/^\d+$/),
        SizeBytes: expect.any(Number),
        StreamViewType: 'NEW_IMAGE',
      },
      eventSourceARN: arn,
    });
    expect(Object.keys(r)).toEqual(['eventID', 'eventName', 'eventVersion', 'eventSource', 'awsRegion', 'dynamodb', 'eventSourceARN']);
    expect(JSON.parse(JSON.stringify(r))).toEqual(r);
    expect(Math.abs((r.dynamodb?.ApproximateCreationDateTime as number) * 1000 - Date.now())).toBeLessThan(5 * 60_000);
    expect(entries.filter((e) => (e.level === 'warn' || e.level === 'error') && e.obj.event !== 'stream-poller-trimmed')).toEqual([]);

    // latency, write acknowledged → delivered
    const lat = [...written].map(([k, t]) => (c.at.get(k) as number) - t).sort((a, b) => a - b);
    const fromSend = [...sent].map(([k, t]) => (c.at.get(k) as number) - t).sort((a, b) => a - b);
    const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] as number;
    console.log(`stream-poller latency over 300 items (ms): ack→deliver p50=${pct(lat, 50)} p99=${pct(lat, 99)} max=${pct(lat, 100)}; send→deliver p50=${pct(fromSend, 50)} p99=${pct(fromSend, 99)}; batches=${c.events.length}`);
    expect(pct(lat, 99)).toBeLessThan(2000);

    // stop: prompt, no timers left, nothing delivered afterwards
    const t0 = Date.now();
    const delivered = c.records.length;
    await poller.stop();
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(timeouts()).toBeLessThanOrEqual(timersBefore);
    for (let i = 0; i < 5; i++) await put(table, { tp: 'after', off: i });
    await sleep(400);
    expect(c.records).toHaveLength(delivered);
  });

  it('where deliver throws, the same batch comes again in order; a batch that always fails goes to the on-failure destination after the bounded attempts', async () => {
    const table = await newTable();
    const { log, entries } = captureLog();
    const calls: string[][] = [];
    const ok: DynamoDBRecord[] = [];
    const handedOff: string[][] = [];
    let refuseHandOff = 1;
    let failures = 2;
    const poller = track(new StreamPoller({
      tables: [{ table, endpoint }], log, maxDeliveryAttempts: 3, retryBaseMs: 20,
      // the destination refuses once: the batch is not given up then, but tried again
      onFailure: async (e) => {
        if (refuseHandOff-- > 0) throw new Error('destination down');
        handedOff.push(e.Records.map(keyOf));
      },
      deliver: async (e) => {
        const keys = e.Records.map(keyOf);
        calls.push(keys);
        if (keys.some((k) => k.startsWith('poison'))) throw new Error('poison');
        if (failures-- > 0) throw new Error('transient');
        ok.push(...e.Records);
      },
    }));
    await poller.start();
    for (let i = 0; i < 20; i++) await put(table, { tp: 'a', off: i });
    await until('20 deliveries', () => ok.length >= 20, { ...IN_MEMORY, ms: 8000 });
    expect(calls[0]?.length).toBeGreaterThan(0);
    expect(calls[1]).toEqual(calls[0]);
    expect(calls[2]).toEqual(calls[0]);
    expect(ok.map(keyOf)).toEqual(Array.from({ length: 20 }, (_, i) => `a#${i}`));
    expect(entries.filter((e) => e.obj.event === 'stream-poller-delivery-failed')).toHaveLength(2);

    const before = calls.length;
    await put(table, { tp: 'poison', off: 0 });
    await until('the poison batch handed off', () => handedOff.length >= 1, { ...IN_MEMORY, ms: 8000 });
    await sleep(200);
    // three attempts, a refused hand-off, three more, then the destination takes it
    expect(calls.length).toBe(before + 6);
    expect(handedOff).toEqual([['poison#0']]);
    expect(entries.filter((e) => e.obj.event === 'stream-poller-handoff-failed')).toHaveLength(1);
    expect(entries.filter((e) => e.obj.event === 'stream-poller-batch-handed-off')).toHaveLength(1);
    for (let i = 20; i < 25; i++) await put(table, { tp: 'a', off: i });
    await until('deliveries after the skipped batch', () => ok.length >= 25, { ...IN_MEMORY, ms: 5000 });
    expect(ok.map(keyOf)).toEqual(Array.from({ length: 25 }, (_, i) => `a#${i}`));
    await poller.stop();
  });

  it('where a batch keeps failing and there is no on-failure destination, it is retried until it succeeds: nothing is skipped', async () => {
    const table = await newTable();
    const { log, entries } = captureLog();
    const ok: DynamoDBRecord[] = [];
    let failures = 7;
    const poller = track(new StreamPoller({
      tables: [{ table, endpoint }], log, maxDeliveryAttempts: 3, retryBaseMs: 5,
      deliver: async (e) => {
        if (failures-- > 0) throw new Error('still failing');
        ok.push(...e.Records);
      },
    }));
    await poller.start();
    for (let i = 0; i < 10; i++) await put(table, { tp: 'b', off: i });
    await until('10 deliveries', () => ok.length >= 10, { ...IN_MEMORY, ms: 10_000 });
    expect(ok.map(keyOf)).toEqual(Array.from({ length: 10 }, (_, i) => `b#${i}`));
    expect(entries.filter((e) => e.obj.event === 'stream-poller-batch-stuck')).toHaveLength(2);
    await poller.stop();
  });

  it('where iterators expire, reading resumes after the last record read, with nothing lost or repeated', async () => {
    const table = await newTable();
    const c = collector();
    const types: string[] = [];
    let reads = 0;
    const api: Partial<StreamsApi> = {
      shardIterator: (arn, shard, type, seq, ep, o) => {
        types.push(type);
        return shardIterator(arn, shard, type, seq, ep, o);
      },
      getRecords: (it, ep, limit, o) => {
        if (++reads % 4 === 0) return Promise.reject(Object.assign(new Error('Iterator expired'), { name: 'ExpiredIteratorException' }));
        return getRecords(it, ep, limit, o);
      },
    };
    const poller = track(new StreamPoller({ tables: [{ table, endpoint }], deliver: c.deliver, batchSize: 7, api }));
    await poller.start();
    for (let i = 0; i < 60; i++) await put(table, { tp: 'x', off: i });
    await until('60 deliveries', () => c.records.length >= 60, { ...IN_MEMORY, ms: 8000 });
    await sleep(200);
    expect(c.records.map(keyOf)).toEqual(Array.from({ length: 60 }, (_, i) => `x#${i}`));
    expect(types[0]).toBe('LATEST');
    expect(types.filter((t) => t === 'AFTER_SEQUENCE_NUMBER').length).toBeGreaterThan(2);
    await poller.stop();
  });

  it('where a table is deleted and recreated, the poller follows the new stream from its start', async () => {
    const s = spec();
    await ensureTable(s, endpoint);
    const c = collector();
    const poller = track(new StreamPoller({ tables: [{ table: s.name, endpoint }], deliver: c.deliver }));
    await poller.start();
    const arn1 = await latestStreamArn(s.name, endpoint);
    for (let i = 0; i < 3; i++) await put(s.name, { tp: 'old', off: i });
    await until('old stream deliveries', () => c.records.length >= 3, { ...IN_MEMORY, ms: 5000 });
    await dynamo(endpoint).send(new DeleteTableCommand({ TableName: s.name }));
    await ensureTable(s, endpoint);
    const arn2 = await latestStreamArn(s.name, endpoint);
    expect(arn2).not.toBe(arn1);
    // written before the poller has looked again: the new stream is read from TRIM_HORIZON
    for (let i = 0; i < 3; i++) await put(s.name, { tp: 'new', off: i });
    poller.refresh(s.name);
    await until('new stream deliveries', () => c.records.length >= 6, { ...IN_MEMORY, ms: 5000 });
    await sleep(200);
    expect(c.records.map(keyOf)).toEqual(['old#0', 'old#1', 'old#2', 'new#0', 'new#1', 'new#2']);
    expect(c.records.slice(3).every((r) => r.eventSourceARN === arn2)).toBe(true);
    await poller.stop();
  });

  describe('where one store refuses connections and another accepts them but never answers', () => {
    let blackhole: net.Server;
    let held: net.Socket[] = [];
    const timeoutBefore = process.env.TRIBUTARY_STORE_TIMEOUT_MS;
    beforeAll(async () => {
      blackhole = net.createServer((sock) => void held.push(sock));
      await new Promise<void>((r) => blackhole.listen(0, '127.0.0.1', r));
      // Streams clients built from here on time requests out after 400 ms
      process.env.TRIBUTARY_STORE_TIMEOUT_MS = '400';
      resetConfig();
      resetStreamClients();
    });
    afterAll(async () => {
      if (timeoutBefore === undefined) delete process.env.TRIBUTARY_STORE_TIMEOUT_MS;
      else process.env.TRIBUTARY_STORE_TIMEOUT_MS = timeoutBefore;
      resetConfig();
      resetStreamClients();
      for (const s of held) s.destroy();
      held = [];
      await new Promise((r) => blackhole.close(r));
    });

    it('the poller keeps running, logs each outage once, delivers the healthy table, and stops at once', async () => {
      const table = await newTable();
      const silent = `http://127.0.0.1:${(blackhole.address() as net.AddressInfo).port}`;
      const silentArn = 'arn:aws:dynamodb:ddblocal:000000000000:table/silent/stream/2026-01-01T00:00:00.000';
      const c = collector();
      const { log, entries } = captureLog();
      const unhandled: unknown[] = [];
      const onUnhandled = (e: unknown) => void unhandled.push(e);
      process.on('unhandledRejection', onUnhandled);
      try {
        const poller = track(new StreamPoller({
          tables: [
            { table: 'refused', endpoint: 'http://127.0.0.1:1' },
            { table: 'silent', endpoint: silent },
            { table, endpoint },
          ],
          deliver: c.deliver, log, errorBackoffMs: { min: 20, max: 200 }, readyTimeoutMs: 1000,
          // the silent store "has" a stream, so the Streams calls (not only DescribeTable) hit it
          api: { latestStreamArn: (t, ep, o) => (ep === silent ? Promise.resolve(silentArn) : latestStreamArn(t, ep, o)) },
        }));
        const t0 = Date.now();
        await poller.start();
        expect(Date.now() - t0).toBeLessThan(1500);
        for (let i = 0; i < 30; i++) await put(table, { tp: 'ok', off: i });
        await until('healthy table deliveries', () => c.records.length >= 30, { ...IN_MEMORY, ms: 5000 });
        await sleep(500);
        expect(c.records.map(keyOf)).toEqual(Array.from({ length: 30 }, (_, i) => `ok#${i}`));
        expect(poller.running).toBe(true);
        const refused = entries.filter((e) => e.obj.table === 'refused');
        expect(refused.filter((e) => e.level === 'warn')).toHaveLength(1);
        expect(refused.filter((e) => e.level === 'debug').length).toBeGreaterThan(1);
        expect(refused[0]?.obj).toMatchObject({ event: 'stream-poller-table-error', kind: 'unavailable' });
        // The healthy table logs no failure (DynamoDB Local under load may report a fresh iterator
        // as trimmed; the poller restarts it at TRIM_HORIZON, and the records above prove nothing was lost).
        expect(entries.filter((e) => e.obj.table === table && e.level !== 'debug' && e.obj.event !== 'stream-poller-trimmed')).toEqual([]);
        // Streams requests to the store that never answers fail with a timeout, and are retried
        await until('a timeout on the silent store', () => entries.some((e) => e.obj.table === 'silent'), { ...IN_MEMORY, ms: 5000 });
        expect(entries.find((e) => e.obj.table === 'silent')).toMatchObject({ level: 'warn', obj: { kind: 'unavailable', err: { name: 'TimeoutError' } } });
        expect(held.length).toBeGreaterThan(0); // a request to the silent store is hanging right now
        const t1 = Date.now();
        await poller.stop();
        expect(Date.now() - t1).toBeLessThan(1000);
        expect(poller.running).toBe(false);
        expect(unhandled).toEqual([]);
      } finally {
        process.off('unhandledRejection', onUnhandled);
      }
    });
  });
});

/** A scripted stream, to check what DynamoDB Local only does every 4 hours: shard rollover. */
class FakeStream {
  readonly arn = 'arn:aws:dynamodb:ddblocal:000000000000:table/fake/stream/2026-01-01T00:00:00.000';
  readonly shards = new Map<string, { parent: string | undefined; records: DynamoDBRecord[]; closed: boolean }>();
  private seq = 0;
  readonly reads: string[] = [];
  /** Iterators (`<shard>|<index>`) that fail once with ExpiredIteratorException. */
  readonly expireOnce = new Set<string>();

  shard(id: string, parent?: string): void {
    this.shards.set(id, { parent, records: [], closed: false });
  }
  add(id: string, count: number): void {
    const s = this.shards.get(id);
    if (!s) throw new Error(id);
    for (let i = 0; i < count; i++) {
      const off = String(s.records.length);
      s.records.push({
        eventID: `${id}-${off}`, eventName: 'INSERT', eventVersion: '1.1', eventSource: 'aws:dynamodb', awsRegion: 'ddblocal',
        dynamodb: { Keys: { tp: { S: id }, off: { N: off } }, NewImage: { tp: { S: id }, off: { N: off } }, SequenceNumber: String(++this.seq).padStart(21, '0'), SizeBytes: 10, StreamViewType: 'NEW_IMAGE' },
        eventSourceARN: this.arn,
      });
    }
  }
  close(id: string): void {
    const s = this.shards.get(id);
    if (s) s.closed = true;
  }

  readonly api: StreamsApi = {
    latestStreamArn: async () => this.arn,
    describeStream: async (arn) => ({
      streamArn: arn, status: 'ENABLED',
      shards: [...this.shards].map(([id, s]) => ({
        shardId: id, parentShardId: s.parent,
        startingSequenceNumber: s.records[0]?.dynamodb?.SequenceNumber,
        endingSequenceNumber: s.closed ? (s.records.at(-1)?.dynamodb?.SequenceNumber ?? '0') : undefined,
      })),
    }),
    shardIterator: async (_arn, id, type, seq) => {
      const s = this.shards.get(id);
      if (!s) throw Object.assign(new Error('no shard'), { name: 'ResourceNotFoundException' });
      const i = type === 'TRIM_HORIZON' ? 0 : type === 'LATEST' ? s.records.length : s.records.findIndex((r) => r.dynamodb?.SequenceNumber === seq) + 1;
      return `${id}|${i}`;
    },
    getRecords: async (it, _ep, limit = 100) => {
      const [id = '', at = '0'] = it.split('|');
      const s = this.shards.get(id);
      if (!s) throw new Error(id);
      if (this.expireOnce.delete(it)) throw Object.assign(new Error('expired'), { name: 'ExpiredIteratorException' });
      const i = Number(at);
      const records = s.records.slice(i, i + limit);
      this.reads.push(`${id}:${records.length}`);
      const next = i + records.length;
      return { records: structuredClone(records), nextIterator: s.closed && next >= s.records.length ? undefined : `${id}|${next}` };
    },
  };
}

describe('Class: StreamPoller (scripted stream)', () => {
  it('where shards roll over, a parent is read to its end before its children, closed shards at start are skipped, and stop leaves no timers', async () => {
    const f = new FakeStream();
    f.shard('old');
    f.add('old', 3);
    f.close('old');
    f.shard('p', 'old');
    f.add('p', 2); // before start: not delivered (LATEST)
    const c = collector();
    const timersBefore = timeouts();
    const poller = new StreamPoller({ tables: [{ table: 'fake', endpoint: 'http://unused' }], deliver: c.deliver, api: f.api, batchSize: 2, discoveryMs: 10, idleMs: 5, maxIdleMs: 10 });
    await poller.start();
    // the parent gets more records and closes; two generations of children are already there, with records
    f.add('p', 5);
    f.shard('c1', 'p');
    f.add('c1', 3);
    f.shard('c2', 'p');
    f.add('c2', 2);
    f.shard('g', 'c1');
    f.add('g', 2);
    f.expireOnce.add('p|4'); // after the first batch (p#2, p#3): resumed AFTER_SEQUENCE_NUMBER of p#3
    await sleep(100); // children listed while the parent is still open: they must wait
    expect(c.records.some((r) => r.dynamodb?.Keys?.tp?.S !== 'p')).toBe(false);
    f.close('p');
    f.close('c1');
    await until('all shards', () => c.records.length >= 12, { ...IN_MEMORY, ms: 5000 });
    await sleep(50);
    const order = c.records.map(keyOf);
    expect(order.filter((k) => k.startsWith('p#'))).toEqual(['p#2', 'p#3', 'p#4', 'p#5', 'p#6']);
    expect(order).toHaveLength(12);
    const last = (s: string) => order.map((k) => k.split('#')[0]).lastIndexOf(s);
    const first = (s: string) => order.map((k) => k.split('#')[0]).indexOf(s);
    expect(last('p')).toBeLessThan(first('c1'));
    expect(last('p')).toBeLessThan(first('c2'));
    expect(last('c1')).toBeLessThan(first('g'));
    for (const s of ['c1', 'c2', 'g']) expect(order.filter((k) => k.startsWith(`${s}#`))).toEqual(f.shards.get(s)?.records.map(keyOf));
    expect(f.reads.some((r) => r.startsWith('old:'))).toBe(false);
    expect(f.expireOnce.size).toBe(0);
    expect(c.events.every((e) => e.Records.length <= 2)).toBe(true);
    await poller.stop();
    expect(timeouts()).toBeLessThanOrEqual(timersBefore);
  });
});
