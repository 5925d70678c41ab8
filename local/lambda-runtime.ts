/**
 * The local stack's Lambda-fidelity mode (docs/architecture.md, "The local stack"): every function
 * runs as AWS runs it, so code that only works in one long-lived process fails here first.
 *
 * - Bundles: each function is built as the CDK deploys it (build/functions.ts) and loaded by a fresh
 *   `node` process per execution environment (local/lambda-worker.ts), with the function's
 *   memory as its heap limit. Its init is a cold start, counted and timed.
 * - Freezing: an environment that has answered is stopped (SIGSTOP) until its next invocation, so
 *   work a handler leaves running after its answer does not happen until then, or never.
 * - Concurrency: at most `concurrency` invocations run at once across all functions (the account's
 *   unreserved concurrency); one more is refused with `TooManyRequestsException`, as Lambda
 *   throttles. An idle environment is reused (the most recently used first) and reclaimed after
 *   `idleMs`.
 * - Timeouts: an invocation still running at the function's timeout is `Sandbox.Timedout`, and its
 *   environment is destroyed (the next invocation is a cold start).
 * - Payloads: an event over 6 MB is `RequestTooLargeException`; a response over 6 MB is
 *   `Function.ResponseSizeTooLarge` (synchronous invocation limits).
 *
 * `httpInvoker` turns these into what API Gateway's HTTP API answers for them.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { PROJECT_ROOT, bundleFunctions, type BundledFunction } from '../build/functions.js';
import type { FunctionSpec } from '../lib/functions/catalog.js';

/** A function the runtime runs: the catalog's (lib/functions/catalog.ts), or a test's. */
export type LambdaFunction = BundledFunction & Pick<FunctionSpec, 'memoryMb' | 'timeoutSeconds'>;
import { logger } from '../lib/logger.js';
import { StopWatch } from './processes.js';

/** Lambda's limit on a synchronous invocation's request payload (6 MB). */
export const LAMBDA_PAYLOAD_LIMIT = 6 * 1024 * 1024;
/** And on its response: 6 MB and 100 bytes. */
export const LAMBDA_RESPONSE_LIMIT = LAMBDA_PAYLOAD_LIMIT + 100;
/** How long an answer waits for its environment to be stopped (on a loaded machine a stop can take milliseconds). */
const FREEZE_WAIT_MS = 1_000;
/** Lambda's limit on an execution environment's init. */
export const INIT_TIMEOUT_MS = 10_000;
/** API Gateway HTTP API's request payload limit (10 MB). */
export const HTTP_API_PAYLOAD_LIMIT = 10 * 1024 * 1024;
/** API Gateway HTTP API's integration timeout. */
export const HTTP_API_TIMEOUT_MS = 30_000;

export interface LambdaRuntimeOptions {
  readonly functions: readonly LambdaFunction[];
  /**
   * Where built bundles are kept: a directory per build, named by a hash of the sources and the
   * lockfile, so stacks started from the same code share one build.
   * @default node_modules/.cache/tributary-lambda
   */
  readonly cacheDir?: string;
  /** The environment every function runs with (the deployment's function environment). */
  readonly env: Readonly<Record<string, string>>;
  /** Invocations running at once across all functions. @default 50 */
  readonly concurrency?: number;
  /** Per-function timeout overrides, in seconds (the catalog's `timeoutSeconds` otherwise). */
  readonly timeoutSeconds?: Readonly<Record<string, number>>;
  /** An environment idle this long is reclaimed. @default 300_000 */
  readonly idleMs?: number;
}

export type LambdaErrorType =
  | 'TooManyRequestsException'
  | 'RequestTooLargeException'
  | 'Function.ResponseSizeTooLarge'
  | 'Sandbox.Timedout'
  | 'Runtime.ExitError'
  | 'Runtime.InitError'
  /** The handler threw: `errorType` is its error's name. */
  | 'Unhandled';

export type InvokeResult =
  | { readonly ok: true; readonly payload: unknown }
  | { readonly ok: false; readonly error: LambdaErrorType; readonly errorType: string; readonly message: string };

