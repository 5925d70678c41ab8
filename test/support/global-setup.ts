/** Starts one local stack for the whole test run (docs/architecture.md, "The local stack") and hands its URL and env to every test file. */
import type { TestProject } from 'vitest/node';
import { startLocalStack, type LocalStack } from '../../lib/local/stack.js';

let stack: LocalStack | undefined;

declare module 'vitest' {
  export interface ProvidedContext {
    stackUrl: string;
    stackEnv: Record<string, string>;
    clusterId: string;
  }
}

export async function setup(project: TestProject): Promise<void> {
  process.env.LOG_LEVEL ??= 'warn';
  // No controller loops here: tests that move leaders by hand must not race one; the failover
  // tests start their own stacks with controllers.
  stack = await startLocalStack({ port: 0, brokers: 3, inMemory: true, controllers: 0 });
  project.provide('stackUrl', stack.url);
  project.provide('stackEnv', { ...stack.env });
  project.provide('clusterId', stack.clusterId);
}

export async function teardown(): Promise<void> {
  await stack?.stop();
}
