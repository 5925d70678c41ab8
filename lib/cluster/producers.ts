/** Idempotent producer ids (Kafka's InitProducerId): handed out by the coordination table. */
import { KafkaError } from '../protocol/errors.js';
import { initProducerId, UnknownProducer } from '../storage/coordination/producer-ids.js';

/** A new producer id at epoch 0, or the next epoch of `existing` (UNKNOWN_PRODUCER_ID if never handed out). */
export async function initProducer(existing?: number): Promise<{ producerId: number; producerEpoch: number }> {
  try {
    return await initProducerId(existing);
  } catch (err) {
    if (err instanceof UnknownProducer) throw new KafkaError('UNKNOWN_PRODUCER_ID', `UNKNOWN_PRODUCER_ID: producer id ${err.producerId} was never handed out.`);
    throw err;
  }
}
