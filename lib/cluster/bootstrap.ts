/**
 * Bootstrapping a cluster: the cluster record (with a Kafka-style cluster id) and the broker
 * registrations. Idempotent: run at every start of the local stack, and by the deployment in AWS.
 */
import { randomUUID } from 'node:crypto';
import { logger } from '../logger.js';
import { createCluster, readCluster } from '../storage/coordination/cluster.js';
import { registerBroker } from '../storage/coordination/brokers.js';
import { stampNewStore } from '../storage/replica/incarnation.js';
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
  await registerBrokers(brokers);
  return cluster;
}

/** How long a registration waits for a broker's store to take its stamp (a store that is down must not hold up the registrations after it). */
const STAMP_TIMEOUT_MS = 2_000;

/**
 * Registers brokers (Kafka's broker registration), each with the incarnation its store holds:
 * the store is stamped first when it has none, then the registration records it unless the broker
 * has one recorded already. So no broker is ever registered with a store the cluster has not
 * accounted for, and a store wiped any time after shows it to the controller's next probe. A
 * store that does not take the stamp within STAMP_TIMEOUT_MS is registered unstamped: the
 * controller stamps it when it first answers, as it does a broker registered before registrations
 * stamped (a wipe before then goes unseen, as it did).
 */
export async function registerBrokers(brokers: readonly BrokerRegistration[]): Promise<void> {
  for (const b of brokers) {
    let incarnation: string | null = null;
    try {
      incarnation = await stampNewStore(b, randomUUID(), STAMP_TIMEOUT_MS);
    } catch (err) {
      logger.warn({ event: 'broker-store-unstamped', broker: b.brokerId, err: (err as Error).message }, 'broker registered without stamping its store: the store could not be written');
    }
    await registerBroker({ ...b, ...(incarnation ? { incarnation } : {}) });
  }
}
