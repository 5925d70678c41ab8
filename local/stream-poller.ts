/**
 * The local stack's stand-in for Lambda's DynamoDB Streams event source mapping
 * (docs/architecture.md, "The local stack"): it reads each broker's replica-table stream and hands
 * the records, in batches, to a function as a `DynamoDBStreamEvent` — the same event the replicator
 * gets in AWS.
 *
 * What it does, as the event source mapping does:
 * - Start position: shards open when `start()` runs are read from LATEST — records written before
 *   `start()` resolves are not delivered (Lambda's `StartingPosition: LATEST`). Shards found later
 *   (children after a rollover) are read from TRIM_HORIZON, and so is every shard of a stream first
 *   seen later: a table whose store was unreachable at start, or a table recreated after its store
 *   was wiped (a new stream ARN). `startingPosition: 'TRIM_HORIZON'` reads everything instead.
 * - Order: a parent shard is read to its end before its children start; within a shard, records
 *   are delivered in stream order, one batch (≤ `batchSize`) at a time — never two deliveries of
 *   one shard in flight. Different shards and different tables run in independent loops.
 * - Failures of `deliver`: the same batch is delivered again (a fresh copy), with doubling backoff
 *   (up to 2 s), up to `maxDeliveryAttempts`; then it goes to `onFailure` (Lambda's on-failure
 *   destination) and, once that resolves, the shard moves on. Nothing is skipped silently: without
 *   `onFailure`, or while it throws, the batch is retried for as long as it fails (Lambda's
 *   default of retrying until the record expires), logged once per `maxDeliveryAttempts` tries.
 * - Rollover: a closed shard (no next iterator) ends; DescribeStream runs every `discoveryMs` (and
 *   at once when a shard ends) to pick up new shards.
 * - An expired iterator is replaced by AFTER_SEQUENCE_NUMBER of the last record read, or by the
 *   shard's start position if none was read yet (so a LATEST shard whose iterator expired before
 *   its first record is read from LATEST again — iterators live 15 min and every read returns a
 *   fresh one, so that takes a poller stalled for 15 min); a position older than the 24 h
 *   retention restarts at TRIM_HORIZON (after one more try from the last record read: DynamoDB
 *   Local also calls a fresh iterator below the shard's first record trimmed).
 * - A store that is down or paused never fails the poller: its loops back off (`errorBackoffMs`)
 *   and retry, logging once per outage; the other tables are unaffected. Every tick also reads the
 *   table's `LatestStreamArn`, so a recreated table is followed; `refresh(table)` does it now.
 *
 * `stop()` aborts in-flight Streams calls and sleeps, waits for in-flight deliveries to finish,
 * and leaves no timers behind; nothing is delivered after it resolves.
 */
import { setMaxListeners } from 'node:events';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { logger } from '../lib/logger.js';
import {
  describeStream,
  getRecords,
  latestStreamArn,
  shardIterator,
  streamErrorKind,
  type StreamShard,
} from '../lib/storage/streams.js';

/** The Streams calls the poller makes (lib/storage/streams.ts); replaceable in tests. */
export interface StreamsApi {
  latestStreamArn: typeof latestStreamArn;
  describeStream: typeof describeStream;
  shardIterator: typeof shardIterator;
  getRecords: typeof getRecords;
}

