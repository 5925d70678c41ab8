/**
 * The group consumer over the native group protocol (KIP-848's ConsumerGroupHeartbeat): the server
 * assigns partitions; the consumer reads each one it owns with long-poll fetches, hands records to
 * `eachMessage` or `eachBatch`, and commits after they return (at-least-once). A partition being
 * revoked is committed and let go before the next heartbeat says so, so the next owner starts
 * where this one stopped.
 */
import type { Connection, FetchResult, KafkaMessage } from './connection.js';
import { TributaryError, TributaryProtocolError, isRetriable } from './errors.js';
import { backoff, sleep, withRetry } from './retry.js';
import type { ConsumerConfig, ConsumerEvent, ConsumerRunConfig, TopicPartition, TopicPartitionOffset } from './consumer-types.js';
import { LongPollTurns } from './long-poll-turns.js';
import { WebSocketFeed } from './websocket-feed.js';


interface PartitionState {
  readonly topic: string;
  readonly partition: number;
  /** The next offset to read. */
  position?: number;
  /** The next offset to commit (what callbacks finished), and what was committed last. */
  resolved?: number;
  committed?: number;
  seekTo?: number;
  paused: boolean;
  stopping: boolean;
  fetch?: AbortController;
  worker?: Promise<void>;
}

/** Commits again after STALE_MEMBER_EPOCH at most this often (waiting 0.1, 0.2, ... s for the heartbeat's new epoch). */
const STALE_COMMIT_RETRIES = 5;

const key = (t: string, p: number) => `${t}\u0000${p}`;
const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * A member of a consumer group. Create with `tributary.consumer({ groupId })`.
 *
 * @example
 * ```ts
 * const consumer = tributary.consumer({ groupId: 'billing' });
 * await consumer.connect();
 * await consumer.subscribe({ topics: ['orders'], fromBeginning: true });
 * await consumer.run({ eachMessage: async ({ message }) => console.log(message.value?.toString()) });
 * ```
 */
export class Consumer {
  private topics: string[] | undefined;
  private pattern: string | undefined;
  private fromBeginning = false;
  private memberId: string | undefined;
  private memberEpoch = 0;
  private running = false;
  private runConfig: ConsumerRunConfig = {};
  private readonly owned = new Map<string, PartitionState>();
  private readonly pendingSeeks = new Map<string, number>();
  private readonly pausedTopics = new Map<string, Set<number> | 'all'>();
  private readonly listeners = new Map<ConsumerEvent, ((e: unknown) => void)[]>();
  private wake = new AbortController();
  private heartbeatLoop: Promise<void> | undefined;
  private heartbeatBusy: Promise<void> = Promise.resolve();
  private slots = 1;
  private readonly slotQueue: (() => void)[] = [];
  private readonly turns: LongPollTurns<PartitionState>;
  private lastCommitAt = Date.now();
  private uncommitted = 0;
  /** The WebSocket transport, while it is used (ConsumerConfig.transport). */
  private feed: WebSocketFeed | undefined;

  constructor(private readonly conn: Connection, private readonly config: ConsumerConfig) {
    if (!config.groupId) throw new TributaryError('consumer({ groupId }) needs a groupId.');
    const longPolls = config.longPolls ?? 1;
    if (!(longPolls >= 1)) throw new TributaryError(`consumer({ longPolls }) must be at least 1, got ${String(config.longPolls)}.`);
    this.turns = new LongPollTurns(longPolls);
  }

  /** Checks the cluster answers. */
  async connect(): Promise<void> {
    await this.conn.clusterId();
  }

  /**
   * Topics to read: names, regular expressions, or a `pattern` (kafkajs: `topics` takes both).
   * `fromBeginning` starts partitions without a committed offset at the earliest offset, else at the end.
   */
  async subscribe(s: { topics?: (string | RegExp)[]; topic?: string | RegExp; pattern?: string | RegExp; fromBeginning?: boolean }): Promise<void> {
    const all = [...(s.topics ?? []), ...(s.topic !== undefined ? [s.topic] : []), ...(s.pattern !== undefined ? [typeof s.pattern === 'string' ? new RegExp(s.pattern) : s.pattern] : [])];
    if (all.length === 0) throw new TributaryError('subscribe needs topics, topic or pattern.');
    if (all.every((t) => typeof t === 'string')) {
      this.topics = [...new Set([...(this.topics ?? []), ...(all as string[])])];
    } else {
      // The server takes names or one regular expression: several become one alternation.
      const parts = [...(this.topics ?? []).map((t) => `^${escapeRegex(t)}$`), ...(this.pattern ? [this.pattern] : []),
        ...all.map((t) => (typeof t === 'string' ? `^${escapeRegex(t)}$` : t.source))];
      this.pattern = parts.map((p) => `(?:${p})`).join('|');
      this.topics = undefined;
    }
    this.fromBeginning = s.fromBeginning ?? this.fromBeginning;
  }

