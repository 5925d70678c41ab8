/**
 * The gate in front of an on-disk DynamoDB Local (local/store-gate.ts), over real sockets: it
 * relays both ways (a client that half-closes still gets its answer), and a cut refuses new
 * connections at once, ends the relayed ones, and starts the quiet interval before the store may
 * be signalled.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../../local/ports.js';
import { QUIET_MS, StoreGate } from '../../../local/store-gate.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** A backend that answers "ANSWER:<what it read>" once the client has ended its side. */
async function backend(): Promise<number> {
  const server = net.createServer({ allowHalfOpen: true }, (s) => {
    let got = '';
    s.on('data', (d) => (got += d.toString()));
    s.on('end', () => setTimeout(() => s.end(`ANSWER:${got}`), 50));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => server.close());
  return (server.address() as net.AddressInfo).port;
}

/** Sends `text`, ends its side, and resolves with everything it reads (or the connection's error code). */
const ask = (port: number, text: string): Promise<string> => new Promise((resolve) => {
  const c = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  let got = '';
  c.on('connect', () => c.end(text));
  c.on('data', (d) => (got += d.toString()));
  c.on('close', () => resolve(got));
  c.on('error', (err: NodeJS.ErrnoException) => resolve(`error ${err.code}`));
});

describe('StoreGate', () => {
  it('relays both ways, half-close included; a cut refuses at once and starts the quiet interval', async () => {
    const gate = new StoreGate(await freePort());
    await gate.open(await backend());
    cleanups.push(() => gate.cut());
    expect(gate.isOpen).toBe(true);
    expect(await ask(gate.port, 'hello')).toBe('ANSWER:hello');

    const cutAt = Date.now();
    gate.cut();
    expect(gate.isOpen).toBe(false);
    expect(await ask(gate.port, 'again')).toBe('error ECONNREFUSED');
    await gate.quiet();
    expect(Date.now() - cutAt).toBeGreaterThanOrEqual(QUIET_MS - 5);
  });

  it('ends a relayed connection when cut, so an answer not yet relayed is never seen', async () => {
    const gate = new StoreGate(await freePort());
    await gate.open(await backend());
    const pending = ask(gate.port, 'in flight'); // the backend answers 50 ms after the client's end
    await new Promise((r) => setTimeout(r, 20));
    gate.cut();
    expect(await pending).not.toContain('ANSWER'); // (nothing, or the reset)
  });
});
