/** Lambda: clusters, brokers, topics, partitions, replicas, configs, ACLs, client quotas, v2 metadata, the schema registry (and the catch-all 404). */
import { httpFunction } from '../lib/http/handler.js';
import { v2MetadataRoutes } from '../lib/http/metadata-routes.js';
import { aclRoutes } from '../lib/http/acl-routes.js';
import { adminRoutes } from '../lib/http/admin-routes.js';
import { clientQuotaRoutes } from '../lib/http/client-quota-routes.js';
import { clusterConfigRoutes } from '../lib/http/cluster-config-routes.js';
import { rebalanceRoutes } from '../lib/http/rebalance-routes.js';
import { replicaRoutes } from '../lib/http/replica-routes.js';
import { schemaRegistryRoutes } from '../lib/http/schema-registry-routes.js';

export const handler = httpFunction('admin', { ...adminRoutes, ...aclRoutes, ...clientQuotaRoutes, ...clusterConfigRoutes, ...rebalanceRoutes, ...replicaRoutes, ...v2MetadataRoutes, ...schemaRegistryRoutes });
