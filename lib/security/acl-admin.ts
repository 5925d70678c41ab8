/**
 * Managing ACLs (Kafka's CreateAcls, DescribeAcls, DeleteAcls): validation, filters and storage
 * together. Who may call these (CLUSTER ALTER / DESCRIBE) is checked where requests enter.
 */
import { metadataCheckDue } from '../cluster/metadata.js';
import * as store from '../storage/coordination/acls.js';
import { compareBindings, matchesFilter, validateBinding, type AclBinding, type AclFilter, type AclInput } from './acls.js';

const stored = async (): Promise<AclBinding[]> => (await store.listAcls()) as AclBinding[];

/**
 * Validates every binding, then stores them all (idempotent: existing ones stay as they are).
 * Errors: INVALID_REQUEST for the first invalid binding, and then nothing is stored.
 */
export async function createAcls(inputs: readonly AclInput[]): Promise<AclBinding[]> {
  const bindings = inputs.map((i) => validateBinding(i));
  if (bindings.length === 0) return [];
  await store.createAcls(bindings);
  metadataCheckDue(); // this instance's next authorization sees the change at once
  return bindings;
}

/** The stored bindings a filter matches, in REST Proxy's order. Read from the store, not the cache. */
export async function describeAcls(filter: AclFilter): Promise<AclBinding[]> {
  return (await stored()).filter((b) => matchesFilter(b, filter)).sort(compareBindings);
}

/**
 * Deletes what the filters match; for each filter, the bindings it matched that this call deleted
 * (one that a concurrent delete removed first is not reported here: it is in that call's answer).
 */
export async function deleteAcls(filters: readonly AclFilter[]): Promise<AclBinding[][]> {
  const all = await stored();
  const matched = filters.map((f) => all.filter((b) => matchesFilter(b, f)));
  const union = [...new Set(matched.flat())];
  if (union.length === 0) return matched.map(() => []);
  const gone = new Set((await store.deleteAcls(union)).map(store.aclSortKey));
  metadataCheckDue();
  return matched.map((m) => m.filter((b) => gone.has(store.aclSortKey(b))).sort(compareBindings));
}
