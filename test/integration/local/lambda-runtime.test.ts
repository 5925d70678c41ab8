/**
 * The Lambda-fidelity runtime (lib/local/lambda-runtime.ts) against AWS's documented behaviour,
 * with a test function (test/fixtures/lambda/handler.ts) bundled and run as the real ones are.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAMBDA_PAYLOAD_LIMIT, LAMBDA_RESPONSE_LIMIT, LambdaRuntime, httpInvoker, type InvokeResult } from '../../../local/lambda-runtime.js';

const FIXTURE = { entry: 'test/fixtures/lambda/handler.ts', trigger: 'schedule', memoryMb: 128, timeoutSeconds: 10 } as const;
let runtime: LambdaRuntime;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-lambda-test-'));

beforeAll(() => {
  runtime = LambdaRuntime.start({
    functions: [{ ...FIXTURE, name: 'fixture' }, { ...FIXTURE, name: 'short', timeoutSeconds: 1 }, { ...FIXTURE, name: 'solo' }],
    cacheDir: path.join(tmp, 'bundles'),
    env: {},
    concurrency: 2,
  });
});
afterAll(async () => {
  await runtime.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const payload = (r: InvokeResult): any => {
  if (!r.ok) throw new Error(`${r.error}: ${r.message}`);
  return r.payload;
};
/** Resolves once the file has `n` lines, or with what it has after `ms`. */
async function linesAfter(file: string, ms: number): Promise<string[]> {
  await new Promise((r) => setTimeout(r, ms));
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

describe('Feature: an environment is frozen after it answers', () => {
  it('where a handler leaves work running after its answer, the work does not happen until the environment\'s next invocation', async () => {
    const file = path.join(tmp, 'after.txt');
    payload(await runtime.invoke('fixture', { do: 'after', file, ms: 50 }));
    // Ten times the delay: a process that was not frozen would have written long ago.
    expect(await linesAfter(file, 500)).toEqual([]);
    // The next invocation thaws it; the timer that was due runs now.
    payload(await runtime.invoke('fixture', { do: 'count' }));
    const lines = await linesAfter(file, 100);
    expect(lines).toHaveLength(1);
  });

  it('where the answer arrives, every thread of the environment has already stopped (a stop signal lands only when the process next runs)', async () => {
    for (let i = 0; i < 20; i++) {
      const { pid } = payload(await runtime.invoke('fixture', { do: 'count' }));
      const states = fs.readdirSync(`/proc/${pid}/task`).map((tid) => fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]?.[0]);
      expect(new Set(states)).toEqual(new Set(['T']));
    }
  });

  it('reuses a frozen environment (module state survives) and counts one cold start for it', async () => {
    const before = runtime.stats().coldStarts;
    const a = payload(await runtime.invoke('solo', { do: 'count' }));
    const b = payload(await runtime.invoke('solo', { do: 'count' }));
    expect(b.pid).toBe(a.pid);
    expect(b.invocations).toBe(a.invocations + 1);
    expect(runtime.stats().coldStarts).toBe(before + 1);
    expect(runtime.stats().environments.find((e) => e.pid === a.pid)?.state).toBe('frozen');
  });

  it('gives the handler the time left before the function\'s timeout', async () => {
    const r = payload(await runtime.invoke('short', { do: 'remaining' }));
    expect(r.remaining).toBeGreaterThan(0);
    expect(r.remaining).toBeLessThanOrEqual(1000);
  });
});

describe('Feature: Lambda\'s limits and errors', () => {
  it('where an invocation runs past the function\'s timeout, it is Sandbox.Timedout and its environment is destroyed', async () => {
    const first = payload(await runtime.invoke('short', { do: 'count' }));
    const r = await runtime.invoke('short', { do: 'sleep', ms: 5000 });
    expect(r).toMatchObject({ ok: false, error: 'Sandbox.Timedout', message: 'Task timed out after 1.00 seconds' });
    const next = payload(await runtime.invoke('short', { do: 'count' }));
    expect(next.pid).not.toBe(first.pid);
    expect(next.invocations).toBe(1);
  });

  it('where more invocations run at once than the concurrency allows, the one over is throttled with TooManyRequestsException', async () => {
    const slow = [runtime.invoke('fixture', { do: 'sleep', ms: 1500 }), runtime.invoke('solo', { do: 'sleep', ms: 1500 })];
    // (both are running: each has its environment before the third asks)
    await new Promise((r) => setTimeout(r, 200));
    expect(await runtime.invoke('fixture', { do: 'count' })).toMatchObject({ ok: false, error: 'TooManyRequestsException' });
    for (const r of await Promise.all(slow)) expect(r.ok).toBe(true);
    expect(runtime.stats().throttles).toBeGreaterThanOrEqual(1);
    // Capacity comes back as they finish.
    expect((await runtime.invoke('fixture', { do: 'count' })).ok).toBe(true);
  });

  it('refuses an event over 6 MB without running anything, and fails a response over 6 MB and 100 bytes', async () => {
    const invocations = runtime.stats().invocations;
    expect(await runtime.invoke('fixture', { do: 'count', pad: 'x'.repeat(LAMBDA_PAYLOAD_LIMIT) })).toMatchObject({ ok: false, error: 'RequestTooLargeException' });
    expect(runtime.stats().invocations).toBe(invocations);
    expect(await runtime.invoke('fixture', { do: 'big', bytes: LAMBDA_RESPONSE_LIMIT })).toMatchObject({ ok: false, error: 'Function.ResponseSizeTooLarge' });
    expect((await runtime.invoke('fixture', { do: 'big', bytes: 1000 })).ok).toBe(true);
  });

  it('reports a handler\'s error by its type and a process exit as Runtime.ExitError', async () => {
    expect(await runtime.invoke('fixture', { do: 'throw' })).toMatchObject({ ok: false, error: 'Unhandled', errorType: 'RangeError', message: 'the handler failed' });
    expect(await runtime.invoke('fixture', { do: 'exit' })).toMatchObject({ ok: false, error: 'Runtime.ExitError' });
    expect((await runtime.invoke('fixture', { do: 'count' })).ok).toBe(true);
  });
});

describe('Feature: no environment outlives its runtime', () => {
  it('where the process running the runtime exits without stopping it, its frozen environments end with it', async () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', 'test/fixtures/lambda/exits-with-frozen-environment.ts', path.join(tmp, 'bundles')], { encoding: 'utf8' });
    const pid = Number(out.trim().split('\n').at(-1));
    expect(pid).toBeGreaterThan(0);
    const gone = (): boolean => {
      try {
        process.kill(pid, 0);
        return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] === 'Z';
      } catch {
        return true;
      }
    };
    // (SIGKILL is sent as the process exits; its delivery takes a moment)
    for (let i = 0; i < 50 && !gone(); i++) await new Promise((r) => setTimeout(r, 20));
    expect(gone()).toBe(true);
  });
});

describe('Feature: API Gateway\'s answers when Lambda fails', () => {
  it('shows a client 500 for a failed invocation and 413 for an event over Lambda\'s limit, in API Gateway\'s shape', async () => {
    const call = httpInvoker(runtime, 'fixture');
    expect(await call({ do: 'throw' } as any)).toMatchObject({ statusCode: 500, body: JSON.stringify({ message: 'Internal Server Error' }) });
    expect(await call({ pad: 'x'.repeat(LAMBDA_PAYLOAD_LIMIT) } as any)).toMatchObject({ statusCode: 413, body: JSON.stringify({ message: 'Request Entity Too Large' }) });
    expect(await call({ do: 'count' } as any)).toMatchObject({ invocations: expect.any(Number) });
  });
});
