/**
 * The gate in front of an on-disk DynamoDB Local: a TCP relay on the store's public port to the
 * JVM's own port. DynamoDB Local answers a TransactWriteItems a few milliseconds before the write
 * survives the JVM's death, which DynamoDB never does; so a store is killed by cutting its gate
 * first (nothing more is answered, connections are refused), and the JVM is ended only after a
 * quiet interval in which it finishes making durable what it already answered.
 */
import net from 'node:net';

const HOST = '127.0.0.1';

export class StoreGate {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();

  constructor(readonly port: number) {}

  /** Listens on the public port and relays every connection to `target` (the JVM's port). */
  open(target: number): Promise<void> {
    if (this.server) throw new Error(`The gate on port ${this.port} is already open.`);
    const server = net.createServer({ noDelay: true }, (client) => this.relay(client, target));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', (err) => {
        if (this.server === server) this.server = null;
        reject(err);
      });
      server.listen({ port: this.port, host: HOST }, () => resolve());
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
    server?.close();
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  private relay(client: net.Socket, target: number): void {
    if (this.server === null) {
      client.destroy();
      return;
    }
    const upstream = net.connect({ port: target, host: HOST, noDelay: true });
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
