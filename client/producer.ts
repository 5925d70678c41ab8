/**
 * The producer: records from any number of `send` calls are gathered per topic for `lingerMs` or
 * until `batchSize` bytes, and go out as one `records:batch` request per topic (the server has no
 * request spanning topics; one request carries every partition of its topic, up to 10,000 records).
 * Idempotent by default: a producer id and epoch from the cluster (Kafka's InitProducerId) and a
 * sequence per partition, so a retry of a request whose answer was lost returns the first
 * attempt's offsets and writes nothing twice.
 */
import { wireData, toBase64, utf8, type Bytes } from './bytes.js';
import type { Connection } from './connection.js';
import { TributaryError, TributaryProtocolError, errorFromResponse, isRetriable } from './errors.js';
import { defaultPartitioner, type Partitioner } from './partitioner.js';
import { backoff, sleep, type RetryOptions } from './retry.js';

/** A record to send, in kafkajs's shape. */
export interface Message {
  readonly key?: Bytes;
  readonly value: Bytes;
  /** Header values are text (sent as UTF-8) or bytes; an array sends the header once per value. */
  readonly headers?: Record<string, string | Uint8Array | (string | Uint8Array)[] | undefined>;
  /** The partition; else the partitioner picks one. */
  readonly partition?: number;
  /** Epoch milliseconds (a string, as kafkajs has it, or a number); else the append time. */
  readonly timestamp?: string | number;
}

/** Acknowledgements: 0 none, 1 the leader, -1 every in-sync replica. */
export type Acks = -1 | 0 | 1;

/**
 * Compression codecs, as kafkajs names and numbers them. Over HTTP a request body is compressed
 * as a whole (`Content-Encoding`), and HTTP has gzip; Snappy, LZ4 and ZSTD are refused.
 */
export const CompressionTypes = { None: 0, GZIP: 1, Snappy: 2, LZ4: 3, ZSTD: 4 } as const;

/** Whether `compression` asks for gzip; a TributaryError for a codec the HTTP API does not take. */
function wantsGzip(compression: number | undefined, where: string): boolean {
  if (compression === undefined || compression === CompressionTypes.None) return false;
  if (compression === CompressionTypes.GZIP) return true;
  const name = Object.entries(CompressionTypes).find(([, v]) => v === compression)?.[0];
  throw new TributaryError(`${where}: compression ${name ?? compression} is not supported over HTTP; use CompressionTypes.GZIP or CompressionTypes.None (request bodies are sent with Content-Encoding: gzip).`);
}

export interface ProducerRecord {
  readonly topic: string;
  readonly messages: readonly Message[];
  /** @default the producer's `acks` */
  readonly acks?: Acks;
  /**
   * `CompressionTypes.GZIP` gzips the requests that carry these records (as kafkajs has it, per
   * send); `None` or absent leaves that to the producer's `compression`. Others are refused.
   * Stored batches are compressed by the topic's `compression.type`, whatever the wire did.
   */
  readonly compression?: number;
}

/** What `send` resolves with: one entry per partition the call wrote to (kafkajs's shape, plus every offset). */
export interface RecordMetadata {
  readonly topicName: string;
  readonly partition: number;
  readonly errorCode: number;
  /** The first of this call's offsets in the partition (`-1` under acks=0). */
  readonly baseOffset: string;
  /** Every offset this call's records got in the partition, in the order they were given. */
  readonly offsets: string[];
  readonly logAppendTime: string;
  readonly logStartOffset: string;
}

