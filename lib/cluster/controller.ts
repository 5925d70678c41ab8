/**
 * The controller (docs/architecture.md, "The controller"): whoever holds the lease. Each tick
 * renews the lease (or tries to take it), probes every broker's store, fences brokers unseen for
 * `broker.session.timeout.ms` (while watched: see `tickOnce`) and unfences those that answer again,
 * and — when brokers changed state, it just took over, every 5 minutes (to keep its gauges fresh),
 * on a metadata change (a reassignment started, say), or every second while replicas move — walks the partitions: elects leaders for partitions whose leader
 * died, removes dead brokers from ISRs, and pushes role and epoch to the replicas' heads as it
 * goes, renewing its lease on the way (a walk may outlast a lease); it also advances reassignments
 * (lib/cluster/reassignment.ts). A steady-state tick costs one lease write, one broker list, one
 * read of the metadata version and one probe per broker, whatever the number of partitions.
 */
import { randomUUID } from 'node:crypto';
import { logger } from '../logger.js';
import { emitMetric } from '../metrics.js';
import * as brokerStore from '../storage/coordination/brokers.js';
import * as clusterStore from '../storage/coordination/cluster.js';
import * as leaseStore from '../storage/coordination/lease.js';
import * as topicStore from '../storage/coordination/topics.js';
import { topicPartitionKey, type BrokerRecord, type Lease, type PartitionRecord } from '../storage/model.js';
import { probeStore, writeIncarnation } from '../storage/replica/incarnation.js';
import { readHeads, setRole } from '../storage/replica/head.js';
import { type ReplicaStoreRef } from '../storage/replica/store.js';
import { ConditionFailed } from '../storage/transact.js';
import { reconcile } from './election.js';
import { invalidateMetadata } from './metadata.js';
import { shrinkForController } from './isr-count.js';
import { changePartition } from './partition-state.js';
import { Balancer } from './balancer.js';
import { completeReassignment, purgeRemoved, reassigning } from './reassignment.js';
import { stringConfig } from './topic-configs.js';

const WALK_EVERY_MS = 300_000;
/** While replicas are moving (a reassignment, or removed copies to delete), a walk at most this often advances them. */
const MOVE_WALK_MS = 1_000;
/** Partitions decided before their roles are pushed (one BatchGetItem of heads per broker). */
const WALK_CHUNK = 100;

export interface ControllerOptions {
  /** This controller's identity in the lease. */
  readonly id: string;
  /** How long a lease lasts without renewal. @default 3 × tickMs */
  readonly leaseMs?: number;
  /** controller.tick.ms. @default 1000 */
  readonly tickMs?: number;
  /** broker.session.timeout.ms: a broker unseen this long is fenced. @default 9000 */
  readonly sessionTimeoutMs?: number;
  /** How long a liveness probe waits for a store. @default 1000 */
  readonly probeTimeoutMs?: number;
  /** Asks for a partition to be caught up after an election or unfencing (the orchestration layer hands it to its sweep); awaited within the tick. */
  readonly catchUp?: (topic: string, topicId: string, partition: number) => Promise<void>;
  /**
   * The clock that measures time passing within a tick (a long walk renews the lease by it). A
   * tick's own `now` may be offset from it (a skewed clock): the offset is kept through the tick.
   * @default Date.now
   */
  readonly clock?: () => number;
  /**
   * How long one tick spends deleting the copies removed replicas hold; what is left is the next
   * tick's (a large copy never holds up the lease renewal or the sweep). @default 1000
   */
  readonly purgeSliceMs?: number;
  /**
   * How long each copy being deleted gets a tick at least, however late in the tick the walk
   * reaches it (else a copy behind others would get a single call of deletes a tick). @default 250
   */
  readonly purgeMinMs?: number;
  /** Points where a fault test delays or interleaves a tick. @default none */
  readonly hooks?: ControllerHooks;
}

/** Test hooks: each runs at one point of a tick and may take as long as it likes. */
export interface ControllerHooks {
  /** After the tick has read the metadata version and the broker list, before it probes. */
  readonly afterBrokersRead?: () => Promise<void>;
  /** Before a partition of a walk is decided. */
  readonly beforePartition?: (topic: string, partition: number) => Promise<void>;
  /** Before roles are pushed to the heads of walked partitions. */
  readonly beforePush?: (parts: readonly { topic: string; partition: number }[]) => Promise<void>;
  /** Before a new incarnation is written to a broker's store. */
  readonly beforeIncarnationWrite?: (brokerId: number) => Promise<void>;
}

