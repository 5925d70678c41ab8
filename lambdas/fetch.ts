/** Lambda: reading records and partition offsets. */
import { fetchRoutes } from '../lib/http/fetch-routes.js';
import { httpFunction } from '../lib/http/handler.js';

export const handler = httpFunction('fetch', fetchRoutes);
