/** A small HTTP client for end-to-end tests against the local gateway. */
import { expect, inject } from 'vitest';

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
  return replyOf<T>(res);
}

/** A response as a `Reply`: its body parsed as JSON where it is one document, else the text. */
export async function replyOf<T = any>(res: Response): Promise<Reply<T>> {
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON, or several documents (streaming responses) */
  }
  return { status: res.status, body: parsed as T, text, headers: res.headers };
}

/**
 * A Kafka-style error answer: `status`, and a body of exactly `error_code` and a message (matching
 * `message`, where given). The body's text labels a wrong status (cut short: it may be large).
 */
export function expectError(r: Reply, status: number, errorCode: number, message?: string | RegExp): void {
  expect(r.status, r.text.length > 300 ? `${r.text.slice(0, 300)}…` : r.text).toBe(status);
  expect(r.body).toEqual({ error_code: errorCode, message: expect.any(String) });
  if (message !== undefined) expect(r.body.message).toMatch(message);
}

/** How a test calls the gateway: `call` here, or a fault cluster's. */
export type Caller = (method: string, path: string) => Promise<{ status: number; body: any }>;

/**
 * Every record of a partition below its high watermark, read over HTTP a page of `maxBytes` at a
 * time, keys and values as strings; each page must answer 200. `recordsPath` is the partition's
 * `…/partitions/{p}/records`.
 */
export async function readRecords(recordsPath: string, o: { maxBytes?: number; call?: Caller } = {}): Promise<any[]> {
  const get = o.call ?? call;
  const records: any[] = [];
  for (let offset = 0; ;) {
    const r = await get('GET', `${recordsPath}?offset=${offset}&max_bytes=${o.maxBytes ?? 4_000_000}&format=string`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    records.push(...r.body.records);
    if (r.body.next_offset >= r.body.high_watermark) return records;
    offset = r.body.next_offset;
  }
}

let counter = 0;
/** A topic name unique to this run, so test files can share the stack. */
export const uniqueTopic = (prefix: string): string => `${prefix}-${process.pid}-${Date.now().toString(36)}-${counter++}`;

export async function createTopic(name: string, partitions = 3, replicationFactor = 3, configs: { name: string; value: string }[] = []): Promise<void> {
  const r = await call('POST', v3('/topics'), { topic_name: name, partitions_count: partitions, replication_factor: replicationFactor, configs });
  if (r.status !== 201) throw new Error(`create topic ${name}: ${r.status} ${r.text}`);
}

/** Each offset's value (a string) of a partition below its high watermark, read as `readRecords` reads. */
export async function readValues(recordsPath: string, o: { maxBytes?: number; call?: Caller } = {}): Promise<Map<number, string>> {
  return new Map((await readRecords(recordsPath, o)).map((r) => [r.offset as number, r.value.data as string]));
}