export interface TickReport {
  readonly role: 'controller' | 'standby';
  readonly epoch?: number;
  readonly fenced: number[];
  readonly unfenced: number[];
  readonly elections: number;
  readonly scanned: boolean;
  /** Brokers still alive whose store did not answer this tick: fenced once unseen for the session timeout. */
  readonly unseen: number[];
  /** Partitions the last walk left moving (a reassignment in progress, or removed copies still to delete). */
  readonly moving: number;
}

export class Controller {
  private lease: Lease | undefined;
  /** When the lease was last taken or renewed, on the tick's clock. */
  private renewedAt = 0;
  private readonly lastSeen = new Map<number, number>();
  /** When the last tick began, on the tick's clock. */
  private lastTickAt: number | undefined;
  private scanNeeded = true;
  /** Partitions whose replicas were told a new role or lost their log: replicated once the tick's state changes are written. */
  private readonly catchUps = new Map<string, { topic: string; p: PartitionRecord }>();
  /** Gauges from the last walk of every partition (emitted every tick). */
  private offlinePartitions = 0;
  private underReplicatedPartitions = 0;
  private movingPartitions = 0;
  /** Every partition as the last walk left it (the balancer plans on them). */
  private placed: { topic: string; p: PartitionRecord }[] = [];
  private readonly balancer = new Balancer();
  /** Bytes in each partition's leader table, as the last role push read its head. */
  private readonly bytesOf = new Map<string, number>();
  private lastWalkAt = 0;
  /**
   * The metadata version the last walk started from: a change since (a topic created, a reassignment
   * started or cancelled, a config allowing unclean election) is worth another walk.
   */
  private walkedVersion: number | undefined;
  /** The tick's `now` minus the clock at its start: a skewed tick keeps its skew as time passes. */
  private skew = 0;
  /** When this tick stops deleting removed replicas' copies (epoch ms). */
  private purgeUntil = 0;
  readonly o: Required<Omit<ControllerOptions, 'catchUp' | 'hooks'>> & Pick<ControllerOptions, 'catchUp' | 'hooks'>;

  constructor(o: ControllerOptions) {
    const tickMs = o.tickMs ?? 1000;
    this.o = { leaseMs: 3 * tickMs, sessionTimeoutMs: 9000, probeTimeoutMs: 1000, purgeSliceMs: 1000, purgeMinMs: 250, clock: () => Date.now(), ...o, tickMs };
  }

  /** The time now, on the tick's clock. */
  private now(): number {
    return this.o.clock() + this.skew;
  }

  /** The lease this controller holds, if any. */
  get held(): Lease | undefined {
    return this.lease;
  }

  async tick(now = this.o.clock()): Promise<TickReport> {
    this.skew = now - this.o.clock();
    const report = await this.tickOnce(now);
    emitMetric('activeControllerCount', report.role === 'controller' ? 1 : 0);
    if (report.role === 'controller') {
      emitMetric('offlinePartitions', this.offlinePartitions);
      emitMetric('underReplicatedPartitions', this.underReplicatedPartitions);
      if (report.elections > 0) emitMetric('leaderElections', report.elections);
    }
    return report;
  }