/** The subset of a pino logger the poller uses. */
export interface PollerLog {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface StreamPollerOptions {
  /** The tables to follow; `endpoint` is the DynamoDB (and Streams) endpoint of each table's store. */
  readonly tables: readonly { readonly table: string; readonly endpoint?: string }[];
  /** The function the event source mapping invokes. A throw means "retry this batch". */
  readonly deliver: (event: DynamoDBStreamEvent) => Promise<void>;
  /**
   * An event source filter pattern (AWS's syntax, the subset `matchesPattern` knows): records
   * that do not match are dropped before delivery, as Lambda drops them. @default every record
   */
  readonly filter?: object;
  /** Largest batch (GetRecords `Limit`), 1..1000. @default 100 */
  readonly batchSize?: number;
  /** Wait after an empty read; doubles on each empty read up to `maxIdleMs`. @default 50 */
  readonly idleMs?: number;
  /** @default 250 */
  readonly maxIdleMs?: number;
  /** How often each table's stream is described for new shards (and its ARN checked). @default 1000 */
  readonly discoveryMs?: number;
  /** Deliveries of one batch before it goes to `onFailure` (first try included). @default 5 */
  readonly maxDeliveryAttempts?: number;
  /**
   * Lambda's on-failure destination: takes a batch that failed `maxDeliveryAttempts` times (the
   * replicator hands its partitions to the sweep). A throw means "not taken": the batch is retried.
   * Absent: a failing batch is retried until it succeeds.
   */
  readonly onFailure?: (event: DynamoDBStreamEvent) => Promise<void>;
  /** First wait before a delivery is retried; doubles per retry, up to 2 s. @default 100 */
  readonly retryBaseMs?: number;
  /** Backoff while a store is unreachable or throttling. @default { min: 100, max: 2000 } */
  readonly errorBackoffMs?: { readonly min: number; readonly max: number };
  /** Where shards open at `start()` are read from. @default 'LATEST' */
  readonly startingPosition?: 'LATEST' | 'TRIM_HORIZON';
  /** `start()` resolves once every table's first discovery settled, or after this long. @default 5000 */
  readonly readyTimeoutMs?: number;
  /** @default the process logger */
  readonly log?: PollerLog;
  /** Replaces Streams calls (tests). */
  readonly api?: Partial<StreamsApi>;
}

type StartType = 'LATEST' | 'TRIM_HORIZON';

interface ShardState {
  readonly shardId: string;
  readonly parentShardId: string | undefined;
  status: 'pending' | 'running' | 'done';
  startType: StartType;
  /** Sequence number of the last record read (delivered or skipped). */
  lastSeq: string | undefined;
}

/** One stream of a table: replaced (and its loops abandoned) when the table's stream ARN changes. */
interface Generation {
  readonly arn: string;
  readonly controller: AbortController;
  readonly shards: Map<string, ShardState>;
  listed: boolean;
}

/** An abortable sleep that `wake()` can also end early. */
class Waker {
  private readonly waiters = new Set<() => void>();

  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      signal.addEventListener('abort', done, { once: true });
      this.waiters.add(done);
    });
  }

  wake(): void {
    for (const w of [...this.waiters]) w();
  }
}

/**
 * Listeners one poller's signal may hold at once: every table's runner, and every shard's loop of a
 * stream, listens while its call is in flight or it waits (and stops after) — more than Node's
 * default of 10 with a few tables or shards, none of them leaked.
 */
const SIGNAL_LISTENERS = 1_000;

/** An AbortController that also aborts with `parent` (and drops its listener on parent once it aborts itself). */
function childController(parent: AbortSignal): AbortController {
  const c = new AbortController();
  setMaxListeners(SIGNAL_LISTENERS, c.signal);
  const onParent = () => c.abort();
  parent.addEventListener('abort', onParent, { once: true });
  c.signal.addEventListener('abort', () => parent.removeEventListener('abort', onParent), { once: true });
  return c;
}

const jitter = (ms: number) => Math.round(ms * (0.8 + Math.random() * 0.4));
const errorSummary = (err: unknown) => {
  const e = err as { name?: string; message?: string; code?: string } | undefined;
  return { name: e?.name, code: e?.code, message: e?.message };
};

class TableRunner {
  private gen: Generation | undefined;
  /** While true, the first listing of a stream starts open shards at the configured position. */
  initialWindow = true;
  /** Ends the discovery loop's wait (refresh, a shard that ended or lost its stream). */
  private readonly discovery = new Waker();
  /** Ends the shard loops' error backoff (an explicit refresh: the store is back). */
  private readonly shardsWaker = new Waker();
  /** Delivery retry waits (never woken early). */
  private readonly sleeper = new Waker();
  private failing = false;
  private backoff: number;

  constructor(
    readonly table: string,
    readonly endpoint: string | undefined,
    private readonly p: StreamPoller,
    private readonly o: ResolvedOptions,
    private readonly signal: AbortSignal,
  ) {
    this.backoff = o.errorBackoffMs.min;
  }

  private get ctx() {
    return { table: this.table, endpoint: this.endpoint };
  }

