/**
 * Retries with jittered exponential backoff, as kafkajs's `retry` does (src/retry): only errors
 * marked retriable are retried; the wait grows by `multiplier` up to `maxRetryTime`, each one
 * randomized by ±`factor`, and is never shorter than an error's `retryAfterMs` (a 429's Retry-After).
 */
import { isRetriable } from './errors.js';

/** kafkajs's retry options, with its defaults. */
export interface RetryOptions {
  /** @default 100 */
  readonly initialRetryTime?: number;
  /** @default 30000 */
  readonly maxRetryTime?: number;
  /** Randomization of each wait, ±factor. @default 0.2 */
  readonly factor?: number;
  /** @default 2 */
  readonly multiplier?: number;
  /** @default 5 */
  readonly retries?: number;
}

export const sleep = (ms: number, signal?: AbortSignal): Promise<void> => new Promise((resolve) => {
  if (signal?.aborted) return resolve();
  const t = setTimeout(done, ms);
  function done() {
    clearTimeout(t);
    signal?.removeEventListener('abort', done);
    resolve();
  }
  signal?.addEventListener('abort', done, { once: true });
});

/** The wait before retry number `attempt` (0-based). */
export function backoff(attempt: number, o: RetryOptions = {}): number {
  const base = Math.min((o.initialRetryTime ?? 100) * (o.multiplier ?? 2) ** attempt, o.maxRetryTime ?? 30_000);
  const f = o.factor ?? 0.2;
  return Math.round(base * (1 - f + Math.random() * 2 * f));
}

/** Runs `fn` until it succeeds, throws a non-retriable error, or has been retried `retries` times. */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, o: RetryOptions = {}, retriable: (e: unknown) => boolean = isRetriable): Promise<T> {
  const retries = o.retries ?? 5;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (e) {
      if (attempt >= retries || !retriable(e)) throw e;
      // Never sooner than the server asked (a quota's Retry-After).
      await sleep(Math.max(backoff(attempt, o), (e as { retryAfterMs?: number }).retryAfterMs ?? 0));
    }
  }
}
