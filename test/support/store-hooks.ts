/**
 * Hooks on the real storage client: an SDK middleware on lib/storage's DynamoDB client for an
 * endpoint, removed when the test that added it ends. They watch what the code under test sends,
 * or lose a store's answer while the store itself stays real.
 */
import { onTestFinished } from 'vitest';
import type { MiddlewareStack } from '@smithy/types';
import { dynamo, s3Client, s3ClientSingleAttempt } from '../../lib/storage/clients.js';

/** A store call as a hook sees it: the command's input, and the rest of the stack to call on. */
export type StoreHook = (
  next: (args: { input: unknown }) => Promise<unknown>,
  context: { commandName?: string },
) => (args: { input: unknown }) => Promise<unknown>;

let hooks = 0;

/**
 * Adds `hook` to the storage client of `endpoint` (the default endpoint's when undefined) at
 * `step` — at `initialize` it sees each call once, at `deserialize` each attempt of it and its
 * answer — until the running test ends.
 */
export function hookStoreClient(endpoint: string | undefined, step: 'initialize' | 'deserialize', hook: StoreHook): void {
  const stack = dynamo(endpoint).middlewareStack as MiddlewareStack<any, any>;
  const name = `test-store-hook-${hooks++}`;
  stack.add(hook as any, { step: step as 'initialize', name, priority: 'low' });
  onTestFinished(() => {
    stack.remove(name);
  });
}

/** Adds `hook` to the S3 clients (objects and the stage) at `step`, as hookStoreClient, until the running test ends. */
export function hookObjectStore(step: 'initialize' | 'deserialize', hook: StoreHook): void {
  for (const client of [s3Client(), s3ClientSingleAttempt()]) {
    const stack = client.middlewareStack as MiddlewareStack<any, any>;
    const name = `test-object-hook-${hooks++}`;
    stack.add(hook as any, { step: step as 'initialize', name, priority: 'low' });
    onTestFinished(() => {
      stack.remove(name);
    });
  }
}

/**
 * The next `count` TransactWriteItems calls whose items mention `about` (a partition's `tp`, a
 * group's key) reach the store of `endpoint` (and apply, or fail there), and then their answers
 * are lost: the caller sees a socket timeout. Returns how many were lost so far.
 */
export function loseTransactResponses(endpoint: string | undefined, about: string, count: number): () => number {
  let lost = 0;
  hookStoreClient(endpoint, 'deserialize', (next, context) => async (args) => {
    const input = args.input as { TransactItems?: unknown[] };
    const ours = String(context.commandName).includes('TransactWrite') && JSON.stringify(input.TransactItems ?? []).includes(about);
    if (!ours || lost >= count) return next(args);
    lost++;
    await next(args).catch(() => undefined);
    throw Object.assign(new Error('socket timed out (response lost by the test hook)'), { name: 'TimeoutError', $metadata: {} });
  });
  return () => lost;
}
