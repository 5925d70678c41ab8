/**
 * The consumer's WebSocket transport (docs/websocket.md): one connection per consumer, a partition
 * subscription for each partition it owns, and the records the server pushes kept per partition
 * until the consumer reads them. Nothing waits in a function while no record comes: API Gateway
 * holds the socket. The connection is kept open with a ping every few minutes and opened again
 * when it closes (API Gateway's idle timeout and two-hour lifetime, a network failure), each
 * partition subscribed again from the next offset the consumer expects.
 */
import { asBuffer, fromBase64 } from './bytes.js';
import type { FetchResult, KafkaMessage } from './connection.js';
import { errorFromResponse, TributaryConnectionError, type TributaryProtocolError } from './errors.js';
import { backoff, sleep } from './retry.js';
import type { Transport } from './transport.js';

/** The part of a WebSocket that both the browser's and the `ws` package's have. */
export interface Socket {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number): void;
  addEventListener(type: 'open' | 'close' | 'error' | 'message', listener: (e: { data?: unknown }) => void): void;
}
export type SocketFactory = (url: string, headers: Record<string, string>) => Socket;

// A variable, not a literal: bundlers leave `import(name)` alone, so browser bundles never see it.
const NODE_WS = 'ws';
const isNode = (): boolean => typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === 'string';

/** Node: the `ws` package (headers: signed IAM requests, bearer tokens); elsewhere the runtime's WebSocket (a token goes as `?token=`). */
async function socketFactory(): Promise<SocketFactory> {
  if (isNode()) {
    const { WebSocket } = (await import(/* @vite-ignore */ NODE_WS)) as { WebSocket: new (url: string, o: { headers: Record<string, string> }) => Socket };
    return (url, headers) => new WebSocket(url, { headers });
  }
  const Native = (globalThis as { WebSocket?: new (url: string) => Socket }).WebSocket;
  if (!Native) throw new TributaryConnectionError('This runtime has no WebSocket.');
  return (url, headers) => {
    const u = new URL(url);
    const bearer = /^Bearer (.+)$/.exec(headers.authorization ?? headers.Authorization ?? '')?.[1];
    if (bearer) u.searchParams.set('token', bearer);
    else if (Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')) throw new TributaryConnectionError('A signed (IAM) WebSocket handshake needs headers, which this runtime cannot send.');
    return new Native(u.toString());
  };
}

interface FrameRecord { offset: number; timestamp: number; key: string | null; value: string | null; headers?: { key: string; value: string | null }[] }

interface Frame {
  type?: string; topic?: string; partition?: number; records?: FrameRecord[]; high_watermark?: number; last_stable_offset?: number;
  next_offset?: number; error_code?: number; offset?: number; subscription_id?: string; group_id?: string; message?: string;
}

interface PartitionFeed {
  readonly topic: string;
  readonly partition: number;
  readonly isolation: 'read_uncommitted' | 'read_committed';
  /** The next offset expected: records below it are dropped (a redelivery). */
  next: number;
  readonly messages: KafkaMessage[];
  /** Bytes of `messages`. */
  bytes: number;
  highWatermark: number;
  /**
   * `subscribing`: a subscribe from `from` is sent (again after SUBSCRIBE_RESEND_MS without its
   * answer); `active`: answered; `paused`: unsubscribed while its records wait to be read
   * (MAX_BUFFERED_BYTES), subscribed again from `next` once they are; `released`: the consumer
   * let it go.
   */
  state: 'subscribing' | 'active' | 'paused' | 'released';
  /** The offset the current subscription starts at, and when its subscribe was sent. */
  from: number;
  sentAt: number;
  /** The subscriptions (their `subscription_id`) answered for `from` since it was sent: only their records are taken. */
  readonly gens: Set<string>;
  /** Subscriptions answered for an earlier start: their frames still arriving are dropped. */
  readonly retired: Set<string>;
  /** An `unsubscribed`, or a `subscribed` for another start, came while subscribing: it may have been served after ours, which is then sent again once answered. */
  recheck?: boolean;
  error?: TributaryProtocolError;
  /** A record too large for a WebSocket message is at `next`: read it over HTTP. */
  tooLarge?: boolean;
  /**
   * What the current subscription's frames said: how far the partition was readable (its high
   * watermark, or last stable offset at read_committed), where the subscription goes on from
   * (`next_offset`), and when the last one came. Readable records past `delivered` with no frame
   * for STALL_MS: the delivery was cut short, and the subscription is sent again.
   */
  readable: number;
  delivered: number;
  frameAt: number;
  /** Retriable error frames in a row (each answered by a subscribe again); the MAX_FAILURES-th is the consumer's. */
  failures: number;
}

const bytes = (b64: string | null): Uint8Array | null => (b64 === null ? null : asBuffer(fromBase64(b64)));
const fk = (topic: string, partition: number) => `${topic}\u0000${partition}`;
/** How far a frame says the partition is readable for this subscription: its last stable offset at read_committed, else its high watermark. */
const readableBy = (p: PartitionFeed, f: Frame): number => (p.isolation === 'read_committed' ? f.last_stable_offset : undefined) ?? f.high_watermark ?? 0;

/** API Gateway closes a connection idle for 10 minutes: a ping every 5 keeps it open. */
const KEEPALIVE_MS = 5 * 60_000;
/** Reconnects in a row that may fail before the feed gives up (the consumer goes back to long polls). */
const MAX_RECONNECTS = 8;
/** A subscribe not answered by then is sent again (its invocation failed or was throttled). */
const SUBSCRIBE_RESEND_MS = 5000;
/** Records pushed but not read yet, per partition, before its subscription pauses. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
/** Retriable error frames in a row a partition subscribes again after, before the consumer is told. */
const MAX_FAILURES = 3;
/** A subscription whose frames said more is readable than they delivered, and that gets none for this long, is sent again. */
const STALL_MS = 10_000;
/** How long the WebSocket API may take to accept a connection. */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Why this shape: a subscription's frames carry its `subscription_id`, and a subscribe again (a
 * seek, a reset, a reassignment) makes a new one, while the old one's frames may still be on
 * their way; taking only the frames of subscriptions answered for the current start offset keeps
 * a stale frame from moving `next` past records the new one has yet to deliver. Messages are
 * served by separate invocations in any order, so an answer that shows the server may hold
 * another subscription (a `subscribed` for another offset, or an `unsubscribed`, after ours or
 * while ours was unanswered), or frames of a subscription we were never answered for, sends ours
 * again.
 */
