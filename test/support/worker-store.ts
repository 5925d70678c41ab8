/**
 * One in-memory DynamoDB Local per test worker, for the quiet stacks the shared-stack files start
 * (`useQuietCluster`): the workers are reused from file to file (vitest.config.ts), so the files a
 * worker runs one after another share one JVM instead of starting one each — about 2 s of CPU per
 * start, and a cold JVM's slow first requests. Each stack keeps its tables under a prefix of its
 * own and deletes them when it stops (lib/local/stack.ts, `dynamodbEndpoint`), so a file sees no
 * table of another. Two files never share it at once: a worker runs one file at a time.
 *
 * The store outlives the module registry, which setup-env.ts resets after each file, so it is kept
 * on `globalThis`; the supervisor that started it kills it when the worker exits.
 */
import { ProcessSupervisor } from '../../lib/local/processes.js';

const KEY = Symbol.for('tributary.test.workerStore');
const holder = globalThis as typeof globalThis & { [KEY]?: Promise<string> };

/** The endpoint of this worker's DynamoDB Local, started on first use. */
export function workerStore(): Promise<string> {
  const held = holder[KEY];
  if (held) return held;
  const endpoint = new ProcessSupervisor().start({ name: 'worker-store', role: 'test worker store', kind: 'dynamodb', dataDir: null }).then((info) => info.endpoint);
  // A store that failed to start is not kept: the next file tries again.
  endpoint.catch(() => { if (holder[KEY] === endpoint) delete holder[KEY]; });
  holder[KEY] = endpoint;
  return endpoint;
}
