/**
 * What Linux's /proc says about a process: whether every thread of it has died or stopped (waited
 * for without a race against the kernel's asynchronous signal delivery), where a stuck one waits,
 * and whether a pid left by a crashed earlier run is one of our stores.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

/** Where a process that never got ready is, for the error (Linux: its state and kernel wait channel). */
export function describeStuck(pid: number): string {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    const wchan = fs.readFileSync(`/proc/${pid}/wchan`, 'utf8').trim();
    return ` (process state ${state}${wchan && wchan !== '0' ? `, waiting in ${wchan}` : ''})`;
  } catch {
    return '';
  }
}

/**
 * Blocks until `pid` is fully dead — every thread gone or a zombie, so its sockets are closed — at
 * most `maxMs`. A JVM's main thread can be a zombie while other threads still run with the shared
 * fd table open, so every task is checked, not just /proc/<pid>/stat. Linux only (reads /proc);
 * elsewhere returns at once. Typically a few milliseconds.
 */
export const waitDeadSync = (pid: number, maxMs: number): boolean => blockUntil(() => isDead(pid), maxMs);

/** Blocks until every thread of `pid` is stopped (or gone), at most `maxMs`. Linux only (reads /proc); elsewhere returns at once. */
export const waitStoppedSync = (pid: number, maxMs: number): boolean => blockUntil(() => isStopped(pid), maxMs);

/** Blocks this thread, checking every millisecond, until `done()` or `maxMs` has passed; whether it is done. */
function blockUntil(done: () => boolean, maxMs: number): boolean {
  const deadline = Date.now() + maxMs;
  const nap = new Int32Array(new SharedArrayBuffer(4));
  while (!done()) {
    if (Date.now() >= deadline) return false;
    Atomics.wait(nap, 0, 0, 1);
  }
  return true;
}

const isStopped = (pid: number): boolean => everyTask(pid, (state) => 'TtZXx'.includes(state));
const isDead = (pid: number): boolean => everyTask(pid, (state) => state === 'Z' || state === 'X' || state === 'x');

/** Whether every thread of `pid` is in a state `ok` accepts (a process or thread already gone counts). */
function everyTask(pid: number, ok: (state: string) => boolean): boolean {
  let tids: string[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return true; // reaped (or no /proc)
  }
  return tids.every((tid) => {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      return ok(stat.charAt(stat.lastIndexOf(')') + 2));
    } catch {
      return true; // that thread is gone
    }
  });
}

/** Holds a stat line's start: the state follows the command name, at most 64 bytes in. */
const statBuffer = Buffer.alloc(256);

/**
 * Waits, without blocking the event loop, until every thread of a process that is stopped again
 * and again (a Lambda execution environment, frozen after every invocation) has stopped. Each
 * thread's stat file stays open and is read again in place: a check costs about a quarter of
 * opening, reading and closing every one (`waitStoppedSync`). `close()` once the process has exited (or at any time: the files reopen on demand).
 */
export class StopWatch {
  private readonly files = new Map<string, number>();

  constructor(private readonly pid: number) {}

  /** Resolves once every thread is stopped (or gone), at most `maxMs`. */
  async waitStopped(maxMs: number): Promise<boolean> {
    const deadline = Date.now() + maxMs;
    while (!this.allStopped()) {
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, 1));
    }
    return true;
  }

  /** Whether every thread is stopped (a process or thread already gone counts). */
  allStopped(): boolean {
    let tids: string[];
    try {
      tids = fs.readdirSync(`/proc/${this.pid}/task`);
    } catch {
      this.close();
      return true; // reaped (or no /proc)
    }
    if (this.files.size > tids.length) this.forgetExcept(new Set(tids));
    return tids.every((tid) => {
      const state = this.state(tid) ?? this.state(tid); // (a stale file is dropped, then reopened once)
      return state === undefined || 'TtZXx'.includes(state);
    });
  }

  close(): void {
    this.forgetExcept(new Set());
  }

  /** The thread's state letter; undefined when it is gone (its file is then closed). */
  private state(tid: string): string | undefined {
    let fd = this.files.get(tid);
    try {
      if (fd === undefined) {
        fd = fs.openSync(`/proc/${this.pid}/task/${tid}/stat`, 'r');
        this.files.set(tid, fd);
      }
      const n = fs.readSync(fd, statBuffer, 0, statBuffer.length, 0);
      const close = statBuffer.subarray(0, n).lastIndexOf(0x29); // ')'
      return close < 0 || close + 2 >= n ? undefined : String.fromCharCode(statBuffer[close + 2] as number);
    } catch {
      if (fd !== undefined) this.forget(tid);
      return undefined;
    }
  }

  private forgetExcept(keep: ReadonlySet<string>): void {
    for (const tid of [...this.files.keys()]) if (!keep.has(tid)) this.forget(tid);
  }

  private forget(tid: string): void {
    const fd = this.files.get(tid);
    this.files.delete(tid);
    try {
      if (fd !== undefined) fs.closeSync(fd);
    } catch {
      // (already closed)
    }
  }
}

/**
 * SIGKILLs each pid that is alive and whose command line names DynamoDBLocal.jar or s3rver — a store
 * left behind by a crashed earlier run. Any other process is left alone. Returns the pids killed.
 */
export function killStale(pids: number[]): number[] {
  const killed: number[] = [];
  for (const pid of pids) {
    if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) continue;
    const cmdline = commandLine(pid);
    if (cmdline === null || !/DynamoDBLocal\.jar|s3rver/.test(cmdline)) continue;
    try {
      process.kill(pid, 'SIGKILL');
      killed.push(pid);
    } catch { /* gone, or not ours to signal */ }
  }
  return killed;
}

/** The process's command line, or null if it does not exist (or is a zombie). */
function commandLine(pid: number): string | null {
  try {
    const raw = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return raw === '' ? null : raw.split('\0').join(' ');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && fs.existsSync('/proc/self')) return null;
  }
  try { // no /proc (macOS)
    const out = execFileSync('ps', ['-o', 'command=', '-p', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return out.trim() === '' ? null : out.trim();
  } catch {
    return null;
  }
}
