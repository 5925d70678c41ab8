import { configDefaults, defineConfig } from 'vitest/config';

// Quiet logs for the stack started in globalSetup and for the test workers.
process.env.LOG_LEVEL ??= 'warn';
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/**
 * Files that start their own multi-process stacks (one DynamoDB Local JVM per broker, controller
 * processes, the CLI) to kill, pause and restart them. Their faults have deadlines (session
 * timeouts, ISR lag) and their restarts reuse ports, so they run after every other file and one at
 * a time: they neither slow the shared-stack files down nor get slowed down by them or each other.
 * A file that calls `startFaultCluster` with isolated brokers belongs here (the helper refuses to
 * run elsewhere); so does any file that spawns stores or a whole stack itself.
 */
export const MULTI_PROCESS_FILES = [
  'test/integration/faults.test.ts',
  'test/integration/chaos.test.ts',
  'test/integration/local/processes.test.ts',
  'test/e2e/local-stack.test.ts',
  // Isolated brokers (written alongside this change).
  'test/integration/controller/liveness.test.ts',
  'test/integration/replication/liveness.test.ts',
  'test/integration/controller/wake.test.ts',
  'test/integration/cluster/rebalance-live.test.ts',
  'test/e2e/console-browser.test.ts',
];

/**
 * Files that need no running stack and have no deadline of their own (CDK synths and template
 * checks, building the client package, the history checker on a large model history): `npm test`
 * runs them at the lowest CPU priority beside the test phases, on the CPU those leave idle
 * (test/support/run-all.ts). broker-list.test.ts and one-definition.test.ts use the shared stack, so they stay there.
 */
export const BACKGROUND_FILES = [
  'test/cdk/auth.test.ts',
  'test/cdk/broker-ids.test.ts',
  'test/cdk/bundle.test.ts',
  'test/cdk/cluster.test.ts',
  'test/cdk/console.test.ts',
  'test/cdk/encryption.test.ts',
  'test/cdk/least-privilege.test.ts',
  'test/cdk/limits.test.ts',
  'test/cdk/metric-dimensions.test.ts',
  'test/cdk/nag.test.ts',
  'test/cdk/props.test.ts',
  'test/cdk/rest-event.test.ts',
  'test/cdk/websocket.test.ts',
  'test/unit/client/package.test.ts',
  'test/unit/chaos/checker.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: the shared-stack files run two at a time (`--maxWorkers` on the command line overrides).
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...MULTI_PROCESS_FILES, ...BACKGROUND_FILES],
          // One in-memory 3-broker stack for the whole run, shared by these files.
          globalSetup: ['test/support/global-setup.ts'],
          setupFiles: ['test/support/setup-env.ts'],
          fileParallelism: true,
          // Workers are reused from file to file: node_modules load once per worker. setup-env.ts
          // puts the environment back and resets the module registry after each file.
          isolate: false,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'background',
          include: BACKGROUND_FILES,
          setupFiles: ['test/support/setup-env.ts'],
          isolate: false,
          // At the lowest CPU priority a file's wall time says nothing about it: it waits whenever the
          // multi-process files want both cores. These files have no deadline to miss.
          testTimeout: 600_000,
          hookTimeout: 600_000,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'multi-process',
          include: MULTI_PROCESS_FILES,
          // Each file starts what it needs; none may talk to the shared stack.
          env: { TRIBUTARY_TEST_PROJECT: 'multi-process' },
          fileParallelism: false,
          maxWorkers: 1,
          // After every shared-stack file has finished.
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
