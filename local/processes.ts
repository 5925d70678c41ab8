/**
 * The local stack's child processes (docs/architecture.md, "The local stack"): DynamoDB Local JVMs
 * and s3rver, spawned directly (no shell) so their pids are real and fault tests can
 * SIGKILL/SIGSTOP them. The supervisor starts a store and waits until it answers HTTP, kills,
 * pauses, resumes and restarts it on the same port, and stops everything. Children never outlive a
 * normal exit of this process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { prepareDynamoDbLaunch, preparedDynamoDbLaunch } from './dynamodb-archive.js';
import { checkJava, dynamoDbCommand, dynamoDbJarDir, s3rverCommand, defaultJvmFlags, JAVA_MISSING_MESSAGE, type Command } from './java.js';
import { LocalStackError, READY_PATH, answersHttp, freePort, freePrivatePort, waitPortFree, sleep } from './ports.js';
import { StoreGate } from './store-gate.js';
import { describeStuck, waitDeadSync, waitStoppedSync } from './proc.js';

export { LocalStackError, freePort, assertPortFree } from './ports.js';
export { checkJava, DYNAMODB_JVM_FLAGS } from './java.js';
export { killStale, StopWatch } from './proc.js';

/** `node`: a TypeScript program of ours (a controller loop), run with tsx and given `--port`. */
export type StoreKind = 'dynamodb' | 's3' | 'node';

export interface ProcessSpec {
  /** e.g. 'coordination', 'broker-1', 'brokers', 's3' */
  name: string;
  /** human text, e.g. 'coordination store', 'broker 1 store', 'S3' */
  role: string;
  kind: StoreKind;
  /** default: a free port chosen at start; restart keeps the same port */
  port?: number;
  /** dynamodb: -dbPath dir (created if missing); null = -inMemory. s3: required directory. */
  dataDir: string | null;
  /** s3 only: bucket to create at startup (--configure-bucket) */
  bucket?: string;
  /** child's stdout+stderr appended here (default: ignored, but the last few KB are kept for error messages) */
  logFile?: string;
  /** dynamodb only: JVM flags instead of the defaults (DYNAMODB_JVM_FLAGS or $TRIBUTARY_DYNAMODB_JVM_FLAGS) */
  jvmFlags?: string[];
  /** node only: the script (relative to the project root) and its arguments; it must answer GET READY_PATH on `--port` at once. */
  script?: string;
  args?: string[];
  /** Extra environment for the child (on top of this process's). */
  env?: Record<string, string>;
  /**
   * node only: the child leads its own process group, and kill, pause and resume signal the
   * whole group (a gateway in Lambda-fidelity mode with its execution environments).
   */
  group?: boolean;
}

export type ProcessState = 'starting' | 'running' | 'paused' | 'killed' | 'exited' | 'stopped';

export interface ProcessInfo {
  name: string;
  role: string;
  kind: StoreKind;
  /** the current child's pid, or the last one's after it ended; null before the first spawn */
  pid: number | null;
  port: number;
  /** http://127.0.0.1:port */
  endpoint: string;
  state: ProcessState;
  dataDir: string | null;
  startedAt: string | null;
}

export interface SupervisorOptions {
  onChange?: (list: ProcessInfo[]) => void;
  /** how long start/restart wait for the first HTTP answer (default 60 s) */
  readyTimeoutMs?: number;
}

const READY_TIMEOUT_MS = 60_000;
/** The project's root (local/ is one level below it): where `node`-kind scripts are resolved. */
const PROJECT_ROOT = path.resolve(import.meta.dirname, '..');
const STOP_GRACE_MS = 3_000;
/** How long a killed on-disk DynamoDB Local has to end on SIGTERM (after its gate's quiet interval) before it is SIGKILLed. */
const DURABLE_KILL_GRACE_MS = 5_000;
const PORT_RELEASE_MS = 5_000;
const LOG_TAIL_BYTES = 4096;

