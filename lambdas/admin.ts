/** Lambda: clusters, brokers, topics, partitions, replicas, configs, ACLs, client quotas, v2 metadata (and the catch-all 404). */
import { httpFunction } from '../lib/http/function.js';
import { v2MetadataRoutes } from '../lib/http/v2-metadata.js';
import { aclRoutes } from '../lib/http/v3-acls.js';
import { adminRoutes } from '../lib/http/v3-admin.js';
import { clientQuotaRoutes } from '../lib/http/v3-client-quotas.js';
import { clusterConfigRoutes } from '../lib/http/v3-cluster-configs.js';
import { rebalanceRoutes } from '../lib/http/v3-rebalance.js';
import { replicaRoutes } from '../lib/http/v3-replicas.js';

export const handler = httpFunction('admin', { ...adminRoutes, ...aclRoutes, ...clientQuotaRoutes, ...clusterConfigRoutes, ...rebalanceRoutes, ...replicaRoutes, ...v2MetadataRoutes });
