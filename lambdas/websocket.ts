/** Lambda: the WebSocket API's routes ($connect, $disconnect, $default) and the deliveries woken when records become readable. */
export { handler } from '../lib/http/websocket.js';