interface Entry {
  spec: ProcessSpec & { port: number };
  state: ProcessState;
  pid: number | null;
  startedAt: string | null;
  child: ChildProcess | null;
  /** resolves when `child` has exited (and been reaped) */
  exited: Promise<void> | null;
  /** set before we signal the child ourselves, so its exit is not reported as unexpected */
  expectedExit: boolean;
  /** last output of the child when it has no log file */
  tail: string;
  /** serialises start/restart of one name */
  busy: Promise<unknown>;
  /** on-disk DynamoDB Local only: the relay on the public port to the JVM's own port */
  gate: StoreGate | null;
  /** set by kill() of a gated store: resolves once its JVM has ended */
  dying: Promise<void> | null;
}

// ---- children of every supervisor, killed synchronously when this process exits ----
/** Children that lead a process group (ProcessSpec.group): signalled as the group. */
const groupLeaders = new WeakSet<ChildProcess>();
const targetOf = (child: ChildProcess): number => (groupLeaders.has(child) ? -(child.pid as number) : (child.pid as number));
/**
 * The live children, each with the target its exit signal goes to. Kept on the process, not the
 * module: where this module is loaded again in one process (a test runner that resets its module
 * registry between files), one exit hook still covers every child.
 */
const LIVE_CHILDREN = Symbol.for('tributary.processes.liveChildren');
const holder = globalThis as { [LIVE_CHILDREN]?: Map<ChildProcess, number> };
const liveChildren: Map<ChildProcess, number> = holder[LIVE_CHILDREN] ?? (holder[LIVE_CHILDREN] = withExitHook(new Map()));
function withExitHook(children: Map<ChildProcess, number>): Map<ChildProcess, number> {
  process.on('exit', () => {
    for (const target of children.values()) {
      try { process.kill(target, 'SIGCONT'); } catch { /* already gone */ }
      try { process.kill(target, 'SIGKILL'); } catch { /* already gone */ }
    }
  });
  return children;
}

const label = (e: Entry): string => `The ${e.spec.role} ("${e.spec.name}")`;

/** Whether a DynamoDB Local starts from the class data archive: not with flags of its own (the archive is made with the default ones), nor when turned off. */
const usesArchive = (spec: ProcessSpec): boolean => !spec.jvmFlags && process.env.TRIBUTARY_DYNAMODB_ARCHIVE !== 'off';

export class ProcessSupervisor {
  private readonly entries = new Map<string, Entry>();
  private readonly onChange: ((list: ProcessInfo[]) => void) | undefined;
  private readonly readyTimeoutMs: number;
  /** > 0 while stopAll runs: no new child is spawned then */
  private stopping = 0;

  constructor(opts: SupervisorOptions = {}) {
    this.onChange = opts.onChange;
    this.readyTimeoutMs = opts.readyTimeoutMs ?? READY_TIMEOUT_MS;
  }

  /** Spawns the store and resolves once it answers HTTP (any response); LocalStackError on failure or after 60 s. */
  async start(spec: ProcessSpec): Promise<ProcessInfo> {
    if (!spec.name) throw new LocalStackError('A local process needs a name.');
    const existing = this.entries.get(spec.name);
    if (existing && isAlive(existing.state)) {
      throw new LocalStackError(`${label(existing)} is already ${existing.state}; stop or restart it instead of starting it again.`);
    }
    if (spec.kind === 's3' && !spec.dataDir) throw new LocalStackError(`The ${spec.role} ("${spec.name}") needs a data directory for s3rver.`);
    if (existing?.dying) await existing.dying; // a killed store's JVM still holds its data directory
    if (spec.kind === 'dynamodb') {
      const java = await checkJava();
      // (once per process; the first time on a machine it builds the archive, a few seconds)
      if (usesArchive(spec)) await prepareDynamoDbLaunch(dynamoDbJarDir(), defaultJvmFlags(), java.banner);
    }

    let port = spec.port ?? existing?.spec.port;
    if (port === undefined) {
      port = await freePort();
    } else if (!(await waitPortFree(port, spec.port !== undefined ? 2_000 : PORT_RELEASE_MS))) {
      // a stale process just SIGKILLed by killStale may need a moment to release it
      throw new LocalStackError(`Port ${port} is already in use; stop the program using it or choose another port for the ${spec.role}.`);
    }
    const now = this.entries.get(spec.name); // another start() of this name may have won the race
    if (now && now !== existing && isAlive(now.state)) {
      throw new LocalStackError(`${label(now)} is already ${now.state}; stop or restart it instead of starting it again.`);
    }
    const entry: Entry = {
      spec: { ...spec, port },
      state: 'starting',
      pid: existing?.pid ?? null,
      startedAt: null,
      child: null,
      exited: null,
      expectedExit: false,
      tail: '',
      busy: Promise.resolve(),
      gate: spec.kind === 'dynamodb' && spec.dataDir !== null ? new StoreGate(port) : null,
      dying: null,
    };
    this.entries.set(spec.name, entry);
    this.notify();
    return this.serial(entry, () => this.launch(entry));
  }

