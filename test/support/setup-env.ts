/**
 * Every test file talks to the shared local stack: its environment is set before any test runs.
 * The shared project runs its files one after another in reused workers (`isolate: false`,
 * vitest.config.ts), so after each file its environment is put back as it found it and the module
 * registry is reset: the next file gets fresh project modules (their caches, clients and config
 * read from its own environment) while node_modules stay loaded once per worker.
 */
import { afterAll, inject, vi } from 'vitest';
import { restoreEnv } from './env.js';

const before = { ...process.env };
process.env.LOG_LEVEL ??= 'warn';
Object.assign(process.env, inject('stackEnv'));

afterAll(() => {
  restoreEnv(before);
  vi.resetModules();
});