  /** Listens to `consumer.group_join`, `consumer.commit_offsets`, `consumer.crash`, `consumer.rebalancing`. Returns a remover. */
  on(event: ConsumerEvent, listener: (e: unknown) => void): () => void {
    const l = this.listeners.get(event) ?? [];
    l.push(listener);
    this.listeners.set(event, l);
    return () => l.splice(l.indexOf(listener), 1);
  }

  private emit(event: ConsumerEvent, payload: unknown): void {
    for (const l of this.listeners.get(event) ?? []) l({ type: event, timestamp: Date.now(), payload });
  }

  /** Joins the group and starts reading; resolves once the member has joined. */
  async run(config: ConsumerRunConfig): Promise<void> {
    if (!config.eachMessage && !config.eachBatch) throw new TributaryError('run needs eachMessage or eachBatch.');
    if (!this.topics && !this.pattern) throw new TributaryError('Call subscribe before run.');
    if (this.running) throw new TributaryError('The consumer is running already.');
    this.runConfig = config;
    this.slots = config.partitionsConsumedConcurrently ?? 1;
    await this.openFeed();
    this.running = true;
    this.memberEpoch = 0;
    // Joining retries what is retriable (a 5xx, no answer), as the heartbeat loop does after it.
    try {
      await withRetry(() => this.heartbeat(), this.config.retry);
    } catch (e) {
      this.running = false;
      this.closeFeed();
      throw e;
    }
    this.heartbeatLoop = this.loop();
  }

  /** Opens the WebSocket transport when the config asks for it and the cluster offers it (ConsumerConfig.transport). */
  private async openFeed(): Promise<void> {
    const mode = this.config.transport ?? 'auto';
    if (mode === 'long-poll') return;
    const url = this.conn.websocketUrl;
    try {
      if (!url) throw new TributaryError('The client has no websocketUrl.');
      this.feed = await WebSocketFeed.open(url, this.conn.transport);
    } catch (e) {
      if (mode === 'websocket') throw e;
    }
  }

  private closeFeed(): void {
    this.feed?.close();
    this.feed = undefined;
  }

  /** Which transport reads the records now: `websocket` or `long-poll` (ConsumerConfig.transport). */
  get transport(): 'websocket' | 'long-poll' {
    return this.feed && !this.feed.failed ? 'websocket' : 'long-poll';
  }

  /**
   * One read of a partition from `offset`: pushed records over the WebSocket transport, else a
   * fetch (long-polling with `long`). A record too large for a WebSocket message is fetched.
   */
  private async read(p: PartitionState, offset: number, long: boolean, signal: AbortSignal): Promise<FetchResult> {
    const maxWaitMs = this.config.maxWaitTimeInMs ?? 5000;
    const readCommitted = !(this.config.readUncommitted ?? false);
    if (this.feed?.failed) this.closeFeed();
    const pushed = this.feed ? await this.feed.read(p.topic, p.partition, offset, { maxWaitMs, signal, readCommitted }) : undefined;
    if (pushed) return pushed;
    return this.conn.fetch(p.topic, p.partition, offset, {
      maxWaitMs: long && !this.feed ? maxWaitMs : 0, maxBytes: this.config.maxBytesPerPartition ?? 1_048_576, signal, readCommitted,
    });
  }

  private async loop(): Promise<void> {
    let interval = 1000;
    let failures = 0;
    while (this.running) {
      await sleep(interval, this.wake.signal);
      if (this.wake.signal.aborted) this.wake = new AbortController();
      if (!this.running) break;
      try {
        interval = await this.heartbeat();
        failures = 0;
      } catch (e) {
        if (!isRetriable(e)) {
          this.emit('consumer.crash', { error: e, groupId: this.config.groupId, restart: false });
          await this.halt(false);
          return;
        }
        interval = backoff(failures++, this.config.retry);
      }
    }
  }