export class WebSocketFeed {
  private socket: Socket | undefined;
  private readonly partitions = new Map<string, PartitionFeed>();
  private readonly waiters = new Set<() => void>();
  private keepalive: ReturnType<typeof setInterval> | undefined;
  private closed = false;
  /** Set when the feed gave up reconnecting: reads answer undefined, and the consumer goes back to long polls. */
  failed: Error | undefined;

  private constructor(private readonly url: string, private readonly transport: Transport, private readonly factory: SocketFactory) {}

  /** Opens the feed's connection; throws when the cluster offers no WebSocket API there (the consumer then long-polls). `factory`: tests give their own socket. */
  static async open(url: string, transport: Transport, factory?: SocketFactory): Promise<WebSocketFeed> {
    const feed = new WebSocketFeed(url, transport, factory ?? await socketFactory());
    await feed.connect();
    feed.keepalive = setInterval(() => feed.tick(), 1000);
    (feed.keepalive as { unref?: () => void }).unref?.();
    return feed;
  }

  private lastPing = Date.now();
  /** Each second: a keepalive every KEEPALIVE_MS, and subscribes not answered in time sent again. */
  private tick(): void {
    const now = Date.now();
    if (now - this.lastPing >= KEEPALIVE_MS) {
      this.lastPing = now;
      this.send({ action: 'ping' });
    }
    for (const p of this.partitions.values()) {
      if (p.state === 'subscribing' && now - p.sentAt >= SUBSCRIBE_RESEND_MS) this.subscribeAt(p, p.from, { keep: true });
      // (a delivery cut short — its round cap, its deadline, its deliverer gone — leaves the rest
      // to the partition's next wake, which a quiet partition never has: go on from where it got to)
      else if (p.state === 'active' && p.readable > p.delivered && now - p.frameAt >= STALL_MS) this.subscribeAt(p, p.delivered, { keep: true });
    }
  }

