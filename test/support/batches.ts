/** Batches as produce prepares them, for the tests that append below produce. */
import { prepareBatches, type PreparedBatch } from '../../lib/log/batches.js';

/** `prepareBatches` options: no compression, CreateTime, Kafka's default max.message.bytes, any timestamp. */
export const BATCH_OPTIONS = { compression: 'none' as const, timestampType: 'CreateTime' as const, maxMessageBytes: 1_048_588, timestampBeforeMaxMs: Number.MAX_SAFE_INTEGER, timestampAfterMaxMs: Number.MAX_SAFE_INTEGER };

/** One batch holding `values` (one record each, no key). */
export const batchOf = (...values: string[]): PreparedBatch[] => prepareBatches(values.map((v) => ({ key: null, value: Buffer.from(v), headers: [] })), BATCH_OPTIONS);
