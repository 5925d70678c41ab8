/**
 * Store connections as function environments use them, against the shared stack's servers:
 * - a burst of new connections, as many new environments open at once, to DynamoDB Local: its
 *   accept queue holds 50, the kernel drops the SYNs beyond it and sends them again after 1 s.
 *   With the connect timeout the local stack gives its functions, every connection is made; with
 *   1 s, some give up just before their second SYN.
 * - a pooled connection the server closed while the process was frozen: s3rver closes an idle
 *   keep-alive connection about 6 s after its last answer; a process stopped longer has not read
 *   the close, and a request sent once on that socket (a stage PUT) would fail with
 *   `socket hang up` or `read ECONNRESET`.
 */
import { ListTablesCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { describe, expect, it } from 'vitest';
import { config } from '../../../lib/config.js';
import { IDLE_SOCKET_MS } from '../../../lib/storage/clients.js';
import { putStageObject } from '../../../lib/storage/objects.js';

/** Connection attempts at once: each from a client of its own, as each new environment has. */
const BURST = 300;

/** When s3rver closes an idle keep-alive connection: Node's 5 s keep-alive timeout and its 1 s buffer (measured). */
const S3RVER_CLOSES_IDLE_MS = 6_000;

/** Stops this process's event loop for `ms`, as a freeze stops a function environment. */
function freeze(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

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

  it('a stage PUT after the process sat frozen past the server\'s keep-alive timeout opens a new connection instead of failing on the closed one', async () => {
    expect(IDLE_SOCKET_MS).toBeLessThan(S3RVER_CLOSES_IDLE_MS);
    const key = `stage/store-connections/${process.pid}`;
    await putStageObject(`${key}/before`, Buffer.from('before'));
    freeze(S3RVER_CLOSES_IDLE_MS + 1_000);
    // (thawed: the loop turns once, as a thawed environment reads its invocation, then sends)
    await new Promise((resolve) => setImmediate(resolve));
    await expect(putStageObject(`${key}/after`, Buffer.from('after'))).resolves.toBeUndefined();
  });
});
