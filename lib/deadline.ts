/**
 * The time by which the request being served must be answered. In Lambda behind API Gateway
 * that is the sooner of the function's own timeout and the API's 30 s integration limit, less a
 * margin for writing the answer: a long poll, and retries across a leader change, stop there and
 * answer with what they have instead of being cut off (a 504 and a frozen container). The HTTP
 * function wrapper (lib/http/handler.ts) sets it for each request; code outside a request (the
 * controller, tests, benches) has none and keeps its own deadlines.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** API Gateway's longest integration timeout (HTTP APIs, and REST APIs by default). */
export const API_INTEGRATION_LIMIT_MS = 30_000;
/** Kept back from the limit for serializing and sending the answer. */
export const ANSWER_MARGIN_MS = 1500;

const answerBy = new AsyncLocalStorage<number>();

/** Runs `fn` as a request that must be answered by `at` (ms since the epoch). */
export function withAnswerBy<T>(at: number, fn: () => Promise<T>): Promise<T> {
  return answerBy.run(at, fn);
}

/** The answer-by time of a request with `remainingMs` left in its function: the API's limit and the margin applied. */
export function answerByFor(remainingMs: number, now = Date.now()): number {
  return now + Math.min(remainingMs, API_INTEGRATION_LIMIT_MS) - ANSWER_MARGIN_MS;
}

/** `Date.now() + ms`, but no later than the current request's answer-by time. */
export function deadlineIn(ms: number): number {
  const by = answerBy.getStore();
  const own = Date.now() + ms;
  return by === undefined ? own : Math.min(own, by);
}

/**
 * A signal for the SDK calls made while serving a request (lib/storage/clients.ts): it aborts
 * half the margin after the answer-by time, so a store that stops answering costs the request
 * its answer time, not the store timeout times the attempts, while a last read started just
 * before the answer-by time still finishes and the answer still beats the API's limit.
 * Undefined outside a request.
 */
export function answerBySignal(): AbortSignal | undefined {
  const by = answerBy.getStore();
  return by === undefined ? undefined : AbortSignal.timeout(Math.max(0, by + ANSWER_MARGIN_MS / 2 - Date.now()));
}