  private subscription(): Record<string, unknown> {
    return this.topics ? { subscribed_topic_names: this.topics } : { subscribed_topic_regex: this.pattern };
  }

  /** One heartbeat, then reconciling what it said; returns when to send the next one. */
  private async heartbeat(): Promise<number> {
    let next = 1000;
    // One at a time: a callback's heartbeat() and the loop's never interleave.
    const run = this.heartbeatBusy.then(async () => {
      next = await this.heartbeatOnce();
    });
    this.heartbeatBusy = run.catch(() => undefined);
    await run;
    return next;
  }

  private async heartbeatOnce(): Promise<number> {
    const path = await this.conn.v3(`/consumer-groups/${encodeURIComponent(this.config.groupId)}/heartbeat`);
    const joining = this.memberEpoch === 0;
    const body = {
      ...(this.memberId ? { member_id: this.memberId } : {}),
      member_epoch: this.memberEpoch,
      ...this.subscription(),
      ...(joining ? {} : { owned_partitions: [...this.owned.values()].map((p) => ({ topic: p.topic, partition: p.partition })) }),
      session_timeout_ms: this.config.sessionTimeout ?? 45_000,
      ...(this.config.assignor ? { assignor: this.config.assignor } : {}),
    };
    let r: { member_id: string; member_epoch: number; group_epoch?: number; assignment: TopicPartition[]; revoking: TopicPartition[]; heartbeat_interval_ms: number };
    try {
      r = (await this.conn.transport.call<typeof r>('POST', path, { body })).body;
    } catch (e) {
      if (e instanceof TributaryProtocolError && (e.type === 'UNKNOWN_MEMBER_ID' || e.type === 'FENCED_MEMBER_EPOCH')) {
        // Fenced: whatever it owned may be someone else's already; no commits, join again.
        const lost = await this.release([...this.owned.values()], false);
        if (lost.length > 0) await this.config.rebalanceListener?.onPartitionsLost?.(lost);
        this.memberEpoch = 0;
        this.memberId = undefined;
        return 0;
      }
      throw e;
    }
    if (joining) this.emit('consumer.group_join', { groupId: this.config.groupId, memberId: r.member_id });
    this.memberId = r.member_id;
    this.memberEpoch = r.member_epoch;
    const assigned = new Set(r.assignment.map((tp) => key(tp.topic, tp.partition)));
    const gone = [...this.owned.values()].filter((p) => !assigned.has(key(p.topic, p.partition)));
    const added = r.assignment.filter((tp) => !this.owned.has(key(tp.topic, tp.partition)));
    if (gone.length > 0) {
      this.emit('consumer.rebalancing', { groupId: this.config.groupId, memberId: this.memberId });
      const revoked = gone.map((p) => ({ topic: p.topic, partition: p.partition }));
      await this.config.rebalanceListener?.onPartitionsRevoked?.(revoked);
      await this.release(gone, true);
    }
    if (added.length > 0) await this.assign(added);
    // Still reconciling (giving back, or waiting for partitions others give back): ask again soon.
    const reconciling = gone.length > 0 || r.revoking.length > 0 || (r.group_epoch !== undefined && r.member_epoch < r.group_epoch);
    return reconciling ? Math.min(250, r.heartbeat_interval_ms) : r.heartbeat_interval_ms;
  }

  /** Stops reading `parts`, commits what was processed (when `commit`), and forgets them. */
  private async release(parts: PartitionState[], commit: boolean): Promise<TopicPartition[]> {
    for (const p of parts) {
      p.stopping = true;
      p.fetch?.abort();
    }
    await Promise.allSettled(parts.map((p) => p.worker));
    if (commit) await this.commitResolved(parts).catch((e) => this.emit('consumer.crash', { error: e, groupId: this.config.groupId, restart: true }));
    for (const p of parts) {
      this.owned.delete(key(p.topic, p.partition));
      this.feed?.unsubscribe(p.topic, p.partition);
    }
    return parts.map((p) => ({ topic: p.topic, partition: p.partition }));
  }