export interface ProducerConfig {
  /** Exactly-once writes per partition across retries (Kafka's `enable.idempotence`). @default true */
  readonly idempotent?: boolean;
  /** @default -1 (all in-sync replicas; Kafka's default) */
  readonly acks?: Acks;
  /** How long a record waits for others to share its request (Kafka's `linger.ms`). @default 5 */
  readonly lingerMs?: number;
  /** A topic's pending bytes that send a request at once (Kafka's `batch.size`, per request here); 0 sends every record alone. @default 1048576 */
  readonly batchSize?: number;
  /** Records in one request, at most 10,000 (the server's limit). @default 10000 */
  readonly maxBatchRecords?: number;
  /** Requests in flight per topic, each for other partitions (Kafka's `max.in.flight.requests.per.connection`). @default 5 */
  readonly maxInFlightRequests?: number;
  /** How long a record may take, retries included (Kafka's `delivery.timeout.ms`). @default 120000 */
  readonly deliveryTimeoutMs?: number;
  /** Backoff between retries; `retries` is not used: retries go on until `deliveryTimeoutMs`. */
  readonly retry?: RetryOptions;
  /** Picks the partition of a record without one. @default Kafka's (murmur2 of the key; sticky when unkeyed) */
  readonly createPartitioner?: () => Partitioner;
  /**
   * `CompressionTypes.GZIP` gzips every produce request body (`Content-Encoding: gzip`; Kafka's
   * `compression.type=gzip`). Snappy, LZ4 and ZSTD throw here: HTTP has no such content coding.
   * @default CompressionTypes.None
   */
  readonly compression?: number;
  /**
   * A transactional producer (Kafka's `transactional.id`): `connect()` fences every earlier
   * producer of the id and finishes what it left; records go out only in a `transaction()`.
   * Needs `idempotent` and acks -1, as Kafka's does.
   */
  readonly transactionalId?: string;
  /** Kafka's `transaction.timeout.ms`: a transaction open longer is aborted by the cluster. @default 60000 */
  readonly transactionTimeout?: number;
}

/** The server's limit on entries in one `records:batch` request. */
export const MAX_BATCH_ENTRIES = 10_000;
/** A request's JSON stays well under Lambda's 6 MB payload (4 MiB requests were reset by the on-disk bench stack; see the report). */
const MAX_REQUEST_BYTES = 2 * 1024 * 1024;

interface Entry {
  readonly partition: number;
  readonly wire: Record<string, unknown>;
  readonly bytes: number;
  /** Its send asked for gzip: the request that carries it is compressed. */
  readonly gzip: boolean;
  sequence?: number;
  readonly done: (offset: number | null, err?: Error) => void;
}

interface InFlight { readonly partitions: ReadonlySet<number>; failed: boolean }

interface TopicQueue {
  entries: Entry[];
  bytes: number;
  timer?: ReturnType<typeof setTimeout>;
  inFlight: InFlight[];
}

function wireHeaders(h: Message['headers']): { name: string; value: string | null }[] | undefined {
  if (!h) return undefined;
  const out: { name: string; value: string | null }[] = [];
  for (const [name, v] of Object.entries(h)) {
    for (const one of Array.isArray(v) ? v : [v]) {
      if (one === undefined) continue;
      out.push({ name, value: toBase64(typeof one === 'string' ? utf8(one) : one) });
    }
  }
  return out.length > 0 ? out : undefined;
}

/**
 * Sends records. Create with `tributary.producer()`.
 *
 * @example
 * ```ts
 * const producer = tributary.producer({ lingerMs: 5 });
 * await producer.connect();
 * await producer.send({ topic: 'orders', messages: [{ key: 'alice', value: JSON.stringify({ amount: 42 }) }] });
 * await producer.disconnect();
 * ```
 */
export class Producer {
  private readonly idempotent: boolean;
  private readonly acks: Acks;
  private readonly lingerMs: number;
  private readonly batchSize: number;
  private readonly maxRecords: number;
  private readonly maxInFlight: number;
  private readonly deliveryTimeoutMs: number;
  private readonly gzip: boolean;
  private readonly partitioner: Partitioner & { nextBatch?: (topic: string) => void };
  private readonly queues = new Map<string, TopicQueue>();
  private readonly sequences = new Map<string, number>();
  private readonly running = new Set<Promise<void>>();
  private producerIdP: Promise<{ producer_id: number; producer_epoch: number }> | undefined;
  private closed = false;
  private readonly transactionalId: string | undefined;
  /** The transaction open now, and the first error one of its sends met (the transaction can then only abort). */
  private open: { readonly txn: Transaction; failed?: Error } | undefined;

