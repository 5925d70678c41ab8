/** The local gateway's WebSocket API as API Gateway behaves: a message whose invocation fails is answered by the gateway itself. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import { startWebSocketApi, WEBSOCKET_PATH } from '../../../local/websocket-api.js';
import { ENVIRONMENT } from '../../../lib/config.js';
import type { WebSocketEvent } from '../../../lib/http/websocket.js';
import { LOCAL_TOKEN_HEADER } from '../../../lib/storage/local-endpoint-token.js';

/** An HTTP server in front of the API's connection management and Invoke APIs. */
async function serving(api: ReturnType<typeof startWebSocketApi>): Promise<{ server: Server; base: string }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (!api.serve(req, res, Buffer.concat(chunks))) res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

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

  it('with an endpoint token (the stack\'s --auth), refuses the connection API and Invoke to a caller without it, as AWS refuses bad credentials; the functions\' clients send it', async () => {
    const invoked: unknown[] = [];
    const api = startWebSocketApi({ fn: async (e) => { invoked.push(e); return { statusCode: 200 }; }, endpointToken: 'local-secret' });
    const { server, base } = await serving(api);
    const url = base;
    const saved = { ws: process.env[ENVIRONMENT.websocketEndpoint], lambda: process.env[ENVIRONMENT.lambdaEndpoint], token: process.env[ENVIRONMENT.localEndpointToken] };
    try {
      const bare = await fetch(`${url}/@connections/abc=`, { method: 'POST', body: 'x' });
      expect(bare.status).toBe(403);
      expect(bare.headers.get('x-amzn-errortype')).toBe('UnrecognizedClientException');
      const wrong = await fetch(`${url}/2015-03-31/functions/websocket/invocations`, { method: 'POST', body: '{}', headers: { [LOCAL_TOKEN_HEADER]: 'local-secreT' } });
      expect(wrong.status).toBe(403);
      const right = await fetch(`${url}/@connections/abc=`, { method: 'POST', body: 'x', headers: { [LOCAL_TOKEN_HEADER]: 'local-secret' } });
      expect(right.status).toBe(410); // (past the check: no such connection)

      // the functions' own clients, through the AWS SDK, with the token the stack gives them
      process.env[ENVIRONMENT.websocketEndpoint] = url;
      process.env[ENVIRONMENT.lambdaEndpoint] = url;
      process.env[ENVIRONMENT.localEndpointToken] = 'local-secret';
      vi.resetModules();
      const { postToConnection } = await import('../../../lib/storage/connection-api.js');
      const { invokeAsync } = await import('../../../lib/storage/lambda-invoke.js');
      expect(await postToConnection('abc=', 'hello')).toBe(false); // GoneException: reached, and no such connection
      await invokeAsync('websocket', { tributaryDeliver: { topicId: 't', partition: 0 } });
      await expect.poll(() => invoked.length).toBe(1);
    } finally {
      for (const [k, v] of [[ENVIRONMENT.websocketEndpoint, saved.ws], [ENVIRONMENT.lambdaEndpoint, saved.lambda], [ENVIRONMENT.localEndpointToken, saved.token]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      vi.resetModules();
      api.close();
      server.close();
    }
  });

  it('runs an Event invocation as Lambda runs an asynchronous one: a failure is retried after each of the retry delays (one retry waiting per partition), then given up; a success is not run again', async () => {
    const runs: { partition: number; at: number }[] = [];
    const api = startWebSocketApi({
      fn: async () => ({ statusCode: 200 }),
      fnAsync: async (e) => {
        const { partition } = (e as { tributaryDeliver: { partition: number } }).tributaryDeliver;
        runs.push({ partition, at: Date.now() });
        if (partition === 1) throw new Error('the delivery failed');
        if (partition === 2 && runs.filter((r) => r.partition === 2).length === 1) return { statusCode: 500 };
        return { statusCode: 200 };
      },
      asyncRetryDelaysMs: [100, 200],
    });
    const { server, base } = await serving(api);
    const url = `${base}/2015-03-31/functions/websocket/invocations`;
    const invoke = (partition: number) => fetch(url, { method: 'POST', headers: { 'x-amz-invocation-type': 'Event' }, body: JSON.stringify({ tributaryDeliver: { topicId: 't', partition } }) });
    try {
      for (const p of [0, 1, 1, 2]) expect((await invoke(p)).status).toBe(202);
      // p1 always fails: each wake runs once; one retry waits for the partition (it delivers from
      // where the subscriptions are, for both), after 100 ms, then a second after 200 more
      await expect.poll(() => runs.filter((r) => r.partition === 1).length, { timeout: 5000 }).toBe(4);
      const p1 = runs.filter((r) => r.partition === 1).map((r) => r.at);
      expect(p1[2]! - p1[0]!).toBeGreaterThanOrEqual(90);
      expect(p1[3]! - p1[2]!).toBeGreaterThanOrEqual(190);
      await new Promise((r) => setTimeout(r, 400));
      expect(runs.filter((r) => r.partition === 1)).toHaveLength(4);
      expect(runs.filter((r) => r.partition === 0)).toHaveLength(1);
      expect(runs.filter((r) => r.partition === 2)).toHaveLength(2); // (failed once, then succeeded)
    } finally {
      api.close();
      server.close();
    }
  });
});
