/**
 * API Gateway's connection management API for the WebSocket API (locally, the gateway's): posting a
 * message to a connection. The endpoint is `TRIBUTARY_WEBSOCKET_ENDPOINT`.
 */
import { ApiGatewayManagementApiClient, PostToConnectionCommand } from '@aws-sdk/client-apigatewaymanagementapi';
import { ENVIRONMENT } from '../config.js';
import { storeRequestHandler } from './clients.js';
import { withLocalToken } from './local-endpoint-token.js';

/** Tries of one post (each within the store timeout, `TRIBUTARY_STORE_TIMEOUT_MS`). */
const POST_ATTEMPTS = 2;

let client: ApiGatewayManagementApiClient | undefined;
let clientEndpoint: string | undefined;

function connections(): ApiGatewayManagementApiClient {
  const endpoint = process.env[ENVIRONMENT.websocketEndpoint];
  if (!endpoint) throw new Error(`${ENVIRONMENT.websocketEndpoint} is not set: the websocket function cannot reach its connections.`);
  if (!client || clientEndpoint !== endpoint) {
    client = new ApiGatewayManagementApiClient({
      endpoint, region: process.env.AWS_REGION ?? 'us-east-1',
      // A post that hangs must end well within a delivery's lease (DELIVERY_LEASE_MS, 20 s): past
      // it another deliverer may post the same subscription's frames, and out of order.
      maxAttempts: POST_ATTEMPTS,
      requestHandler: storeRequestHandler(),
    });
    withLocalToken(client);
    clientEndpoint = endpoint;
  }
  return client;
}

/** Posts one message to a connection; false when the connection is gone (API Gateway's GoneException). */
export async function postToConnection(connectionId: string, data: string): Promise<boolean> {
  try {
    await connections().send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: Buffer.from(data) }));
    return true;
  } catch (err) {
    if ((err as { name?: string }).name === 'GoneException') return false;
    throw err;
  }
}
