/**
 * What each broker carries: replicas, leaderships and bytes of log in its replica table. The v3
 * broker reads show it; a balancer weighs brokers by it.
 */
import { asKafkaError } from '../errors.js';
import * as brokerStore from '../storage/coordination/brokers.js';
import { topicPartitionKey } from '../storage/model.js';
import { readHeads } from '../storage/replica/head.js';
import { listTopics } from './topics.js';

export interface BrokerLoad {
  /** Partition replicas assigned to the broker (the partition states' `replicas`). */
  readonly replicas: number;
  /** Partitions the broker leads now. */
  readonly leaders: number;
  /**
   * Bytes of log in the broker's replica table: the sum of its replicas' `tailBytes` (the batches
   * at and above `tailStart`, inline or in `data/` objects). The S3 segments below `tailStart`
   * are not counted: one copy is shared by every replica, and their sizes would cost a Query per
   * partition. Null when the broker's store did not answer.
   */
  readonly bytes: number | null;
}

/**
 * The load of every registered broker, or of the ones given. Costs one `listTopics` and, per
 * broker asked for, one BatchGetItem of its replicas' heads per 100 replicas; counts of a broker
 * the topics name but the cluster does not register are included without bytes.
 */
export async function brokerLoads(brokerIds?: readonly number[]): Promise<Map<number, BrokerLoad>> {
  const [brokers, topics] = await Promise.all([brokerStore.listBrokers(), listTopics()]);
  const wanted = (id: number) => brokerIds === undefined || brokerIds.includes(id);
  const counts = new Map<number, { replicas: number; leaders: number; tps: string[] }>();
  const entry = (id: number) => {
    let e = counts.get(id);
    if (!e) counts.set(id, e = { replicas: 0, leaders: 0, tps: [] });
    return e;
  };
  for (const b of brokers) if (wanted(b.brokerId)) entry(b.brokerId);
  for (const { topic, partitions } of topics) {
    for (const p of partitions) {
      for (const id of p.replicas) {
        if (!wanted(id)) continue;
        const e = entry(id);
        e.replicas++;
        e.tps.push(topicPartitionKey(topic.topicId, p.partition));
      }
      if (p.leader >= 0 && wanted(p.leader)) entry(p.leader).leaders++;
    }
  }
  const stores = new Map(brokers.map((b) => [b.brokerId, b]));
  const loads = new Map<number, BrokerLoad>();
  await Promise.all([...counts].map(async ([id, e]) => {
    const store = stores.get(id);
    let bytes: number | null = null;
    if (store) {
      try {
        const heads = await readHeads(store, e.tps);
        bytes = [...heads.values()].reduce((sum, h) => sum + (h.tailBytes ?? 0), 0);
      } catch (err) {
        asKafkaError(err); // rethrows anything but a store that did not answer: its counts stand, its bytes are unknown
      }
    }
    loads.set(id, { replicas: e.replicas, leaders: e.leaders, bytes });
  }));
  return new Map([...loads].sort(([a], [b]) => a - b));
}
