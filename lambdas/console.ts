/** Lambda: the console's static files under /ui/ and /ui/config.json (lib/http/console-server.ts); no store, no authorizer. */
import { consoleHandler } from '../lib/http/console-server.js';

export const handler = consoleHandler();