  constructor(private readonly conn: Connection, private readonly config: ProducerConfig = {}) {
    this.idempotent = config.idempotent ?? true;
    this.acks = config.acks ?? -1;
    this.lingerMs = config.lingerMs ?? 5;
    this.batchSize = config.batchSize ?? 1_048_576;
    this.maxRecords = Math.min(config.maxBatchRecords ?? MAX_BATCH_ENTRIES, MAX_BATCH_ENTRIES);
    this.maxInFlight = config.maxInFlightRequests ?? 5;
    this.deliveryTimeoutMs = config.deliveryTimeoutMs ?? 120_000;
    this.gzip = wantsGzip(config.compression, 'producer');
    this.partitioner = config.createPartitioner?.() ?? defaultPartitioner();
    this.transactionalId = config.transactionalId;
    if (this.transactionalId !== undefined && (!this.idempotent || this.acks !== -1)) {
      throw new TributaryError('A transactional producer must be idempotent and use acks -1, as Kafka\'s must.');
    }
  }

  /** Gets the producer id (idempotent producers) and the cluster id; `send` does it too when needed. */
  async connect(): Promise<void> {
    this.closed = false;
    await this.conn.clusterId();
    if (this.idempotent) await this.producerId();
  }

  /**
   * The idempotent producer's id and epoch (Kafka's InitProducerId), asked once; for a
   * transactional producer, its transactional id's (which fences earlier producers of the id). The
   * epoch of a transactional producer moves on at each transaction's end.
   */
  private producerId(): Promise<{ producer_id: number; producer_epoch: number }> {
    this.producerIdP ??= (async () => (this.transactionalId === undefined
      ? this.conn.call<{ producer_id: number; producer_epoch: number }>('POST', await this.conn.v3('/producers'))
      : this.conn.call<{ producer_id: number; producer_epoch: number }>('POST', await this.conn.v3(`/transactions/${encodeURIComponent(this.transactionalId)}/producer`), {
        body: { transaction_timeout_ms: this.config.transactionTimeout ?? 60_000 },
      })))();
    this.producerIdP.catch(() => { this.producerIdP = undefined; });
    return this.producerIdP;
  }

  /** Sends records to one topic; resolves once every one is acknowledged as `acks` says. */
  async send(record: ProducerRecord): Promise<RecordMetadata[]> {
    return this.sendBatch({ topicMessages: [record], ...(record.acks !== undefined ? { acks: record.acks } : {}) });
  }

  /** Sends records to several topics at once (kafkajs's `sendBatch`). */
  async sendBatch(batch: { topicMessages: readonly ProducerRecord[]; acks?: Acks }): Promise<RecordMetadata[]> {
    if (this.transactionalId !== undefined) throw new TributaryError('A transactional producer sends in a transaction: `const txn = await producer.transaction(); await txn.send(...)`.');
    return this.sendNow(batch);
  }

  /**
   * Begins a transaction (kafkajs's `producer.transaction()`): its sends, and the offsets it sends,
   * are seen by read_committed consumers when it commits, and never if it aborts.
   * @example
   * ```ts
   * const producer = tributary.producer({ transactionalId: 'payments', idempotent: true });
   * await producer.connect();
   * const txn = await producer.transaction();
   * try {
   *   await txn.send({ topic: 'ledger', messages: [{ key: 'alice', value: '-10' }, { key: 'bob', value: '+10' }] });
   *   await txn.sendOffsets({ consumerGroupId: 'payments', topics: [{ topic: 'requests', partitions: [{ partition: 0, offset: '42' }] }] });
   *   await txn.commit();
   * } catch (e) {
   *   await txn.abort();
   * }
   * ```
   */
  async transaction(): Promise<Transaction> {
    if (this.transactionalId === undefined) throw new TributaryError('transaction() needs a producer made with a transactionalId.');
    if (this.closed) throw new TributaryError('The producer is disconnected.');
    if (this.open) throw new TributaryError('A transaction is open already: commit or abort it first.');
    await this.producerId();
    const txn = new Transaction(this);
    this.open = { txn };
    return txn;
  }

  /** The open transaction's send (Transaction.sendBatch). */
  async sendInTransaction(txn: Transaction, batch: { topicMessages: readonly ProducerRecord[] }): Promise<RecordMetadata[]> {
    this.checkOpen(txn);
    try {
      return await this.sendNow(batch);
    } catch (err) {
      if (this.open?.txn === txn) this.open.failed ??= err as Error;
      throw err;
    }
  }