  list(): ProcessInfo[] {
    return [...this.entries.values()].map(toInfo);
  }

  get(name: string): ProcessInfo | undefined {
    const e = this.entries.get(name);
    return e ? toInfo(e) : undefined;
  }

  /**
   * The process dies at once, without a clean shutdown: SIGKILL. The state is 'killed' once it
   * is dead. An on-disk DynamoDB Local answers a TransactWriteItems a few milliseconds before the
   * write survives its death, which DynamoDB never does, so it dies otherwise: its gate is cut at
   * once (from then on it answers nothing and refuses connections: 'killed'), and the JVM gets
   * SIGTERM after a quiet interval, SIGKILL if it has not ended soon after. A killed store stands
   * for one that stops answering, not for one that forgets.
   */
  kill(name: string): ProcessInfo {
    const e = this.entry(name);
    const child = e.child;
    if (!child || child.pid === undefined || !isAlive(e.state)) throw notRunning(e, 'killed');
    e.expectedExit = true;
    if (e.state === 'paused') signal(targetOf(child), 'SIGCONT');
    if (e.gate && e.exited) {
      e.gate.cut();
      const exited = e.exited;
      e.dying = (async () => {
        await e.gate?.quiet();
        signal(targetOf(child), 'SIGTERM');
        if (!(await raceTimeout(exited, DURABLE_KILL_GRACE_MS))) signal(targetOf(child), 'SIGKILL');
        await raceTimeout(exited, 10_000);
      })();
      return this.setState(e, 'killed');
    }
    signal(targetOf(child), 'SIGKILL');
    // SIGKILL is delivered asynchronously: until the process is really dead its listening socket
    // still accepts connections (then resets them). Wait, briefly and synchronously, so a request
    // made right after kill() is refused — as fault tests expect.
    waitDeadSync(child.pid, 1000);
    return this.setState(e, 'killed');
  }

  /** SIGSTOP: the process keeps its port open but never answers. The state is 'paused' once every thread has stopped. */
  pause(name: string): ProcessInfo {
    const e = this.entry(name);
    if (e.state !== 'running' || !e.child?.pid) throw notRunning(e, 'paused');
    signal(targetOf(e.child), 'SIGSTOP');
    // SIGSTOP, too, is delivered asynchronously: a thread stops when it next runs, which on a busy
    // machine may be after the answer. Wait, briefly and synchronously, so "paused" means paused.
    waitStoppedSync(e.child.pid, 1000);
    return this.setState(e, 'paused');
  }

  /** SIGCONT after pause. */
  resume(name: string): ProcessInfo {
    const e = this.entry(name);
    if (e.state !== 'paused' || !e.child?.pid) {
      throw new LocalStackError(`${label(e)} is not paused (it is ${e.state}), so it cannot be resumed.`);
    }
    signal(targetOf(e.child), 'SIGCONT');
    return this.setState(e, 'running');
  }

