/** The local gateway's WebSocket API as API Gateway behaves: a message whose invocation fails is answered by the gateway itself. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startWebSocketApi, WEBSOCKET_PATH } from '../../../local/websocket-api.js';
import type { WebSocketEvent } from '../../../lib/http/websocket.js';

describe('the local WebSocket API', () => {
  it('answers a message whose function invocation failed (or was throttled) with API Gateway\'s "Internal server error", and keeps the connection', async () => {
    const api = startWebSocketApi({
      fn: async (e) => {
        const ev = e as WebSocketEvent;
        if (ev.requestContext.routeKey === '$default' && ev.body === 'fail') throw new Error('Rate Exceeded.');
        return { statusCode: 200 };
      },
    });
    const server = createServer();
    server.on('upgrade', (req, socket, head) => {
      if (!api.upgrade(req, socket, head)) socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const ws = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}${WEBSOCKET_PATH}`);
    try {
      const frames: any[] = [];
      ws.on('message', (d) => frames.push(JSON.parse(String(d))));
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      ws.send('fail');
      await expect.poll(() => frames.length, { timeout: 5000 }).toBe(1);
      expect(frames[0]).toEqual({ message: 'Internal server error', connectionId: expect.stringMatching(/^.{15}=$/), requestId: expect.any(String) });
      ws.send('{"action":"ping"}');
      await new Promise((r) => setTimeout(r, 200));
      expect(frames).toHaveLength(1);
      expect(ws.readyState).toBe(WebSocket.OPEN);
    } finally {
      ws.close();
      api.close();
      server.close();
    }
  });
});
