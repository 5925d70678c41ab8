/** Posting to a WebSocket connection ends within the store timeout, tried twice, when the connection API hangs: well within a delivery's lease. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { ENVIRONMENT, resetConfig } from '../../../lib/config.js';

describe('postToConnection', () => {
  it('gives up on a connection API that never answers after two tries of the store timeout each', async () => {
    let requests = 0;
    const hanging = createServer(() => { requests++; }); // (reads the request, never answers)
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    const saved = { endpoint: process.env[ENVIRONMENT.websocketEndpoint], timeout: process.env.TRIBUTARY_STORE_TIMEOUT_MS };
    process.env[ENVIRONMENT.websocketEndpoint] = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`;
    process.env.TRIBUTARY_STORE_TIMEOUT_MS = '300';
    resetConfig();
    vi.resetModules();
    try {
      const { postToConnection } = await import('../../../lib/storage/connection-api.js');
      const started = Date.now();
      await expect(postToConnection('abc=', 'hello')).rejects.toMatchObject({ name: 'TimeoutError' });
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(requests).toBe(2);
    } finally {
      for (const [k, v] of [[ENVIRONMENT.websocketEndpoint, saved.endpoint], ['TRIBUTARY_STORE_TIMEOUT_MS', saved.timeout]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      resetConfig();
      vi.resetModules();
      hanging.closeAllConnections();
      hanging.close();
    }
  });
});