  private async tickOnce(now: number): Promise<TickReport> {
    const report = { fenced: [] as number[], unfenced: [] as number[], elections: 0, scanned: false, unseen: [] as number[], moving: 0 };
    if (!(await this.holdLease(now))) return { role: 'standby', ...report };
    // (store time, not the tick's clock: deletes take real time whatever the tick's clock says)
    this.purgeUntil = Date.now() + this.o.purgeSliceMs;
    // A gap of a whole session between ticks (a scheduled controller that ran a minute ago, a
    // frozen container) observed nothing: what was seen before it says nothing of now, so every
    // broker gets a fresh session timeout — a store is fenced only after failing for that long
    // while a controller is watching, never for one slow probe after a gap.
    if (this.lastTickAt !== undefined && now - this.lastTickAt > this.o.sessionTimeoutMs) this.lastSeen.clear();
    this.lastTickAt = now;
    // The gauges above come from walks; one every five minutes keeps them fresh at a cost that
    // does not grow per tick.
    if (now - this.lastWalkAt > WALK_EVERY_MS) this.scanNeeded = true;
    if (this.movingPartitions > 0 && now - this.lastWalkAt >= MOVE_WALK_MS) this.scanNeeded = true;
    const lease = this.lease as Lease;
    try {
      // Read before the brokers: a change that lands after this read (a broker marked for
      // removal during the tick) leaves the version ahead of the walk's, so the next tick walks again.
      const version = (await clusterStore.readMetadataVersion()) ?? 0;
      const brokers = await brokerStore.listBrokers();
      await this.o.hooks?.afterBrokersRead?.();
      const probes = await Promise.all(brokers.map((b) => probeStore(b, this.o.probeTimeoutMs)));
      const alive = new Set<number>();
      const fencedAt = new Map<number, number>();
      const lostLog = new Set<number>();
      const probed = new Map<number, string | null>();
      for (const [i, b] of brokers.entries()) {
        const probe = probes[i];
        const seen = probe !== undefined;
        if (seen) probed.set(b.brokerId, probe);
        if (seen || !this.lastSeen.has(b.brokerId)) this.lastSeen.set(b.brokerId, now); // unseen ones get grace from takeover
        // A store that answers with another incarnation (or none) lost what the cluster knows it
        // held. One a controller recorded as pending may be there: its write landed, maybe late.
        const lostStore = seen && b.incarnation !== undefined && probe !== b.incarnation && !(probe !== null && b.pendingIncarnations?.includes(probe));
        const unseenFor = now - (this.lastSeen.get(b.brokerId) ?? now);
        if (b.state === 'alive' && (unseenFor > this.o.sessionTimeoutMs || lostStore)) {
          await brokerStore.setBrokerState(lease, b.brokerId, 'fenced');
          fencedAt.set(b.brokerId, unseenFor);
          if (lostStore) lostLog.add(b.brokerId);
          logger.warn({ event: 'broker-fenced', broker: b.brokerId, unseenMs: unseenFor, lostStore, controllerEpoch: lease.epoch }, lostStore ? 'broker fenced: its store lost its data' : 'broker fenced');
          report.fenced.push(b.brokerId);
        } else if (b.state === 'fenced' && seen) {
          report.unfenced.push(b.brokerId);
          alive.add(b.brokerId);
          // (its incarnation changes only once it is unfenced: one whose store lost its data — while
          // fenced, or before a walk that a lost lease cut short — still shows it, and its replicas
          // leave the ISRs, and lose their leaderships, before it counts as alive)
          if (lostStore) lostLog.add(b.brokerId);
        } else if (b.state === 'alive') {
          alive.add(b.brokerId);
          if (!seen) report.unseen.push(b.brokerId);
          // First sight of a store: from now on its contents are this incarnation.
          if (seen && b.incarnation === undefined) await this.newIncarnation(lease, b, 'alive', probe);
        }
      }
      if (version !== this.walkedVersion) this.scanNeeded = true;
      if (report.fenced.length > 0 || report.unfenced.length > 0 || this.scanNeeded) {
        // Cleared before the walk, not after: a push that fails during it asks for the next walk.
        this.scanNeeded = false;
        try {
          report.elections = await this.reconcilePartitions(lease, version, brokers, alive, new Set(report.unfenced), lostLog);
        } catch (err) {
          this.scanNeeded = true;
          throw err;
        }
        report.scanned = true;
        this.lastWalkAt = now;
        // The balancer plans on what the walk saw, with the liveness this tick judged.
        const judged = brokers.map((b) => ({ ...b, state: alive.has(b.brokerId) ? 'alive' as const : 'fenced' as const }));
        const weighed = this.placed.map((x) => ({ ...x, bytes: this.bytesOf.get(topicPartitionKey(x.p.topicId, x.p.partition)) ?? 0 }));
        const balance = await this.balancer.pass(lease, judged, weighed, this.now());
        if (balance.started > 0 || balance.removed.length > 0) this.scanNeeded = true;
        // Failover time: from the broker's last sign of life to its leaderships moved.
        for (const unseenFor of fencedAt.values()) emitMetric('failoverTimeMs', unseenFor + (this.now() - now));
        // Returning brokers are demoted and reconciled above before they count as alive again.
        // One whose store changed since the probe stays fenced: the next tick looks again.
        const returned: number[] = [];
        for (const id of report.unfenced) {
          if (!(await this.newIncarnation(lease, brokers.find((b) => b.brokerId === id) as BrokerRecord, 'alive', probed.get(id) ?? null))) continue;
          returned.push(id);
          logger.info({ event: 'broker-unfenced', broker: id, controllerEpoch: lease.epoch }, 'broker unfenced');
        }
        report.unfenced = returned;
        invalidateMetadata();
        // Only now (returning brokers are alive again) can caught-up followers rejoin ISRs.
        const pending = [...this.catchUps.values()];
        this.catchUps.clear();
        // Awaited: in Lambda nothing runs after the tick returns (the loop hands the work to its sweep).
        if (this.o.catchUp) {
          await Promise.all(pending.map(({ topic, p }) => (this.o.catchUp as NonNullable<ControllerOptions['catchUp']>)(topic, p.topicId, p.partition).catch((err: unknown) => {
            logger.warn({ event: 'catch-up-failed', topic, partition: p.partition, err }, 'catch-up could not be started; the sweep\'s full pass covers it');
          })));
        }
      }
      return { role: 'controller', epoch: lease.epoch, ...report, moving: this.movingPartitions };
    } catch (err) {
      if (err instanceof leaseStore.LeaseLost) {
        this.loseLease('a write was fenced');
        return { role: 'standby', ...report };
      }
      throw err;
    }
  }