  /** Look the stream up now, and end every error backoff of this table. */
  refresh(): void {
    this.backoff = this.o.errorBackoffMs.min;
    this.discovery.wake();
    this.shardsWaker.wake();
  }

  /** The discovery loop; `onFirstTick` runs once the first tick settled. */
  async run(onFirstTick: () => void): Promise<void> {
    let first = true;
    while (!this.signal.aborted) {
      let ok = false;
      try {
        await this.tick();
        ok = true;
        if (this.failing) this.o.log.info({ event: 'stream-poller-table-recovered', ...this.ctx }, 'stream reachable again');
        this.failing = false;
        this.backoff = this.o.errorBackoffMs.min;
      } catch (err) {
        if (this.signal.aborted) break;
        this.reportFailure(err, 'describe');
      }
      if (first) {
        first = false;
        this.initialWindow = false;
        onFirstTick();
      }
      const wait = ok ? this.o.discoveryMs : jitter(this.backoff);
      if (!ok) this.backoff = Math.min(this.o.errorBackoffMs.max, this.backoff * 2);
      await this.discovery.wait(wait, this.signal);
    }
    this.gen?.controller.abort();
  }

  private reportFailure(err: unknown, op: string): void {
    const kind = streamErrorKind(err);
    const entry = { event: 'stream-poller-table-error', op, kind, ...this.ctx, err: errorSummary(err) };
    if (!this.failing) this.o.log.warn(entry, 'cannot read the table\'s stream; retrying with backoff');
    else this.o.log.debug(entry, 'stream still unreachable');
    this.failing = true;
  }

  private async tick(): Promise<void> {
    const signal = this.signal;
    const arn = await this.o.api.latestStreamArn(this.table, this.endpoint, { signal });
    if (!arn) throw Object.assign(new Error(`table ${this.table} has no stream`), { name: 'ResourceNotFoundException' });
    if (this.gen?.arn !== arn) {
      if (this.gen) this.o.log.info({ event: 'stream-poller-new-stream', ...this.ctx, from: this.gen.arn, to: arn }, 'table has a new stream; following it from TRIM_HORIZON');
      this.gen?.controller.abort();
      this.gen = { arn, controller: childController(signal), shards: new Map(), listed: false };
    }
    const gen = this.gen;
    const listing = await this.o.api.describeStream(arn, this.endpoint, { signal: gen.controller.signal });
    if (gen.controller.signal.aborted) return;
    const initial = !gen.listed;
    const position: StartType = initial && this.initialWindow ? this.o.startingPosition : 'TRIM_HORIZON';
    const pinned = new Map<string, string>();
    const fresh: StreamShard[] = listing.shards.filter((s) => !gen.shards.has(s.shardId));
    if (initial && position === 'LATEST') {
      // Pin LATEST now, so `start()` resolving means "records written from here on are delivered".
      for (const s of fresh) {
        if (s.endingSequenceNumber !== undefined) continue;
        pinned.set(s.shardId, await this.o.api.shardIterator(arn, s.shardId, 'LATEST', undefined, this.endpoint, { signal: gen.controller.signal }));
      }
    }
    for (const s of fresh) {
      const history = initial && position === 'LATEST';
      gen.shards.set(s.shardId, {
        shardId: s.shardId,
        parentShardId: s.parentShardId,
        // with LATEST, shards already closed at start hold only history: skip them
        status: history && s.endingSequenceNumber !== undefined ? 'done' : 'pending',
        startType: history ? 'LATEST' : 'TRIM_HORIZON',
        lastSeq: undefined,
      });
    }
    gen.listed = true;
    // forget finished shards that have left the stream (trimmed after 24 h)
    const listed = new Set(listing.shards.map((s) => s.shardId));
    for (const [id, s] of gen.shards) if (s.status === 'done' && !listed.has(id)) gen.shards.delete(id);
    for (const s of gen.shards.values()) {
      if (s.status !== 'pending') continue;
      const parent = s.parentShardId ? gen.shards.get(s.parentShardId) : undefined;
      if (parent && parent.status !== 'done') continue;
      s.status = 'running';
      this.p.track(this.runShard(gen, s, pinned.get(s.shardId)));
    }
  }

