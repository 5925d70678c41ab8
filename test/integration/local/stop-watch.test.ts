/**
 * StopWatch (local/proc.ts): whether every thread of a process that is frozen again and again has
 * stopped, read from /proc files it keeps open. Linux only, as the Lambda runtime's freezing is.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { StopWatch } from '../../../local/processes.js';

describe.runIf(process.platform === 'linux')('StopWatch', () => {
  it('follows a process through stops and resumes, and counts it stopped once it has exited', async () => {
    // Prepare: a Node process (several threads) that keeps running.
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await new Promise((r) => setTimeout(r, 300));
    const watch = new StopWatch(child.pid as number);
    try {
      // Act and assess: each state, read again through the same open files.
      expect(watch.allStopped()).toBe(false);
      for (let i = 0; i < 3; i++) {
        child.kill('SIGSTOP');
        expect(await watch.waitStopped(1000)).toBe(true);
        child.kill('SIGCONT');
        await new Promise((r) => setTimeout(r, 50));
        expect(watch.allStopped()).toBe(false);
      }
      child.kill('SIGKILL');
      await exited;
      expect(watch.allStopped()).toBe(true);
    } finally {
      child.kill('SIGKILL');
      watch.close();
    }
  });
});