  /** The open transaction's offsets (Transaction.sendOffsets). */
  async sendOffsetsInTransaction(txn: Transaction, o: SendOffsetsOptions): Promise<void> {
    this.checkOpen(txn);
    const pid = await this.producerId();
    const path = await this.conn.v3(`/transactions/${encodeURIComponent(this.transactionalId as string)}/offsets`);
    const member = o.consumer && 'groupMetadata' in o.consumer ? o.consumer.groupMetadata() : o.consumer;
    await this.conn.call('POST', path, {
      body: {
        producer_id: pid.producer_id, producer_epoch: pid.producer_epoch, group_id: o.consumerGroupId,
        offsets: o.topics.flatMap((t) => t.partitions.map((p) => ({ topic_name: t.topic, partition_id: p.partition, offset: Number(p.offset), ...(p.metadata != null ? { metadata: p.metadata } : {}) }))),
        ...(member ? { consumer: { member_id: member.memberId, generation_id: member.generationId } } : {}),
      },
    }).catch((err: unknown) => {
      if (this.open?.txn === txn) this.open.failed ??= err as Error;
      throw err;
    });
  }

  /**
   * Ends the open transaction (Transaction.commit / abort): every send in flight first; a commit of
   * a transaction one of whose sends failed throws that error (abort it). The answer's epoch is the
   * next transaction's, whose sequences start again at 0.
   */
  async endTransaction(txn: Transaction, commit: boolean): Promise<void> {
    this.checkOpen(txn);
    await this.flush();
    const failed = this.open?.failed;
    if (commit && failed) throw failed;
    const pid = await this.producerId();
    const path = await this.conn.v3(`/transactions/${encodeURIComponent(this.transactionalId as string)}/end`);
    // (a retry whose first attempt was applied gets the same answer: the coordinator knows its epoch)
    const r = await this.conn.call<{ producer_id: number; producer_epoch: number }>('POST', path, { body: { producer_id: pid.producer_id, producer_epoch: pid.producer_epoch, commit } });
    // (a producer id whose epochs ran out is replaced by a new one at epoch 0)
    pid.producer_id = r.producer_id;
    pid.producer_epoch = r.producer_epoch;
    this.sequences.clear();
    this.open = undefined;
  }

  private checkOpen(txn: Transaction): void {
    if (this.open?.txn !== txn) throw new TributaryError('This transaction has ended.');
  }

  private async sendNow(batch: { topicMessages: readonly ProducerRecord[]; acks?: Acks }): Promise<RecordMetadata[]> {
    if (this.closed) throw new TributaryError('The producer is disconnected.');
    const acks = batch.acks ?? batch.topicMessages[0]?.acks ?? this.acks;
    if (acks !== this.acks) throw new TributaryError(`acks is a producer setting here (${this.acks}); make another producer for acks=${acks}.`);
    if (this.idempotent) await this.producerId();
    const perTopic = await Promise.all(batch.topicMessages.map((r) => this.enqueue(r)));
    return perTopic.flat();
  }

  private async enqueue(record: ProducerRecord): Promise<RecordMetadata[]> {
    const { topic } = record;
    const gzip = wantsGzip(record.compression, `send to ${topic}`);
    const count = await this.conn.partitionCount(topic);
    const results = new Map<number, { offsets: (number | null)[] }>();
    const promises: Promise<void>[] = [];
    // Every record is checked before any is queued: a bad one fails the call and sends nothing.
    const prepared = record.messages.map((m) => {
      const partition = m.partition ?? this.partitioner({ topic, partitionCount: count, message: m });
      if (!Number.isInteger(partition) || partition < 0 || partition >= count) {
        throw new TributaryProtocolError(`UNKNOWN_TOPIC_OR_PARTITION: topic ${topic} has no partition ${partition} (it has ${count}).`, 'UNKNOWN_TOPIC_OR_PARTITION', 404, 40402, false);
      }
      const key = wireData(m.key);
      const value = wireData(m.value);
      const headers = wireHeaders(m.headers);
      const wire: Record<string, unknown> = {
        partition_id: partition,
        ...(key ? { key } : {}),
        ...(value ? { value } : {}),
        ...(headers ? { headers } : {}),
        ...(m.timestamp !== undefined ? { timestamp: Number(m.timestamp) } : {}),
      };
      const bytes = 64 + (key?.data.length ?? 0) + (value?.data.length ?? 0) + (headers ? JSON.stringify(headers).length : 0);
      return { partition, wire, bytes };
    });
    const q = this.queue(topic);
    for (const { partition, wire, bytes } of prepared) {
      const slot = results.get(partition) ?? { offsets: [] };
      results.set(partition, slot);
      const index = slot.offsets.push(null) - 1;
      promises.push(new Promise<void>((resolve, reject) => {
        q.entries.push({ partition, wire, bytes, gzip, done: (offset, err) => (err ? reject(err) : (slot.offsets[index] = offset, resolve())) });
      }));
      q.bytes += bytes;
      if (this.batchSize === 0 || q.bytes >= this.batchSize || q.entries.length >= this.maxRecords) this.drain(topic);
    }
    if (q.entries.length > 0 && !q.timer) q.timer = setTimeout(() => this.drain(topic), this.lingerMs);
    await Promise.all(promises);
    return [...results].map(([partition, r]) => {
      const offsets = r.offsets.map((o) => String(o ?? -1));
      return { topicName: topic, partition, errorCode: 0, baseOffset: offsets[0] ?? '-1', offsets, logAppendTime: '-1', logStartOffset: '-1' };
    });
  }