  /** One shard's loop: read, deliver, repeat, until the shard is closed and read to its end. */
  private async runShard(gen: Generation, shard: ShardState, firstIterator: string | undefined): Promise<void> {
    const signal = gen.controller.signal;
    const ctx = { ...this.ctx, shardId: shard.shardId };
    let iterator = firstIterator;
    let idle = this.o.idleMs;
    let backoff = this.o.errorBackoffMs.min;
    let failing = false;
    let retriedTrim = false;
    while (!signal.aborted) {
      let page: { records: DynamoDBRecord[]; nextIterator: string | undefined };
      try {
        iterator ??= shard.lastSeq !== undefined
          ? await this.o.api.shardIterator(gen.arn, shard.shardId, 'AFTER_SEQUENCE_NUMBER', shard.lastSeq, this.endpoint, { signal })
          : await this.o.api.shardIterator(gen.arn, shard.shardId, shard.startType, undefined, this.endpoint, { signal });
        page = await this.o.api.getRecords(iterator, this.endpoint, this.o.batchSize, { signal, streamArn: gen.arn });
      } catch (err) {
        if (signal.aborted) break;
        const kind = streamErrorKind(err);
        if (kind === 'expired-iterator') {
          this.o.log.debug({ event: 'stream-poller-iterator-expired', ...ctx, lastSeq: shard.lastSeq }, 'shard iterator expired; getting a new one');
          iterator = undefined;
          continue;
        }
        if (kind === 'trimmed') {
          iterator = undefined;
          // DynamoDB Local (measured in its code) calls an iterator trimmed when its position is below
          // the shard's first record — which a fresh LATEST or TRIM_HORIZON iterator on an empty shard
          // is as soon as a record arrives (sequence numbers are shared by every table of the store).
          // So a position read past is asked for again first; only a second refusal means retention.
          if (shard.lastSeq !== undefined && !retriedTrim) {
            retriedTrim = true;
            this.o.log.debug({ event: 'stream-poller-trimmed-retry', ...ctx, lastSeq: shard.lastSeq }, 'iterator reported trimmed; asking again after the last record read');
            continue;
          }
          // Nothing read yet: every record of the shard is after the iterator, so TRIM_HORIZON loses and repeats nothing.
          const entry = { event: 'stream-poller-trimmed', ...ctx, lastSeq: shard.lastSeq };
          if (shard.lastSeq !== undefined) this.o.log.warn(entry, 'position is past the stream\'s retention; restarting at TRIM_HORIZON');
          else this.o.log.info(entry, 'iterator is before the shard\'s first record; reading from TRIM_HORIZON');
          shard.lastSeq = undefined;
          shard.startType = 'TRIM_HORIZON';
          continue;
        }
        if (kind === 'not-found' || kind === 'invalid') {
          // the stream may be gone (table deleted, store wiped): let discovery look the ARN up again
          iterator = undefined;
          this.discovery.wake();
        }
        const entry = { event: 'stream-poller-shard-error', kind, ...ctx, err: errorSummary(err) };
        if (!failing) this.o.log.warn(entry, 'cannot read shard; retrying with backoff');
        else this.o.log.debug(entry, 'shard still unreadable');
        failing = true;
        await this.shardsWaker.wait(jitter(backoff), signal);
        backoff = Math.min(this.o.errorBackoffMs.max, backoff * 2);
        continue;
      }
      if (failing) this.o.log.info({ event: 'stream-poller-shard-recovered', ...ctx }, 'shard readable again');
      failing = false;
      retriedTrim = false;
      backoff = this.o.errorBackoffMs.min;
      if (page.records.length > 0) {
        if (signal.aborted) break;
        const pattern = this.o.filter;
        const wanted = pattern ? page.records.filter((r) => matchesPattern(pattern, r)) : page.records;
        if (wanted.length > 0) await this.deliver(wanted, signal, ctx);
        shard.lastSeq = page.records.at(-1)?.dynamodb?.SequenceNumber ?? shard.lastSeq;
        idle = this.o.idleMs;
      }
      if (page.nextIterator === undefined) {
        shard.status = 'done';
        this.o.log.debug({ event: 'stream-poller-shard-closed', ...ctx }, 'shard closed and read to its end');
        this.discovery.wake(); // start its children now
        return;
      }
      iterator = page.nextIterator;
      if (page.records.length === 0) {
        await this.shardsWaker.wait(idle, signal);
        idle = Math.min(this.o.maxIdleMs, idle * 2);
      }
    }
  }