  private async assign(added: TopicPartition[]): Promise<void> {
    const committed = await this.committedOffsets();
    for (const tp of added) {
      const k = key(tp.topic, tp.partition);
      const seek = this.pendingSeeks.get(k);
      this.pendingSeeks.delete(k);
      const c = committed.get(k);
      const p: PartitionState = { topic: tp.topic, partition: tp.partition, paused: false, stopping: false };
      if (seek !== undefined) p.seekTo = seek;
      else if (c !== undefined) {
        p.position = c;
        p.committed = c;
      }
      this.owned.set(k, p);
      p.worker = this.work(p);
    }
    await this.config.rebalanceListener?.onPartitionsAssigned?.(added.map((tp) => ({ ...tp })));
  }

  /**
   * The group's committed offsets. Reading committed, it asks for stable offsets (Kafka's
   * require_stable) and waits while a transaction holds some (UNSTABLE_OFFSET_COMMIT), as Kafka's
   * consumer does: it would otherwise start below what that transaction is about to commit.
   */
  private async committedOffsets(): Promise<Map<string, number>> {
    const stable = !(this.config.readUncommitted ?? false);
    const path = await this.conn.v3(`/consumer-groups/${encodeURIComponent(this.config.groupId)}/offsets${stable ? '?require_stable=true' : ''}`);
    for (let attempt = 0; ; attempt++) {
      try {
        const r = await this.conn.call<{ data: { topic_name: string; partition_id: number; offset: number }[] }>('GET', path);
        return new Map(r.data.map((o) => [key(o.topic_name, o.partition_id), o.offset]));
      } catch (e) {
        if (e instanceof TributaryProtocolError && e.status === 404) return new Map();
        if (!(e instanceof TributaryProtocolError && e.type === 'UNSTABLE_OFFSET_COMMIT') || !this.running) throw e;
        await sleep(Math.min(1000, 100 * 2 ** attempt));
      }
    }
  }

  private isPaused(p: PartitionState): boolean {
    const t = this.pausedTopics.get(p.topic);
    return p.paused || t === 'all' || (t !== undefined && t.has(p.partition));
  }

  private async acquire(): Promise<void> {
    if (this.slots > 0) {
      this.slots--;
      return;
    }
    await new Promise<void>((r) => this.slotQueue.push(r));
  }

  private releaseSlot(): void {
    const next = this.slotQueue.shift();
    if (next) next();
    else this.slots++;
  }

  /** Reads one owned partition until it is revoked or the consumer stops. */
  private async work(p: PartitionState): Promise<void> {
    let failures = 0;
    while (this.running && !p.stopping) {
      try {
        if (p.seekTo !== undefined) {
          p.position = p.seekTo;
          p.resolved = p.seekTo;
          delete p.seekTo;
        }
        if (p.position === undefined) {
          // (read_committed starts at the last stable offset, as Kafka's consumer: the records of a
          // transaction open now are delivered once it commits)
          const isolation = this.config.readUncommitted ? 'read_uncommitted' : 'read_committed';
          p.position = (await this.conn.listOffset(p.topic, p.partition, this.fromBeginning ? 'earliest' : 'latest', isolation)).offset ?? 0;
        }
        if (this.isPaused(p)) {
          this.turns.leave(p);
          p.fetch = new AbortController();
          await sleep(200, p.fetch.signal);
          continue;
        }
        p.fetch = new AbortController();
        const maxWaitMs = this.config.maxWaitTimeInMs ?? 5000;
        // A partition with records to read gets them at once either way; only the wait takes turns
        // (over the WebSocket transport every partition waits: no function is held while it does).
        const pushed = this.feed !== undefined;
        const long = pushed || this.turns.take(p);
        let result: FetchResult;
        try {
          result = await this.read(p, p.position, long, p.fetch.signal);
        } catch (e) {
          if (p.fetch.signal.aborted) continue;
          if (e instanceof TributaryProtocolError && e.type === 'OFFSET_OUT_OF_RANGE') {
            // Kafka's auto.offset.reset: earliest with fromBeginning, else latest.
            delete p.position;
            continue;
          }
          throw e;
        } finally {
          if (long && !pushed) this.turns.end(p);
        }
        const messages = result.messages.filter((m) => Number(m.offset) >= (p.position as number));
        if (messages.length > 0) this.turns.leave(p);
        if (messages.length > 0 && !p.stopping && p.seekTo === undefined && !this.isPaused(p)) await this.process(p, messages, result.highWatermark);
        else if (messages.length === 0 && result.nextOffset > (p.position as number)) p.position = result.nextOffset;
        failures = 0;
        await this.maybeAutoCommit();
        // At the log end without a turn: check again when a turn ends (at most one wait from now).
        // (its own controller: a revoke or stop ends the wait, and the timer goes when a turn ends first)
        if (messages.length === 0 && !long) {
          const wait = (p.fetch = new AbortController());
          await Promise.race([this.turns.nextEnd, sleep(maxWaitMs, wait.signal)]);
          wait.abort();
        }
      } catch (e) {
        if (!this.running || p.stopping) break;
        this.emit('consumer.crash', { error: e, groupId: this.config.groupId, restart: true });
        await sleep(backoff(failures++, this.config.retry), p.fetch?.signal);
      }
    }
    this.turns.leave(p);
  }

