/**
 * The local stack plays API Gateway's connection API and Lambda's Invoke API on its gateway; in AWS
 * IAM guards both. With `--auth` the stack guards its stand-ins with a token of its own, which it
 * gives the functions (`TRIBUTARY_LOCAL_ENDPOINT_TOKEN`) and which their clients send in a header.
 */
import type { MiddlewareStack } from '@smithy/types';
import { ENVIRONMENT } from '../config.js';

export const LOCAL_TOKEN_HEADER = 'x-tributary-local-token';

/** Makes `client` send the local stack's endpoint token with every request, when the stack set one. */
export function withLocalToken<I extends object, O extends object>(client: { readonly middlewareStack: MiddlewareStack<I, O> }): void {
  const token = process.env[ENVIRONMENT.localEndpointToken];
  if (!token) return;
  client.middlewareStack.add((next) => async (args) => {
    const request = args.request as { headers?: Record<string, string> };
    if (request.headers) request.headers[LOCAL_TOKEN_HEADER] = token;
    return next(args);
  }, { step: 'build', name: 'tributaryLocalEndpointToken' });
}