  /**
   * Stamps a broker's store with a new incarnation and records it with the broker's state: from
   * now on the cluster accounts for what the store holds (a wiped store will answer without it).
   * The store may be on another endpoint than the lease, so no transaction spans both: the new
   * incarnation is first recorded as pending under the lease, then written to the store on
   * condition of this controller's epoch and of what the probe read (`replaces`), then made the
   * broker's under the lease. Returns false, writing nothing more, when the store's item changed
   * since the probe; throws `LeaseLost` when a newer controller wrote it.
   */
  private async newIncarnation(lease: Lease, b: BrokerRecord, state: BrokerRecord['state'], replaces: string | null): Promise<boolean> {
    const incarnation = randomUUID();
    await brokerStore.addPendingIncarnation(lease, b.brokerId, incarnation);
    await this.o.hooks?.beforeIncarnationWrite?.(b.brokerId);
    if (!(await writeIncarnation(b, { incarnation, controllerEpoch: lease.epoch, replaces }))) {
      // Either a newer controller stamped the store (then this one was deposed: renewing fails)...
      await this.keepLease(true);
      // ...or the store changed under the probe (wiped, say): the next probe tells.
      logger.warn({ event: 'incarnation-write-failed', broker: b.brokerId, replaces, controllerEpoch: lease.epoch }, 'store incarnation changed since the probe');
      return false;
    }
    await brokerStore.setBrokerState(lease, b.brokerId, state, incarnation);
    return true;
  }

  /**
   * Renews the lease mid-tick once a third of it has passed since the last renewal (or at once
   * with `force`), so a walk longer than the lease keeps it. Errors: `LeaseLost` when another
   * controller took it: the caller stops writing at once.
   */
  private async keepLease(force = false): Promise<void> {
    const lease = this.lease;
    if (!lease) throw new leaseStore.LeaseLost('no lease held');
    const now = this.now();
    if (!force && now - this.renewedAt < this.o.leaseMs / 3) return;
    const renewed = await leaseStore.renewLease(lease, this.o.leaseMs, now);
    if (!renewed) throw new leaseStore.LeaseLost('the controller lease was taken over');
    this.lease = renewed;
    this.renewedAt = now;
  }

  private async holdLease(now: number): Promise<boolean> {
    if (this.lease) {
      const renewed = await leaseStore.renewLease(this.lease, this.o.leaseMs, now);
      if (renewed) {
        this.lease = renewed;
        this.renewedAt = now;
        return true;
      }
      this.loseLease('renewal failed');
    }
    const acquired = await leaseStore.acquireLease(this.o.id, this.o.leaseMs, now);
    if (!acquired) return false;
    this.lease = acquired;
    this.renewedAt = now;
    this.lastSeen.clear();
    this.scanNeeded = true;
    logger.info({ event: 'lease-acquired', controller: this.o.id, controllerEpoch: acquired.epoch }, 'controller lease acquired');
    return true;
  }

