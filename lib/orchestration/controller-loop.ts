/**
 * Running a controller: tick every controller.tick.ms until told to stop, and — while this
 * controller holds the lease — sweep lagging partitions (sweep.ts) alongside the ticks, and wake
 * push and lagging WebSocket deliveries (websocket-wake.ts) every WAKE_MS. The
 * Lambda handler and the local controller processes both run this, with the same options read
 * from the environment. This layer sits above lib/log and lib/cluster: the controller decides,
 * replication copies, and only orchestration knows both.
 */
import { randomUUID } from 'node:crypto';
import { config } from '../config.js';
import { logger } from '../logger.js';
import { markLagging } from '../storage/coordination/lag-index.js';
import { readDeployedBrokers, readRegisteredDeployment, writeRegisteredDeployment } from '../storage/coordination/deployment.js';
import { bootstrapCluster } from '../cluster/bootstrap.js';
import { Controller, type TickReport } from '../cluster/controller.js';
import { ReplicationSweep, type SweepReport } from './sweep.js';
import { wakeDeliveries } from './websocket-wake.js';

/** How often the lease holder wakes every push subscription's partitions and lagging WebSocket subscriptions' (lost wakes, retries due). */
const WAKE_MS = 10_000;

function intEnv(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

/** One identity per process (a Lambda container keeps it across invocations). */
const processId = `controller-${randomUUID().slice(0, 8)}`;
let instance: Controller | undefined;

export function controller(id = process.env.TRIBUTARY_CONTROLLER_ID ?? processId): Controller {
  instance ??= new Controller({
    id,
    tickMs: intEnv('TRIBUTARY_CONTROLLER_TICK_MS', 1000),
    ...(process.env.TRIBUTARY_CONTROLLER_LEASE_MS ? { leaseMs: intEnv('TRIBUTARY_CONTROLLER_LEASE_MS', 3000) } : {}),
    sessionTimeoutMs: intEnv('TRIBUTARY_BROKER_SESSION_TIMEOUT_MS', 9000),
    probeTimeoutMs: intEnv('TRIBUTARY_BROKER_PROBE_TIMEOUT_MS', 1000),
    // Catch-up is the sweep's work: the mark is written within the tick, and the sweep (awaited
    // before a Lambda returns) re-drives it. Nothing runs in the background of a tick.
    catchUp: async (topic, topicId, partition) => {
      await markLagging(topic, topicId, partition);
    },
  });
  return instance;
}

let sweeper: ReplicationSweep | undefined;

/** The replication sweep of this process (one per process, like the controller). */
export function replicationSweep(): ReplicationSweep {
  sweeper ??= new ReplicationSweep({
    ...(process.env.TRIBUTARY_SWEEP_FULL_PASS_MS ? { fullPassMs: intEnv('TRIBUTARY_SWEEP_FULL_PASS_MS', 300_000) } : {}),
    ...(process.env.TRIBUTARY_SWEEP_IDLE_CLEAR_MS ? { idleClearMs: intEnv('TRIBUTARY_SWEEP_IDLE_CLEAR_MS', 30_000) } : {}),
    ...(process.env.TRIBUTARY_SWEEP_BACKOFF_MAX_MS ? { backoffMaxMs: intEnv('TRIBUTARY_SWEEP_BACKOFF_MAX_MS', 5000) } : {}),
    ...(process.env.TRIBUTARY_GARBAGE_MS ? { garbageEveryMs: intEnv('TRIBUTARY_GARBAGE_MS', 3_600_000) } : {}),
    lagTimeMaxMs: config().replicaLagTimeMaxMs,
  });
  return sweeper;
}

export interface RunOptions {
  /** Stop once this says so (checked before every tick). */
  readonly until: () => boolean;
  readonly onTick?: (r: TickReport) => void;
  readonly onSweep?: (r: SweepReport) => void;
  /** Time left to run (a Lambda's remaining time): a sweep pass never runs past it. */
  readonly remainingMs?: () => number;
  /**
   * Return once there is nothing to do (a scheduled pass): after a tick that changed nothing and
   * left no live broker unseen, and the sweep pass after it; or at once when another controller
   * holds the lease. Without it the loop runs until `until()`.
   */
  readonly untilIdle?: boolean;
}

/** A tick after which only the sweep has anything left to do. */
const quiet = (r: TickReport): boolean =>
  r.role === 'controller' && r.fenced.length === 0 && r.unfenced.length === 0 && r.elections === 0 && r.unseen.length === 0 && r.moving === 0;

/** The version of the deployment's broker list this process registered. */
let registeredVersion: string | undefined;

/**
 * In AWS the deployment writes its broker list into the coordination table
 * (DEPLOYED_BROKERS_ITEM, lib/functions/catalog.ts); the controller registers the brokers a version of the
 * list adds (all of them the first time, with the cluster), and records the version it registered
 * (`deployment`/`registered`): a broker removed through the API (DELETE .../brokers/{id}) whose id
 * is still listed is not registered again by the next controller, only by POST .../brokers.
 * One GetItem per run while the list is unchanged. The local stack writes no list (it bootstraps
 * itself): nothing to do. A failed read or registration is logged and tried again on the next run.
 */
export async function registerDeployedBrokers(): Promise<void> {
  try {
    const deployed = await readDeployedBrokers();
    if (!deployed || deployed.version === registeredVersion) return;
    const registered = await readRegisteredDeployment();
    if (registered?.version !== deployed.version) {
      const before = new Set(registered?.brokerIds ?? []);
      const added = deployed.brokers.filter((b) => !before.has(b.brokerId));
      await bootstrapCluster(added.map((b) => ({ brokerId: b.brokerId, replicaTable: b.replicaTable, rack: b.rack ?? null })));
      await writeRegisteredDeployment({ version: deployed.version, brokerIds: deployed.brokers.map((b) => b.brokerId) });
      logger.info({ event: 'brokers-registered', brokers: added.map((b) => b.brokerId), version: deployed.version }, 'registered the brokers the deployment added');
    }
    registeredVersion = deployed.version;
  } catch (err) {
    logger.warn({ event: 'broker-registration-failed', err }, 'could not register the deployment\'s brokers; the next run tries again');
  }
}

/**
 * Ticks until `until()`; returns the number of ticks. Errors of one tick are logged, not fatal.
 * While the lease is held, a sweep pass starts after a tick once the previous pass has ended (a
 * slow pass never delays the lease renewal), and the last pass is awaited before this returns:
 * nothing runs after a Lambda handler returns.
 */
export async function runController(o: RunOptions): Promise<number> {
  await registerDeployedBrokers();
  const c = controller();
  const sweep = replicationSweep();
  const sweepEveryMs = intEnv('TRIBUTARY_SWEEP_MS', c.o.tickMs);
  let sweeping: Promise<void> | undefined;
  let lastSweepAt = 0;
  let lastWakeAt = 0;
  let ticks = 0;
  // A controller's clock may be off (fault tests skew it): its lease times use this clock.
  const skew = Number(process.env.TRIBUTARY_CLOCK_SKEW_MS ?? 0) || 0;
  try {
    while (!o.until()) {
      const started = Date.now();
      let report: TickReport | undefined;
      try {
        report = await c.tick(started + skew);
        o.onTick?.(report);
      } catch (err) {
        logger.warn({ event: 'controller-tick-failed', controller: c.o.id, err }, 'controller tick failed');
      }
      if (o.untilIdle && report?.role === 'standby') {
        ticks++;
        break; // another controller is at work
      }
      if (c.held && !sweeping && started - lastSweepAt >= sweepEveryMs) {
        lastSweepAt = started;
        const deadline = o.remainingMs ? Date.now() + o.remainingMs() : Number.POSITIVE_INFINITY;
        const wake = started - lastWakeAt >= WAKE_MS ? wakeDeliveries(deadline) : Promise.resolve(0);
        if (started - lastWakeAt >= WAKE_MS) lastWakeAt = started;
        sweeping = Promise.all([
          sweep.sweep(Date.now(), deadline).then((r) => o.onSweep?.(r), (err: unknown) => {
            logger.warn({ event: 'replication-sweep-failed', controller: c.o.id, err }, 'replication sweep failed');
          }),
          wake.catch((err: unknown) => logger.warn({ event: 'delivery-wake-failed', controller: c.o.id, err }, 'waking push and WebSocket deliveries failed')),
        ]).then(() => undefined).finally(() => {
          sweeping = undefined;
        });
      }
      ticks++;
      if (o.untilIdle && report && quiet(report)) {
        await sweeping;
        break;
      }
      await new Promise((r) => setTimeout(r, Math.max(0, c.o.tickMs - (Date.now() - started))));
    }
  } finally {
    await sweeping;
  }
  return ticks;
}
