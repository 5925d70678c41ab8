/**
 * No secrets or record contents in logs: requests carrying an Authorization header and
 * record keys, values and headers go through the real handlers at the debug level, with the log
 * sent to a file; the file holds none of them. And the logger redacts an Authorization header,
 * a token or a cookie wherever a log call passes one.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it, inject } from 'vitest';
// (types only: the modules load after LOG_FILE is set)
import type * as Logger from '../../lib/logger.js';
import type * as Harness from '../fuzz/harness.js';

// Before the logger is first imported: every level, into a file this test reads.
const LOG = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-logs-')), 'log.jsonl');
process.env.LOG_LEVEL = 'debug';
process.env.LOG_FILE = LOG;

const SECRET_TOKEN = `tok-${Math.random().toString(36).slice(2)}-secret`;
const SECRET_VALUE = `value-${Math.random().toString(36).slice(2)}-private`;
const SECRET_KEY = `key-${Math.random().toString(36).slice(2)}-private`;
const SECRET_HEADER = Buffer.from(`hdr-${Math.random().toString(36).slice(2)}`).toString('base64');

let invoke: typeof Harness.invoke;
let logger: typeof Logger.logger;
const v3 = (p: string) => `/v3/clusters/${inject('clusterId')}${p}`;
const topic = `log-redaction-${process.pid}-${Date.now().toString(36)}`;

beforeAll(async () => {
  ({ invoke } = await import('../fuzz/harness.js'));
  ({ logger } = await import('../../lib/logger.js'));
  const r = await invoke({ method: 'POST', url: v3('/topics'), headers: { 'content-type': 'application/json' }, body: JSON.stringify({ topic_name: topic, partitions_count: 1, replication_factor: 3 }) });
  expect(r.status, r.body).toBe(201);
});

const logText = () => fs.readFileSync(LOG, 'utf8');

describe('Logs: no tokens, Authorization headers or record contents', () => {
  it('logs none of a request\'s Authorization header, record key, value or header, whether the request succeeds or fails', async () => {
    const auth = { authorization: `Bearer ${SECRET_TOKEN}`, cookie: `session=${SECRET_TOKEN}` };
    const record = { key: { type: 'STRING', data: SECRET_KEY }, value: { type: 'STRING', data: SECRET_VALUE }, headers: [{ name: 'h', value: SECRET_HEADER }] };
    const requests = [
      { method: 'POST', url: v3(`/topics/${topic}/records`), body: JSON.stringify(record) },
      // Refused: a schema type with no schema registered, an unknown partition, malformed JSON around the value, an unknown topic.
      { method: 'POST', url: v3(`/topics/${topic}/records`), body: JSON.stringify({ ...record, value: { type: 'AVRO', data: SECRET_VALUE } }) },
      { method: 'POST', url: v3(`/topics/${topic}/records`), body: JSON.stringify({ ...record, partition_id: 7 }) },
      { method: 'POST', url: v3(`/topics/${topic}/records`), body: `{"value":{"type":"STRING","data":"${SECRET_VALUE}"` },
      { method: 'POST', url: v3(`/topics/no-such-${topic}/records`), body: JSON.stringify(record) },
      { method: 'GET', url: v3(`/topics/${topic}/partitions/0/records?offset=0&format=string`) },
    ];
    const statuses: number[] = [];
    for (const r of requests) {
      statuses.push((await invoke({ ...r, headers: { 'content-type': 'application/json', ...auth } })).status);
    }
    expect(statuses).toEqual([200, 404, 404, 400, 404, 200]);
    const text = logText();
    // (the access log wrote a line per request: the file is the log, not empty)
    expect(text.split('\n').filter((l) => l.includes('"event":"request"')).length).toBeGreaterThanOrEqual(requests.length);
    for (const secret of [SECRET_TOKEN, SECRET_VALUE, SECRET_KEY, SECRET_HEADER]) expect(text).not.toContain(secret);
  });

  it('redacts an Authorization header, a cookie or a token wherever a log call passes one', () => {
    logger.warn({
      event: 'redaction-check', authorization: `Bearer ${SECRET_TOKEN}`, token: SECRET_TOKEN,
      headers: { authorization: `Bearer ${SECRET_TOKEN}`, cookie: SECRET_TOKEN },
      request: { headers: { authorization: SECRET_TOKEN, 'x-amz-security-token': SECRET_TOKEN }, token: SECRET_TOKEN },
    }, 'redaction check');
    const line = logText().split('\n').find((l) => l.includes('"event":"redaction-check"')) as string;
    expect(line).toBeDefined();
    expect(line).not.toContain(SECRET_TOKEN);
    const parsed = JSON.parse(line);
    expect(parsed.headers.authorization).toBe('[redacted]');
    expect(parsed.request.headers.authorization).toBe('[redacted]');
  });
});
