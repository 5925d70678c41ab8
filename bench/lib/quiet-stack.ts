/**
 * The stack the counting and lib-driven benchmarks run on: DynamoDB Local in memory (one process
 * for every table), s3rver, no controller processes and no stream replicator — nothing runs but
 * what the benchmark drives, so whatever is counted or timed is the benchmark's own work.
 */
import './env.js';
import { startLocalStack, type LocalStack } from '../../local/stack.js';

export function startQuietStack(brokers = 3): Promise<LocalStack> {
  return startLocalStack({ port: 0, brokers, inMemory: true, controllers: 0, replicator: false });
}
