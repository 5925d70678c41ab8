/**
 * The client: one per cluster, handing out producers, consumers and admins that share its
 * connection (transport, cluster id, metadata cache).
 */
import { Admin } from './admin.js';
import type { AuthConfig } from './auth.js';
import { Connection } from './connection.js';
import { Consumer } from './consumer.js';
import { type ConsumerConfig } from './consumer-types.js';
import { Producer, type ProducerConfig } from './producer.js';
import type { RetryOptions } from './retry.js';
import { Transport, type FetchLike } from './transport.js';

export interface TributaryConfig {
  /** The cluster's HTTP API, e.g. `http://127.0.0.1:8080` or an API Gateway URL. */
  readonly url: string;
  /** @default { type: 'none' } */
  readonly auth?: AuthConfig;
  /** Shown by the cluster where it names clients. @default 'tributary' */
  readonly clientId?: string;
  /** The fetch to use (tests wrap it; old runtimes pass a polyfill). @default globalThis.fetch */
  readonly fetch?: FetchLike;
  /** Longest wait for one answer, a long poll's wait aside. @default 30000 */
  readonly requestTimeout?: number;
  /** Backoff for retriable errors (kafkajs's options and defaults). */
  readonly retry?: RetryOptions;
  /** How long topic partition counts are trusted (Kafka's `metadata.max.age.ms`). @default 300000 */
  readonly metadataMaxAge?: number;
  /**
   * The cluster's WebSocket API, which consumers read from when it is there (docs/websocket.md):
   * in AWS the stack output `WebSocketUrl`; `false` never uses one.
   * @default `url` with a ws(s) scheme and the path `/ws` (the local stack's)
   */
  readonly websocketUrl?: string | false;
}

/**
 * A Tributary cluster, as kafkajs's `Kafka` is a Kafka cluster.
 *
 * @example
 * ```ts
 * import { Tributary } from 'tributary';
 * const tributary = new Tributary({ url: 'http://127.0.0.1:8080' });
 * const producer = tributary.producer();
 * await producer.send({ topic: 'orders', messages: [{ key: 'alice', value: 'hello' }] });
 * ```
 */
export class Tributary {
  /** @internal shared by everything this client makes */
  readonly connection: Connection;

  constructor(readonly config: TributaryConfig) {
    const transport = new Transport({
      url: config.url,
      ...(config.auth ? { auth: config.auth } : {}),
      ...(config.fetch ? { fetch: config.fetch } : {}),
      ...(config.requestTimeout !== undefined ? { requestTimeout: config.requestTimeout } : {}),
    });
    const websocketUrl = config.websocketUrl === false ? undefined : config.websocketUrl ?? `${transport.baseUrl.replace(/^http/, 'ws')}/ws`;
    this.connection = new Connection(transport, config.retry ?? {}, config.metadataMaxAge ?? 300_000, websocketUrl);
  }

  /**
   * A producer: batches by `lingerMs`/`batchSize`, idempotent by default.
   *
   * @example
   * ```ts
   * const producer = tributary.producer({ lingerMs: 10 });
   * await producer.send({ topic: 'orders', messages: [{ value: 'a' }, { key: 'k', value: 'b' }] });
   * await producer.disconnect();
   * ```
   */
  producer(config: ProducerConfig = {}): Producer {
    return new Producer(this.connection, config);
  }

  /**
   * A consumer in group `groupId`.
   *
   * @example
   * ```ts
   * const consumer = tributary.consumer({ groupId: 'billing' });
   * await consumer.subscribe({ topics: ['orders'], fromBeginning: true });
   * await consumer.run({ eachMessage: async ({ partition, message }) => console.log(partition, message.offset) });
   * ```
   */
  consumer(config: ConsumerConfig): Consumer {
    return new Consumer(this.connection, config);
  }

  /**
   * An admin client.
   *
   * @example
   * ```ts
   * const admin = tributary.admin();
   * await admin.createTopics({ topics: [{ topic: 'orders', numPartitions: 3 }] });
   * ```
   */
  admin(): Admin {
    return new Admin(this.connection);
  }

  /** HTTP requests this client has sent so far (benchmarks count them). */
  get requestCount(): number {
    return this.connection.transport.requests;
  }
}
