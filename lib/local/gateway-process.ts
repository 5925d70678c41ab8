/**
 * The HTTP gateway alone, in its own process (`gateway-process.ts --port P`): the fault harness
 * kills it mid-request, as a Lambda that crashes after a write but before its response. It serves
 * the same handlers as the local stack's gateway, with the environment it was started with.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const { values } = parseArgs({ options: { port: { type: 'string' } } });
const { FUNCTIONS } = await import('../functions.js');
const { startGateway } = await import('./gateway.js');
const root = path.resolve(import.meta.dirname, '../..');
const functions = Object.fromEntries(await Promise.all(FUNCTIONS.filter((f) => f.trigger === 'http').map(async (f) =>
  [f.name, ((await import(path.join(root, f.entry))) as { handler: unknown }).handler] as const)));
const gateway = await startGateway({
  host: '127.0.0.1', port: Number(values.port ?? 0), functions: functions as never, maxRequestBytes: 6 * 1024 * 1024,
});
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => void gateway.close().then(() => process.exit(0)));
