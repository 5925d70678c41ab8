/**
 * A TCP proxy on loopback between the functions and one store, for network faults: pass traffic,
 * delay it, drop it (connections open, nothing comes back — a partition), reset every
 * connection, or lose the answers to group commits (a `TransactWriteItems` that writes a round
 * item reaches the store and is applied; its connection is cut when the answer comes back).
 * The fault harness registers a broker's endpoint as its proxy.
 */
import net from 'node:net';

export type ProxyMode =
  | { readonly kind: 'pass' } | { readonly kind: 'delay'; readonly ms: number } | { readonly kind: 'drop' } | { readonly kind: 'reset' }
  | { readonly kind: 'lose-commit-answers' };

/** What marks a request as a group commit's transaction (its target, and its round item's `stage`). */
const TRANSACT_TARGET = 'DynamoDB_20120810.TransactWriteItems';
const STAGE_ATTRIBUTE = '"stage":{"S":"round"}';

export class FaultProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  mode: ProxyMode = { kind: 'pass' };
  port = 0;
  /** Answers lost under `lose-commit-answers`. */
  lostAnswers = 0;

  constructor(private readonly targetPort: number, private readonly host = '127.0.0.1') {}

  get endpoint(): string {
    return `http://${this.host}:${this.port}`;
  }

  async start(): Promise<void> {
    this.server = net.createServer((client) => this.accept(client));
    await new Promise<void>((resolve) => this.server?.listen(0, this.host, resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  /** Changes the mode; `reset` also destroys every open connection now. */
  set(mode: ProxyMode): void {
    this.mode = mode;
    if (mode.kind === 'reset' || mode.kind === 'drop') for (const s of this.sockets) s.destroy();
  }

  private accept(client: net.Socket): void {
    this.sockets.add(client);
    client.on('close', () => this.sockets.delete(client));
    client.on('error', () => undefined);
    if (this.mode.kind === 'reset') {
      client.resetAndDestroy();
      return;
    }
    if (this.mode.kind === 'drop') return; // accepted, never answered
    const upstream = net.connect(this.targetPort, this.host);
    this.sockets.add(upstream);
    upstream.on('close', () => {
      this.sockets.delete(upstream);
      client.destroy();
    });
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    // lose-commit-answers: what the request on this connection was seen to be so far
    const seen = { transact: false, stage: false };
    const forward = (from: net.Socket, to: net.Socket) => from.on('data', (chunk) => {
      const mode = this.mode;
      if (mode.kind === 'lose-commit-answers') {
        if (from === client) {
          const text = chunk.toString('latin1');
          seen.transact ||= text.includes(TRANSACT_TARGET);
          seen.stage ||= text.includes(STAGE_ATTRIBUTE);
        } else if (seen.transact && seen.stage) {
          this.lostAnswers++;
          client.destroy();
          upstream.destroy();
          return;
        } else {
          seen.transact = false;
          seen.stage = false;
        }
      }
      if (mode.kind === 'drop') return;
      if (mode.kind === 'reset') {
        client.destroy();
        upstream.destroy();
        return;
      }
      if (mode.kind === 'delay') setTimeout(() => to.write(chunk), mode.ms);
      else to.write(chunk);
    });
    forward(client, upstream);
    forward(upstream, client);
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