  private loseLease(why: string): void {
    if (this.lease) logger.warn({ event: 'lease-lost', controller: this.o.id, controllerEpoch: this.lease.epoch, why }, 'controller lease lost');
    this.lease = undefined;
    // What a deposed controller meant to replicate is its successor's to decide.
    this.catchUps.clear();
  }

  /**
   * Walks every partition: elects where the leader is not alive, drops dead brokers from ISRs,
   * and makes every live replica's head agree with the partition state — a chunk at a time, so
   * the leaders it elects are announced as it goes, and renewing the lease on the way: a walk
   * longer than a lease neither loses it nor leaves its elected leaders unannounced. Stops at
   * once (`LeaseLost`) when the lease was taken over; the successor's walk pushes what was left.
   * Returns the elections made.
   */
  private async reconcilePartitions(
    lease: Lease, version: number, brokers: readonly BrokerRecord[], alive: ReadonlySet<number>, returning: ReadonlySet<number>, lostLog: ReadonlySet<number>,
  ): Promise<number> {
    const stores = new Map<number, ReplicaStoreRef>(brokers.map((b) => [b.brokerId, b]));
    this.bytesOf.clear(); // (refilled by this walk's role pushes: a deleted topic's partitions drop out)
    let elections = 0;
    let offline = 0;
    let underReplicated = 0;
    let moving = 0;
    const placed: { topic: string; p: PartitionRecord }[] = [];
    for (const name of await topicStore.listTopicNames()) {
      const view = await topicStore.readTopic(name);
      if (!view || view.topic.state !== 'active') continue;
      const unclean = stringConfig(view.topic.configs, 'unclean.leader.election.enable') === 'true';
      for (let i = 0; i < view.partitions.length; i += WALK_CHUNK) {
        const settled: { topic: string; p: PartitionRecord }[] = [];
        for (const p of view.partitions.slice(i, i + WALK_CHUNK)) {
          await this.o.hooks?.beforePartition?.(name, p.partition);
          const decision = reconcile(p, alive, unclean, lostLog);
          if (!decision) {
            settled.push({ topic: name, p: await this.advanceMoves(lease, name, p, alive, stores) });
            continue;
          }
          await this.keepLease();
          const write = () => changePartition(name, p, (cur) => {
            const d = reconcile(cur, alive, unclean, lostLog);
            return d && { leader: d.leader, isr: d.isr, ...(d.newEpoch ? { leaderEpoch: cur.leaderEpoch + 1 } : {}) };
          }, lease);
          // A live leader that keeps leading stops counting the removed members for
          // min.insync.replicas before the state drops them (lib/cluster/isr-count.ts).
          const keeps = !decision.newEpoch && decision.leader === p.leader && p.leader >= 0;
          const next = keeps
            ? await shrinkForController(name, p, stores.get(p.leader), topicPartitionKey(p.topicId, p.partition), p.isr.filter((b) => !decision.isr.includes(b)), write)
            : await write();
          if (next.leader !== p.leader) {
            elections++;
            const fields = { topic: name, partition: p.partition, from: p.leader, to: next.leader, leaderEpoch: next.leaderEpoch, isr: next.isr, controllerEpoch: lease.epoch };
            if (next.leader < 0) logger.error({ event: 'partition-offline', ...fields }, 'no live in-sync replica: partition offline');
            else if (decision.unclean) logger.error({ event: 'unclean-leader-elected', ...fields }, 'unclean leader election: acknowledged records may be lost');
            else logger.warn({ event: 'leader-elected', ...fields }, 'leader elected');
          } else if (next.isr.length !== p.isr.length) {
            emitMetric('isrShrinks', p.isr.length - next.isr.length);
            logger.warn({ event: 'isr-shrink', topic: name, partition: p.partition, broker: p.isr.filter((b) => !next.isr.includes(b)), isr: next.isr, reason: 'broker fenced', controllerEpoch: lease.epoch }, 'ISR shrink');
          }
          settled.push({ topic: name, p: await this.advanceMoves(lease, name, next, alive, stores) });
        }
        for (const x of settled) {
          placed.push(x);
          if (reassigning(x.p) || (x.p.purging?.length ?? 0) > 0) moving++;
          if (x.p.leader < 0) offline++;
          if (x.p.isr.length < x.p.replicas.length) underReplicated++;
        }
        await this.o.hooks?.beforePush?.(settled.map((x) => ({ topic: x.topic, partition: x.p.partition })));
        // Role pushes are not fenced by the lease (the stores are elsewhere): check it is still ours.
        await this.keepLease();
        await this.pushRoles(settled, stores, alive);
        // A returning broker's followers catch up (and rejoin ISRs) once it is unfenced.
        for (const x of settled) {
          if (x.p.leader >= 0 && x.p.replicas.some((r) => returning.has(r) && r !== x.p.leader)) this.catchUps.set(topicPartitionKey(x.p.topicId, x.p.partition), x);
        }
      }
    }
    this.offlinePartitions = offline;
    this.underReplicatedPartitions = underReplicated;
    this.movingPartitions = moving;
    this.placed = placed;
    this.walkedVersion = version;
    return elections;
  }