  private async process(p: PartitionState, messages: KafkaMessage[], highWatermark: number): Promise<void> {
    await this.acquire();
    try {
      const stale = () => p.stopping || p.seekTo !== undefined || !this.running;
      const resolve = (offset: string) => {
        const next = Number(offset) + 1;
        if (next > (p.resolved ?? -1)) {
          p.resolved = next;
          this.uncommitted++;
        }
        if (next > (p.position ?? -1)) p.position = next;
      };
      const pause = () => {
        p.paused = true;
        p.fetch?.abort();
        return () => this.resume([{ topic: p.topic, partitions: [p.partition] }]);
      };
      const heartbeat = async () => { await this.heartbeat(); };
      if (this.runConfig.eachBatch) {
        const last = messages[messages.length - 1] as KafkaMessage;
        await this.runConfig.eachBatch({
          batch: {
            topic: p.topic, partition: p.partition, highWatermark: String(highWatermark), messages,
            firstOffset: () => messages[0]?.offset ?? null, lastOffset: () => last.offset,
          },
          resolveOffset: resolve, heartbeat, isRunning: () => this.running, isStale: stale, pause,
          commitOffsetsIfNecessary: () => this.maybeAutoCommit(),
        });
        if (this.runConfig.eachBatchAutoResolve ?? true) resolve(last.offset);
        else p.position = p.resolved ?? p.position;
      } else {
        for (const message of messages) {
          if (stale() || this.isPaused(p)) break;
          await this.runConfig.eachMessage?.({ topic: p.topic, partition: p.partition, message, heartbeat, pause });
          resolve(message.offset);
          const threshold = this.runConfig.autoCommitThreshold;
          if (threshold !== undefined && this.uncommitted >= threshold) await this.maybeAutoCommit(true);
        }
      }
    } finally {
      this.releaseSlot();
    }
  }

  private async maybeAutoCommit(force = false): Promise<void> {
    if (this.runConfig.autoCommit === false) return;
    if (!force && Date.now() - this.lastCommitAt < (this.runConfig.autoCommitInterval ?? 5000)) return;
    this.lastCommitAt = Date.now();
    this.uncommitted = 0;
    await this.commitResolved([...this.owned.values()]);
  }

  private async commitResolved(parts: PartitionState[]): Promise<void> {
    const due = parts.filter((p) => p.resolved !== undefined && p.resolved !== p.committed);
    if (due.length === 0) return;
    await this.commitOffsets(due.map((p) => ({ topic: p.topic, partition: p.partition, offset: String(p.resolved) })));
  }

  /**
   * Kafka's `groupMetadata()`: the group, this member and its generation (member epoch), for a
   * transaction's `sendOffsets({ consumer })` to be fenced by (KIP-447). Undefined before the consumer joined.
   */
  groupMetadata(): { groupId: string; memberId: string; generationId: number } | undefined {
    return this.memberId ? { groupId: this.config.groupId, memberId: this.memberId, generationId: this.memberEpoch } : undefined;
  }

