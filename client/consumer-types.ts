/** The consumer's public types: its config, what `run` takes, and what eachMessage and eachBatch are handed. */
import type { KafkaMessage } from './connection.js';
import type { RetryOptions } from './retry.js';

export interface TopicPartition { readonly topic: string; readonly partition: number }
export interface TopicPartitionOffset extends TopicPartition { readonly offset: string }

/** Called around rebalances, with the partitions concerned. */
export interface RebalanceListener {
  /** New partitions this member now reads. */
  onPartitionsAssigned?(partitions: TopicPartition[]): void | Promise<void>;
  /** Partitions taken away; their offsets are committed after this returns. */
  onPartitionsRevoked?(partitions: TopicPartition[]): void | Promise<void>;
  /** Partitions lost without a chance to commit (the member was fenced or its session expired). */
  onPartitionsLost?(partitions: TopicPartition[]): void | Promise<void>;
}

export interface ConsumerConfig {
  readonly groupId: string;
  /** Kafka's `session.timeout.ms`; heartbeats come every third of it. @default 45000 */
  readonly sessionTimeout?: number;
  /** The server-side assignor. @default 'sticky' */
  readonly assignor?: 'sticky' | 'range' | 'roundrobin';
  /** Longest wait of one fetch for new records (kafkajs's `maxWaitTimeInMs`). @default 5000 */
  readonly maxWaitTimeInMs?: number;
  /**
   * How many of this consumer's fetches may wait for new records at once. In Lambda a waiting
   * fetch holds a function instance (and a unit of account concurrency) for its whole wait, so by
   * default the partitions at their log end take turns: one long-polls, the others check with a
   * fetch that does not wait each time a wait ends. A record on a partition that is not waiting is
   * then read within `maxWaitTimeInMs`; `Infinity` long-polls every partition (Kafka's latency, one
   * instance held per owned partition). A partition with records to read never waits for a turn.
   * @default 1
   */
  readonly longPolls?: number;
  /** @default 1048576 */
  readonly maxBytesPerPartition?: number;
  /**
   * How records reach the consumer. `websocket`: the server pushes them over the cluster's
   * WebSocket API (`websocketUrl` of the client), so a consumer that waits holds no function;
   * `long-poll`: fetches over HTTP that wait for records (`maxWaitTimeInMs`, `longPolls`);
   * `auto`: the WebSocket API when it accepts a connection at `run`, else long polls — and long
   * polls from the moment the WebSocket API stays unreachable. Group membership, heartbeats and
   * commits are HTTP calls either way.
   * @default 'auto'
   */
  readonly transport?: 'auto' | 'websocket' | 'long-poll';
  /**
   * Read the records of open and aborted transactions too (Kafka's `isolation.level=read_uncommitted`).
   * By default, as kafkajs, a consumer reads committed: up to the last stable offset, without the
   * records of aborted transactions. Transaction markers are never returned.
   * @default false
   */
  readonly readUncommitted?: boolean;
  readonly retry?: RetryOptions;
  readonly rebalanceListener?: RebalanceListener;
}

export interface EachMessagePayload {
  readonly topic: string;
  readonly partition: number;
  readonly message: KafkaMessage;
  heartbeat(): Promise<void>;
  pause(): () => void;
}

export interface Batch {
  readonly topic: string;
  readonly partition: number;
  readonly highWatermark: string;
  readonly messages: KafkaMessage[];
  firstOffset(): string | null;
  lastOffset(): string;
}

export interface EachBatchPayload {
  readonly batch: Batch;
  /** Marks `offset` as processed: the next commit covers it. */
  resolveOffset(offset: string): void;
  heartbeat(): Promise<void>;
  commitOffsetsIfNecessary(): Promise<void>;
  isRunning(): boolean;
  isStale(): boolean;
  pause(): () => void;
}

export interface ConsumerRunConfig {
  readonly eachMessage?: (payload: EachMessagePayload) => Promise<void>;
  readonly eachBatch?: (payload: EachBatchPayload) => Promise<void>;
  /** With `eachBatch`: every message of the batch is resolved when it returns. @default true */
  readonly eachBatchAutoResolve?: boolean;
  /** @default true */
  readonly autoCommit?: boolean;
  /** @default 5000 */
  readonly autoCommitInterval?: number;
  /** Commit after this many resolved messages as well. @default none */
  readonly autoCommitThreshold?: number;
  /** Partitions whose callbacks may run at the same time. @default 1 */
  readonly partitionsConsumedConcurrently?: number;
}

export type ConsumerEvent = 'consumer.group_join' | 'consumer.commit_offsets' | 'consumer.crash' | 'consumer.rebalancing';