  /**
   * Delivers one batch, retrying a throwing `deliver`; after `maxDeliveryAttempts` failures hands
   * it to `onFailure`, and keeps retrying while there is none or it throws. Returns only once the
   * batch was delivered or taken by `onFailure` (or the poller stops).
   */
  private async deliver(records: DynamoDBRecord[], signal: AbortSignal, ctx: object): Promise<void> {
    const range = { first: records[0]?.dynamodb?.SequenceNumber, last: records.at(-1)?.dynamodb?.SequenceNumber, count: records.length };
    let wait = this.o.retryBaseMs;
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) return;
      try {
        await this.o.deliver({ Records: structuredClone(records) });
        return;
      } catch (err) {
        const entry = { event: 'stream-poller-delivery-failed', ...ctx, ...range, attempt, err: errorSummary(err) };
        if (attempt % this.o.maxDeliveryAttempts !== 0) {
          if (attempt < this.o.maxDeliveryAttempts) this.o.log.warn(entry, 'delivery failed; retrying the batch');
          else this.o.log.debug(entry, 'delivery still failing; retrying the batch');
        } else if (this.o.onFailure) {
          try {
            await this.o.onFailure({ Records: structuredClone(records) });
            this.o.log.error({ ...entry, event: 'stream-poller-batch-handed-off' }, 'delivery failed on every attempt; the batch went to the on-failure destination');
            return;
          } catch (handOff) {
            this.o.log.error({ ...entry, event: 'stream-poller-handoff-failed', handOffErr: errorSummary(handOff) }, 'delivery and the on-failure destination failed; retrying the batch');
          }
        } else {
          this.o.log.error({ ...entry, event: 'stream-poller-batch-stuck' }, 'delivery failed on every attempt and there is no on-failure destination; retrying the batch');
        }
        await this.sleeper.wait(jitter(wait), signal);
        wait = Math.min(2000, wait * 2);
      }
    }
  }
}

/**
 * Whether `value` matches an event filter pattern: every key of an object pattern matches the
 * value's field; an array lists the values allowed (strings, numbers, or `{exists: boolean}`).
 * The subset of AWS's filter syntax that the deployment's filters use; anything else throws.
 */
export function matchesPattern(pattern: unknown, value: unknown): boolean {
  if (Array.isArray(pattern)) {
    return pattern.some((rule) => {
      if (typeof rule !== 'object' || rule === null) return rule === value;
      if (Object.keys(rule).join() !== 'exists') throw new Error(`matchesPattern knows only {exists}, not ${JSON.stringify(rule)}`);
      return (value !== undefined) === (rule as { exists: boolean }).exists;
    });
  }
  if (typeof pattern === 'object' && pattern !== null) {
    return Object.entries(pattern).every(([k, p]) => {
      const field = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[k] : undefined;
      // A field that is absent matches only a rule about existence.
      return field === undefined && !Array.isArray(p) ? false : matchesPattern(p, field);
    });
  }
  return pattern === value;
}

interface ResolvedOptions {
  readonly deliver: (event: DynamoDBStreamEvent) => Promise<void>;
  readonly filter: object | undefined;
  readonly onFailure: ((event: DynamoDBStreamEvent) => Promise<void>) | undefined;
  readonly batchSize: number;
  readonly idleMs: number;
  readonly maxIdleMs: number;
  readonly discoveryMs: number;
  readonly maxDeliveryAttempts: number;
  readonly retryBaseMs: number;
  readonly errorBackoffMs: { readonly min: number; readonly max: number };
  readonly startingPosition: StartType;
  readonly readyTimeoutMs: number;
  readonly log: PollerLog;
  readonly api: StreamsApi;
}

export class StreamPoller {
  private readonly o: ResolvedOptions;
  private readonly tables: { readonly table: string; readonly endpoint?: string }[];
  private controller: AbortController | undefined;
  private runners: TableRunner[] = [];
  private readonly loops = new Set<Promise<void>>();

