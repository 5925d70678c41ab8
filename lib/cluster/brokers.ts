/**
 * Brokers joining and leaving a running cluster. A broker is its replica table: adding one
 * registers a table (in AWS one the deployment created: the construct's `brokers` list; in the
 * local stack one its provisioner creates, with its own store process under `--isolated-brokers`);
 * removing one marks it `decommissioning`, the balancer moves every replica off it
 * (lib/cluster/balancer.ts), and the controller then empties its table and deregisters it.
 */
import { HttpError } from '../errors.js';
import { KafkaError } from '../protocol/errors.js';
import { logger } from '../logger.js';
import * as brokerStore from '../storage/coordination/brokers.js';
import * as deploymentStore from '../storage/coordination/deployment.js';
import * as leaseStore from '../storage/coordination/lease.js';
import type { BrokerRecord, Lease, PartitionRecord } from '../storage/model.js';
import { emptyStore } from '../storage/replica/deletion.js';
import { registerBrokers } from './bootstrap.js';
import { invalidateMetadata } from './metadata.js';
import { targetReplicas } from './reassignment.js';
import { listTopics } from './topics.js';

/** The local stack's provisioner of broker stores (its `/local/brokers` control route); unset in AWS. */
const LOCAL_CONTROL_URL = 'TRIBUTARY_LOCAL_CONTROL_URL';

export interface AddBroker {
  /** @default one more than the largest registered id (or deployed, in AWS) */
  readonly brokerId?: number;
  readonly rack?: string | null;
}

/** The table (and store) a new broker gets: the deployment's in AWS, the local provisioner's otherwise. */
async function provision(brokerId: number, rack: string | null): Promise<{ replicaTable: string; endpoint?: string }> {
  const deployed = await deploymentStore.readDeployedBrokers();
  if (deployed) {
    const d = deployed.brokers.find((b) => b.brokerId === brokerId);
    if (!d) {
      throw new KafkaError('INVALID_REQUEST', `Broker ${brokerId} has no replica table in this deployment: add its id to the construct's \`brokers\` list and deploy, then register it (deployed: ${deployed.brokers.map((b) => b.brokerId).join(', ')}).`);
    }
    return { replicaTable: d.replicaTable };
  }
  const control = process.env[LOCAL_CONTROL_URL];
  if (!control) throw new KafkaError('INVALID_REQUEST', 'This cluster cannot create broker stores: deploy the broker\'s table first (the construct\'s `brokers` list).');
  const res = await fetch(`${control}/local/brokers/${brokerId}${rack ? `?rack=${encodeURIComponent(rack)}` : ''}`, { method: 'POST', signal: AbortSignal.timeout(60_000) });
  const body = await res.json() as { replicaTable?: string; endpoint?: string; message?: string };
  if (!res.ok || !body.replicaTable) throw new KafkaError('KAFKA_STORAGE_ERROR', `The local stack could not create broker ${brokerId}'s store: ${body.message ?? res.status}`);
  return { replicaTable: body.replicaTable, ...(body.endpoint ? { endpoint: body.endpoint } : {}) };
}

/**
 * Registers a new broker (Kafka's broker registration), with its replica table. Returns the
 * broker as registered, and whether this call registered it (false: it was already, as given).
 * Errors: INVALID_REQUEST for a bad id or a broker that exists with another rack.
 */
export async function addBroker(input: AddBroker): Promise<{ broker: BrokerRecord; created: boolean }> {
  const brokers = await brokerStore.listBrokers();
  const deployed = await deploymentStore.readDeployedBrokers();
  const rack = input.rack ?? null;
  const id = input.brokerId ?? Math.max(0, ...brokers.map((b) => b.brokerId), ...(deployed?.brokers.map((b) => b.brokerId) ?? [])) + 1;
  if (!Number.isInteger(id) || id < 0 || id > 2 ** 31 - 1) throw new KafkaError('INVALID_REQUEST', `Broker id ${id} is not a non-negative 32-bit integer.`);
  const existing = brokers.find((b) => b.brokerId === id);
  if (existing) {
    if (existing.decommissioning) throw new KafkaError('INVALID_REQUEST', `Broker ${id} is being removed; add it again once it is gone.`);
    if (input.rack !== undefined && existing.rack !== rack) throw new KafkaError('INVALID_REQUEST', `Broker ${id} is registered with rack ${existing.rack ?? 'null'}.`);
    return { broker: existing, created: false };
  }
  const table = await provision(id, rack);
  await registerBrokers([{ brokerId: id, rack, ...table }]);
  invalidateMetadata();
  const broker = (await brokerStore.listBrokers()).find((b) => b.brokerId === id) as BrokerRecord;
  logger.info({ event: 'broker-added', broker: id, rack, replicaTable: table.replicaTable }, 'broker added');
  return { broker, created: true };
}

