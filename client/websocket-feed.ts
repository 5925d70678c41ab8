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
interface Socket {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number): void;
  addEventListener(type: 'open' | 'close' | 'error' | 'message', listener: (e: { data?: unknown }) => void): void;
}
type SocketFactory = (url: string, headers: Record<string, string>) => Socket;

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

interface PartitionFeed {
  readonly topic: string;
  readonly partition: number;
  readonly isolation: 'read_uncommitted' | 'read_committed';
  /** The next offset the subscription delivers: records below it are dropped (a redelivery). */
  next: number;
  readonly messages: KafkaMessage[];
  highWatermark: number;
  error?: TributaryProtocolError;
  /** A record too large for a WebSocket message is at `next`: read it over HTTP. */
  tooLarge?: boolean;
}

const bytes = (b64: string | null): Uint8Array | null => (b64 === null ? null : asBuffer(fromBase64(b64)));
const fk = (topic: string, partition: number) => `${topic}\u0000${partition}`;

/** API Gateway closes a connection idle for 10 minutes: a ping every 5 keeps it open. */
const KEEPALIVE_MS = 5 * 60_000;
/** Reconnects in a row that may fail before the feed gives up (the consumer goes back to long polls). */
const MAX_RECONNECTS = 8;

export class WebSocketFeed {
  private socket: Socket | undefined;
  private readonly partitions = new Map<string, PartitionFeed>();
  private readonly waiters = new Set<() => void>();
  private keepalive: ReturnType<typeof setInterval> | undefined;
  private closed = false;
  /** Set when the feed gave up reconnecting: reads fail with it, and the consumer goes back to long polls. */
  failed: Error | undefined;

  private constructor(private readonly url: string, private readonly transport: Transport, private readonly factory: SocketFactory) {}

  /** Opens the feed's connection; throws when the cluster offers no WebSocket API there (the consumer then long-polls). */
  static async open(url: string, transport: Transport): Promise<WebSocketFeed> {
    const feed = new WebSocketFeed(url, transport, await socketFactory());
    await feed.connect();
    feed.keepalive = setInterval(() => feed.send({ action: 'ping' }), KEEPALIVE_MS);
    (feed.keepalive as { unref?: () => void }).unref?.();
    return feed;
  }

  private async connect(): Promise<void> {
    const headers = await this.transport.signedHeaders(new URL(this.url.replace(/^ws/, 'http')));
    const socket = this.factory(this.url, headers);
    await new Promise<void>((resolve, reject) => {
      socket.addEventListener('open', () => resolve());
      socket.addEventListener('error', () => reject(new TributaryConnectionError(`The WebSocket API at ${this.url} did not accept a connection.`)));
      socket.addEventListener('close', () => reject(new TributaryConnectionError(`The WebSocket API at ${this.url} closed the connection.`)));
    });
    this.socket = socket;
    socket.addEventListener('message', (e) => this.onFrame(String(e.data)));
    socket.addEventListener('close', () => {
      if (this.socket === socket) this.socket = undefined;
      if (!this.closed) void this.reconnect();
    });
    for (const p of this.partitions.values()) this.subscribeAt(p);
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

  /** Subscribes (again) from the first record not read yet: what came but was not read is delivered again. */
  private subscribeAt(p: PartitionFeed): void {
    const first = p.messages[0];
    if (first) p.next = Number(first.offset);
    p.messages.length = 0;
    this.send({ action: 'subscribe', topic: p.topic, partition: p.partition, offset: p.next, isolation_level: p.isolation });
  }

  private onFrame(text: string): void {
    let f: { type?: string; topic?: string; partition?: number; records?: FrameRecord[]; high_watermark?: number; error_code?: number; offset?: number };
    try {
      f = JSON.parse(text) as typeof f;
    } catch {
      return;
    }
    const p = f.topic !== undefined && f.partition !== undefined ? this.partitions.get(fk(f.topic, f.partition)) : undefined;
    if (!p) return;
    if (f.type === 'records') {
      for (const r of f.records ?? []) {
        if (r.offset < p.next) continue;
        const key = bytes(r.key);
        const value = bytes(r.value);
        const headers: Record<string, Uint8Array | null> = {};
        for (const h of r.headers ?? []) headers[h.key] = bytes(h.value);
        p.messages.push({ key, value, headers, offset: String(r.offset), timestamp: String(r.timestamp), attributes: 0, size: (key?.length ?? 0) + (value?.length ?? 0) });
        p.next = r.offset + 1;
      }
      p.highWatermark = Math.max(p.highWatermark, f.high_watermark ?? p.next);
    } else if (f.type === 'error') {
      if (f.error_code === 41301) p.tooLarge = true;
      else p.error = errorFromResponse(Math.floor((f.error_code ?? 500) / 100), f);
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
   * reset). Answers undefined when the record at `offset` is too large for a WebSocket message:
   * the caller reads it over HTTP. Throws the error frame's error (an offset out of range, an ACL
   * revoked), once.
   */
  async read(topic: string, partition: number, offset: number, o: { maxWaitMs: number; signal: AbortSignal; readCommitted: boolean }): Promise<FetchResult | undefined> {
    if (this.failed) throw this.failed;
    const k = fk(topic, partition);
    const isolation = o.readCommitted ? 'read_committed' : 'read_uncommitted';
    let p = this.partitions.get(k);
    const first = p?.messages[0];
    const at = first ? Number(first.offset) : p?.next;
    if (!p || p.isolation !== isolation || (at !== offset && !(p.messages.length === 0 && p.next === offset))) {
      p = { topic, partition, isolation, next: offset, messages: [], highWatermark: offset };
      this.partitions.set(k, p);
      this.subscribeAt(p);
    }
    if (p.tooLarge) {
      delete p.tooLarge;
      this.partitions.delete(k);
      return undefined;
    }
    if (p.messages.length === 0 && !p.error) await this.waitFor(o.maxWaitMs, o.signal);
    if (this.failed) throw this.failed;
    if (p.error) {
      const e = p.error;
      this.partitions.delete(k);
      throw e;
    }
    const messages = p.messages.splice(0);
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

  /** Ends a partition's subscription (it was revoked). */
  unsubscribe(topic: string, partition: number): void {
    if (this.partitions.delete(fk(topic, partition))) this.send({ action: 'unsubscribe', topic, partition });
  }

  close(): void {
    this.closed = true;
    clearInterval(this.keepalive);
    this.socket?.close(1000);
    this.socket = undefined;
    this.wakeAll();
  }
}