  /**
   * Stops the process if alive (SIGKILL, SIGCONT first if paused), waits until it is gone and its port
   * is free, optionally wipes its data directory, then starts it again on the same port.
   */
  async restart(name: string, opts: { wipe?: boolean } = {}): Promise<ProcessInfo> {
    const e = this.entry(name);
    return this.serial(e, async () => {
      await this.terminate(e, 'SIGKILL', 'killed');
      if (!(await waitPortFree(e.spec.port, PORT_RELEASE_MS))) {
        throw new LocalStackError(`Port ${e.spec.port} is still in use after stopping the ${e.spec.role} ("${e.spec.name}"), so it cannot be restarted on it.`);
      }
      if (opts.wipe && e.spec.dataDir !== null) wipeDir(e.spec.dataDir);
      e.expectedExit = false;
      e.tail = '';
      this.setState(e, 'starting');
      return this.launch(e);
    });
  }

  /** SIGCONT paused children, SIGTERM all, SIGKILL whatever is left after 3 s; resolves when all have exited. */
  async stopAll(): Promise<void> {
    this.stopping++;
    try {
      const stopLive = () => Promise.all(
        [...this.entries.values()].filter((e) => e.child !== null).map((e) => this.terminate(e, 'SIGTERM', 'stopped')),
      );
      await stopLive();
      // a start/restart in flight fails fast now (its child is gone, or it may not spawn); then
      // catch anything spawned in between
      await Promise.all([...this.entries.values()].map((e) => e.busy));
      await stopLive();
    } finally {
      this.stopping--;
    }
  }

  // ---- internals ----

  private entry(name: string): Entry {
    const e = this.entries.get(name);
    if (!e) throw new LocalStackError(`No local process named "${name}"`);
    return e;
  }

  private serial<T>(e: Entry, fn: () => Promise<T>): Promise<T> {
    const run = e.busy.then(fn, fn);
    e.busy = run.catch(() => undefined);
    return run;
  }

  private setState(e: Entry, state: ProcessState): ProcessInfo {
    if (e.state !== state) {
      e.state = state;
      this.notify();
    }
    return toInfo(e);
  }

  private notify(): void {
    if (!this.onChange) return;
    try { this.onChange(this.list()); } catch { /* a listener's failure must not break supervision */ }
  }

  /** Signals the child (if any) and waits for it to exit; SIGTERM escalates to SIGKILL after the grace period. */
  private async terminate(e: Entry, sig: 'SIGTERM' | 'SIGKILL', state: ProcessState): Promise<void> {
    if (e.dying) await e.dying; // a killed store's JVM, ended in its own time
    e.dying = null;
    const child = e.child;
    const exited = e.exited;
    e.gate?.cut();
    if (!child || child.pid === undefined || !exited) return;
    e.expectedExit = true;
    if (e.state === 'paused') signal(targetOf(child), 'SIGCONT');
    if (isAlive(e.state)) this.setState(e, state); // a process kill() already ended stays 'killed'
    // a store keeps what it answered: it is signalled only after its gate's quiet interval (kill())
    await e.gate?.quiet();
    signal(targetOf(child), sig);
    if (sig === 'SIGTERM' && !(await raceTimeout(exited, STOP_GRACE_MS))) signal(targetOf(child), 'SIGKILL');
    if (!(await raceTimeout(exited, 10_000))) {
      throw new LocalStackError(`${label(e)} (pid ${child.pid}) did not exit after SIGKILL.`);
    }
  }

