/**
 * SDK calls made while serving a request are aborted at its answer-by time (lib/deadline.ts,
 * lib/storage/clients.ts), through the real SDK against an endpoint that accepts connections and
 * never answers — what a paused store does.
 */
import net from 'node:net';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { config } from '../../../lib/config.js';
import { asKafkaError } from '../../../lib/errors.js';
import { ANSWER_MARGIN_MS, withAnswerBy } from '../../../lib/deadline.js';
import { dynamo } from '../../../lib/storage/clients.js';

let server: net.Server;
let endpoint: string;
const sockets: net.Socket[] = [];
beforeAll(async () => {
  server = net.createServer((s) => sockets.push(s)); // accepts, never answers
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => server.close(r));
});

describe('Feature: store calls end with the request that made them', () => {
  it('where a store never answers, a call made while serving a request is aborted soon after the request\'s answer-by time, not after the store timeout and its retries', async () => {
    const started = Date.now();
    const by = started + 300;
    const err = await withAnswerBy(by, () => dynamo(endpoint).send(new GetCommand({ TableName: 't', Key: { pk: 'x', sk: 'y' } }))).catch((e: unknown) => e as Error);
    const elapsed = Date.now() - started;
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).name).toMatch(/Abort/);
    // ...which the data path treats as a store that did not answer (a clean 5xx, never a crash).
    expect(asKafkaError(err).kafkaName).toBe('KAFKA_STORAGE_ERROR');
    // (the store timeout alone would have taken this long, once per attempt)
    expect(elapsed).toBeLessThan(config().storeTimeoutMs);
    expect(elapsed).toBeGreaterThanOrEqual(300 + ANSWER_MARGIN_MS / 2 - 50);
  });
});
