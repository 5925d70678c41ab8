/**
 * Lambda's Invoke API, asynchronously (`InvocationType: 'Event'`: Lambda queues the event and
 * answers at once). Locally `TRIBUTARY_LAMBDA_ENDPOINT` points it at the gateway.
 */
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { ENVIRONMENT } from '../config.js';

let client: LambdaClient | undefined;

/** Queues one invocation of `fn` with `payload` (as JSON); resolves once Lambda has accepted it. */
export async function invokeAsync(fn: string, payload: unknown): Promise<void> {
  const endpoint = process.env[ENVIRONMENT.lambdaEndpoint];
  client ??= new LambdaClient({ region: process.env.AWS_REGION ?? 'us-east-1', ...(endpoint ? { endpoint } : {}) });
  await client.send(new InvokeCommand({ FunctionName: fn, InvocationType: 'Event', Payload: Buffer.from(JSON.stringify(payload)) }));
}
