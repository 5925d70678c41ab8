/** Lambda: every produce route (REST Proxy v3 records and records:batch, v2 topics), producer ids and transactions. */
import { httpFunction } from '../lib/http/handler.js';
import { produceRoutes } from '../lib/http/produce-routes.js';
import { transactionRoutes } from '../lib/http/transaction-routes.js';

export const handler = httpFunction('produce', { ...produceRoutes, ...transactionRoutes });
