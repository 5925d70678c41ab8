/**
 * The gate in front of an on-disk DynamoDB Local: a TCP relay on the store's public port to the
 * JVM's own port. DynamoDB Local answers a TransactWriteItems a few milliseconds before the write
 * survives the JVM's death, which DynamoDB never does; so a store is killed by cutting its gate
 * first (nothing more is answered, connections are refused), and the JVM is ended only after a
 * quiet interval in which it finishes making durable what it already answered.
 */
import net from 'node:net';

const HOST = '127.0.0.1';
/** How long a store whose gate was cut keeps running before it may be signalled. */
export const QUIET_MS = 500;

export class StoreGate {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  /** when the gate was last cut while open (epoch ms) */
  private cutAt = 0;

  constructor(readonly port: number) {}

  /** Listens on the public port and relays every connection to `target` (the JVM's port). */
  open(target: number): Promise<void> {
    if (this.server) throw new Error(`The gate on port ${this.port} is already open.`);
    const server = net.createServer({ noDelay: true, allowHalfOpen: true }, (client) => this.relay(client, target));
    this.server = server;
    return new Promise((resolve, reject) => {
      const failed = (err: Error): void => {
        if (this.server === server) this.server = null;
        reject(err);
      };
      server.once('error', failed);
      server.listen({ port: this.port, host: HOST }, () => {
        server.off('error', failed);
        server.on('error', () => { /* an accept that failed: that client sees its connection fail */ });
        resolve();
      });
    });
  }

  get isOpen(): boolean {
    return this.server !== null;
  }

  /**
   * Synchronously stops listening (a new connection is refused) and destroys every relayed
   * connection in both directions: an answer not yet relayed is never seen by its client.
   */
  cut(): void {
    const server = this.server;
    this.server = null;
    if (server) this.cutAt = Date.now();
    server?.close();
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  /** Resolves once the store behind it has had QUIET_MS since the gate was last cut. */
  async quiet(): Promise<void> {
    const left = this.cutAt + QUIET_MS - Date.now();
    if (left > 0) await new Promise((r) => setTimeout(r, left));
  }

  private relay(client: net.Socket, target: number): void {
    if (this.server === null) {
      client.destroy();
      return;
    }
    // (half-open both ways, as a direct connection is: a client that ends its side still gets its answer)
    const upstream = net.connect({ port: target, host: HOST, noDelay: true, allowHalfOpen: true });
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('error', () => { /* the other side is ended below */ });
      s.once('close', () => {
        this.sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
