/** Lambda: clusters, brokers, topics, partitions, configs (and the catch-all 404). */
import { httpFunction } from '../lib/http/function.js';
import { adminRoutes } from '../lib/http/v3-admin.js';
import { clusterConfigRoutes } from '../lib/http/v3-cluster-configs.js';
import { rebalanceRoutes } from '../lib/http/v3-rebalance.js';

export const handler = httpFunction('admin', { ...adminRoutes, ...clusterConfigRoutes, ...rebalanceRoutes });
