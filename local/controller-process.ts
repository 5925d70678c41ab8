/**
 * A local controller loop in its own process (so fault tests can SIGSTOP or SIGKILL it):
 * `controller-process.ts --port P --id NAME`. It serves its state as JSON on `GET /` of port P.
 */
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const { values } = parseArgs({ options: { port: { type: 'string' }, id: { type: 'string' } } });
process.env.TRIBUTARY_CONTROLLER_ID = values.id ?? `controller-${process.pid}`;
const { controller, runController } = await import('../lib/orchestration/controller-loop.js');
// (a high watermark this controller moves wakes the WebSocket deliveries, as the deployed function's do)
(await import('../lib/orchestration/websocket-wake.js')).armWebSocketWake();

let last: unknown = null;
let stopping = false;
const server = createServer((_req, res) => {
  const lease = controller().held;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ id: controller().o.id, lease: lease ?? null, lastTick: last }));
});
server.listen(Number(values.port ?? 0), '127.0.0.1');
for (const sig of ['SIGTERM', 'SIGINT'] as const) {
  process.on(sig, () => {
    stopping = true;
    server.close();
    setTimeout(() => process.exit(0), 50).unref();
  });
}
await runController({ until: () => stopping, onTick: (r) => { last = { ...r, at: new Date().toISOString() }; } });
process.exit(0);
