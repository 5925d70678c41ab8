/**
 * `npm start`: runs the local cluster until Ctrl-C or SIGTERM, then stops every child process.
 * Errors a user can fix (no Java, port in use, unusable data dir) print one sentence and exit 1.
 */
import { parseArgs } from 'node:util';

// The SDK's notice that its 2027 releases need Node 22 is for maintainers (README), not for every start.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
import { LocalStackError } from './processes.js';
import { startLocalStack } from './stack.js';

const USAGE = `Usage: npm start -- [options]
  --port N              gateway port (default: $PORT or 8080; 0 picks a free one)
  --brokers N           number of brokers (default 3)
  --isolated-brokers    one DynamoDB Local process per broker, so a broker can be killed alone
  --data-dir DIR        keep state in DIR across restarts (default: a fresh temporary directory)
  --in-memory           keep DynamoDB data in memory only
  --racks a,b,c         broker racks, by broker position
  --controllers N       controller loops contending for the lease (default 2; 0 with --lambda)
  --lambda              Lambda-fidelity mode: each function runs from its deployed bundle in worker
                        processes frozen between invocations, with Lambda's limits; the controller
                        function is invoked on a schedule (docs/architecture.md, "The local stack")
  --concurrency N       with --lambda: invocations running at once, all functions (default 50)
  --auth                require Authorization: Bearer <token> on every API route; users and tokens
                        are in <data-dir>/credentials.json (User:admin, a super user, at first);
                        add one with \`tributary users add User:alice --data-dir DIR\`
  --help                show this help`;

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

async function main(): Promise<void> {
  let values: ReturnType<typeof parseArgs<{ options: Record<string, { type: 'string' | 'boolean' }> }>>['values'];
  try {
    ({ values } = parseArgs({
      options: {
        port: { type: 'string' }, brokers: { type: 'string' }, 'isolated-brokers': { type: 'boolean' },
        'data-dir': { type: 'string' }, 'in-memory': { type: 'boolean' }, racks: { type: 'string' }, help: { type: 'boolean' },
        controllers: { type: 'string' }, lambda: { type: 'boolean' }, concurrency: { type: 'string' }, auth: { type: 'boolean' },
      },
      strict: true,
    }));
  } catch (err) {
    fail(`${(err as Error).message}\n${USAGE}`);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const portText = (values.port as string | undefined) ?? process.env.PORT ?? '8080';
  if (!/^\d+$/.test(portText) || Number(portText) > 65535) fail(`The port must be a number from 0 to 65535, got "${portText}".`);
  const brokersText = (values.brokers as string | undefined) ?? '3';
  if (!/^\d+$/.test(brokersText)) fail(`--brokers must be a positive integer, got "${brokersText}".`);
  if (values['in-memory'] && values['data-dir']) fail('--in-memory and --data-dir contradict each other: choose one.');
  const controllersText = values.controllers as string | undefined;
  if (controllersText !== undefined && !/^\d+$/.test(controllersText)) fail(`--controllers must be a non-negative integer, got "${controllersText}".`);
  const concurrencyText = values.concurrency as string | undefined;
  if (concurrencyText !== undefined && (!values.lambda || !/^[1-9]\d*$/.test(concurrencyText))) fail(`--concurrency needs --lambda and a positive integer, got "${concurrencyText}".`);

  const stack = await startLocalStack({
    port: Number(portText),
    brokers: Number(brokersText),
    isolatedBrokers: Boolean(values['isolated-brokers']),
    dataDir: values['data-dir'] as string | undefined,
    inMemory: Boolean(values['in-memory']),
    racks: (values.racks as string | undefined)?.split(',').map((r) => r.trim()),
    ...(controllersText !== undefined ? { controllers: Number(controllersText) } : {}),
    ...(values.lambda ? { lambda: concurrencyText ? { concurrency: Number(concurrencyText) } : true } : {}),
    ...(values.auth ? { auth: true } : {}),
  });
  process.stdout.write(`Tributary local cluster ready at ${stack.url}\n`);
  process.stdout.write(`Console: ${stack.consoleUrl}\n`);
  // Where the admin token is, never the token itself.
  if (stack.credentialsFile) process.stdout.write(`Authentication is on: User:admin's token (and every user's) is in ${stack.credentialsFile}\n`);

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`Stopping the local cluster (${signal})...\n`);
    stack.stop().then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((err: unknown) => {
  if (err instanceof LocalStackError) fail(err.message);
  fail(`Tributary could not start: ${(err as Error).message}`);
});