/** What the runtime did, for tests and `/local/lambda`. */
export interface LambdaStats {
  readonly invocations: number;
  readonly coldStarts: number;
  readonly throttles: number;
  readonly timeouts: number;
  readonly running: number;
  readonly environments: readonly { readonly fn: string; readonly pid: number | undefined; readonly state: Environment['state']; readonly invocations: number; readonly initMs: number | undefined }[];
}

type WorkerMessage =
  | { t: 'ready'; initMs: number }
  | { t: 'init-error' | 'crash'; errorType: string; errorMessage: string }
  | { t: 'result'; id: number; payload: unknown }
  | { t: 'error'; id: number; errorType: string; errorMessage: string };

interface Pending {
  readonly id: number;
  readonly settle: (r: InvokeResult) => void;
}

/** One execution environment: a worker process and what it is doing. */
class Environment {
  state: 'init' | 'busy' | 'frozen' | 'dead' = 'init';
  invocations = 0;
  initMs: number | undefined;
  lastUsed = Date.now();
  pending: Pending | undefined;
  /** Whether every thread has stopped after a freeze (its /proc files kept open). */
  private stopWatch: StopWatch | undefined;
  readonly ready: Promise<InvokeResult | undefined>;
  private onMessage: ((m: WorkerMessage) => void) | undefined;

  constructor(readonly fn: LambdaFunction, readonly proc: ChildProcess) {
    this.ready = new Promise((resolve) => {
      this.onMessage = (m) => {
        if (m.t === 'ready') {
          this.initMs = m.initMs;
          resolve(undefined);
        } else if (m.t === 'init-error') {
          resolve({ ok: false, error: 'Runtime.InitError', errorType: m.errorType, message: m.errorMessage });
        }
      };
      proc.once('exit', () => resolve({ ok: false, error: 'Runtime.InitError', errorType: 'Runtime.ExitError', message: 'The environment exited during init.' }));
      const timer = setTimeout(() => resolve({ ok: false, error: 'Runtime.InitError', errorType: 'Sandbox.Timedout', message: `The init did not finish within ${INIT_TIMEOUT_MS / 1000} s.` }), INIT_TIMEOUT_MS);
      timer.unref();
    });
    // A failed fork or a send on a closed channel: the environment is gone.
    proc.on('error', (err) => {
      const p = this.pending;
      this.pending = undefined;
      this.kill();
      p?.settle({ ok: false, error: 'Runtime.ExitError', errorType: 'Runtime.ExitError', message: `The environment failed: ${err.message}` });
    });
    proc.on('message', (m: WorkerMessage) => {
      if (this.state === 'init') return this.onMessage?.(m);
      const p = this.pending;
      if (!p) return;
      if (m.t === 'result' && m.id === p.id) {
        const size = Buffer.byteLength(JSON.stringify(m.payload));
        this.finish(size > LAMBDA_RESPONSE_LIMIT
          ? { ok: false, error: 'Function.ResponseSizeTooLarge', errorType: 'Function.ResponseSizeTooLarge', message: `Response payload size (${size} bytes) exceeded maximum allowed payload size (${LAMBDA_RESPONSE_LIMIT} bytes).` }
          : { ok: true, payload: m.payload });
      } else if (m.t === 'error' && m.id === p.id) {
        this.finish({ ok: false, error: 'Unhandled', errorType: m.errorType, message: m.errorMessage });
      }
    });
    proc.on('exit', (code, signal) => {
      const p = this.pending;
      this.state = 'dead';
      this.stopWatch?.close();
      this.pending = undefined;
      p?.settle({ ok: false, error: 'Runtime.ExitError', errorType: 'Runtime.ExitError', message: `The environment exited (${signal ?? `code ${code}`}) during the invocation.` });
    });
  }