/**
 * The largest replication factor among `topics`' partitions (a removal must leave that many
 * brokers): a partition being moved counts its target replicas, not the old and new together.
 */
const widest = (topics: readonly { partitions: readonly PartitionRecord[] }[]) =>
  Math.max(0, ...topics.flatMap((t) => t.partitions.map((p) => targetReplicas(p).length)));

/**
 * Starts removing a broker: it is marked `decommissioning` and the balancer drains it. Refused
 * (INVALID_REPLICATION_FACTOR) when the brokers left could not hold every partition's replicas.
 * Idempotent. Errors: 404 when not registered.
 */
export async function removeBroker(brokerId: number): Promise<BrokerRecord> {
  const [brokers, topics] = await Promise.all([brokerStore.listBrokers(), listTopics()]);
  const b = brokers.find((x) => x.brokerId === brokerId);
  if (!b) throw new HttpError(404, 404, `Broker ${brokerId} cannot be found.`);
  if (b.decommissioning) return b;
  const staying = brokers.filter((x) => x.brokerId !== brokerId && !x.decommissioning).length;
  const rf = widest(topics);
  if (staying < rf) {
    throw new KafkaError('INVALID_REPLICATION_FACTOR', `Cannot remove broker ${brokerId}: a partition has ${rf} replicas and only ${staying} broker${staying === 1 ? '' : 's'} would remain. Lower its replication factor (a reassignment) or add a broker first.`);
  }
  await brokerStore.markDecommissioning(brokerId);
  invalidateMetadata();
  logger.info({ event: 'broker-decommissioning', broker: brokerId }, 'broker removal started: its replicas move elsewhere');
  return { ...b, decommissioning: true };
}

/**
 * The controller's last step of a removal: a decommissioning broker that no partition names any
 * more (as a replica, an adding or removing one, or a copy to purge) has its table emptied (under
 * the store's claim for the lease's epoch: lib/storage/replica/deletion.ts), then is deregistered.
 * Returns the brokers deregistered. Errors: `LeaseLost`.
 */
export async function deregisterDrained(
  lease: Lease, brokers: readonly BrokerRecord[], partitions: readonly { replicas: readonly number[]; purging?: readonly number[] }[],
): Promise<number[]> {
  const named = new Set(partitions.flatMap((p) => [...p.replicas, ...(p.purging ?? [])]));
  const out: number[] = [];
  for (const b of brokers) {
    if (!b.decommissioning || named.has(b.brokerId) || b.state !== 'alive') continue;
    try {
      const items = await emptyStore(b, lease.epoch);
      if (items === undefined) {
        logger.info({ event: 'broker-removal-fenced', broker: b.brokerId, controllerEpoch: lease.epoch }, 'a newer controller claimed the store (or it has no incarnation yet): not emptying it');
        continue;
      }
      if (await brokerStore.deregisterBroker(lease, b.brokerId)) {
        out.push(b.brokerId);
        logger.info({ event: 'broker-removed', broker: b.brokerId, itemsDeleted: items }, 'broker removed: drained, table emptied, deregistered');
      }
    } catch (err) {
      if (err instanceof leaseStore.LeaseLost) throw err;
      logger.warn({ event: 'broker-removal-failed', broker: b.brokerId, err }, 'could not finish removing a drained broker; the next pass tries again');
    }
  }
  if (out.length > 0) invalidateMetadata();
  return out;
}