  private async launch(e: Entry): Promise<ProcessInfo> {
    const { spec } = e;
    let cmd: Command;
    let logFd: number | null = null;
    let child: ChildProcess;
    if (this.stopping > 0) {
      e.expectedExit = true;
      this.setState(e, 'stopped');
      throw new LocalStackError(`${label(e)} was not started because the local stack is stopping.`);
    }
    // a gated store's JVM listens on a port of its own; its gate opens on spec.port once it answers
    const ownPort = e.gate ? await freePrivatePort(new Set([...this.entries.values()].map((x) => x.spec.port))) : spec.port;
    try {
      cmd = this.command(spec, ownPort);
      if (spec.dataDir !== null) ensureDir(spec.dataDir, `data directory of ${label(e).replace(/^The/, 'the')}`);
      if (spec.logFile) {
        ensureDir(path.dirname(spec.logFile), `log directory of ${label(e).replace(/^The/, 'the')}`);
        logFd = fs.openSync(spec.logFile, 'a');
        fs.writeSync(logFd, `\n--- ${new Date().toISOString()} starting ${spec.name}: ${cmd.file} ${cmd.args.join(' ')}\n`);
      }
      child = spawn(cmd.file, cmd.args, {
        cwd: cmd.cwd,
        // (a child logs to its own log file through stderr, never to this process's LOG_FILE)
        env: { ...withoutKey(process.env, 'LOG_FILE'), ...spec.env },
        stdio: ['ignore', logFd ?? 'pipe', logFd ?? 'pipe'],
        // (a gated store leads a group of its own: a Ctrl-C of the terminal does not reach it, only the supervisor's quiet stop)
        detached: spec.group === true || e.gate !== null,
      });
      if (spec.group) groupLeaders.add(child);
    } catch (err) {
      this.setState(e, 'exited');
      if (err instanceof LocalStackError) throw err;
      throw new LocalStackError(`${label(e)} could not be started: ${(err as Error).message}.`);
    } finally {
      if (logFd !== null) fs.closeSync(logFd); // the child holds its own copy
    }
    const keepTail = (chunk: Buffer): void => {
      e.tail = (e.tail + chunk.toString('utf8')).slice(-LOG_TAIL_BYTES);
    };
    child.stdout?.on('data', keepTail);
    child.stderr?.on('data', keepTail);

    let spawnError: NodeJS.ErrnoException | null = null;
    let exitDesc = '';
    e.child = child;
    e.exited = new Promise<void>((resolve) => {
      child.once('error', (err: NodeJS.ErrnoException) => {
        spawnError = err;
        if (child.pid === undefined) { // never started: no 'exit' will come
          this.onExit(e, child);
          resolve();
        }
      });
      child.once('exit', (code, sig) => {
        exitDesc = sig ? `was ended by ${sig}` : `exited with code ${code}`;
        this.onExit(e, child);
        resolve();
      });
    });
    if (child.pid !== undefined) {
      liveChildren.set(child, targetOf(child));
      e.pid = child.pid;
      e.startedAt = new Date().toISOString();
    }

    // wait until it answers HTTP, it dies, or the timeout passes
    const deadline = Date.now() + this.readyTimeoutMs;
    for (;;) {
      if (e.child !== child || (e.gate && e.expectedExit)) { // (a gated store killed while starting lives on a moment)
        if (e.expectedExit) throw new LocalStackError(`${label(e)} was stopped before it finished starting.`);
        if (spawnError !== null && (spawnError as NodeJS.ErrnoException).code === 'ENOENT' && spec.kind === 'dynamodb') {
          throw new LocalStackError(JAVA_MISSING_MESSAGE);
        }
        const why = spawnError !== null ? `could not be started (${(spawnError as Error).message})` : exitDesc;
        throw new LocalStackError(`${label(e)} ${why} before answering on port ${spec.port}.${this.tailText(e)}`);
      }
      if (await answersHttp(ownPort, 1000, spec.kind === 'node' ? READY_PATH : '/')) break;
      if (Date.now() >= deadline) {
        e.expectedExit = true;
        const stuckAt = child.pid !== undefined ? describeStuck(child.pid) : '';
        if (child.pid !== undefined) signal(targetOf(child), 'SIGKILL');
        await raceTimeout(e.exited, 5_000);
        this.setState(e, 'exited');
        throw new LocalStackError(
          `${label(e)} did not answer on port ${spec.port} within ${Math.round(this.readyTimeoutMs / 1000)} s${stuckAt}.${this.tailText(e)}`,
        );
      }
      await sleep(100);
    }
    if (e.child !== child) throw new LocalStackError(`${label(e)} exited right after it started answering on port ${spec.port}.${this.tailText(e)}`);
    if (e.gate) {
      if (e.expectedExit) throw new LocalStackError(`${label(e)} was stopped before it finished starting.`);
      try {
        await e.gate.open(ownPort);
      } catch (err) {
        e.expectedExit = true;
        signal(targetOf(child), 'SIGKILL');
        await raceTimeout(e.exited, 5_000);
        this.setState(e, 'exited');
        throw new LocalStackError(`Port ${spec.port} cannot be used for the ${spec.role} ("${spec.name}"): ${(err as Error).message}.`);
      }
    }
    return this.setState(e, 'running');
  }

