/**
 * Lambda's Invoke API: asynchronously (`InvocationType: 'Event'`: Lambda queues the event and
 * answers at once), or synchronously for push subscriptions' Lambda endpoints. Locally
 * `TRIBUTARY_LAMBDA_ENDPOINT` points it at the gateway.
 */
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { ENVIRONMENT } from '../config.js';
import { withLocalToken } from './local-endpoint-token.js';

let client: LambdaClient | undefined;

function lambdaClient(endpoint: string | undefined): LambdaClient {
  const c = new LambdaClient({ region: process.env.AWS_REGION ?? 'us-east-1', ...(endpoint ? { endpoint } : {}) });
  withLocalToken(c);
  return c;
}

/** Queues one invocation of `fn` with `payload` (as JSON); resolves once Lambda has accepted it. */
export async function invokeAsync(fn: string, payload: unknown): Promise<void> {
  const endpoint = process.env[ENVIRONMENT.lambdaEndpoint];
  client ??= lambdaClient(endpoint);
  await client.send(new InvokeCommand({ FunctionName: fn, InvocationType: 'Event', Payload: Buffer.from(JSON.stringify(payload)) }));
}

/** What a synchronous invocation answered: Lambda's `FunctionError` when the function failed, and its payload as text. */
export interface InvokeResult {
  readonly functionError?: string;
  readonly payload: string;
}

/** Invokes `fn` with `payload` (as JSON) and waits for its answer (`InvocationType: 'RequestResponse'`), until `signal` aborts. */
export async function invokeSync(fn: string, payload: string, signal?: AbortSignal): Promise<InvokeResult> {
  const endpoint = process.env[ENVIRONMENT.lambdaEndpoint];
  client ??= lambdaClient(endpoint);
  const out = await client.send(new InvokeCommand({ FunctionName: fn, InvocationType: 'RequestResponse', Payload: Buffer.from(payload) }), signal ? { abortSignal: signal } : {});
  return { ...(out.FunctionError ? { functionError: out.FunctionError } : {}), payload: out.Payload ? Buffer.from(out.Payload).toString('utf8') : '' };
}
