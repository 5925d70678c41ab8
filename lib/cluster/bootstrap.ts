/**
 * Bootstrapping a cluster: the cluster record (with a Kafka-style cluster id) and the broker
 * registrations. Idempotent: run at every start of the local stack, and by the deployment in AWS.
 */
import { randomUUID } from 'node:crypto';
import { createCluster, readCluster } from '../storage/coordination/cluster.js';
import { registerBroker } from '../storage/coordination/brokers.js';
import type { ClusterRecord } from '../storage/model.js';
import { LOG_FORMAT_CONFIG, PACKED_LOG_FORMAT } from './cluster-configs.js';

export interface BrokerRegistration {
  readonly brokerId: number;
  readonly replicaTable: string;
  readonly endpoint?: string;
  readonly rack: string | null;
}

/** A Kafka cluster id: a random UUID as 22 characters of URL-safe base64 (as `kafka-storage random-uuid`). */
export function newClusterId(): string {
  return Buffer.from(randomUUID().replaceAll('-', ''), 'hex').toString('base64url');
}

export async function bootstrapCluster(brokers: readonly BrokerRegistration[]): Promise<ClusterRecord> {
  // (a new cluster's writers use the newest log format; one made by a version before it keeps its own until it is set)
  const cluster = (await readCluster()) ?? (await createCluster(newClusterId(), { [LOG_FORMAT_CONFIG]: String(PACKED_LOG_FORMAT) }));
  for (const b of brokers) await registerBroker(b);
  return cluster;
}
