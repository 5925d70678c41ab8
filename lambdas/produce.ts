/** Lambda: every produce route (REST Proxy v3 records and records:batch, v2 topics). */
import { httpFunction } from '../lib/http/handler.js';
import { produceRoutes } from '../lib/http/produce-routes.js';

export const handler = httpFunction('produce', produceRoutes);