  /**
   * A reassignment's next step (lib/cluster/reassignment.ts): completes it once its adding replicas
   * are in the ISR, and deletes the copies removed replicas still hold. Returns the state after it.
   */
  private async advanceMoves(
    lease: Lease, topic: string, p: PartitionRecord, alive: ReadonlySet<number>, stores: ReadonlyMap<number, ReplicaStoreRef>,
  ): Promise<PartitionRecord> {
    if (!reassigning(p) && (p.purging?.length ?? 0) === 0) return p;
    await this.keepLease();
    const next = reassigning(p) ? await completeReassignment(topic, p, alive, stores, lease) : p;
    // Added replicas not in the ISR yet: the sweep brings them up (and in).
    if (next.leader >= 0 && (next.addingReplicas ?? []).some((r) => !next.isr.includes(r))) this.catchUps.set(topicPartitionKey(next.topicId, next.partition), { topic, p: next });
    return purgeRemoved(topic, next, alive, stores, lease, Math.max(this.purgeUntil, Date.now() + this.o.purgeMinMs));
  }

  /** Makes every live replica's head say the role and leader epoch its partition state says. */
  private async pushRoles(parts: readonly { topic: string; p: PartitionRecord }[], stores: ReadonlyMap<number, ReplicaStoreRef>, alive: ReadonlySet<number>): Promise<void> {
    const byBroker = new Map<number, { topic: string; p: PartitionRecord }[]>();
    for (const x of parts) for (const r of x.p.replicas) if (alive.has(r)) byBroker.set(r, [...(byBroker.get(r) ?? []), x]);
    await Promise.all([...byBroker].map(async ([brokerId, list]) => {
      const store = stores.get(brokerId);
      if (!store) return;
      const heads = await readHeads(store, list.map((x) => topicPartitionKey(x.p.topicId, x.p.partition))).catch((err: unknown) => {
        // Not forgotten: the next tick walks again and pushes what this one could not.
        logger.warn({ event: 'role-push-failed', broker: brokerId, partitions: list.length, err }, 'could not read the heads to push roles to');
        this.scanNeeded = true;
        return undefined;
      });
      if (!heads) return;
      for (const { topic, p } of list) {
        const tp = topicPartitionKey(p.topicId, p.partition);
        const head = heads.get(tp);
        // The balancer weighs partitions by the bytes their leader's table holds.
        if (head && brokerId === p.leader) this.bytesOf.set(tp, head.tailBytes ?? 0);
        const role = p.leader === brokerId ? 'leader' : 'follower';
        if (!head) {
          // A replica that lost its log (a wiped store) gets it back by a full sync.
          if (role === 'follower' && p.leader >= 0) this.catchUps.set(tp, { topic, p });
          continue;
        }
        if (head.leaderEpoch === p.leaderEpoch && head.role === role) continue;
        try {
          // A new leader counts exactly the partition state's ISR toward its high watermark.
          await setRole(store, tp, role, p.leaderEpoch, role === 'leader' ? p.isr : undefined);
          logger.info({ event: 'role-pushed', topic, partition: p.partition, broker: brokerId, role, leaderEpoch: p.leaderEpoch }, 'replica told its role');
          if (p.leader >= 0) this.catchUps.set(tp, { topic, p });
        } catch (err) {
          if (err instanceof ConditionFailed) continue; // the head knows a newer epoch already
          logger.warn({ event: 'role-push-failed', topic, partition: p.partition, broker: brokerId, err }, 'could not tell a replica its role');
          this.scanNeeded = true;
        }
      }
    }));
  }
}