  /** Runs one invocation; the environment is frozen again when it answers. */
  run(id: number, event: unknown, timeoutMs: number): Promise<InvokeResult> {
    if (this.state === 'dead' || !this.proc.connected) {
      this.kill();
      return Promise.resolve({ ok: false, error: 'Runtime.ExitError', errorType: 'Runtime.ExitError', message: 'The environment had exited.' });
    }
    this.state = 'busy';
    this.invocations++;
    this.proc.kill('SIGCONT');
    return new Promise<InvokeResult>((settle) => {
      const timer = setTimeout(() => {
        // Lambda destroys an environment whose invocation timed out.
        this.pending = undefined;
        this.kill();
        settle({ ok: false, error: 'Sandbox.Timedout', errorType: 'Sandbox.Timedout', message: `Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds` });
      }, timeoutMs);
      this.pending = {
        id,
        settle: (r) => {
          clearTimeout(timer);
          settle(r);
        },
      };
      this.proc.send({ t: 'invoke', id, event, requestId: randomUUID(), deadline: Date.now() + timeoutMs }, (err) => {
        if (err) this.proc.emit('error', err);
      });
    });
  }

  private finish(r: InvokeResult): void {
    const p = this.pending;
    this.pending = undefined;
    if (this.state === 'dead' || this.proc.pid === undefined) {
      p?.settle(r);
      return;
    }
    // Frozen the moment it answered: whatever it left running waits for the next invocation. A stop
    // signal lands when the process next runs, so the answer is given once every thread has stopped.
    this.proc.kill('SIGSTOP');
    this.stopWatch ??= new StopWatch(this.proc.pid);
    void this.stopWatch.waitStopped(FREEZE_WAIT_MS).then(() => {
      if (this.state === 'busy') {
        this.state = 'frozen';
        this.lastUsed = Date.now();
      }
      p?.settle(r);
    });
  }

  kill(): void {
    if (this.state === 'dead') return;
    this.state = 'dead';
    this.proc.kill('SIGKILL');
  }
}

export class LambdaRuntime {
  private readonly specs: Map<string, LambdaFunction>;
  private readonly envs: Environment[] = [];
  private readonly concurrency: number;
  private readonly idleMs: number;
  private readonly reaper: NodeJS.Timeout;
  private running = 0;
  private nextId = 1;
  private counts = { invocations: 0, coldStarts: 0, throttles: 0, timeouts: 0 };
  private halted = false;

  private constructor(private readonly o: LambdaRuntimeOptions, private readonly dir: string) {
    this.specs = new Map(o.functions.map((f) => [f.name, f]));
    this.concurrency = o.concurrency ?? 50;
    this.idleMs = o.idleMs ?? 300_000;
    this.reaper = setInterval(() => this.reap(), Math.min(this.idleMs, 5_000));
    this.reaper.unref();
    // A frozen environment cannot notice its runtime is gone: this process ends them all as it exits.
    process.on('exit', this.killAll);
  }

  private readonly killAll = (): void => {
    for (const e of this.envs) e.kill();
  };

  /** Builds the bundles (one esbuild call, unless this code was built before) and returns a runtime ready to invoke them. */
  static start(o: LambdaRuntimeOptions): LambdaRuntime {
    return new LambdaRuntime(o, bundlesFor(o.functions, o.cacheDir ?? path.join(PROJECT_ROOT, 'node_modules', '.cache', 'tributary-lambda')));
  }

  /** Invokes `fn` synchronously (RequestResponse), with Lambda's limits and errors. */
  async invoke(fn: string, event: unknown): Promise<InvokeResult> {
    const spec = this.specs.get(fn);
    if (!spec) throw new Error(`No function named ${fn}`);
    if (this.halted) return { ok: false, error: 'TooManyRequestsException', errorType: 'TooManyRequestsException', message: 'The local Lambda runtime is stopped.' };
    const size = Buffer.byteLength(JSON.stringify(event));
    if (size > LAMBDA_PAYLOAD_LIMIT) {
      return { ok: false, error: 'RequestTooLargeException', errorType: 'RequestTooLargeException', message: `Request must be smaller than ${LAMBDA_PAYLOAD_LIMIT} bytes for the InvokeFunction operation` };
    }
    if (this.running >= this.concurrency) {
      this.counts.throttles++;
      return { ok: false, error: 'TooManyRequestsException', errorType: 'TooManyRequestsException', message: 'Rate Exceeded.' };
    }
    this.running++;
    this.counts.invocations++;
    try {
      const env = this.takeFrozen(fn) ?? this.coldStart(spec);
      const failed = await env.ready;
      if (failed) {
        env.kill();
        return failed;
      }
      const timeoutMs = (this.o.timeoutSeconds?.[fn] ?? spec.timeoutSeconds) * 1000;
      const r = await env.run(this.nextId++, event, timeoutMs);
      if (!r.ok && r.error === 'Sandbox.Timedout') this.counts.timeouts++;
      if (!r.ok) logger.warn({ event: 'lambda-error', fn, error: r.error, errorType: r.errorType, message: r.message }, 'a local Lambda invocation failed');
      return r;
    } finally {
      this.running--;
    }
  }

