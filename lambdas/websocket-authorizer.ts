/** Lambda: the WebSocket API's `$connect` authorizer with a JWT authorizer (lib/http/websocket-authorizer.ts). */
import { connectAuthorizerHandler } from '../lib/http/websocket-authorizer.js';

export const handler = connectAuthorizerHandler();
