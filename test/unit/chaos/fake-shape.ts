import type { ShapeControls } from '../../../chaos/reshape.js';

/**
 * A cluster's shape as the admin API keeps it, in memory: registered brokers (a removal refused
 * when fewer than three would stay, a removed broker gone at once) and each partition's replicas.
 */
export function fakeShape(brokers: number[]): ShapeControls & { ids: () => number[]; calls: string[] } {
  const registered = new Set(brokers);
  const replicas = new Map<string, number[]>();
  const calls: string[] = [];
  const answer = (status: number, message = '') => ({ status, message, ...(/^[A-Z_]+:/.test(message) ? { errorCode: message.split(':')[0] as string } : {}) });
  return {
    calls,
    ids: () => [...registered].sort((a, b) => a - b),
    brokers: async () => [...registered].map((id) => ({ id, state: 'alive', replicaCount: 1 })),
    addBroker: async (id) => {
      calls.push(`POST ${id}`);
      registered.add(id);
      return answer(201);
    },
    removeBroker: async (id) => {
      calls.push(`DELETE ${id}`);
      if (!registered.has(id)) return answer(404, 'Broker cannot be found.');
      if (registered.size - 1 < 3) return answer(400, `INVALID_REPLICATION_FACTOR: Cannot remove broker ${id}.`);
      registered.delete(id);
      return answer(202);
    },
    replicasOf: async (tp) => ({ replicas: replicas.get(`${tp.topic}/${tp.partition}`) ?? [1, 2, 3], adding: [], removing: [] }),
    reassign: async (tp, target) => {
      calls.push(`PATCH ${tp.topic}/${tp.partition} ${target.join(',')}`);
      replicas.set(`${tp.topic}/${tp.partition}`, [...target]);
      return answer(202);
    },
    cancelReassignment: async (tp) => {
      calls.push(`CANCEL ${tp.topic}/${tp.partition}`);
      return answer(404, 'NO_REASSIGNMENT_IN_PROGRESS: none.');
    },
  };
}
