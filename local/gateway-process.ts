/**
 * The HTTP gateway alone, in its own process (`gateway-process.ts --port P [--lambda]`): the fault
 * harness kills it mid-request, as a Lambda that crashes after a write but before its response.
 * It serves the same handlers as the local stack's gateway, with the environment it was started
 * with: in this process, or with `--lambda` as Lambda runs them (local/lambda-runtime.ts), in
 * execution environments of its own — started as a process group (ProcessSpec.group), so that
 * killing or pausing the gateway kills or pauses its environments with it.
 */
import { parseArgs } from 'node:util';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const { values } = parseArgs({ options: { port: { type: 'string' }, lambda: { type: 'boolean' } } });
const { FUNCTIONS } = await import('../lib/functions/catalog.js');
const { startGateway } = await import('./gateway.js');
const http = FUNCTIONS.filter((f) => f.trigger === 'http');
let functions: Record<string, unknown>;
let options: { maxRequestBytes: number; tooLargeBody?: unknown };
if (values.lambda) {
  const { LambdaRuntime, httpApiGateway } = await import('./lambda-runtime.js');
  ({ functions, ...options } = httpApiGateway(LambdaRuntime.start({ functions: FUNCTIONS, env: {} }), http.map((f) => f.name)));
} else {
  const path = await import('node:path');
  const root = path.resolve(import.meta.dirname, '..');
  functions = Object.fromEntries(await Promise.all(http.map(async (f) =>
    [f.name, ((await import(path.join(root, f.entry))) as { handler: unknown }).handler] as const)));
  options = { maxRequestBytes: 6 * 1024 * 1024 };
}
const gateway = await startGateway({ host: '127.0.0.1', port: Number(values.port ?? 0), functions: functions as never, ...options });
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => void gateway.close().then(() => process.exit(0)));
