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
  // In Lambda-fidelity mode: every HTTP request and stream batch is an invocation of a deployed
  // bundle in a frozen-between-invocations environment. No controller (neither loop processes nor
  // the scheduled function): tests that move leaders by hand must not race one; the failover
  // tests start their own stacks with controllers.
  stack = await startLocalStack({ port: 0, brokers: 3, inMemory: true, lambda: true, controllers: 0, controllerScheduleMs: 0 });
  project.provide('stackUrl', stack.url);
  project.provide('stackEnv', { ...stack.env });
  project.provide('clusterId', stack.clusterId);
}

export async function teardown(): Promise<void> {
  await stack?.stop();
}
