/**
 * One in-memory DynamoDB Local per test worker, for the quiet stacks the shared-stack files start
 * (`useQuietCluster`): the workers are reused from file to file (vitest.config.ts), so the files a
 * worker runs one after another share one JVM instead of starting one each — about 2 s of CPU per
 * start, and a cold JVM's slow first requests. Each stack keeps its tables under a prefix of its
 * own and deletes them when it stops (lib/local/stack.ts, `dynamodbEndpoint`), so a file sees no
 * table of another. Two files never share it at once: a worker runs one file at a time.
 *
 * DynamoDB Local gets slower with the stacks it has served, although their tables are deleted
 * (brokers.test.ts: 17 s on a fresh store, 45–70 s late in a worker's run), so a store serves
 * `STACKS_PER_STORE` stacks and is then replaced, at a moment no stack is using it.
 *
 * The store outlives the module registry, which setup-env.ts resets after each file, so it is kept
 * on `globalThis`. Vitest ends its workers without their exit handlers running, so each store
 * leaves its pid in the run's `workerStoreDir` and global-setup.ts's teardown ends it. Without that
 * directory (a project with no global setup) there is no worker store: `workerStore` returns
 * undefined and the stack starts a store of its own.
 */
import fs from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';
import { ProcessSupervisor } from '../../local/processes.js';

export const STACKS_PER_STORE = 4;

interface Store { readonly supervisor: ProcessSupervisor; readonly endpoint: Promise<string>; served: number; using: number }
const KEY = Symbol.for('tributary.test.workerStore');
const holder = globalThis as typeof globalThis & { [KEY]?: Store };

/** This worker's DynamoDB Local for one stack: its endpoint, and `release` to call when the stack has stopped; undefined without a `workerStoreDir`. */
export async function workerStore(): Promise<{ endpoint: string; release: () => void } | undefined> {
  const dir = inject('workerStoreDir');
  if (!dir) return undefined;
  let store = holder[KEY];
  if (store && store.using === 0 && store.served >= STACKS_PER_STORE) {
    delete holder[KEY];
    const pid = store.supervisor.get('worker-store')?.pid;
    await store.supervisor.stopAll();
    if (pid) fs.rmSync(path.join(dir, String(pid)), { force: true });
    store = undefined;
  }
  if (!store) {
    const supervisor = new ProcessSupervisor();
    const started = supervisor.start({ name: 'worker-store', role: 'test worker store', kind: 'dynamodb', dataDir: null }).then((info) => {
      if (info.pid) fs.writeFileSync(path.join(dir, String(info.pid)), '');
      return info.endpoint;
    });
    const fresh: Store = { supervisor, endpoint: started, served: 0, using: 0 };
    // A store that failed to start is not kept: the next stack tries again.
    started.catch(() => { if (holder[KEY] === fresh) delete holder[KEY]; });
    holder[KEY] = store = fresh;
  }
  const mine = store;
  mine.served++;
  mine.using++;
  let released = false;
  const release = () => {
    if (!released) mine.using--;
    released = true;
  };
  try {
    return { endpoint: await mine.endpoint, release };
  } catch (err) {
    release();
    throw err;
  }
}