  private async connect(): Promise<void> {
    const headers = await this.transport.signedHeaders(new URL(this.url.replace(/^ws/, 'http')));
    const socket = this.factory(this.url, headers);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new TributaryConnectionError(`The WebSocket API at ${this.url} did not accept a connection within ${CONNECT_TIMEOUT_MS} ms.`));
        socket.close();
      }, CONNECT_TIMEOUT_MS);
      socket.addEventListener('open', () => { clearTimeout(timer); resolve(); });
      socket.addEventListener('error', () => { clearTimeout(timer); reject(new TributaryConnectionError(`The WebSocket API at ${this.url} did not accept a connection.`)); });
      socket.addEventListener('close', () => { clearTimeout(timer); reject(new TributaryConnectionError(`The WebSocket API at ${this.url} closed the connection.`)); });
    });
    this.socket = socket;
    socket.addEventListener('message', (e) => this.onFrame(String(e.data)));
    socket.addEventListener('close', () => {
      if (this.socket === socket) this.socket = undefined;
      if (!this.closed) void this.reconnect();
    });
    // (a new connection holds no subscription: every partition subscribes again from what it has not read)
    for (const [k, p] of this.partitions) {
      if (p.state === 'released') this.partitions.delete(k);
      else if (p.state !== 'paused') this.subscribeAt(p, this.unread(p));
    }
  }

  /** Opens the connection again and subscribes every partition from where it is; gives up after MAX_RECONNECTS failures in a row. */
  private async reconnect(): Promise<void> {
    for (let attempt = 0; !this.closed; attempt++) {
      if (attempt >= MAX_RECONNECTS) {
        this.failed = new TributaryConnectionError(`The WebSocket API at ${this.url} could not be reached ${MAX_RECONNECTS} times in a row.`);
        this.wakeAll();
        return;
      }
      await sleep(backoff(attempt, { initialRetryTime: 250, maxRetryTime: 10_000 }));
      try {
        await this.connect();
        return;
      } catch {
        // (the next attempt, after a longer backoff)
      }
    }
  }

  private send(msg: unknown): void {
    if (this.socket?.readyState === 1) this.socket.send(JSON.stringify(msg));
  }

  /** The first offset not read yet: what came but was not read is delivered again by a new subscription. */
  private unread(p: PartitionFeed): number {
    const first = p.messages[0];
    return first ? Number(first.offset) : p.next;
  }

  /**
   * Subscribes (again) from `from`, dropping what came and was not read; with `keep`, from where
   * the subscription had got to (`from` at or past `next`), keeping what came. With `later`, the
   * subscribe is sent by the tick, SUBSCRIBE_RESEND_MS from now (a retry after a failure).
   */
  private subscribeAt(p: PartitionFeed, from: number, o: { readonly keep?: boolean; readonly later?: boolean } = {}): void {
    if (!o.keep) {
      p.messages.length = 0;
      p.bytes = 0;
      p.next = from;
    }
    p.from = from;
    p.state = 'subscribing';
    p.sentAt = Date.now();
    p.readable = from;
    p.delivered = from;
    p.frameAt = p.sentAt;
    for (const g of p.gens) p.retired.add(g);
    // (the oldest go first: a late frame of one of them costs one subscribe more)
    for (const g of p.retired) if (p.retired.size > 64) p.retired.delete(g);
    p.gens.clear();
    if (!o.later) this.send({ action: 'subscribe', topic: p.topic, partition: p.partition, offset: from, isolation_level: p.isolation });
  }

  private onFrame(text: string): void {
    let f: Frame;
    try {
      f = JSON.parse(text) as Frame;
    } catch {
      return;
    }
    if (f.type === undefined && typeof f.message === 'string') {
      // API Gateway's own answer to a message whose invocation failed or was throttled: which one is not said.
      for (const p of this.partitions.values()) if (p.state === 'subscribing') this.subscribeAt(p, p.from, { keep: true });
      return;
    }
    const p = f.topic !== undefined && f.partition !== undefined && f.group_id === undefined ? this.partitions.get(fk(f.topic, f.partition)) : undefined;
    if (!p) return;
    if (f.type === 'subscribed' && f.subscription_id !== undefined) {
      if (p.state === 'paused' || p.state === 'released' || p.retired.has(f.subscription_id)) return;
      if (f.offset === p.from) {
        p.gens.add(f.subscription_id);
        p.state = 'active';
        p.frameAt = Date.now();
        p.readable = Math.max(p.readable, readableBy(p, f));
        if (p.recheck) {
          delete p.recheck;
          this.subscribeAt(p, this.unread(p));
        }
      } else {
        // (another start's subscribe: served after ours, the server holds it now; its frames are dropped)
        p.retired.add(f.subscription_id);
        if (p.state === 'active') this.subscribeAt(p, this.unread(p));
        else p.recheck = true;
      }
      return;
    }
    if (f.type === 'unsubscribed') {
      if (p.state === 'released') this.partitions.delete(fk(p.topic, p.partition));
      else if (p.state === 'active') this.subscribeAt(p, this.unread(p)); // (an older unsubscribe served after our subscribe)
      else if (p.state === 'subscribing') p.recheck = true;
      return;
    }
    if (f.type === 'records') {
      if (p.state !== 'active' || f.subscription_id === undefined) return;
      if (!p.gens.has(f.subscription_id)) {
        // Frames of a subscription neither answered to us nor retired: the server holds one we
        // were not told of (its answer failed, or an older subscribe was stored after ours), and
        // the one we hold gets nothing. Subscribe again; its later frames are dropped.
        if (!p.retired.has(f.subscription_id)) {
          p.retired.add(f.subscription_id);
          this.subscribeAt(p, this.unread(p));
        }
        return;
      }
      for (const r of f.records ?? []) {
        if (r.offset < p.next) continue;
        const key = bytes(r.key);
        const value = bytes(r.value);
        const headers: Record<string, Uint8Array | null> = {};
        for (const h of r.headers ?? []) headers[h.key] = bytes(h.value);
        const size = (key?.length ?? 0) + (value?.length ?? 0);
        p.messages.push({ key, value, headers, offset: String(r.offset), timestamp: String(r.timestamp), attributes: 0, size });
        p.bytes += size;
        p.next = r.offset + 1;
      }
      p.highWatermark = Math.max(p.highWatermark, f.high_watermark ?? p.next);
      p.frameAt = Date.now();
      p.failures = 0;
      if (f.next_offset !== undefined) {
        p.delivered = Math.max(p.delivered, f.next_offset);
        p.readable = Math.max(p.readable, readableBy(p, f));
      }
      if (p.bytes > MAX_BUFFERED_BYTES) {
        p.state = 'paused';
        this.send({ action: 'unsubscribe', topic: p.topic, partition: p.partition });
      }
    } else if (f.type === 'error') {
      if (p.state === 'released') return;
      const err = errorFromResponse(Math.floor((f.error_code ?? 500) / 100), f);
      if (f.error_code === 41301) p.tooLarge = true;
      // (a subscribe or delivery that failed on the server, a store or a leader moving: subscribe
      // again a little later, from where the subscription had got to; the consumer sees nothing)
      else if (err.retriable && ++p.failures < MAX_FAILURES) return this.subscribeAt(p, Math.max(p.delivered, p.next), { keep: true, later: true });
      else {
        p.failures = 0;
        p.error = err;
      }
    } else {
      return;
    }
    this.wakeAll();
  }

  private wakeAll(): void {
    for (const w of [...this.waiters]) w();
  }

  /**
   * The records of a partition from `offset` that have come, waiting up to `maxWaitMs` for one
   * (subscribing first, or again from `offset` when the consumer moved elsewhere: a seek, a
   * reset). Answers undefined when the record at `offset` is too large for a WebSocket message,
   * or when the feed has given up reconnecting (`failed`): the caller reads over HTTP. Throws the
   * error frame's error (an offset out of range, an ACL revoked), once.
   */
  async read(topic: string, partition: number, offset: number, o: { maxWaitMs: number; signal: AbortSignal; readCommitted: boolean }): Promise<FetchResult | undefined> {
    if (this.failed) return undefined;
    const k = fk(topic, partition);
    const isolation = o.readCommitted ? 'read_committed' : 'read_uncommitted';
    let p = this.partitions.get(k);
    if (!p || p.isolation !== isolation) {
      p = {
        topic, partition, isolation, next: offset, messages: [], bytes: 0, highWatermark: offset, state: 'subscribing', from: offset, sentAt: 0, gens: new Set(), retired: new Set(),
        readable: offset, delivered: offset, frameAt: 0, failures: 0,
      };
      this.partitions.set(k, p);
      this.subscribeAt(p, offset);
    } else if (p.state === 'released' || this.unread(p) !== offset || (p.state === 'paused' && p.messages.length === 0)) {
      this.subscribeAt(p, offset);
    }
    if (p.tooLarge) {
      delete p.tooLarge;
      this.partitions.delete(k);
      return undefined;
    }
    if (p.messages.length === 0 && !p.error) await this.waitFor(o.maxWaitMs, o.signal);
    if (this.failed) return undefined;
    if (p.error) {
      const e = p.error;
      this.partitions.delete(k);
      throw e;
    }
    const messages = p.messages.splice(0);
    p.bytes = 0;
    return { messages, nextOffset: messages.length > 0 ? Number(messages.at(-1)?.offset) + 1 : offset, highWatermark: p.highWatermark, logStartOffset: 0 };
  }

  private waitFor(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
      signal.addEventListener('abort', done);
    });
  }

  /** Ends a partition's subscription (it was revoked); a later read subscribes it again. */
  unsubscribe(topic: string, partition: number): void {
    const p = this.partitions.get(fk(topic, partition));
    if (!p || p.state === 'released') return;
    p.state = 'released';
    p.messages.length = 0;
    p.bytes = 0;
    this.send({ action: 'unsubscribe', topic, partition });
  }

  close(): void {
    this.closed = true;
    clearInterval(this.keepalive);
    this.socket?.close(1000);
    this.socket = undefined;
    this.wakeAll();
  }
}
