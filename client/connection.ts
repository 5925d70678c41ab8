/**
 * What producers, consumers and admins of one client share: the transport, the cluster id, topic
 * partition counts (refreshed after `metadataMaxAge`, or at once when a caller finds them stale),
 * and the record reads and offset lookups that consumers and the CLI both use.
 */
import { readData, fromBase64, asBuffer } from './bytes.js';
import { TributaryProtocolError, isRetriable } from './errors.js';
import { withRetry, type RetryOptions } from './retry.js';
import type { Transport} from './transport.js';
import { type CallOptions } from './transport.js';

/** A record as consumers see it, in kafkajs's shape (offsets and timestamps as strings). */
export interface KafkaMessage {
  readonly key: Uint8Array | null;
  readonly value: Uint8Array | null;
  readonly headers: Record<string, Uint8Array | null>;
  /** Epoch milliseconds, as a string (kafkajs). */
  readonly timestamp: string;
  readonly offset: string;
  readonly attributes: number;
  readonly size: number;
}

export interface FetchResult {
  readonly messages: KafkaMessage[];
  readonly nextOffset: number;
  readonly highWatermark: number;
  readonly logStartOffset: number;
}

interface WireRecord {
  offset: number; timestamp: string; key: unknown; value: unknown; headers?: { name: string; value: string | null }[];
}

export class Connection {
  private clusterIdP: Promise<string> | undefined;
  private readonly counts = new Map<string, { count: Promise<number>; at: number }>();

  constructor(readonly transport: Transport, readonly retry: RetryOptions, readonly metadataMaxAge: number, readonly websocketUrl?: string) {}

  /** The cluster's id (there is one), asked once. */
  clusterId(): Promise<string> {
    this.clusterIdP ??= this.call<{ data: { cluster_id: string }[] }>('GET', '/v3/clusters').then((r) => {
      const id = r.data[0]?.cluster_id;
      if (!id) throw new TributaryProtocolError('The server lists no cluster.', 'UNKNOWN_SERVER_ERROR', 200, 200, false);
      return id;
    }).catch((e) => {
      this.clusterIdP = undefined;
      throw e;
    });
    return this.clusterIdP;
  }

  /** `/v3/clusters/{id}` + `rest`. */
  async v3(rest = ''): Promise<string> {
    return `/v3/clusters/${await this.clusterId()}${rest}`;
  }

  /** One call, retried on retriable errors (reads and calls that are safe to repeat). */
  async call<T = unknown>(method: string, path: string, o: CallOptions = {}): Promise<T> {
    return withRetry(async () => (await this.transport.call<T>(method, path, o)).body, this.retry);
  }

  /**
   * A topic's partition count; `fresh` skips the cache (after an error that says it is stale).
   * Concurrent callers share one request; a topic that does not exist fails at once (no retries).
   */
  partitionCount(topic: string, fresh = false): Promise<number> {
    const c = this.counts.get(topic);
    if (c && !fresh && Date.now() - c.at < this.metadataMaxAge) return c.count;
    const count = (async () => {
      const path = await this.v3(`/topics/${encodeURIComponent(topic)}`);
      const notFound = (e: unknown) => e instanceof TributaryProtocolError && e.type === 'UNKNOWN_TOPIC_OR_PARTITION';
      const t = await withRetry(async () => (await this.transport.call<{ partitions_count: number }>('GET', path)).body, this.retry, (e) => isRetriable(e) && !notFound(e));
      return t.partitions_count;
    })();
    this.counts.set(topic, { count, at: Date.now() });
    count.catch(() => { if (this.counts.get(topic)?.count === count) this.counts.delete(topic); });
    return count;
  }

  /** Every topic's name. */
  async topicNames(): Promise<string[]> {
    const r = await this.call<{ data: { topic_name: string }[] }>('GET', await this.v3('/topics'));
    return r.data.map((t) => t.topic_name);
  }

  /**
   * Records of one partition from `offset` (v3 fetch, `format=binary`), waiting up to `maxWaitMs`
   * for the first one; at most `maxBytes` of batches.
   */
  async fetch(topic: string, partition: number, offset: number, o: { maxWaitMs?: number; maxBytes?: number; signal?: AbortSignal; readCommitted?: boolean } = {}): Promise<FetchResult> {
    const path = await this.v3(`/topics/${encodeURIComponent(topic)}/partitions/${partition}/records`);
    const r = (await this.transport.call<{ records: WireRecord[]; next_offset: number; high_watermark: number; log_start_offset: number }>('GET', path, {
      query: { offset, format: 'binary', timeout: o.maxWaitMs ?? 0, max_bytes: o.maxBytes, ...(o.readCommitted ? { isolation_level: 'read_committed' } : {}) },
      extraTimeMs: o.maxWaitMs ?? 0,
      ...(o.signal ? { signal: o.signal } : {}),
    })).body;
    const messages = r.records.map((w): KafkaMessage => {
      const key = readData(w.key);
      const value = readData(w.value);
      const headers: Record<string, Uint8Array | null> = {};
      for (const h of w.headers ?? []) headers[h.name] = h.value == null ? null : asBuffer(fromBase64(h.value));
      return {
        key, value, headers, offset: String(w.offset), timestamp: String(Date.parse(w.timestamp)), attributes: 0,
        size: (key?.length ?? 0) + (value?.length ?? 0),
      };
    });
    return { messages, nextOffset: r.next_offset, highWatermark: r.high_watermark, logStartOffset: r.log_start_offset };
  }

  /**
   * Kafka's ListOffsets for one partition: `earliest`, `latest` (the high watermark; at
   * read_committed the last stable offset), or the first offset at or after a timestamp (null when
   * no record is that recent), with both ends.
   */
  async listOffset(
    topic: string, partition: number, spec: 'earliest' | 'latest' | number, isolation: 'read_uncommitted' | 'read_committed' = 'read_uncommitted',
  ): Promise<{ offset: number | null; low: number; high: number }> {
    const path = await this.v3(`/topics/${encodeURIComponent(topic)}/partitions/${partition}/offsets`);
    const query = { timestamp: spec, ...(isolation === 'read_committed' ? { isolation_level: isolation } : {}) };
    const r = await this.call<{ offset: number | null; beginning_offset: number; end_offset: number }>('GET', path, { query });
    return { offset: r.offset, low: r.beginning_offset, high: r.end_offset };
  }
}
