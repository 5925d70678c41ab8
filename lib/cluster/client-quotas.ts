/**
 * Client quota administration (Kafka's DescribeClientQuotas / AlterClientQuotas for user
 * entities): what lib/http/client-quota-routes.ts serves. Enforcement is lib/security/quotas.ts.
 */
import { deleteClientQuota, listClientQuotas, putClientQuota, ClientQuotaNotFound, type ClientQuotaRecord, type ClientQuotaValues } from '../storage/coordination/quotas.js';
import { invalidateMetadata } from './metadata.js';

export { ClientQuotaNotFound as ClientQuotaMissing };
export type { ClientQuotaRecord, ClientQuotaValues };

/** Every principal's quotas, read from the table (not the cache: an admin sees its own write). */
export function describeClientQuotas(): Promise<ClientQuotaRecord[]> {
  return listClientQuotas();
}

/** Replaces a principal's quotas; this instance's caches drop at once, the others' within the metadata max age. */
export async function setClientQuota(principal: string, values: ClientQuotaValues): Promise<void> {
  await putClientQuota(principal, values);
  invalidateMetadata();
}

/** Removes a principal's quotas. Errors: `ClientQuotaMissing` when it has none. */
export async function removeClientQuota(principal: string): Promise<void> {
  await deleteClientQuota(principal);
  invalidateMetadata();
}
