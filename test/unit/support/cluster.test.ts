/** The fault tests' helpers: `until` says why it gave up and does not retry a mistake; isolated brokers run only in the multi-process phase. */
import { describe, expect, it } from 'vitest';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { startLocalStack } from '../../../local/stack.js';
import { dynamo } from '../../../lib/storage/clients.js';
import { startFaultCluster, until } from '../../support/cluster.js';
import { STACKS_PER_STORE, workerStore } from '../../support/worker-store.js';

describe('Function: until', () => {
  it('returns the first value that is neither undefined nor false', async () => {
    let calls = 0;
    expect(await until('the third call', async () => (++calls >= 3 ? { calls } : calls === 1 ? undefined : false), 5000)).toEqual({ calls: 3 });
  });

  it('where the check keeps throwing, times out naming what it waited for and the last error, kept as the cause', async () => {
    let calls = 0;
    const last = new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:1') });
    const failure = await until('a store', async () => {
      calls++;
      throw calls === 1 ? new Error('first') : last;
    }, 300).catch((err: unknown) => err as Error);
    expect(failure).toBeInstanceOf(Error);
    expect(failure.message).toMatch(/^timed out waiting for a store after \d+ ms; the check last threw TypeError: fetch failed \(cause: Error: connect ECONNREFUSED 127\.0\.0\.1:1\)$/);
    expect(failure.cause).toBe(last);
    expect(calls).toBeGreaterThan(1);
  });

  it('where the check never holds, times out saying what it last returned', async () => {
    await expect(until('a leader', async () => false, 200)).rejects.toThrow(/^timed out waiting for a leader after \d+ ms; the check last returned false$/);
  });

  it('throws a ReferenceError or a failed expect from the check at once, without retrying', async () => {
    let calls = 0;
    await expect(until('anything', async () => {
      calls++;
      // @ts-expect-error a programming mistake, on purpose
      return notDefined;
    }, 10_000)).rejects.toBeInstanceOf(ReferenceError);
    expect(calls).toBe(1);
    await expect(until('anything', async () => {
      calls++;
      expect(1).toBe(2);
      return true;
    }, 10_000)).rejects.toThrow(/expected 1 to be 2/);
    expect(calls).toBe(2);
  });

  it('with retry off, throws the first error of the check at once; a check may answer without a promise', async () => {
    let calls = 0;
    const first = new TypeError('not yet');
    await expect(until('anything', () => {
      calls++;
      throw first;
    }, { ms: 10_000, retry: false })).rejects.toBe(first);
    expect(calls).toBe(1);
    let n = 0;
    expect(await until('the third call', () => ++n >= 3, { ms: 5000, everyMs: 10 })).toBe(true);
    expect(n).toBe(3);
  });

  it('ends at its deadline even while a check never answers (a paused store)', async () => {
    await expect(until('a paused store', () => new Promise<boolean>(() => undefined), 200)).rejects.toThrow(/^timed out waiting for a paused store after \d+ ms: the check was still running; before that it returned undefined$/);
  });
});

describe('Function: startFaultCluster', () => {
  it('refuses isolated brokers outside the multi-process project, before starting anything', async () => {
    expect(process.env.TRIBUTARY_TEST_PROJECT).toBeUndefined();
    await expect(startFaultCluster()).rejects.toThrow(/list the test file in MULTI_PROCESS_FILES \(vitest\.config\.ts\)/);
  });

  it("puts a quiet stack's tables in the worker's store under a prefix of its own, beside another's, and deletes them on stop", async () => {
    const quiet = () => startFaultCluster({ isolatedBrokers: false, controllers: 0, replicator: false, lambda: false, brokers: 1 });
    const a = await quiet();
    const b = await quiet();
    const endpoint = a.stack.env.AWS_ENDPOINT_URL_DYNAMODB;
    expect(b.stack.env.AWS_ENDPOINT_URL_DYNAMODB).toBe(endpoint);
    expect(a.stack.supervisor.list().map((p) => p.kind)).toEqual(['s3']);
    const tablesOf = async (c: typeof a) => {
      const prefix = c.stack.env.TRIBUTARY_COORDINATION_TABLE?.replace(/-coordination$/, '');
      return ((await dynamo(endpoint).send(new ListTablesCommand({}))).TableNames ?? []).filter((t) => t.startsWith(`${prefix}-`));
    };
    expect(await tablesOf(a)).toHaveLength(2);
    expect(await tablesOf(b)).toHaveLength(2);
    await a.stop();
    expect(await tablesOf(a)).toEqual([]);
    expect(await tablesOf(b)).toHaveLength(2);
    await b.stop();
    expect(await tablesOf(b)).toEqual([]);
  });

  it('replaces the worker store after STACKS_PER_STORE stacks, and never while a stack uses it', async () => {
    const held = (await workerStore())!;
    const more = [];
    for (let i = 0; i < STACKS_PER_STORE; i++) {
      const s = (await workerStore())!;
      expect(s.endpoint).toBe(held.endpoint);
      more.push(s);
    }
    for (const s of more) s.release();
    // Still in use by `held`: the same store, though it has served its share.
    const again = (await workerStore())!;
    expect(again.endpoint).toBe(held.endpoint);
    again.release();
    held.release();
    held.release(); // twice is once
    const next = (await workerStore())!;
    expect(next.endpoint).not.toBe(held.endpoint);
    await expect(dynamo(next.endpoint).send(new ListTablesCommand({}))).resolves.toBeDefined();
    next.release();
  });

  it('refuses a borrowed store with isolated brokers, before starting anything', async () => {
    await expect(startLocalStack({ port: 0, isolatedBrokers: true, dynamodbEndpoint: 'http://127.0.0.1:9' })).rejects.toThrow(/cannot use a running DynamoDB Local/);
  });
});
