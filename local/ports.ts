/**
 * TCP port helpers for the embedded local stack: pick a free port, check one is free, wait for one
 * to be released, and ask whether something answers HTTP on it.
 */
import http from 'node:http';
import net from 'node:net';

/**
 * A failure of the local stack the user can act on; the message is one clear sentence. Defined here
 * (the lowest module of local/) and re-exported by processes.ts.
 */
export class LocalStackError extends Error {
  override readonly name = 'LocalStackError';
}

const HOST = '127.0.0.1';

/** A port the OS reports free on 127.0.0.1 right now (another program may still take it before we bind). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ port: 0, host: HOST, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new LocalStackError('The OS did not assign a free port.'))));
    });
  });
}

/**
 * A free port below the OS's ephemeral range (Linux's starts at 32768), none of `avoid`: for a
 * process behind a relay, whose port must not be one freePort() may hand out later (a stopped
 * store's public port, free while it is down, is one).
 */
export async function freePrivatePort(avoid: ReadonlySet<number>): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!avoid.has(port) && (await isPortFree(port).catch(() => false))) return port;
  }
  return freePort();
}

/** true when a listener can bind `port` on 127.0.0.1 now; false on EADDRINUSE; other errors reject. */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') resolve(false);
      else reject(err);
    });
    server.listen({ port, host: HOST, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** Throws LocalStackError(`Port ${port} is already in use; ${hint}`) when the port cannot be bound on 127.0.0.1. */
export async function assertPortFree(port: number, hint: string): Promise<void> {
  let free: boolean;
  try {
    free = await isPortFree(port);
  } catch (err) {
    throw new LocalStackError(`Port ${port} cannot be used (${(err as Error).message}); ${hint}`);
  }
  if (!free) throw new LocalStackError(`Port ${port} is already in use; ${hint}`);
}

/** Polls until `port` is free; returns false if it is still taken after `timeoutMs`. */
export async function waitPortFree(port: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await isPortFree(port).catch(() => false)) return true;
    if (Date.now() >= deadline) return false;
    await sleep(50);
  }
}

/**
 * The path a supervised node process answers by itself, without running any function: the
 * supervisor's readiness probe. (GET / of a gateway runs the admin function, which a cold
 * Lambda-fidelity environment may take longer than the probe to answer.)
 */
export const READY_PATH = '/local/ready';

/** Resolves true when anything answers an HTTP GET of `path` on 127.0.0.1:port (any status), false otherwise. */
export function answersHttp(port: number, timeoutMs = 1000, path = '/'): Promise<boolean> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (ok: boolean): void => {
      if (!done) {
        done = true;
        resolve(ok);
      }
    };
    const req = http.request({ host: HOST, port, method: 'GET', path, agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      finish(true);
    });
    req.on('timeout', () => {
      req.destroy();
      finish(false);
    });
    req.on('error', () => finish(false));
    req.end();
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
