/** Starts one local stack for the whole test run (docs/architecture.md, "The local stack") and hands its URL and env to every test file. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { killStale } from '../../local/processes.js';
import { startLocalStack, type LocalStack } from '../../local/stack.js';

let stack: LocalStack | undefined;
let workerStores: string | undefined;

declare module 'vitest' {
  export interface ProvidedContext {
    stackUrl: string;
    stackEnv: Record<string, string>;
    clusterId: string;
    /** Where each test worker's DynamoDB Local leaves its pid (test/support/worker-store.ts). */
    workerStoreDir: string;
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
  workerStores = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-worker-stores-'));
  project.provide('workerStoreDir', workerStores);
}

export async function teardown(): Promise<void> {
  await stack?.stop();
  // Vitest ends its workers without their exit handlers running, so their stores are ended here.
  if (workerStores) {
    killStale(fs.readdirSync(workerStores).map(Number));
    fs.rmSync(workerStores, { recursive: true, force: true });
  }
}
