/**
 * The nemesis's faults that change the cluster's shape while the others run: a broker added and
 * removed again (`add-broker`), one of the brokers removed for good, with a replacement first when
 * the rest could not hold the replication factor (`remove-broker`), and a partition moved to
 * another replica set, completed or cancelled (`reassign`). They go through the admin API as an
 * operator would; the balancer in the controller does the moving.
 *
 * A removed broker's store keeps running, so a later fault drawn for it would hit a process the
 * cluster no longer uses: {@link Reshaper.resolve} sends it to the broker that replaced it, or
 * reports that there is none. Every broker the nemesis adds gets a fresh id, so no removed
 * broker's emptied table or running store is registered again.
 */
import type { TP } from './history.js';
import type { PlannedFault } from './faults.js';

/** A registered broker as `GET .../brokers` shows it. */
export interface BrokerView {
  readonly id: number;
  /** `alive`, `fenced`, ... or `decommissioning` while it drains. */
  readonly state: string;
  /** Replicas it holds (`replica_count`). */
  readonly replicaCount: number;
}

/** An HTTP answer of the admin API: status, Kafka error code if any, message or body excerpt. */
export interface AdminAnswer {
  readonly status: number;
  readonly errorCode?: string;
  readonly message: string;
}

/** What the reshaping faults need of the cluster: the admin API. */
export interface ShapeControls {
  brokers(): Promise<BrokerView[]>;
  /** `POST .../brokers {"broker_id": id}`. */
  addBroker(id: number): Promise<AdminAnswer>;
  /** `DELETE .../brokers/{id}`. */
  removeBroker(id: number): Promise<AdminAnswer>;
  /** The partition's replicas (with those being added and removed) and, while one runs, its reassignment. */
  replicasOf(tp: TP): Promise<{ replicas: number[]; adding: number[]; removing: number[] } | undefined>;
  /** `PATCH .../partitions/{p}/reassignment {"replicas": [...]}`. */
  reassign(tp: TP, replicas: readonly number[]): Promise<AdminAnswer>;
  /** `DELETE .../partitions/{p}/reassignment`. */
  cancelReassignment(tp: TP): Promise<AdminAnswer>;
}

/** The nemesis's clock: sleeps and polls cut short when the run ends. */
export interface Clock {
  hold(ms: number): Promise<void>;
  waitFor(ok: () => Promise<boolean>, ms: number): Promise<boolean>;
}

/** How long a fault waits for a removed broker to drain and go, or a reassignment to complete. */
export const RESHAPE_WAIT_MS = 45_000;

const answer = (a: AdminAnswer) => `${a.status}${a.errorCode ? ` ${a.errorCode}` : ''}`;

export class Reshaper {
  /** A removed broker → the broker added to take its place (followed in chains). */
  private readonly replacedBy = new Map<number, number>();
  /** Brokers removed by a `remove-broker` fault (their stores still run). */
  private readonly removed = new Set<number>();
  private lastId: number;

  constructor(private readonly c: ShapeControls, brokers: readonly number[], private readonly clock: Clock) {
    this.lastId = Math.max(0, ...brokers);
  }

  /**
   * The broker a fault drawn for `broker` acts on: itself, or the one that replaced it once it was
   * removed; undefined when it was removed with no replacement (the others hold the replicas).
   */
  resolve(broker: number): number | undefined {
    let b: number | undefined = broker;
    while (b !== undefined && this.removed.has(b)) b = this.replacedBy.get(b);
    return b;
  }

  /** Registers a broker under a fresh id (retried once: a fresh store's first requests can be slow). */
  private async add(): Promise<{ id: number; a: AdminAnswer }> {
    const id = ++this.lastId;
    let a = await this.c.addBroker(id);
    if (a.status >= 500 || a.status === 0) a = await this.c.addBroker(id); // idempotent for the same id
    if (a.status !== 201 && a.status !== 200) throw new Error(`POST broker ${id}: ${answer(a)} ${a.message}`);
    return { id, a };
  }

  /** Waits (bounded) until `id` is deregistered; returns how long it took, or undefined. */
  private async gone(id: number): Promise<number | undefined> {
    const t0 = Date.now();
    const ok = await this.clock.waitFor(async () => !(await this.c.brokers()).some((b) => b.id === id), RESHAPE_WAIT_MS);
    return ok ? Date.now() - t0 : undefined;
  }

  private async drain(id: number): Promise<string> {
    let d = await this.c.removeBroker(id);
    // (refused while the balancer's moves name a partition's old and new replicas: asked again, bounded)
    if (d.status === 400) {
      await this.clock.waitFor(async () => (d = await this.c.removeBroker(id)).status !== 400, RESHAPE_WAIT_MS);
    }
    if (d.status !== 202) return `DELETE ${d.status} (${d.message}): broker ${id} stays`;
    const ms = await this.gone(id);
    return `DELETE 202, ${ms === undefined ? `still draining after the wait (bound ${RESHAPE_WAIT_MS} ms)` : `drained and deregistered in ${ms} ms`}`;
  }

