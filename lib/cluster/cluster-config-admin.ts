/**
 * The cluster configs as the admin API reads and changes them: always as stored now (strongly
 * consistent), where the controller and the data path read the cached `clusterConfigs()` of
 * lib/cluster/metadata.ts.
 */
import { KafkaError } from '../protocol/errors.js';
import * as clusterConfigStore from '../storage/coordination/cluster-configs.js';
import { applyClusterConfigChanges, clusterConfigEntries, type ClusterConfigChange, type ClusterConfigEntry } from './cluster-configs.js';
import { invalidateMetadata } from './metadata.js';

/** A write that lost this many races in a row gives up (each lost race is another admin's write that succeeded). */
const MAX_ATTEMPTS = 10;

/** Every cluster config as stored now: set values and defaults, sorted by name. */
export async function describeClusterConfigs(): Promise<ClusterConfigEntry[]> {
  return clusterConfigEntries((await clusterConfigStore.readClusterConfigs()).configs);
}

/**
 * Kafka's IncrementalAlterConfigs on the cluster-wide broker configs: SET (a value) and DELETE
 * (`null`: back to the default). All changes apply together or none does: an unknown name or a
 * bad value is INVALID_CONFIG and writes nothing. With `validateOnly` (or no changes), validates
 * and writes nothing.
 * A write that races another admin's reads the configs again and applies its changes to them.
 * Returns the entries as they are after the change.
 */
export async function alterClusterConfigs(changes: readonly ClusterConfigChange[], o: { validateOnly?: boolean } = {}): Promise<ClusterConfigEntry[]> {
  for (let attempt = 1; ; attempt++) {
    const stored = await clusterConfigStore.readClusterConfigs();
    const next = applyClusterConfigChanges(stored.configs, changes);
    if (o.validateOnly || changes.length === 0) return clusterConfigEntries(next);
    try {
      await clusterConfigStore.writeClusterConfigs(next, stored.version);
      invalidateMetadata();
      return clusterConfigEntries(next);
    } catch (err) {
      if (!(err instanceof clusterConfigStore.ClusterConfigsChanged)) throw err;
      if (attempt >= MAX_ATTEMPTS) {
        throw new KafkaError('REQUEST_TIMED_OUT', `The cluster configs changed ${MAX_ATTEMPTS} times while this change was being applied; nothing was written.`);
      }
    }
  }
}
