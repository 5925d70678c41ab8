/** Drives a balancer to rest in tests: `step` runs one sweep and one controller tick. */
import { reassigning } from '../../lib/cluster/reassignment.js';
import { listTopics } from '../../lib/cluster/topics.js';
import { listBrokers } from '../../lib/storage/coordination/brokers.js';
import { readBalancerStatus } from '../../lib/storage/coordination/balancer.js';

const placement = async () => new Map((await listTopics()).flatMap((d) => d.partitions.map((p) => [`${d.topic.name}/${p.partition}`, p] as const)));

/**
 * Steps until the balancer is idle, no partition moves and no broker is being removed. Returns the
 * replicas that moved (each partition's replicas now that it did not have before).
 */
export async function balanceCluster(step: () => Promise<unknown>, maxSteps = 200): Promise<number> {
  const before = await placement();
  for (let i = 0; i < maxSteps; i++) {
    await step();
    const now = await placement();
    const moving = [...now.values()].some((p) => reassigning(p) || (p.purging?.length ?? 0) > 0);
    const removing = (await listBrokers()).some((b) => b.decommissioning);
    if (!moving && !removing && (await readBalancerStatus()).status === 'IDLE') {
      let moved = 0;
      for (const [k, p] of now) moved += p.replicas.filter((r) => !(before.get(k)?.replicas ?? []).includes(r)).length;
      return moved;
    }
  }
  throw new Error(`the balancer did not come to rest in ${maxSteps} steps`);
}