  /** `add-broker`: a broker joins (the balancer moves replicas to it), holds, then is removed again. */
  async addBroker(f: PlannedFault): Promise<{ target: string; detail: string }> {
    const { id, a } = await this.add();
    await this.clock.hold(f.holdMs);
    const moved = (await this.c.brokers().catch(() => [])).find((b) => b.id === id)?.replicaCount;
    const removal = await this.drain(id);
    return { target: `broker-${id}`, detail: `broker ${id} added (${answer(a)}), ${moved ?? '?'} replicas moved to it in ${f.holdMs} ms; ${removal}` };
  }

  /**
   * `remove-broker`: the broker drawn (or its replacement) is removed for good. Where the brokers
   * left could not hold the replication factor the removal is refused; then a replacement is
   * added first and the removal asked again. The broker count never drops below the RF.
   */
  async removeBroker(f: PlannedFault): Promise<{ target: string; detail: string }> {
    const victim = this.resolve(f.broker);
    if (victim === undefined) throw new Error(`broker ${f.broker} was removed already, with no replacement`);
    const notes: string[] = [];
    let d = await this.c.removeBroker(victim);
    let replacement: number | undefined;
    if (d.status === 400 && d.errorCode === 'INVALID_REPLICATION_FACTOR') {
      const { id, a } = await this.add();
      replacement = id;
      // The balancer starts moving replicas to the new broker at once, and a partition being moved
      // names its old replicas and its new ones: the removal is refused until those moves end.
      let refusals = 0;
      await this.clock.waitFor(async () => {
        d = await this.c.removeBroker(victim);
        if (d.status === 400) refusals++;
        return d.status !== 400;
      }, RESHAPE_WAIT_MS);
      notes.push(`refused (INVALID_REPLICATION_FACTOR), so broker ${id} added first (${answer(a)})${refusals ? `, then refused ${refusals} more times while replicas moved to it` : ''}`);
    }
    if (d.status !== 202) {
      // (a replacement stays: the count only grows, and later faults still find the victim)
      throw new Error(`DELETE broker ${victim}: ${d.status} ${d.message}${notes.length ? `; ${notes.join('; ')}` : ''}`);
    }
    this.removed.add(victim);
    if (replacement !== undefined) this.replacedBy.set(victim, replacement);
    await this.clock.hold(f.holdMs);
    const ms = await this.gone(victim);
    notes.push(`DELETE 202, ${ms === undefined ? `still draining after the wait (bound ${RESHAPE_WAIT_MS} ms)` : `drained and deregistered in ${f.holdMs + ms} ms`}`);
    if (victim !== f.broker) notes.unshift(`drawn broker ${f.broker} was replaced by ${victim} earlier`);
    return { target: `broker-${victim}`, detail: `broker ${victim} removed: ${notes.join('; ')}; later faults drawn for it go to ${replacement ?? 'no broker (not applied)'}` };
  }

  /**
   * `reassign`: one replica of the partition swapped for a broker outside its set (a broker is
   * added for it when there is none, and removed again at the end); held; then, by the planned
   * fault's coin, left to complete by itself (waited for, bounded) or cancelled.
   */
  async reassign(f: PlannedFault): Promise<{ target: string; detail: string }> {
    const tp = `${f.tp.topic}/${f.tp.partition}`;
    const p = await this.c.replicasOf(f.tp);
    if (!p) throw new Error(`no partition ${tp} in the metadata`);
    // The replicas it keeps once a reassignment in progress (the balancer's, say) completes.
    const current = p.replicas.filter((r) => !p.removing.includes(r));
    const active = (await this.c.brokers()).filter((b) => b.state !== 'decommissioning').map((b) => b.id).sort((x, y) => x - y);
    let spares = active.filter((b) => !p.replicas.includes(b));
    let added: number | undefined;
    const notes: string[] = [];
    if (spares.length === 0) {
      const { id, a } = await this.add();
      added = id;
      spares = [id];
      notes.push(`broker ${id} added for it (${answer(a)})`);
    }
    const out = Math.floor(f.moment * current.length);
    const target = current.map((r, i) => (i === out ? (spares[f.broker % spares.length] as number) : r));
    const r = await this.c.reassign(f.tp, target);
    const cancel = f.copier === 'gateway';
    if (r.status !== 202 && r.status !== 200) {
      notes.push(`PATCH [${target.join(',')}] → ${answer(r)} ${r.message}`);
    } else {
      notes.push(`[${current.join(',')}] → [${target.join(',')}] (PATCH ${answer(r)})`);
      await this.clock.hold(f.holdMs);
      if (cancel) {
        const c = await this.c.cancelReassignment(f.tp);
        notes.push(c.status === 204 ? 'cancelled (204)' : `cancel → ${answer(c)} (${c.status === 404 ? 'completed already' : c.message})`);
      } else {
        const t0 = Date.now();
        const done = await this.clock.waitFor(async () => {
          const now = await this.c.replicasOf(f.tp);
          return !!now && now.adding.length === 0 && now.removing.length === 0;
        }, RESHAPE_WAIT_MS);
        notes.push(done ? `completed by itself (${f.holdMs + Date.now() - t0} ms)` : `still moving after the wait (bound ${RESHAPE_WAIT_MS} ms)`);
      }
    }
    if (added !== undefined) notes.push(`broker ${added}: ${await this.drain(added)}`);
    return { target: tp, detail: notes.join('; ') };
  }
}
