/**
 * One Lambda execution environment of the local stack's Lambda-fidelity mode
 * (local/lambda-runtime.ts): a Node process that loads one function's deployed bundle (its
 * init, timed as Lambda's cold start), then runs one invocation at a time as the runtime sends
 * them over IPC, with a Lambda context whose remaining time counts down to the function's
 * timeout. Between invocations the runtime freezes this process (SIGSTOP), so nothing the handler
 * left running after its answer makes progress until the next invocation, as in AWS.
 *
 * Bundled by the same esbuild call as the functions (build/functions.ts) and run with plain `node`.
 */
import { pathToFileURL } from 'node:url';

interface Invoke {
  readonly t: 'invoke';
  readonly id: number;
  readonly event: unknown;
  readonly requestId: string;
  readonly deadline: number;
}

type Handler = (event: unknown, context: unknown) => Promise<unknown>;

const [bundle, functionName, memory] = process.argv.slice(2) as [string, string, string];
const send = (m: unknown): void => {
  process.send?.(m);
};

function contextFor(m: Invoke) {
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: memory,
    awsRequestId: m.requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `local/${process.pid}`,
    getRemainingTimeInMillis: () => Math.max(0, m.deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** An error as Lambda reports a function's: `errorType` and `errorMessage`. */
const errorOf = (err: unknown) => ({
  errorType: err instanceof Error ? err.name : typeof err,
  errorMessage: err instanceof Error ? err.message : String(err),
});

const started = performance.now();
let handler: Handler;
try {
  const mod = (await import(pathToFileURL(bundle).href)) as { handler?: Handler };
  if (typeof mod.handler !== 'function') throw new Error(`${bundle} exports no handler`);
  handler = mod.handler;
} catch (err) {
  send({ t: 'init-error', ...errorOf(err) });
  process.exit(1);
}
send({ t: 'ready', initMs: performance.now() - started });

// The runtime gone (killed, crashed): an environment has no one to answer to.
process.on('disconnect', () => process.exit(0));
process.on('message', (m: Invoke) => {
  if (m.t !== 'invoke') return;
  // (a handler that throws synchronously or returns no promise is reported like one that rejects)
  Promise.resolve().then(() => handler(m.event, contextFor(m))).then(
    (payload) => send({ t: 'result', id: m.id, payload: payload === undefined ? null : payload }),
    (err: unknown) => send({ t: 'error', id: m.id, ...errorOf(err) }),
  );
});
// The runtime ends this process; an unhandled rejection ends it as Lambda's Node runtime does.
process.on('unhandledRejection', (err) => {
  send({ t: 'crash', ...errorOf(err) });
  process.exit(128);
});
