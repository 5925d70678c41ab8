/**
 * A burst of new store connections, as many new function environments open at once, against the
 * shared stack's DynamoDB Local: its accept queue holds 50, the kernel drops the SYNs beyond it and
 * sends them again after 1 s. With the connect timeout the local stack gives its functions, every
 * connection is made; with 1 s, some give up just before their second SYN.
 */
import { ListTablesCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { describe, expect, it } from 'vitest';
import { config } from '../../../lib/config.js';

/** Connection attempts at once: each from a client of its own, as each new environment has. */
const BURST = 300;

/** Sends one request per fresh client, all at once; returns how many timed out. */
async function burst(connectTimeoutMs: number): Promise<number> {
  const outcomes = await Promise.all(Array.from({ length: BURST }, async () => {
    const client = new DynamoDBClient({ maxAttempts: 1, requestHandler: new NodeHttpHandler({ connectionTimeout: connectTimeoutMs, requestTimeout: 20_000 }) });
    try {
      await client.send(new ListTablesCommand({ Limit: 1 }));
      return 'ok';
    } catch (err) {
      if ((err as Error).name === 'TimeoutError') return 'timeout';
      throw err;
    } finally {
      client.destroy();
    }
  }));
  return outcomes.filter((o) => o === 'timeout').length;
}

describe('Store connections on the local stack', () => {
  it(`where ${BURST} new clients connect at once, the stack's connect timeout outlasts the dropped SYN: every request is answered`, async () => {
    expect(config().storeConnectTimeoutMs).toBeGreaterThan(1_000);
    expect(await burst(config().storeConnectTimeoutMs)).toBe(0);
  });
});