  /** Whether `stop` was called: every invocation from then on is refused. */
  get stopped(): boolean {
    return this.halted;
  }

  stats(): LambdaStats {
    return {
      ...this.counts,
      running: this.running,
      environments: this.envs.map((e) => ({ fn: e.fn.name, pid: e.proc.pid, state: e.state, invocations: e.invocations, initMs: e.initMs })),
    };
  }

  /** Destroys every environment. */
  async stop(): Promise<void> {
    this.halted = true;
    clearInterval(this.reaper);
    process.off('exit', this.killAll);
    const exits = this.envs.filter((e) => e.state !== 'dead').map((e) => new Promise<void>((resolve) => {
      e.proc.once('exit', () => resolve());
      e.kill();
    }));
    await Promise.all(exits);
    this.envs.length = 0;
  }

  /** The most recently used frozen environment of `fn`, now taken. */
  private takeFrozen(fn: string): Environment | undefined {
    let best: Environment | undefined;
    for (const e of this.envs) if (e.fn.name === fn && e.state === 'frozen' && (!best || e.lastUsed > best.lastUsed)) best = e;
    if (best) best.state = 'busy';
    return best;
  }

  private coldStart(spec: LambdaFunction): Environment {
    this.counts.coldStarts++;
    const bundle = path.join(this.dir, spec.name, 'index.mjs');
    const proc = fork(path.join(this.dir, 'worker', 'index.mjs'), [bundle, `tributary-${spec.name}`, String(spec.memoryMb)], {
      execPath: process.execPath,
      execArgv: [`--max-old-space-size=${spec.memoryMb}`],
      env: {
        ...process.env,
        TRIBUTARY_METRICS: process.env.TRIBUTARY_METRICS ?? 'off',
        ...this.o.env,
        AWS_LAMBDA_FUNCTION_NAME: `tributary-${spec.name}`,
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(spec.memoryMb),
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const env = new Environment(spec, proc);
    this.envs.push(env);
    proc.once('exit', () => {
      const i = this.envs.indexOf(env);
      if (i >= 0) this.envs.splice(i, 1);
    });
    return env;
  }

  private reap(): void {
    const now = Date.now();
    try {
      fs.utimesSync(this.dir, new Date(now), new Date(now)); // in use: not pruned
    } catch {
      // (a missing build shows as failed cold starts)
    }
    for (const e of this.envs) if (e.state === 'frozen' && now - e.lastUsed > this.idleMs) e.kill();
  }
}

const WORKER = path.join(PROJECT_ROOT, 'local', 'lambda-worker.ts');

/** Every file a build depends on: the sources (by path, size and modification time) and the lockfile. */
function sourceHash(functions: readonly LambdaFunction[]): string {
  const h = createHash('sha256');
  h.update(JSON.stringify(functions.map((f) => [f.name, f.entry, f.trigger, f.bundlesConsole ?? false])));
  h.update(fs.readFileSync(path.join(PROJECT_ROOT, 'package-lock.json')));
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|tsx|js|mjs|json|css|html)$/.test(e.name)) {
        const st = fs.statSync(p);
        h.update(`${p}\0${st.size}\0${st.mtimeMs}\n`);
      }
    }
  };
  // (console/: the console function's bundle carries the built console)
  for (const d of ['lib', 'lambdas', 'build', 'console', 'test/fixtures']) if (fs.existsSync(path.join(PROJECT_ROOT, d))) walk(path.join(PROJECT_ROOT, d));
  // (the worker is bundled with them)
  h.update(fs.readFileSync(WORKER));
  return h.digest('hex').slice(0, 16);
}