  private queue(topic: string): TopicQueue {
    let q = this.queues.get(topic);
    if (!q) this.queues.set(topic, (q = { entries: [], bytes: 0, inFlight: [] }));
    return q;
  }

  /**
   * Sends what the topic has gathered, in as few requests as the limits allow. A partition has at
   * most one request in flight: over HTTP, parallel requests reach the server in any order, and a
   * later sequence arriving first is OUT_OF_ORDER_SEQUENCE_NUMBER (Kafka's one ordered connection
   * per broker does not have that problem). So requests in flight together hold disjoint
   * partitions, and records of a busy partition wait — and gather — until its request returns.
   */
  private drain(topic: string): void {
    const q = this.queue(topic);
    if (q.timer) clearTimeout(q.timer);
    delete q.timer;
    const perRequest = this.batchSize === 0 ? 1 : this.maxRecords;
    while (q.entries.length > 0 && q.inFlight.length < this.maxInFlight) {
      const busy = new Set(q.inFlight.flatMap((f) => [...f.partitions]));
      const take: Entry[] = [];
      const rest: Entry[] = [];
      let bytes = 0;
      for (const e of q.entries) {
        const fits = take.length < perRequest && (take.length === 0 || bytes + e.bytes <= MAX_REQUEST_BYTES);
        if (!busy.has(e.partition) && fits) {
          take.push(e);
          bytes += e.bytes;
        } else {
          rest.push(e);
          // Order within a partition: once one of its records waits, the later ones wait too.
          busy.add(e.partition);
        }
      }
      if (take.length === 0) break;
      q.entries = rest;
      q.bytes -= bytes;
      this.partitioner.nextBatch?.(topic);
      const me: InFlight = { partitions: new Set(take.map((e) => e.partition)), failed: false };
      const earlier = q.inFlight.filter((f) => [...me.partitions].some((p) => f.partitions.has(p)));
      q.inFlight.push(me);
      // Sequences now, in sending order.
      if (this.idempotent) for (const e of take) e.sequence = this.nextSequence(topic, e.partition);
      const run = this.request(topic, take, me, earlier).finally(() => {
        q.inFlight.splice(q.inFlight.indexOf(me), 1);
        // What gathered meanwhile is ready: send it now.
        if (q.entries.length > 0) this.drain(topic);
      });
      this.running.add(run);
      void run.finally(() => this.running.delete(run));
    }
  }