  /** Commits offsets (the next offset to read, as in Kafka) for partitions this member owns. */
  async commitOffsets(offsets: TopicPartitionOffset[]): Promise<void> {
    if (offsets.length === 0) return;
    const path = await this.conn.v3(`/consumer-groups/${encodeURIComponent(this.config.groupId)}/offsets:commit`);
    const body = () => ({
      ...(this.memberId ? { member_id: this.memberId, member_epoch: this.memberEpoch } : {}),
      offsets: offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: Number(o.offset) })),
    });
    // STALE_MEMBER_EPOCH: a heartbeat moved the epoch on while this commit was in flight. Its
    // answer brings the new epoch (maybe a moment later than the error): commit again with it.
    for (let attempt = 0; ; attempt++) {
      const sent = body();
      try {
        await this.conn.call('POST', path, { body: sent });
        break;
      } catch (e) {
        if (!(e instanceof TributaryProtocolError && e.type === 'STALE_MEMBER_EPOCH') || attempt >= STALE_COMMIT_RETRIES) throw e;
        if (this.memberEpoch === sent.member_epoch) await sleep(100 * (attempt + 1));
      }
    }
    for (const o of offsets) {
      const p = this.owned.get(key(o.topic, o.partition));
      if (p) p.committed = Number(o.offset);
    }
    this.emit('consumer.commit_offsets', { groupId: this.config.groupId, topics: offsets });
  }

  /** Moves a partition's position; the next records come from `offset` (committed at the next commit). */
  seek({ topic, partition, offset }: TopicPartitionOffset): void {
    const n = Number(offset);
    if (!Number.isInteger(n) || n < 0) throw new TributaryError(`seek: offset must be a non-negative integer, got ${offset}.`);
    const p = this.owned.get(key(topic, partition));
    if (!p) {
      this.pendingSeeks.set(key(topic, partition), n);
      return;
    }
    p.seekTo = n;
    p.fetch?.abort();
  }

  /** Stops fetching the partitions named (every partition of a topic without `partitions`). */
  pause(topics: { topic: string; partitions?: number[] }[]): void {
    for (const t of topics) {
      if (!t.partitions) this.pausedTopics.set(t.topic, 'all');
      else {
        const cur = this.pausedTopics.get(t.topic);
        const set = cur instanceof Set ? cur : new Set<number>();
        if (cur !== 'all') {
          for (const n of t.partitions) set.add(n);
          this.pausedTopics.set(t.topic, set);
        }
      }
      for (const p of this.owned.values()) if (p.topic === t.topic && (!t.partitions || t.partitions.includes(p.partition))) p.fetch?.abort();
    }
  }

  /** Fetches the partitions named again. */
  resume(topics: { topic: string; partitions?: number[] }[]): void {
    for (const t of topics) {
      const cur = this.pausedTopics.get(t.topic);
      if (!t.partitions || cur === 'all') this.pausedTopics.delete(t.topic);
      else if (cur) for (const n of t.partitions) cur.delete(n);
      for (const p of this.owned.values()) {
        if (p.topic === t.topic && (!t.partitions || t.partitions.includes(p.partition))) {
          p.paused = false;
          p.fetch?.abort();
        }
      }
    }
  }

  /** The paused partitions this member owns. */
  paused(): { topic: string; partitions: number[] }[] {
    const by = new Map<string, number[]>();
    for (const p of this.owned.values()) if (this.isPaused(p)) by.set(p.topic, [...(by.get(p.topic) ?? []), p.partition]);
    return [...by].map(([topic, partitions]) => ({ topic, partitions }));
  }

  /** The partitions this member owns now. */
  assignment(): TopicPartition[] {
    return [...this.owned.values()].map((p) => ({ topic: p.topic, partition: p.partition }));
  }

  /** Stops reading and commits what was processed; the member stays in the group until its session ends. */
  async stop(): Promise<void> {
    await this.halt(true);
  }

  private async halt(waitForHeartbeats: boolean): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.wake.abort();
    const parts = [...this.owned.values()];
    for (const p of parts) p.fetch?.abort();
    await Promise.allSettled(parts.map((p) => p.worker));
    this.closeFeed();
    await this.commitResolved(parts).catch(() => undefined);
    if (waitForHeartbeats) await this.heartbeatLoop?.catch(() => undefined);
  }

  /** Stops, commits, and leaves the group (its partitions move to the other members at once). */
  async disconnect(): Promise<void> {
    await this.stop();
    if (this.memberId) {
      const path = await this.conn.v3(`/consumer-groups/${encodeURIComponent(this.config.groupId)}/heartbeat`);
      await this.conn.transport.call('POST', path, { body: { member_id: this.memberId, member_epoch: -1 } }).catch(() => undefined);
      this.memberId = undefined;
    }
    this.owned.clear();
    this.memberEpoch = 0;
  }
}