/** The directory of a build of `functions` and the worker: reused when the code is unchanged, else built (into a temporary directory, renamed into place). */
function bundlesFor(functions: readonly LambdaFunction[], cacheDir: string): string {
  const dir = path.join(cacheDir, sourceHash(functions));
  if (fs.existsSync(path.join(dir, 'worker', 'index.mjs'))) {
    // (in use: the newest as far as pruning goes)
    const now = new Date();
    fs.utimesSync(dir, now, now);
    return dir;
  }
  fs.mkdirSync(cacheDir, { recursive: true });
  const building = fs.mkdtempSync(path.join(cacheDir, 'building-'));
  bundleFunctions(functions, building, { 'worker/index': WORKER });
  try {
    fs.renameSync(building, dir);
  } catch (err) {
    // Another stack built the same code first: use its build.
    fs.rmSync(building, { recursive: true, force: true });
    if (!fs.existsSync(path.join(dir, 'worker', 'index.mjs'))) throw err;
  }
  prune(cacheDir, dir);
  return dir;
}

/**
 * Removes builds beyond the three newest that no stack has used for ten minutes (a running stack
 * marks its build used every few seconds), and builds in progress for over ten minutes. Another
 * stack pruning at the same time is harmless.
 */
function prune(cacheDir: string, keep: string): void {
  const now = Date.now();
  const entries = fs.readdirSync(cacheDir).flatMap((name) => {
    try {
      return [{ p: path.join(cacheDir, name), name, mtime: fs.statSync(path.join(cacheDir, name)).mtimeMs }];
    } catch {
      return []; // (removed meanwhile)
    }
  }).sort((a, b) => b.mtime - a.mtime);
  const builds = entries.filter((e) => !e.name.startsWith('building-') && e.p !== keep);
  for (const e of builds.slice(3)) if (now - e.mtime > 600_000) fs.rmSync(e.p, { recursive: true, force: true });
  for (const e of entries) if (e.name.startsWith('building-') && now - e.mtime > 600_000) fs.rmSync(e.p, { recursive: true, force: true });
}

const gatewayError = (statusCode: number, message: string): APIGatewayProxyStructuredResultV2 => ({
  statusCode, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message }),
});

/**
 * An HTTP API integration of `fn`: what API Gateway answers when Lambda refuses or fails the
 * invocation (it shows the client none of Lambda's error: a throttle, a crash, a timeout and an
 * oversized response are all `500 {"message":"Internal Server Error"}`; an event over Lambda's
 * payload limit is `413 {"message":"Request Entity Too Large"}`; no answer within the
 * integration's 30 s is `503 {"message":"Service Unavailable"}`).
 */
export function httpInvoker(runtime: LambdaRuntime, fn: string) {
  return async (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), HTTP_API_TIMEOUT_MS);
    });
    const r = await Promise.race([runtime.invoke(fn, event), timeout]).finally(() => clearTimeout(timer));
    if (r === 'timeout') return gatewayError(503, 'Service Unavailable');
    if (!r.ok) return r.error === 'RequestTooLargeException' ? gatewayError(413, 'Request Entity Too Large') : gatewayError(500, 'Internal Server Error');
    return r.payload as APIGatewayProxyStructuredResultV2;
  };
}

/**
 * The local gateway's options for an HTTP API in front of `runtime`'s functions `names`: an
 * integration per function (`httpInvoker`), and API Gateway's own 10 MB body limit and 413.
 */
export function httpApiGateway<N extends string>(runtime: LambdaRuntime, names: readonly N[]) {
  return {
    functions: Object.fromEntries(names.map((n) => [n, httpInvoker(runtime, n)])) as Record<N, ReturnType<typeof httpInvoker>>,
    maxRequestBytes: HTTP_API_PAYLOAD_LIMIT,
    tooLargeBody: { message: 'Request Entity Too Large' },
  };
}
