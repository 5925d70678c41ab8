/**
 * The SDK's errors, named as kafkajs names them: `KafkaJSProtocolError`-like errors carry Kafka's
 * error name in `type` and whether a retry may succeed in `retriable` (from the one table of Kafka
 * error codes in lib/protocol/errors.ts, which has no imports).
 */
import { KAFKA_ERRORS, type KafkaErrorName } from '../lib/protocol/errors.js';

/** Every error the SDK throws. */
export class TributaryError extends Error {
  override name = 'TributaryError';
  /** Whether retrying the same call may succeed. */
  readonly retriable: boolean;
  constructor(message: string, opts: { retriable?: boolean; cause?: unknown } = {}) {
    super(message, opts.cause !== undefined ? { cause: opts.cause } : undefined);
    this.retriable = opts.retriable ?? false;
  }
}

/** An error the cluster answered: Kafka's error name (`type`), its code, the HTTP status and REST Proxy error code. */
export class TributaryProtocolError extends TributaryError {
  override name = 'TributaryProtocolError';
  constructor(
    message: string,
    /** Kafka's error name (`UNKNOWN_TOPIC_OR_PARTITION`, ...), or `HTTP_<status>` for an error Kafka has no name for. */
    readonly type: string,
    /** HTTP status of the answer. */
    readonly status: number,
    /** REST Proxy `error_code` (40401, 50003, ...). */
    readonly errorCode: number,
    retriable: boolean,
  ) {
    super(message, { retriable });
  }
  /** How long the server asked to wait before retrying (a 429's `Retry-After`), in ms. */
  retryAfterMs?: number;
  /** Kafka's numeric error code, when `type` is one of Kafka's names. */
  get code(): number | undefined {
    return (KAFKA_ERRORS as Record<string, { code: number }>)[this.type]?.code;
  }
}

/** The request never got an answer (refused, reset, timed out): retriable. */
export class TributaryConnectionError extends TributaryError {
  override name = 'TributaryConnectionError';
  constructor(message: string, cause?: unknown) {
    super(message, { retriable: true, cause });
  }
}

const NAME = /^([A-Z][A-Z0-9_]+)(?::|\b)/;

/**
 * The error an HTTP answer stands for: the Kafka name leads the message (`"NAME: ..."`); REST Proxy
 * codes without one (40403, 40601, ...) and bare statuses get `HTTP_<status>`. 5xx answers without a
 * name (a gateway's 502/503/504) are retriable, as Kafka's own retriable names are.
 */
export function errorFromResponse(status: number, body: unknown, fallback = ''): TributaryProtocolError {
  const b = (body && typeof body === 'object' ? body : {}) as { error_code?: unknown; message?: unknown };
  const message = typeof b.message === 'string' ? b.message : fallback || `HTTP ${status}`;
  const errorCode = typeof b.error_code === 'number' ? b.error_code : status;
  const named = NAME.exec(message)?.[1];
  const spec = named ? (KAFKA_ERRORS as Record<string, { retriable: boolean }>)[named] : undefined;
  const type = spec ? (named as KafkaErrorName) : `HTTP_${status}`;
  const retriable = spec ? spec.retriable : status >= 500 || status === 429;
  return new TributaryProtocolError(message, type, status, errorCode, retriable);
}

export const isRetriable = (e: unknown): boolean => e instanceof TributaryError && e.retriable;
