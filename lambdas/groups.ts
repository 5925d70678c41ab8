/** Lambda: consumer groups — REST Proxy v2 consumer instances, the native group protocol, offsets, lag; push subscriptions. */
import { consumerRoutes } from '../lib/http/consumer-routes.js';
import { httpFunction } from '../lib/http/handler.js';
import { groupRoutes } from '../lib/http/group-routes.js';
import { pushSubscriptionRoutes } from '../lib/http/push-subscription-routes.js';

export const handler = httpFunction('groups', { ...consumerRoutes, ...groupRoutes, ...pushSubscriptionRoutes });
