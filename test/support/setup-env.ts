/** Every test file talks to the shared local stack: its environment is set before any test runs. */
import { inject } from 'vitest';

process.env.LOG_LEVEL ??= 'warn';
Object.assign(process.env, inject('stackEnv'));