  /** One request (and its retries) for `entries`. */
  private async request(topic: string, entries: Entry[], me: InFlight, earlier: InFlight[]): Promise<void> {
    const deadline = Date.now() + this.deliveryTimeoutMs;
    let left = entries;
    try {
      const pid = this.idempotent ? await this.producerId() : undefined;
      const path = await this.conn.v3(`/topics/${encodeURIComponent(topic)}/records:batch`);
      const gzip = this.gzip || entries.some((e) => e.gzip);
      const query = {
        acks: this.acks === -1 ? 'all' : this.acks, ...(pid ? { producer_id: pid.producer_id, producer_epoch: pid.producer_epoch } : {}),
        ...(this.transactionalId !== undefined ? { transactional_id: this.transactionalId } : {}),
      };
      for (let attempt = 0; left.length > 0; attempt++) {
        let lastError: unknown;
        try {
          const body = { entries: left.map((e, i) => ({ id: i, ...e.wire, ...(e.sequence !== undefined ? { sequence: e.sequence } : {}) })) };
          const r = (await this.conn.transport.call<{ successes: { id: string; offset: number | null }[]; failures: { id: string; error_code: number; message: string }[] }>('POST', path, { query, body, gzip })).body;
          for (const s of r.successes) left[Number(s.id)]?.done(s.offset);
          const retry: Entry[] = [];
          for (const f of r.failures) {
            const e = left[Number(f.id)] as Entry;
            const err = errorFromResponse(Math.floor(f.error_code / 100) || f.error_code, f);
            // Written once before, offsets no longer known: delivered (Kafka treats it as success).
            if (err.type === 'DUPLICATE_SEQUENCE_NUMBER') e.done(null);
            // A gap closes when the request holding the missing sequences lands (it may still be
            // retrying after an answer that never came), unless that request failed for good.
            else if (err.retriable || (err.type === 'OUT_OF_ORDER_SEQUENCE_NUMBER' && !earlier.some((x) => x.failed))) {
              retry.push(e);
              lastError = err;
            } else {
              e.done(null, err);
              me.failed = true;
            }
          }
          left = retry;
        } catch (err) {
          if (!isRetriable(err)) throw err;
          lastError = err;
        }
        if (left.length === 0) break;
        if (Date.now() + backoff(attempt, this.config.retry) > deadline) throw lastError;
        await sleep(backoff(attempt, this.config.retry));
      }
    } catch (err) {
      me.failed = true;
      for (const e of left) e.done(null, err as Error);
    }
  }

  private nextSequence(topic: string, partition: number): number {
    const k = `${topic}\u0000${partition}`;
    const s = this.sequences.get(k) ?? 0;
    this.sequences.set(k, s === 2 ** 31 - 1 ? 0 : s + 1);
    return s;
  }

  /** Sends everything gathered now, and waits for every request in flight. */
  async flush(): Promise<void> {
    for (const topic of this.queues.keys()) this.drain(topic);
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  /** Flushes, then refuses further sends. */
  async disconnect(): Promise<void> {
    await this.flush();
    this.closed = true;
  }
}

/** What `sendOffsets` takes: kafkajs's shape, and the consumer that read the records (KIP-447's fence). */
export interface SendOffsetsOptions {
  readonly consumerGroupId: string;
  readonly topics: readonly { readonly topic: string; readonly partitions: readonly { readonly partition: number; readonly offset: string | number; readonly metadata?: string | null }[] }[];
  /**
   * The consumer whose records these offsets follow, or its `groupMetadata()` (as Kafka's
   * `sendOffsetsToTransaction(offsets, consumer.groupMetadata())`): the commit is refused if it is no
   * longer the group's member at that generation.
   */
  readonly consumer?: GroupMetadata | { groupMetadata(): GroupMetadata | undefined };
}

/** A consumer's group membership as a transaction's offsets are fenced by (Kafka's ConsumerGroupMetadata). */
export interface GroupMetadata {
  readonly groupId?: string;
  readonly memberId: string;
  readonly generationId: number;
}

/** A transaction of a transactional producer (kafkajs's `Transaction`). */
export class Transaction {
  private active = true;
  constructor(private readonly producer: Producer) {}

  /** Sends records in the transaction. */
  async send(record: ProducerRecord): Promise<RecordMetadata[]> {
    return this.producer.sendInTransaction(this, { topicMessages: [record] });
  }

  async sendBatch(batch: { topicMessages: readonly ProducerRecord[] }): Promise<RecordMetadata[]> {
    return this.producer.sendInTransaction(this, batch);
  }

  /** Offsets (the next offset to read, as Kafka commits them) committed for the group only if the transaction commits. */
  async sendOffsets(o: SendOffsetsOptions): Promise<void> {
    return this.producer.sendOffsetsInTransaction(this, o);
  }

  async commit(): Promise<void> {
    await this.producer.endTransaction(this, true);
    this.active = false;
  }

  async abort(): Promise<void> {
    await this.producer.endTransaction(this, false);
    this.active = false;
  }

  isActive(): boolean {
    return this.active;
  }
}