  constructor(opts: StreamPollerOptions) {
    const positive = (v: number | undefined, d: number) => (v !== undefined && Number.isFinite(v) && v >= 0 ? v : d);
    const min = positive(opts.errorBackoffMs?.min, 100);
    this.tables = [...opts.tables];
    this.o = {
      deliver: opts.deliver,
      filter: opts.filter,
      onFailure: opts.onFailure,
      batchSize: Math.min(1000, Math.max(1, Math.floor(positive(opts.batchSize, 100)))),
      idleMs: Math.max(1, positive(opts.idleMs, 50)),
      maxIdleMs: Math.max(positive(opts.idleMs, 50), positive(opts.maxIdleMs, 250)),
      discoveryMs: positive(opts.discoveryMs, 1000),
      maxDeliveryAttempts: Math.max(1, Math.floor(positive(opts.maxDeliveryAttempts, 5))),
      retryBaseMs: positive(opts.retryBaseMs, 100),
      errorBackoffMs: { min: Math.max(1, min), max: Math.max(min, positive(opts.errorBackoffMs?.max, 2000)) },
      startingPosition: opts.startingPosition ?? 'LATEST',
      readyTimeoutMs: positive(opts.readyTimeoutMs, 5000),
      log: opts.log ?? logger.child({ component: 'stream-poller' }),
      api: { latestStreamArn, describeStream, shardIterator, getRecords, ...opts.api },
    };
  }

  get running(): boolean {
    return this.controller !== undefined && !this.controller.signal.aborted;
  }

  /**
   * Starts one loop per table. Resolves once every table's first discovery settled (succeeded,
   * or failed: such a table keeps retrying in the background) or after `readyTimeoutMs`; from
   * then on every record written is delivered. Never rejects because a store is down.
   */
  async start(): Promise<void> {
    if (this.controller) throw new Error('StreamPoller already started');
    const controller = new AbortController();
    setMaxListeners(SIGNAL_LISTENERS, controller.signal);
    this.controller = controller;
    this.runners = this.tables.map((t) => new TableRunner(t.table, t.endpoint, this, this.o, controller.signal));
    const firstTicks = this.runners.map((r) => new Promise<void>((resolve) => {
      this.track(r.run(resolve));
      controller.signal.addEventListener('abort', () => resolve(), { once: true });
    }));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.o.readyTimeoutMs);
    });
    await Promise.race([Promise.all(firstTicks), timeout]);
    clearTimeout(timer);
    // a table still in its first tick no longer counts as "open at start"
    for (const r of this.runners) r.initialWindow = false;
  }

  /** Follows one more table (a broker added while running) from now on. */
  addTable(table: string, endpoint?: string): void {
    if (this.tables.some((t) => t.table === table && t.endpoint === endpoint)) return;
    this.tables.push({ table, endpoint });
    const controller = this.controller;
    if (!controller) return;
    const runner = new TableRunner(table, endpoint, this, this.o, controller.signal);
    this.runners.push(runner);
    this.track(runner.run(() => undefined));
  }

  /**
   * Looks the table's stream up again now (all tables of that name when `endpoint` is omitted):
   * call after its store was restarted or wiped. A recreated table has a new stream ARN, which is
   * then read from TRIM_HORIZON.
   */
  refresh(table: string, endpoint?: string): void {
    for (const r of this.runners) if (r.table === table && (endpoint === undefined || r.endpoint === endpoint)) r.refresh();
  }

  /** Ends every loop: aborts in-flight Streams calls and waits, awaits in-flight deliveries. */
  async stop(): Promise<void> {
    const controller = this.controller;
    if (!controller) return;
    controller.abort();
    while (this.loops.size > 0) await Promise.allSettled([...this.loops]);
    this.runners = [];
    this.controller = undefined;
  }

  /** @internal Keeps a loop's promise until it settles, so `stop()` can wait for it. */
  track(loop: Promise<void>): void {
    const p = loop.catch((err: unknown) => {
      this.o.log.error({ event: 'stream-poller-loop-crashed', err: errorSummary(err) }, 'stream poller loop failed');
    }).finally(() => this.loops.delete(p));
    this.loops.add(p);
  }
}
