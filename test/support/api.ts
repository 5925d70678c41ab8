/** A small HTTP client for end-to-end tests against the local gateway. */
import { inject } from 'vitest';

export const baseUrl = (): string => inject('stackUrl');
export const clusterId = (): string => inject('clusterId');
export const v3 = (path = ''): string => `/v3/clusters/${clusterId()}${path}`;

export interface Reply<T = any> {
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

export async function call<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply<T>> {
  const res = await fetch(`${baseUrl()}${path}`, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* streaming responses are several documents */
  }
  return { status: res.status, body: parsed as T, text, headers: res.headers };
}

let counter = 0;
/** A topic name unique to this run, so test files can share the stack. */
export const uniqueTopic = (prefix: string): string => `${prefix}-${process.pid}-${Date.now().toString(36)}-${counter++}`;

export async function createTopic(name: string, partitions = 3, replicationFactor = 3, configs: { name: string; value: string }[] = []): Promise<void> {
  const r = await call('POST', v3('/topics'), { topic_name: name, partitions_count: partitions, replication_factor: replicationFactor, configs });
  if (r.status !== 201) throw new Error(`create topic ${name}: ${r.status} ${r.text}`);
}