  private command(spec: ProcessSpec & { port: number }, ownPort: number): Command {
    if (spec.kind === 'dynamodb') {
      const launch = usesArchive(spec) ? preparedDynamoDbLaunch() : undefined;
      return dynamoDbCommand(ownPort, spec.dataDir, spec.jvmFlags ?? defaultJvmFlags(), launch);
    }
    if (spec.kind === 'node') {
      if (!spec.script) throw new LocalStackError(`The ${spec.role} ("${spec.name}") needs a script to run.`);
      return { file: process.execPath, args: ['--import', 'tsx', spec.script, '--port', String(spec.port), ...(spec.args ?? [])], cwd: PROJECT_ROOT };
    }
    if (spec.dataDir === null) throw new LocalStackError(`The ${spec.role} ("${spec.name}") needs a data directory for s3rver.`);
    return s3rverCommand(spec.port, spec.dataDir, spec.bucket);
  }

  private onExit(e: Entry, child: ChildProcess): void {
    liveChildren.delete(child);
    if (e.child !== child) return; // an older child of a restarted entry
    e.child = null;
    e.gate?.cut(); // nothing behind it any more: refuse, as the dead process would
    if (!e.expectedExit) this.setState(e, 'exited');
  }

  private tailText(e: Entry): string {
    let tail = e.tail;
    if (e.spec.logFile) {
      try {
        const buf = fs.readFileSync(e.spec.logFile);
        tail = buf.subarray(Math.max(0, buf.length - LOG_TAIL_BYTES)).toString('utf8');
      } catch { /* no log */ }
    }
    const lines = tail.trim().split('\n').slice(-15).join('\n');
    const where = e.spec.logFile ? ` (log: ${e.spec.logFile})` : '';
    return lines ? ` Last output${where}:\n${lines}` : e.spec.logFile ? ` Its log is ${e.spec.logFile}.` : '';
  }
}

function toInfo(e: Entry): ProcessInfo {
  return {
    name: e.spec.name,
    role: e.spec.role,
    kind: e.spec.kind,
    pid: e.pid,
    port: e.spec.port,
    endpoint: `http://127.0.0.1:${e.spec.port}`,
    state: e.state,
    dataDir: e.spec.dataDir,
    startedAt: e.startedAt,
  };
}

const isAlive = (s: ProcessState): boolean => s === 'starting' || s === 'running' || s === 'paused';

function notRunning(e: Entry, verb: string): LocalStackError {
  return new LocalStackError(`${label(e)} is not running (it is ${e.state}), so it cannot be ${verb}.`);
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

async function raceTimeout(p: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)));
  try {
    return await Promise.race([p.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function ensureDir(dir: string, what: string): void {
  try {
    fs.mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw new LocalStackError(`Cannot create the ${what} at ${dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}.`);
  }
}

function wipeDir(dir: string): void {
  if (!fs.existsSync(dir)) return;
  for (const name of fs.readdirSync(dir)) fs.rmSync(path.join(dir, name), { recursive: true, force: true });
}

function withoutKey(env: NodeJS.ProcessEnv, key: string): NodeJS.ProcessEnv {
  const { [key]: _drop, ...rest } = env;
  return rest;
}
