/**
 * The errors above the protocol. Domain failures are `KafkaError`s (lib/protocol/errors.ts: the
 * error that carries one of Kafka's codes, defined beside the table of codes so the codec can throw
 * it); HTTP-only failures (a malformed body, an unknown route) are `HttpError`s. lib/http turns both
 * into responses.
 */
import { KafkaError, type KafkaErrorName } from './protocol/errors.js';

/** An error that exists only at the HTTP layer, with REST Proxy's error code. */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    readonly errorCode: number,
    message: string,
    /** Response headers the error answers with (`Retry-After` on a 429). */
    readonly headers?: Readonly<Record<string, string>>,
  ) {
    super(message);
  }
}

export const isKafkaError = (e: unknown, name?: KafkaErrorName): e is KafkaError =>
  e instanceof KafkaError && (name === undefined || e.kafkaName === name);

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND']);

/**
 * A store that failed to answer (refused, reset, timed out or aborted, throttled, in conflict with a
 * transaction, 5xx) is KAFKA_STORAGE_ERROR,
 * which clients retry; any other error is a bug and is rethrown as it is.
 */
export function asKafkaError(err: unknown): KafkaError {
  if (err instanceof KafkaError) return err;
  const e = err as { name?: string; code?: string; $metadata?: { httpStatusCode?: number }; $fault?: string; message?: string };
  const storeFailure =
    (e.code !== undefined && NETWORK_CODES.has(e.code)) ||
    e.name === 'TimeoutError' || e.name === 'RequestTimeout' ||
    // Aborted at the request's answer-by time (lib/deadline.ts): the store did not answer in time.
    e.name === 'AbortError' ||
    e.$fault === 'server' || e.name === 'ProvisionedThroughputExceededException' || e.name === 'ThrottlingException' ||
    e.name === 'RequestLimitExceeded' || (e.$metadata?.httpStatusCode ?? 0) >= 500 ||
    // A single write that met a transaction in flight on its item: not applied, to be asked again.
    e.name === 'TransactionConflictException' ||
    // A replica table missing (a store that came back empty and is being re-created).
    e.name === 'ResourceNotFoundException';
  if (storeFailure) return new KafkaError('KAFKA_STORAGE_ERROR', `A store did not answer: ${e.name ?? 'Error'}: ${e.message ?? ''}`.trim());
  throw err;
}
